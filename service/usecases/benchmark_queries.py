"""Reading benchmark data: a run, result listings with filters, the latest-measured view of a
GPU, the workload vocabulary and the coverage matrix. Read-only: nothing here commits.

Answers are core types (:mod:`service.core.evidence.results`, :class:`~service.core.evidence.aggregate.CellView`)
wrapped in the small dataclasses below; the API layer turns them into wire models."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from service.core.access.cursor import decode_position, encode_position
from service.core.catalog.vocabulary import (
    FINGERPRINT_FIELDS,
    FINGERPRINT_NULLABLE,
    FINGERPRINT_REQUIRED,
    FINGERPRINT_UNHASHED,
    MEMORY_FIELDS,
    PRECISIONS,
    RESULT_STATUSES,
    SUITE_VERSION,
    WORKLOADS,
    VocabularyError,
    WorkloadDef,
    coerce_parameter,
    parameter_value,
    suite_definition_hash,
)
from service.core.evidence.aggregate import CellView, StackWindow, latest_measured, view_of
from service.core.evidence.results import (
    CoverageStats,
    ParamFilter,
    ResultQuery,
    StoredResult,
    StoredRun,
    fp_value_matches,
    main_metric_of,
)
from service.db.uow import UnitOfWork
from service.usecases.catalog import resolve_gpu
from service.usecases.errors import FieldError, Invalid, NotFound
from service.usecases.paging import INT32_MAX, before_of, cut_page
from service.usecases.read_model import MeasuredCellStacks, ReadModel

# ---- one result, one run ---------------------------------------------------------------------


def get_result(uow: UnitOfWork, result_id: int) -> StoredResult:
    r = uow.benchmark_queries.result(result_id)
    if r is None:
        raise NotFound(f"no benchmark result with id {result_id}")
    return r


@dataclass(frozen=True, slots=True)
class RunDetail:
    run: StoredRun
    status_counts: Mapping[str, int]  # every status, zeros included
    results: tuple[StoredResult, ...] | None  # by position; None when not asked for
    data_version: str


def get_run(uow: UnitOfWork, run_id: str, *, include_results: bool = True) -> RunDetail:
    q = uow.benchmark_queries
    run = q.run(run_id)
    if run is None:
        raise NotFound(f"no benchmark run with run_id {run_id!r}")
    counts = q.status_counts(run.pk)
    results = tuple(q.run_results(run.pk)) if include_results else None
    return RunDetail(
        run=run,
        status_counts={k: int(counts.get(k, 0)) for k in RESULT_STATUSES},
        results=results,
        data_version=uow.data_version(),
    )


# ---- filters ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultFilters:
    """A result listing's filters as the client gave them (``params``: ``param.<name>``,
    ``fingerprint``: ``fp.<field>``)."""

    gpu: str | None = None
    pending_gpu_id: int | None = None
    workload: str | None = None
    status: str | None = None
    quarantined: bool | None = None
    agent: int | None = None
    host: str | None = None
    since: dt.datetime | None = None
    run_id: str | None = None
    fingerprint_hash: str | None = None
    include_retracted: bool = False
    params: Mapping[str, str] = field(default_factory=dict)
    fingerprint: Mapping[str, str] = field(default_factory=dict)


def _check_workload(workload: str | None) -> None:
    if workload is not None and workload not in WORKLOADS:
        raise Invalid(
            f"unknown workload {workload!r}",
            fields=[FieldError(("workload",), f"one of {', '.join(sorted(WORKLOADS))}")],
        )


def param_filters(workload: str | None, params: Mapping[str, str]) -> tuple[ParamFilter, ...]:
    """``param.<name>=<value>`` -> typed filters on the canonical parameters (values are
    canonicalised like submissions, so ``8`` matches 8 and 8.0)."""
    if not params:
        return ()
    if workload is None:
        name = next(iter(params))
        raise Invalid(
            "parameter filters need a workload (parameter types come from its definition)",
            fields=[FieldError((f"param.{name}",), "add workload=<name>")],
        )
    w = WORKLOADS[workload]
    out: list[ParamFilter] = []
    for name, raw in params.items():
        try:
            value = coerce_parameter(workload, name, raw, (f"param.{name}",))
        except VocabularyError as exc:
            raise Invalid(exc.message, fields=[FieldError((f"param.{name}",), exc.message)]) from None
        p = w.param(name)
        if p is None:  # pragma: no cover - coerce_parameter refused it already
            continue
        out.append(ParamFilter(name=name, type=p.type, value=value))
    return tuple(out)


def check_fingerprint_filters(fp: Mapping[str, str]) -> None:
    """``fp.<field>=<value>``: the field must be a fingerprint field."""
    for name in fp:
        if name not in FINGERPRINT_FIELDS:
            raise Invalid(
                f"unknown fingerprint field {name!r}",
                fields=[FieldError((f"fp.{name}",), f"one of {', '.join(FINGERPRINT_FIELDS)}")],
            )


def _gpu(uow: UnitOfWork, cache: ReadModel, ident: str) -> tuple[int, str]:
    """(row id, slug) of the GPU a slug, alias or PCI id names (``NotFound`` / ``Ambiguous``)."""
    slug = resolve_gpu(uow, cache, ident).spec.slug
    gid = uow.benchmark_queries.gpu_id(slug)
    if gid is None:  # pragma: no cover - resolve_gpu found it
        raise NotFound(f"no GPU with slug {slug!r}")
    return gid, slug


# ---- listings ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResultPage:
    items: tuple[StoredResult, ...]
    next_cursor: str | None
    data_version: str


def list_results(
    uow: UnitOfWork, cache: ReadModel, f: ResultFilters, *, limit: int, cursor: str | None
) -> ResultPage:
    """Newest first (by id), keyset pagination."""
    _check_workload(f.workload)
    gpu_id = _gpu(uow, cache, f.gpu)[0] if f.gpu is not None else None
    params = param_filters(f.workload, f.params)
    check_fingerprint_filters(f.fingerprint)
    before = before_of(cursor, "a results cursor")
    query = ResultQuery(
        gpu_id=gpu_id,
        pending_gpu_id=f.pending_gpu_id,
        workload=f.workload,
        status=f.status,
        quarantined=f.quarantined,
        agent=f.agent,
        host=f.host,
        since=f.since,
        run_id=f.run_id,
        fingerprint_hash=f.fingerprint_hash,
        include_retracted=f.include_retracted,
        params=params,
        fingerprint=f.fingerprint,
    )
    rows = uow.benchmark_queries.list_results(query, before=before, limit=limit + 1)
    items, nxt = cut_page(rows, limit, lambda r: r.id)
    return ResultPage(items=items, next_cursor=nxt, data_version=uow.data_version())


@dataclass(frozen=True, slots=True)
class RunPage:
    items: tuple[StoredRun, ...]
    next_cursor: str | None
    data_version: str


def list_runs(
    uow: UnitOfWork,
    *,
    agent: int | None,
    state: str | None,
    gpu_slug: str | None,
    limit: int,
    cursor: str | None,
) -> RunPage:
    """Runs newest first; with ``agent`` = an API key id, everything that key submitted."""
    before = before_of(cursor, "a runs cursor", INT32_MAX)
    rows = uow.benchmark_queries.list_runs(
        agent=agent, state=state, gpu_slug=gpu_slug, before=before, limit=limit + 1
    )
    items, nxt = cut_page(rows, limit, lambda r: r.pk)
    return RunPage(items=items, next_cursor=nxt, data_version=uow.data_version())


# ---- latest measured --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MeasuredCell:
    """One (workload, canonical parameters) cell of a GPU under the latest-measured rule."""

    workload: str
    parameters: Mapping[str, object]
    parameters_hash: str
    main_metric: str
    fingerprint: Mapping[str, object]  # the chosen stack's fields
    view: CellView
    sort_key: tuple[str, str] = ("", "")  # (workload, canonical parameters as JSON): the listing order


@dataclass(frozen=True, slots=True)
class Measurements:
    gpu_slug: str
    min_points: int
    cells: tuple[MeasuredCell, ...]  # by workload, then parameters
    data_version: str
    next_cursor: str | None = None


def _page(m: Measurements, limit: int | None, cursor: str | None) -> Measurements:
    """Page limits: ``limit`` cells from the position the cursor names."""
    if limit is None:
        return m
    start = decode_position(cursor)[0] if cursor else 0
    page = m.cells[start : start + limit]
    nxt = encode_position(start + limit) if start + limit < len(m.cells) else None
    return replace(m, cells=page, next_cursor=nxt)


def measurements(
    uow: UnitOfWork,
    cache: ReadModel,
    ident: str,
    *,
    min_points: int,
    workload: str | None = None,
    params: Mapping[str, str] | None = None,
    fingerprint: Mapping[str, str] | None = None,
    fingerprint_hash: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Measurements:
    """The latest-measured view (DESIGN; :func:`service.core.evidence.aggregate.latest_measured`) of
    every (workload, canonical parameters) cell of a GPU, or of the cells matching the filters;
    ``limit`` cells per page."""
    return _page(
        _measurements(
            uow,
            cache,
            ident,
            min_points=min_points,
            workload=workload,
            params=params,
            fingerprint=fingerprint,
            fingerprint_hash=fingerprint_hash,
        ),
        limit,
        cursor,
    )


def _measurements(
    uow: UnitOfWork,
    cache: ReadModel,
    ident: str,
    *,
    min_points: int,
    workload: str | None = None,
    params: Mapping[str, str] | None = None,
    fingerprint: Mapping[str, str] | None = None,
    fingerprint_hash: str | None = None,
) -> Measurements:
    _check_workload(workload)
    pf = param_filters(workload, params or {})
    check_fingerprint_filters(fingerprint or {})
    if not any(name in FINGERPRINT_UNHASHED for name in (fingerprint or {})):
        return _measurements_from_snapshot(
            uow, cache, ident, min_points, workload, pf, fingerprint or {}, fingerprint_hash
        )
    # host-identity filters (fp.host_id...) select results, not stacks: read them from the
    # results, over the same window, with the same rule
    gid, slug = _gpu(uow, cache, ident)
    q = uow.benchmark_queries
    points = q.measured_points(
        gid, workload=workload, params=pf, fingerprint=fingerprint or {}, fingerprint_hash=fingerprint_hash
    )
    parameters = q.cell_parameters(gid, {ph for _, ph in points})
    views = {key: latest_measured(pts, min_points, cache.window) for key, pts in points.items()}
    fields = q.fingerprint_fields({v.fingerprint_hash for v in views.values()})
    cells = [
        MeasuredCell(
            workload=wl,
            parameters=parameters.get(ph, {}),
            parameters_hash=ph,
            main_metric=main_metric_of(wl, v.metrics),
            fingerprint=fields.get(v.fingerprint_hash, {}),
            view=v,
        )
        for (wl, ph), v in views.items()
    ]
    cells.sort(key=lambda c: (c.workload, json.dumps(c.parameters, sort_keys=True)))
    return Measurements(
        gpu_slug=slug, min_points=min_points, cells=tuple(cells), data_version=uow.data_version()
    )


def _param_matches(workload: str, params: Mapping[str, object], f: ParamFilter) -> bool:
    value = parameter_value(workload, params, f.name)
    if f.type in ("int", "float"):
        return (
            isinstance(value, int | float) and not isinstance(value, bool) and float(value) == float(f.value)
        )
    return bool(value == f.value)


def _measurements_from_snapshot(
    uow: UnitOfWork,
    read: ReadModel,
    ident: str,
    min_points: int,
    workload: str | None,
    pf: tuple[ParamFilter, ...],
    fingerprint: Mapping[str, str],
    fingerprint_hash: str | None,
) -> Measurements:
    """The view from the read snapshot's stack summaries: no result is read. Unfiltered
    cells are memoised per snapshot (the same view object serves every request until the
    measurement watermark moves)."""
    slug = resolve_gpu(uow, read, ident).record.slug
    snap = read.snapshot(uow, calibrated=False).measurements
    stack_filter = bool(fingerprint) or fingerprint_hash is not None
    cells: list[MeasuredCell] = []
    for key in snap.by_gpu.get(slug, ()):
        c = snap.cells[key]
        if workload is not None and c.workload != workload:
            continue
        if not all(_param_matches(c.workload, c.params, f) for f in pf):
            continue
        if not stack_filter:
            memo_key = ("cell", key, min_points)
            found = snap.memo.get(memo_key)
            if found is None:
                found = snap.memo[memo_key] = _measured_cell(c, list(c.stacks), snap.fingerprints, min_points)
            cells.append(found)
            continue
        stacks = [
            s
            for s in c.stacks
            if (fingerprint_hash is None or s.fingerprint_hash == fingerprint_hash)
            and all(
                fp_value_matches(snap.fingerprints.get(s.fingerprint_hash, {}).get(k), v)
                for k, v in fingerprint.items()
            )
        ]
        if stacks:
            cells.append(_measured_cell(c, stacks, snap.fingerprints, min_points))
    cells.sort(key=lambda c: c.sort_key)
    return Measurements(
        gpu_slug=slug, min_points=min_points, cells=tuple(cells), data_version=uow.data_version()
    )


def _measured_cell(
    c: MeasuredCellStacks, stacks: list[StackWindow], fingerprints: Mapping[str, Mapping[str, Any]], k: int
) -> MeasuredCell:
    v = view_of(stacks, k)
    return MeasuredCell(
        workload=c.workload,
        parameters=dict(c.params),
        parameters_hash=c.params_hash,
        main_metric=main_metric_of(c.workload, v.metrics),
        fingerprint=dict(fingerprints.get(v.fingerprint_hash, {})),
        view=v,
        sort_key=(c.workload, json.dumps(c.params, sort_keys=True, default=str)),
    )


# ---- vocabulary and coverage --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Vocabulary:
    suite_version: str
    suite_definition_hash: str
    precisions: tuple[str, ...]
    statuses: tuple[str, ...]
    memory_fields: tuple[str, ...]
    fingerprint_required: tuple[str, ...]
    fingerprint_nullable: tuple[str, ...]
    workloads: tuple[WorkloadDef, ...]  # by name


def workloads() -> Vocabulary:
    return Vocabulary(
        suite_version=SUITE_VERSION,
        suite_definition_hash=suite_definition_hash(),
        precisions=tuple(PRECISIONS),
        statuses=tuple(RESULT_STATUSES),
        memory_fields=tuple(MEMORY_FIELDS),
        fingerprint_required=tuple(FINGERPRINT_REQUIRED),
        fingerprint_nullable=tuple(FINGERPRINT_NULLABLE),
        workloads=tuple(w for _, w in sorted(WORKLOADS.items())),
    )


def workload(name: str) -> WorkloadDef:
    w = WORKLOADS.get(name)
    if w is None:
        raise NotFound(f"no workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    return w


@dataclass(frozen=True, slots=True)
class CoverageRow:
    gpu_slug: str
    name: str
    workloads: Mapping[str, CoverageStats]


@dataclass(frozen=True, slots=True)
class Coverage:
    workloads: tuple[str, ...]
    rows: tuple[CoverageRow, ...]
    empty_cells: tuple[tuple[str, str], ...]  # (gpu slug, workload) with no results
    pending_runs: int
    data_version: str


_EMPTY = CoverageStats(
    results=0,
    usable=0,
    quarantined=0,
    oom=0,
    error=0,
    configurations=0,
    fingerprints=0,
    hosts=0,
    newest_measured_at=None,
)


def coverage(uow: UnitOfWork) -> Coverage:
    """GPU x workload: counts over non-retracted results of catalog GPUs; empty cells listed."""
    q = uow.benchmark_queries
    stats = q.coverage_stats()
    names = sorted(WORKLOADS)
    rows: list[CoverageRow] = []
    empty: list[tuple[str, str]] = []
    for gpu in q.live_gpu_list():
        cells: dict[str, CoverageStats] = {}
        for wl in names:
            c = stats.get((gpu.id, wl))
            if c is None:
                empty.append((gpu.slug, wl))
                c = _EMPTY
            cells[wl] = c
        rows.append(CoverageRow(gpu_slug=gpu.slug, name=gpu.name, workloads=cells))
    return Coverage(
        workloads=tuple(names),
        rows=tuple(rows),
        empty_cells=tuple(empty),
        pending_runs=q.pending_run_count(),
        data_version=uow.data_version(),
    )
