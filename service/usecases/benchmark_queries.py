"""Reading benchmark data: a run, result listings with filters, the latest-measured view of a
GPU, the workload vocabulary and the coverage matrix. Read-only: nothing here commits."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import and_, case, distinct, func, select

from service.core.aggregate import Point, Summary, latest_measured
from service.core.cursor import decode_cursor, encode_cursor
from service.core.vocabulary import (
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
    coerce_parameter,
    suite_definition_hash,
)
from service.db.models import ApiKey, BenchmarkFingerprint, BenchmarkResult, BenchmarkRun, Gpu
from service.db.uow import UnitOfWork
from service.schemas.benchmarks import (
    AgentRef,
    CoverageCell,
    CoverageOut,
    CoverageRow,
    FingerprintBrief,
    GpuRef,
    MeasuredCellOut,
    MeasurementsOut,
    MetricValue,
    Quarantine,
    ResultList,
    ResultOut,
    Review,
    RunList,
    RunOut,
    RunSummary,
    SummaryOut,
    WorkloadList,
    WorkloadOut,
)
from service.usecases.benchmark_cells import utc
from service.usecases.catalog import AliasIndexCache, resolve_gpu
from service.usecases.errors import FieldError, Invalid, NotFound

# ---- row -> wire ------------------------------------------------------------------------------


def _unit(workload: str, metric: str) -> str:
    w = WORKLOADS.get(workload)
    m = w.metric(metric) if w else None
    return m.unit if m else ""


def result_out(
    r: BenchmarkResult,
    *,
    run_id: str,
    host: str,
    key_id: int | None,
    key_name: str | None,
    trusted: bool | None,
    slug: str | None,
    pending_gpu_id: int | None,
) -> ResultOut:
    return ResultOut(
        id=r.id,
        run_id=run_id,
        position=r.position,
        gpu_slug=slug,
        pending_gpu_id=pending_gpu_id if slug is None else None,
        workload=r.workload,
        parameters=r.params,
        parameters_hash=r.params_hash,
        fingerprint_hash=r.fingerprint_hash,
        host=host,
        agent=AgentRef(key_id=key_id, name=key_name, trusted=bool(trusted)),
        status=r.status,
        metrics={k: MetricValue(value=float(v), unit=_unit(r.workload, k)) for k, v in r.metrics.items()},
        step_time_s=r.step_time_s,
        peak_allocated_bytes=r.peak_allocated_bytes,
        peak_reserved_bytes=r.peak_reserved_bytes,
        nvml_used_bytes=r.nvml_used_bytes,
        repeats=r.repeats,
        error=r.error,
        measured_at=utc(r.measured_at),
        quarantined=r.quarantined,
        quarantine=Quarantine(reason=r.quarantine_reason, detail=r.quarantine_detail)
        if r.quarantined and r.quarantine_reason
        else None,
        review=Review(
            state=r.review_state,
            reason=r.review_reason,
            reviewed_at=utc(r.reviewed_at) if r.reviewed_at else None,
            reviewed_by_key_id=r.reviewed_by_key_id,
        )
        if r.review_state
        else None,
        retracted=r.retracted,
    )


def _result_query() -> Any:
    return (
        select(
            BenchmarkResult,
            BenchmarkRun.run_id,
            BenchmarkRun.host,
            BenchmarkRun.api_key_id,
            ApiKey.name,
            ApiKey.trusted,
            Gpu.slug,
            BenchmarkRun.pending_gpu_id,
        )
        .join(BenchmarkRun, BenchmarkRun.id == BenchmarkResult.run_pk)
        .outerjoin(ApiKey, ApiKey.id == BenchmarkRun.api_key_id)
        .outerjoin(Gpu, Gpu.id == BenchmarkResult.gpu_id)
    )


def _rows_to_out(rows: Sequence[Any]) -> list[ResultOut]:
    return [
        result_out(
            r[0], run_id=r[1], host=r[2], key_id=r[3], key_name=r[4], trusted=r[5], slug=r[6], pending_gpu_id=r[7]
        )
        for r in rows
    ]


def get_result(uow: UnitOfWork, result_id: int) -> ResultOut:
    row = uow.session.execute(_result_query().where(BenchmarkResult.id == result_id)).first()
    if row is None:
        raise NotFound(f"no benchmark result with id {result_id}")
    return _rows_to_out([row])[0]


def run_state(run: BenchmarkRun) -> str:
    if run.retracted_at is not None:
        return "retracted"
    return "accepted" if run.gpu_id is not None else "pending"


def _agent(uow: UnitOfWork, key_id: int | None) -> AgentRef:
    key = uow.session.get(ApiKey, key_id) if key_id is not None else None
    return AgentRef(key_id=key_id, name=key.name if key else None, trusted=bool(key and key.trusted))


def get_run(uow: UnitOfWork, run_id: str, *, include_results: bool = True) -> RunOut:
    s = uow.session
    run = s.scalars(select(BenchmarkRun).where(BenchmarkRun.run_id == run_id)).first()
    if run is None:
        raise NotFound(f"no benchmark run with run_id {run_id!r}")
    slug = s.scalar(select(Gpu.slug).where(Gpu.id == run.gpu_id)) if run.gpu_id is not None else None
    counts = dict(
        s.execute(
            select(BenchmarkResult.status, func.count()).where(BenchmarkResult.run_pk == run.id).group_by(BenchmarkResult.status)
        ).all()
    )
    quarantined = s.scalar(
        select(func.count()).where(BenchmarkResult.run_pk == run.id, BenchmarkResult.quarantined.is_(True))
    )
    results = None
    if include_results:
        rows = s.execute(_result_query().where(BenchmarkResult.run_pk == run.id).order_by(BenchmarkResult.position)).all()
        results = _rows_to_out(rows)
    return RunOut(
        run_id=run.run_id,
        state=run_state(run),
        agent=_agent(uow, run.api_key_id),
        host=run.host,
        gpu=GpuRef(
            slug=slug, pending_gpu_id=run.pending_gpu_id, resolved_by=run.resolved_by, identity=run.gpu_identity
        ),
        gpu_count=run.gpu_count,
        suite_version=run.suite_version,
        fingerprint=run.fingerprint,
        fingerprint_hash=run.fingerprint_hash,
        started_at=utc(run.started_at) if run.started_at else None,
        finished_at=utc(run.finished_at) if run.finished_at else None,
        received_at=utc(run.received_at),
        notes=run.notes,
        result_count=run.result_count,
        status_counts={k: int(counts.get(k, 0)) for k in RESULT_STATUSES},
        quarantined_count=int(quarantined or 0),
        retracted_at=utc(run.retracted_at) if run.retracted_at else None,
        retract_reason=run.retract_reason,
        results=results,
        data_version=uow.data_version(),
    )


# ---- filters ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultFilters:
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


def param_conditions(workload: str | None, params: Mapping[str, str]) -> list[Any]:
    """``param.<name>=<value>`` -> typed JSON comparisons on the canonical parameters."""
    if not params:
        return []
    if workload is None:
        name = next(iter(params))
        raise Invalid(
            "parameter filters need a workload (parameter types come from its definition)",
            fields=[FieldError((f"param.{name}",), "add workload=<name>")],
        )
    w = WORKLOADS[workload]
    conds: list[Any] = []
    for name, raw in params.items():
        try:
            value = coerce_parameter(workload, name, raw, ("query", f"param.{name}"))
        except VocabularyError as exc:
            raise Invalid(exc.message, fields=[FieldError((f"param.{name}",), exc.message)]) from None
        p = w.param(name)
        col = BenchmarkResult.params[name]
        if p is None:  # pragma: no cover - coerce_parameter refused it already
            continue
        if p.type == "int":
            conds.append(col.as_integer() == value)
        elif p.type == "float":
            conds.append(col.as_float() == value)
        elif p.type == "bool":
            conds.append(col.as_boolean().is_(True) if value else col.as_boolean().is_(False))
        else:
            conds.append(col.as_string() == value)
    return conds


def _fp_value_matches(stored: Any, query: str) -> bool:
    q = query.strip()
    if stored is None:
        return q.lower() in ("", "null", "none")
    if isinstance(stored, bool):
        return q.lower() in (("true", "1", "on", "yes") if stored else ("false", "0", "off", "no"))
    if isinstance(stored, (int, float)):
        try:
            return float(q) == float(stored)
        except ValueError:
            return False
    if isinstance(stored, str):
        return stored == q
    return json.dumps(stored, sort_keys=True) == q


def fingerprint_conditions(uow: UnitOfWork, fp: Mapping[str, str]) -> list[Any]:
    """``fp.<field>=<value>``: stack fields are matched against the (small) fingerprint table
    and become a ``fingerprint_hash IN (...)``; host identity fields compare on the run."""
    if not fp:
        return []
    conds: list[Any] = []
    stack: dict[str, str] = {}
    for name, value in fp.items():
        if name not in FINGERPRINT_FIELDS:
            raise Invalid(
                f"unknown fingerprint field {name!r}",
                fields=[FieldError((f"fp.{name}",), f"one of {', '.join(FINGERPRINT_FIELDS)}")],
            )
        if name in FINGERPRINT_UNHASHED:
            conds.append(BenchmarkRun.fingerprint[name].as_string() == value)
        else:
            stack[name] = value
    if stack:
        hashes = [
            h
            for h, fields in uow.session.execute(select(BenchmarkFingerprint.hash, BenchmarkFingerprint.fields))
            if all(_fp_value_matches(fields.get(k), v) for k, v in stack.items())
        ]
        conds.append(BenchmarkResult.fingerprint_hash.in_(hashes))
    return conds


def _gpu_id(uow: UnitOfWork, cache: AliasIndexCache, ident: str) -> tuple[int, str]:
    slug = resolve_gpu(uow, cache, ident).record.slug
    gid = uow.session.scalar(select(Gpu.id).where(Gpu.slug == slug))
    if gid is None:  # pragma: no cover - resolve_gpu found it
        raise NotFound(f"no GPU with slug {slug!r}")
    return int(gid), slug


def list_results(
    uow: UnitOfWork, cache: AliasIndexCache, f: ResultFilters, *, limit: int, cursor: str | None
) -> ResultList:
    """Newest first (by id), keyset pagination."""
    _check_workload(f.workload)
    conds: list[Any] = []
    if f.gpu is not None:
        gid, _ = _gpu_id(uow, cache, f.gpu)
        conds.append(BenchmarkResult.gpu_id == gid)
    if f.pending_gpu_id is not None:
        conds.append(and_(BenchmarkRun.pending_gpu_id == f.pending_gpu_id, BenchmarkResult.gpu_id.is_(None)))
    if f.workload is not None:
        conds.append(BenchmarkResult.workload == f.workload)
    if f.status is not None:
        conds.append(BenchmarkResult.status == f.status)
    if f.quarantined is not None:
        conds.append(BenchmarkResult.quarantined.is_(f.quarantined))
    if f.agent is not None:
        conds.append(BenchmarkRun.api_key_id == f.agent)
    if f.host is not None:
        conds.append(BenchmarkRun.host == f.host)
    if f.since is not None:
        since = f.since if f.since.tzinfo else f.since.replace(tzinfo=dt.UTC)
        conds.append(BenchmarkResult.measured_at >= since)
    if f.run_id is not None:
        conds.append(BenchmarkRun.run_id == f.run_id)
    if f.fingerprint_hash is not None:
        conds.append(BenchmarkResult.fingerprint_hash == f.fingerprint_hash)
    if not f.include_retracted:
        conds.append(BenchmarkResult.retracted.is_(False))
    conds.extend(param_conditions(f.workload, f.params))
    conds.extend(fingerprint_conditions(uow, f.fingerprint))
    if cursor:
        c = decode_cursor(cursor)
        before = c.get("before")
        if not isinstance(before, int):
            raise Invalid("the cursor is not valid", fields=[FieldError(("cursor",), "not a results cursor")])
        conds.append(BenchmarkResult.id < before)
    rows = uow.session.execute(_result_query().where(*conds).order_by(BenchmarkResult.id.desc()).limit(limit + 1)).all()
    more = len(rows) > limit
    items = _rows_to_out(rows[:limit])
    nxt = encode_cursor({"before": items[-1].id}) if more and items else None
    return ResultList(items=items, count=len(items), next_cursor=nxt, data_version=uow.data_version())


# ---- runs by agent (admin) --------------------------------------------------------------------------


def list_runs(
    uow: UnitOfWork,
    *,
    agent: int | None,
    state: str | None,
    gpu_slug: str | None,
    limit: int,
    cursor: str | None,
) -> RunList:
    """Runs newest first; with ``agent`` = an API key id, everything that key submitted."""
    s = uow.session
    conds: list[Any] = []
    if agent is not None:
        conds.append(BenchmarkRun.api_key_id == agent)
    if state == "retracted":
        conds.append(BenchmarkRun.retracted_at.is_not(None))
    elif state == "pending":
        conds.extend([BenchmarkRun.retracted_at.is_(None), BenchmarkRun.gpu_id.is_(None)])
    elif state == "accepted":
        conds.extend([BenchmarkRun.retracted_at.is_(None), BenchmarkRun.gpu_id.is_not(None)])
    if gpu_slug is not None:
        conds.append(Gpu.slug == gpu_slug)
    if cursor:
        c = decode_cursor(cursor)
        before = c.get("before")
        if not isinstance(before, int):
            raise Invalid("the cursor is not valid", fields=[FieldError(("cursor",), "not a runs cursor")])
        conds.append(BenchmarkRun.id < before)
    q = (
        select(BenchmarkRun, Gpu.slug, ApiKey.name, ApiKey.trusted)
        .outerjoin(Gpu, Gpu.id == BenchmarkRun.gpu_id)
        .outerjoin(ApiKey, ApiKey.id == BenchmarkRun.api_key_id)
        .where(*conds)
        .order_by(BenchmarkRun.id.desc())
        .limit(limit + 1)
    )
    rows = s.execute(q).all()
    more = len(rows) > limit
    rows = rows[:limit]
    ids = [r[0].id for r in rows]
    qcount: dict[int, int] = {}
    if ids:
        qcount = {
            int(k): int(v)
            for k, v in s.execute(
                select(BenchmarkResult.run_pk, func.count())
                .where(BenchmarkResult.run_pk.in_(ids), BenchmarkResult.quarantined.is_(True))
                .group_by(BenchmarkResult.run_pk)
            )
        }
    items = [
        run_summary(run, slug=slug, key_name=name, trusted=trusted, quarantined=qcount.get(run.id, 0))
        for run, slug, name, trusted in rows
    ]
    nxt = encode_cursor({"before": ids[-1]}) if more and ids else None
    return RunList(items=items, count=len(items), next_cursor=nxt, data_version=uow.data_version())


def run_summary(run: BenchmarkRun, *, slug: str | None, key_name: str | None, trusted: bool | None, quarantined: int) -> RunSummary:
    return RunSummary(
        run_id=run.run_id,
        state=run_state(run),
        agent=AgentRef(key_id=run.api_key_id, name=key_name, trusted=bool(trusted)),
        host=run.host,
        gpu_slug=slug,
        pending_gpu_id=run.pending_gpu_id,
        fingerprint_hash=run.fingerprint_hash,
        result_count=run.result_count,
        quarantined_count=quarantined,
        received_at=utc(run.received_at),
        retracted_at=utc(run.retracted_at) if run.retracted_at else None,
        retract_reason=run.retract_reason,
    )


# ---- latest measured --------------------------------------------------------------------------------


def _summary_out(s: Summary, unit: str) -> SummaryOut:
    return SummaryOut(unit=unit, count=s.count, median=s.median, p10=s.p10, p90=s.p90, min=s.min, max=s.max)


def _main_metric_of(workload: str, present: Mapping[str, Any]) -> str:
    """The workload's main metric, or the first it defines that the cell has (an integer GEMM
    reports ``tops``, not ``tflops``)."""
    w = WORKLOADS[workload]
    if w.main_metric in present or not present:
        return w.main_metric
    return next((m.name for m in w.metrics if m.name in present), w.main_metric)


def measurements(
    uow: UnitOfWork,
    cache: AliasIndexCache,
    ident: str,
    *,
    min_points: int,
    workload: str | None = None,
    params: Mapping[str, str] | None = None,
    fingerprint: Mapping[str, str] | None = None,
    fingerprint_hash: str | None = None,
) -> MeasurementsOut:
    """The latest-measured view (DESIGN) of every (workload, canonical parameters) cell of a
    GPU, or of the cells matching the filters."""
    _check_workload(workload)
    gid, slug = _gpu_id(uow, cache, ident)
    conds: list[Any] = [BenchmarkResult.gpu_id == gid, BenchmarkResult.retracted.is_(False)]
    if workload is not None:
        conds.append(BenchmarkResult.workload == workload)
    conds.extend(param_conditions(workload, params or {}))
    conds.extend(fingerprint_conditions(uow, fingerprint or {}))
    if fingerprint_hash is not None:
        conds.append(BenchmarkResult.fingerprint_hash == fingerprint_hash)
    q = (
        select(
            BenchmarkResult.id,
            BenchmarkResult.workload,
            BenchmarkResult.params_hash,
            BenchmarkResult.fingerprint_hash,
            BenchmarkResult.status,
            BenchmarkResult.quarantined,
            BenchmarkResult.measured_at,
            BenchmarkResult.metrics,
            BenchmarkResult.peak_allocated_bytes,
            BenchmarkResult.peak_reserved_bytes,
            BenchmarkResult.nvml_used_bytes,
            BenchmarkRun.host,
            ApiKey.trusted,
        )
        .join(BenchmarkRun, BenchmarkRun.id == BenchmarkResult.run_pk)
        .outerjoin(ApiKey, ApiKey.id == BenchmarkRun.api_key_id)
        .where(*conds)
    )
    cells: dict[tuple[str, str], list[Point]] = {}
    for r in uow.session.execute(q):
        mem = {k: v for k, v in (("peak_allocated_bytes", r[8]), ("peak_reserved_bytes", r[9]), ("nvml_used_bytes", r[10])) if v is not None}
        cells.setdefault((r[1], r[2]), []).append(
            Point(
                result_id=r[0],
                fingerprint_hash=r[3],
                host=r[11],
                trusted=bool(r[12]),
                status=r[4],
                quarantined=r[5],
                measured_at=utc(r[6]),
                metrics={k: float(v) for k, v in r[7].items()},
                memory=mem,
            )
        )
    # one parameters document per cell (identical across its rows)
    params_by_hash: dict[str, dict[str, Any]] = {}
    hashes = sorted({ph for _, ph in cells})
    if hashes:
        first_ids = (
            select(func.min(BenchmarkResult.id))
            .where(BenchmarkResult.gpu_id == gid, BenchmarkResult.params_hash.in_(hashes))
            .group_by(BenchmarkResult.params_hash)
        )
        for ph, p in uow.session.execute(
            select(BenchmarkResult.params_hash, BenchmarkResult.params).where(BenchmarkResult.id.in_(first_ids))
        ):
            params_by_hash[ph] = p
    views = {key: latest_measured(points, min_points) for key, points in cells.items()}
    fp_hashes = {v.fingerprint_hash for v in views.values()}
    fields = {
        h: f
        for h, f in uow.session.execute(
            select(BenchmarkFingerprint.hash, BenchmarkFingerprint.fields).where(BenchmarkFingerprint.hash.in_(fp_hashes))
        )
    } if fp_hashes else {}
    out: list[MeasuredCellOut] = []
    for (wl, ph), v in views.items():
        out.append(
            MeasuredCellOut(
                workload=wl,
                parameters=params_by_hash.get(ph, {}),
                parameters_hash=ph,
                main_metric=_main_metric_of(wl, v.metrics),
                fingerprint_hash=v.fingerprint_hash,
                fingerprint=fields.get(v.fingerprint_hash, {}),
                thin=v.thin,
                count=v.count,
                metrics={n: _summary_out(s, _unit(wl, n)) for n, s in sorted(v.metrics.items())},
                memory={n: _summary_out(s, "B") for n, s in sorted(v.memory.items())},
                status_counts=dict(v.status_counts),
                oom_count=v.oom_count_all_fingerprints,
                quarantined_count=v.quarantined_count,
                newest_measured_at=v.newest_measured_at,
                host_count=v.host_count,
                trusted_agent=v.trusted_agent,
                provenance=v.provenance,
                provenance_code=v.provenance_code,
                provenance_reason=v.provenance_reason,
                other_fingerprints=[
                    FingerprintBrief(
                        fingerprint_hash=o.fingerprint_hash,
                        usable_count=o.usable,
                        result_count=o.total,
                        newest_measured_at=o.newest,
                    )
                    for o in v.other_fingerprints
                ],
            )
        )
    out.sort(key=lambda c: (c.workload, json.dumps(c.parameters, sort_keys=True)))
    return MeasurementsOut(gpu_slug=slug, min_points=min_points, cells=out, data_version=uow.data_version())


# ---- vocabulary and coverage --------------------------------------------------------------------------


def workloads() -> WorkloadList:
    items = [WorkloadOut(**w.as_dict(), definition_hash=w.definition_hash) for _, w in sorted(WORKLOADS.items())]
    return WorkloadList(
        suite_version=SUITE_VERSION,
        suite_definition_hash=suite_definition_hash(),
        precisions=list(PRECISIONS),
        statuses=list(RESULT_STATUSES),
        memory_fields=list(MEMORY_FIELDS),
        fingerprint_required=list(FINGERPRINT_REQUIRED),
        fingerprint_nullable=list(FINGERPRINT_NULLABLE),
        items=items,
    )


def workload(name: str) -> WorkloadOut:
    w = WORKLOADS.get(name)
    if w is None:
        raise NotFound(f"no workload {name!r}; known: {', '.join(sorted(WORKLOADS))}")
    return WorkloadOut(**w.as_dict(), definition_hash=w.definition_hash)


def coverage(uow: UnitOfWork) -> CoverageOut:
    """GPU x workload: counts over non-retracted results of catalog GPUs; empty cells listed."""
    s = uow.session
    R = BenchmarkResult
    usable = case((and_(R.status == "ok", R.quarantined.is_(False)), 1), else_=0)
    q = (
        select(
            R.gpu_id,
            R.workload,
            func.count(),
            func.sum(usable),
            func.sum(case((R.quarantined.is_(True), 1), else_=0)),
            func.sum(case((R.status == "oom", 1), else_=0)),
            func.sum(case((R.status == "error", 1), else_=0)),
            func.count(distinct(R.params_hash)),
            func.count(distinct(R.fingerprint_hash)),
            func.count(distinct(BenchmarkRun.host)),
            func.max(R.measured_at),
        )
        .join(BenchmarkRun, BenchmarkRun.id == R.run_pk)
        .where(R.gpu_id.is_not(None), R.retracted.is_(False))
        .group_by(R.gpu_id, R.workload)
    )
    stats: dict[tuple[int, str], CoverageCell] = {}
    for g, wl, n, ok, qn, oom, err, cfg, fps, hosts, newest in s.execute(q):
        stats[(int(g), wl)] = CoverageCell(
            results=int(n),
            usable=int(ok or 0),
            quarantined=int(qn or 0),
            oom=int(oom or 0),
            error=int(err or 0),
            configurations=int(cfg),
            fingerprints=int(fps),
            hosts=int(hosts),
            newest_measured_at=utc(newest) if isinstance(newest, dt.datetime) else None,
        )
    names = sorted(WORKLOADS)
    empty_cell = CoverageCell(
        results=0, usable=0, quarantined=0, oom=0, error=0, configurations=0, fingerprints=0, hosts=0, newest_measured_at=None
    )
    rows: list[CoverageRow] = []
    empty: list[tuple[str, str]] = []
    for gid, slug, name in s.execute(select(Gpu.id, Gpu.slug, Gpu.name).where(Gpu.deleted.is_(False)).order_by(Gpu.slug)):
        cells: dict[str, CoverageCell] = {}
        for wl in names:
            c = stats.get((int(gid), wl))
            if c is None:
                empty.append((slug, wl))
                c = empty_cell
            cells[wl] = c
        rows.append(CoverageRow(gpu_slug=slug, name=name, workloads=cells))
    pending = s.scalar(
        select(func.count()).where(BenchmarkRun.gpu_id.is_(None), BenchmarkRun.retracted_at.is_(None))
    )
    return CoverageOut(
        workloads=names, rows=rows, empty_cells=empty, pending_runs=int(pending or 0), data_version=uow.data_version()
    )
