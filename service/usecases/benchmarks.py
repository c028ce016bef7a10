"""Benchmark submission (``POST /v1/benchmark-runs`` and ``/validate``) and the loader for
committed measurement datasets.

One submission is one transaction, committed before the answer is returned:

1. the run id is the idempotency key: a stored run with the same canonical body hash is
   answered with the stored response; a different body is a 409;
2. vocabulary checks (workload, parameters, metrics and units, finite non-negative numbers,
   fingerprint completeness) -- every violation is reported with its ``loc``; nothing else is
   refused (DESIGN: only schema and unit errors are 422);
3. the GPU is resolved (admin mapping of this identity, PCI id + memory, NVML name); an unknown
   one makes the run ``pending`` in the admin queue;
4. catalog checks per result (above the dense peak, above usable memory) and, once the rows
   are in, the MAD outlier test over every touched (GPU, fingerprint, parameters) cell, with
   quarantine reasons and admin alerts;
5. rows go in with one multi-row INSERT (``insertmanyvalues``); hashes are computed once per
   distinct parameter set.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from math import isfinite
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError
from sqlalchemy import Engine, Table, select
from sqlalchemy.exc import IntegrityError

from service.core.quarantine import static_findings
from service.core.vocabulary import (
    FINGERPRINT_FIELDS,
    FINGERPRINT_NULLABLE,
    FINGERPRINT_REQUIRED,
    FINGERPRINT_UNHASHED,
    WORKLOADS,
    VocabularyError,
    WorkloadDef,
    canonical_parameters,
    check_fingerprint,
    check_metric,
    check_number,
    fingerprint_hash,
    get_workload,
    normalise_pci_id,
    suite_definition_hash,
)
from service.db.benchmarks_repo import insert_results
from service.db.engine import make_session_factory
from service.db.models import (
    ApiKey,
    BenchmarkFingerprint,
    BenchmarkRun,
    IdempotencyRecord,
    PendingGpu,
)
from service.db.uow import UnitOfWork
from service.schemas.benchmarks import BenchmarkRunIn
from service.settings import Settings
from service.usecases.benchmark_cells import (
    AlertDraft,
    CellKey,
    Flip,
    GpuMatch,
    VirtualPoint,
    add_alerts,
    insert_ignore,
    lock_cells,
    outlier_alert,
    resolve_gpu,
    run_outlier_test,
    write_flips,
)
from service.usecases.catalog import AliasIndexCache
from service.usecases.errors import (
    FieldError,
    IdempotencyConflict,
    Invalid,
    PayloadTooLarge,
    RunIdTaken,
    UseCaseError,
)
from service.usecases.keys import Principal

log = logging.getLogger("gpu_advisor.benchmarks")

IDEMPOTENCY_SCOPE = "benchmark-runs"


# ---- validation (pure) -----------------------------------------------------------------------


@dataclass(slots=True)
class PreparedResult:
    position: int
    workload: str
    params: dict[str, Any]
    params_hash: str
    params_json: str
    status: str
    metrics: dict[str, float]
    main_value: float | None
    step_time_s: float | None
    memory: dict[str, int | None]
    repeats: int | None
    error: str | None
    measured_at: dt.datetime
    check_reason: str | None = None
    check_detail: str | None = None


@dataclass(slots=True)
class PreparedRun:
    body: BenchmarkRunIn
    pci_device_id: str
    fingerprint: dict[str, Any]
    fingerprint_hash: str
    stack_fields: dict[str, Any]
    results: list[PreparedResult]
    warnings: list[str] = field(default_factory=list)


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def request_hash(body: BenchmarkRunIn) -> str:
    """SHA-256 of the parsed body serialised by its schema: typed fields are normalised
    (``2500`` and ``2500.0`` for a metric value are one float), free-form maps are key-sorted
    by the schema, so only a change of content changes the hash."""
    return hashlib.sha256(body.model_dump_json().encode()).hexdigest()


def params_identity(workload: str, canonical: Mapping[str, Any]) -> tuple[str, str]:
    """(``parameters_hash``, canonical JSON of the parameters) from one serialisation: the
    hash is :func:`service.core.vocabulary.parameters_hash` -- SHA-256 of the sorted, compact
    JSON of ``{"parameters": ..., "workload": ...}`` -- built around the parameters' own JSON,
    which is also what gets stored (tests check the two stay equal)."""
    pj = _CANONICAL_JSON.encode(canonical)
    blob = f'{{"parameters":{pj},"workload":{_CANONICAL_JSON.encode(workload)}}}'
    return hashlib.sha256(blob.encode()).hexdigest()[:16], pj


# the settings of service.core.vocabulary.stable_hash, built once (json.dumps builds one per call)
_CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


_Canonical = tuple[dict[str, Any], str, str]  # canonical parameters, their hash, their JSON
# metric units by (workload, metric) for the fast path of the unit check
_UNITS: dict[tuple[str, str], str] = {(w.name, m.name): m.unit for w in WORKLOADS.values() for m in w.metrics}
_CANON_CACHE_SIZE = 50_000


class _CanonicalCache:
    """Raw parameters -> canonical parameters, hash and JSON, shared across requests: agents
    submit the same configuration grid run after run. Bounded (oldest entries dropped);
    values are never mutated by their users."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.data: dict[tuple[str, tuple[tuple[str, Any], ...]], _Canonical] = {}
        self.lock = threading.Lock()

    def get(self, workload: str, params: Mapping[str, Any]) -> _Canonical:
        # the wire model hands parameters over key-sorted, so the items are the key as they are
        key = (workload, tuple(params.items()))
        try:
            hit = self.data.get(key)
        except TypeError:  # unhashable values: not cached (canonicalisation refuses them anyway)
            return self._compute(workload, params)
        if hit is None:
            hit = self._compute(workload, params)
            with self.lock:
                if len(self.data) >= self.size:
                    for old in list(self.data)[: self.size // 10]:
                        self.data.pop(old, None)
                self.data[key] = hit
        return hit

    @staticmethod
    def _compute(workload: str, params: Mapping[str, Any]) -> _Canonical:
        canon = canonical_parameters(workload, params, ("parameters",))
        return (canon, *params_identity(workload, canon))


_canonical = _CanonicalCache(_CANON_CACHE_SIZE).get


def _main_value(w: WorkloadDef, metrics: Mapping[str, float]) -> float | None:
    """The workload's main metric, else the first metric it defines that was reported
    (``tops`` for an integer GEMM)."""
    if w.main_metric in metrics:
        return metrics[w.main_metric]
    for m in w.metrics:
        if m.name in metrics:
            return metrics[m.name]
    return None


def prepare_run(body: BenchmarkRunIn, *, received_at: dt.datetime) -> PreparedRun:
    """Vocabulary validation and canonicalisation; every violation is collected, then one
    :class:`Invalid` names them all (``loc`` starts with ``body``)."""
    errors: list[FieldError] = []

    def err(loc: tuple[str | int, ...], msg: str) -> None:
        errors.append(FieldError(loc, msg, type="vocabulary"))

    fp = body.fingerprint
    fp_errors = len(errors)
    for key in FINGERPRINT_REQUIRED:
        if key not in fp or fp[key] is None or fp[key] == "":
            err(("fingerprint", key), f"fingerprint field {key!r} is required")
    for key in FINGERPRINT_NULLABLE:
        if key not in fp:
            err(("fingerprint", key), f"fingerprint field {key!r} is required (null where not applicable)")
    for key in fp:
        if key not in FINGERPRINT_FIELDS:
            err(("fingerprint", key), f"unknown fingerprint field {key!r}")
    checked_fp: dict[str, Any] = {}
    if len(errors) == fp_errors:
        try:
            checked_fp = check_fingerprint(fp)
        except VocabularyError as exc:
            err(exc.loc, exc.message)

    pci = ""
    try:
        pci = normalise_pci_id(body.gpu.pci_device_id, ("gpu", "pci_device_id"))
    except VocabularyError as exc:
        err(exc.loc, exc.message)

    run_time = _aware(body.finished_at) or _aware(body.started_at) or received_at
    results: list[PreparedResult] = []
    for i, r in enumerate(body.results):
        base: tuple[str | int, ...] = ("results", i)
        try:
            w = get_workload(r.workload, (*base, "workload"))
        except VocabularyError as exc:
            err(exc.loc, exc.message)
            continue
        ok = True
        hit: _Canonical | None = None
        try:
            hit = _canonical(w.name, r.parameters)
        except VocabularyError as exc:
            err((*base, *exc.loc), exc.message)
            ok = False
        metrics: dict[str, float] = {}
        for name, mv in r.metrics.items():
            value, unit = mv.value, _UNITS.get((w.name, name))
            if unit is not None and unit == mv.unit and value >= 0 and isfinite(value):  # the common case
                metrics[name] = value
                continue
            try:
                metrics[name] = check_metric(w.name, name, value, mv.unit, (*base, "metrics", name))
            except VocabularyError as exc:
                err(exc.loc, exc.message)
                ok = False
        memory: dict[str, int | None] = {
            "peak_allocated_bytes": r.peak_allocated_bytes,
            "peak_reserved_bytes": r.peak_reserved_bytes,
            "nvml_used_bytes": r.nvml_used_bytes,
        }
        numbers = [*memory.items(), ("step_time_s", r.step_time_s)]
        for fname, v in numbers:
            if v is None or (v >= 0 and isfinite(v)):  # the common case, without a call
                continue
            try:
                check_number(v, (*base, fname), fname)
            except VocabularyError as exc:
                err(exc.loc, exc.message)
                ok = False
        if not ok or hit is None:
            continue
        if r.step_time_s is not None and "step_time_s" in {m.name for m in w.metrics}:
            metrics.setdefault("step_time_s", float(r.step_time_s))
        results.append(
            PreparedResult(
                position=i,
                workload=w.name,
                params=hit[0],
                params_hash=hit[1],
                params_json=hit[2],
                status=r.status,
                metrics=metrics,
                main_value=_main_value(w, metrics) if r.status == "ok" else None,
                step_time_s=r.step_time_s,
                memory=memory,
                repeats=r.repeats,
                error=r.error,
                measured_at=_aware(r.measured_at) or run_time,
            )
        )
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise Invalid(
            f"{'.'.join(['body', *(str(p) for p in first.path)])}: {first.msg}{more}", fields=errors
        )

    warnings: list[str] = []
    if checked_fp.get("suite_version") != body.suite_version:
        warnings.append(
            f"fingerprint.suite_version {checked_fp.get('suite_version')!r} differs from suite_version {body.suite_version!r}"
        )
    if checked_fp.get("workload_definition_hash") != suite_definition_hash():
        warnings.append(
            "fingerprint.workload_definition_hash is not this service's suite definition hash "
            f"({suite_definition_hash()}); results are kept under their own fingerprint"
        )
    fp_pci = checked_fp.get("pci_device_id")
    if isinstance(fp_pci, str) and pci and fp_pci != pci:
        warnings.append(f"fingerprint.pci_device_id {fp_pci} differs from gpu.pci_device_id {pci}")
    stack = {k: v for k, v in checked_fp.items() if k not in FINGERPRINT_UNHASHED}
    return PreparedRun(
        body=body,
        pci_device_id=pci,
        fingerprint=checked_fp,
        fingerprint_hash=fingerprint_hash(checked_fp),
        stack_fields=stack,
        results=results,
        warnings=warnings,
    )


# ---- submission --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SubmitOutcome:
    status_code: int  # 201 stored, 200 replay or dry run
    body: dict[str, Any]
    replayed: bool = False


def _replay(uow: UnitOfWork, principal: Principal, run_id: str, digest: str) -> SubmitOutcome | None:
    """The stored answer for ``run_id``, if this key stored it. A run id is globally unique:
    another key's run id is a 409 that says nothing of the stored run -- not whether the body
    matches, not its GPU, results or owner -- checked before the body hash is compared."""
    rec = uow.session.scalars(
        select(IdempotencyRecord).where(IdempotencyRecord.scope == IDEMPOTENCY_SCOPE, IdempotencyRecord.key == run_id)
    ).first()
    if rec is None:
        return None
    if rec.api_key_id != principal.key_id:
        raise RunIdTaken(f"run_id {run_id!r} is already in use; choose a new run_id", run_id=run_id)
    if rec.request_hash != digest:
        raise IdempotencyConflict(
            f"run {run_id!r} was already submitted with a different body; use a new run_id for new results",
            run_id=run_id,
        )
    body = _expand(rec.response_body)
    body["data_version"] = uow.data_version()
    return SubmitOutcome(status_code=200, body=body, replayed=True)


def _compact(answer: Mapping[str, Any]) -> dict[str, Any]:
    """The stored form of an answer: per-result outcomes as id and status lists plus the
    quarantined few (a 10,000-result answer stays small)."""
    out = {k: v for k, v in answer.items() if k not in ("results", "data_version")}
    results = answer["results"]
    out["outcomes"] = {
        "ids": [o["result_id"] for o in results],
        "statuses": [o["status"] for o in results],
        "quarantined": {str(o["index"]): [o["quarantine_reason"], o["quarantine_detail"]] for o in results if o["quarantined"]},
    }
    return out


def _expand(stored: Mapping[str, Any]) -> dict[str, Any]:
    body = {k: v for k, v in stored.items() if k != "outcomes"}
    oc = stored["outcomes"]
    q = oc["quarantined"]
    body["results"] = [
        {
            "index": i,
            "result_id": rid,
            "status": status,
            "quarantined": str(i) in q,
            "quarantine_reason": q[str(i)][0] if str(i) in q else None,
            "quarantine_detail": q[str(i)][1] if str(i) in q else None,
        }
        for i, (rid, status) in enumerate(zip(oc["ids"], oc["statuses"], strict=True))
    ]
    return body


def _check_count(n: int, settings: Settings) -> None:
    if n > settings.max_results_per_run:
        raise PayloadTooLarge(
            f"a run may carry at most {settings.max_results_per_run} results; this one has {n}: split it",
            max_results_per_run=settings.max_results_per_run,
        )


def submit_run(
    uow: UnitOfWork,
    cache: AliasIndexCache,
    principal: Principal,
    body: BenchmarkRunIn,
    *,
    settings: Settings,
    idempotency_key: str | None = None,
    dry_run: bool = False,
    now: dt.datetime | None = None,
) -> SubmitOutcome:
    """Store one run (or, with ``dry_run``, say what storing it would do and write nothing)."""
    if idempotency_key is not None and idempotency_key != body.run_id:
        raise Invalid(
            "Idempotency-Key must equal the body's run_id (the run id is the idempotency key)",
            fields=[FieldError(("Idempotency-Key",), f"expected {body.run_id!r}", location="header", type="value_error")],
        )
    _check_count(len(body.results), settings)
    now = now or dt.datetime.now(dt.UTC)
    digest = request_hash(body)
    replay = _replay(uow, principal, body.run_id, digest)
    if replay is not None:
        if dry_run:
            b = dict(replay.body)
            b["dry_run"] = True
            b["warnings"] = [*b.get("warnings", []), "this run is already stored; submitting it again replays the stored answer"]
            return SubmitOutcome(status_code=200, body=b)
        return replay

    prep = prepare_run(body, received_at=now)
    ident = body.gpu
    name = ident.name.strip()
    match, pending = resolve_gpu(uow, cache, pci=prep.pci_device_id, name=name, mem=ident.memory_total_bytes)
    warnings = list(prep.warnings)
    if match is not None:
        if ident.slug and ident.slug != match.slug:
            warnings.append(f"the agent guessed gpu.slug {ident.slug!r}; the service resolved {match.slug!r}")
        for r in prep.results:
            found = static_findings(r.workload, r.params, r.metrics, r.memory, match.spec)
            if found:
                r.check_reason = found[0].reason
                r.check_detail = "; ".join(f.detail for f in found)[:2000]
    else:
        warnings.append(
            f"GPU {name!r} ({prep.pci_device_id}, {ident.memory_total_bytes} B) is not in the catalog: "
            "the run is kept as pending and counts once an admin maps it"
        )

    if dry_run:
        return _dry_run_answer(uow, prep, match, pending, warnings, settings)
    try:
        return _store(uow, principal, prep, match, pending, warnings, digest, settings, now)
    except IntegrityError:
        # A concurrent twin with the same run_id committed first: answer as a replay would.
        uow.rollback()
        replay = _replay(uow, principal, body.run_id, digest)
        if replay is None:
            raise
        return replay


def _outcomes(prep: PreparedRun, ids: Mapping[int, int], flips: Mapping[int, Flip]) -> list[dict[str, Any]]:
    """Per result: its id and quarantine state (catalog checks, then any outlier flip)."""
    out = []
    for r in prep.results:
        f = flips.get(r.position)
        if f is not None:
            q, reason, detail = f.quarantined, f.quarantine_reason, f.quarantine_detail
        else:
            q, reason, detail = r.check_reason is not None, r.check_reason, r.check_detail
        out.append(
            {
                "index": r.position,
                "result_id": ids.get(r.position),
                "status": r.status,
                "quarantined": q,
                "quarantine_reason": reason,
                "quarantine_detail": detail,
            }
        )
    return out


def _answer(
    prep: PreparedRun,
    match: GpuMatch | None,
    pending_id: int | None,
    outcomes: list[dict[str, Any]],
    warnings: list[str],
    *,
    dry_run: bool,
) -> dict[str, Any]:
    return {
        "run_id": prep.body.run_id,
        "state": "accepted" if match is not None else "pending",
        "gpu_slug": match.slug if match else None,
        "fingerprint_hash": prep.fingerprint_hash,
        "result_count": len(outcomes),
        "quarantined_count": sum(1 for o in outcomes if o["quarantined"]),
        "results": outcomes,
        "warnings": warnings,
        "resolved_by": match.resolved_by if match else None,
        "pending_gpu_id": pending_id,
        "dry_run": dry_run,
    }


def _cell(match: GpuMatch, prep: PreparedRun, r: PreparedResult) -> CellKey:
    return (match.gpu_id, prep.fingerprint_hash, r.workload, r.params_hash)


def _dry_run_answer(
    uow: UnitOfWork,
    prep: PreparedRun,
    match: GpuMatch | None,
    pending: PendingGpu | None,
    warnings: list[str],
    settings: Settings,
) -> SubmitOutcome:
    flips: dict[int, Flip] = {}
    if match is not None:
        ok = [r for r in prep.results if r.status == "ok"]
        virtual = [
            VirtualPoint(cell=_cell(match, prep, r), value=r.main_value, in_baseline=r.check_reason is None, tag=r.position)
            for r in ok
        ]
        found = run_outlier_test(uow, {v.cell for v in virtual}, settings, virtual=virtual)
        for f in found:
            if f.id is None and f.outlier_detail is not None:
                f.quarantined, f.quarantine_reason, f.quarantine_detail = True, "statistical_outlier", f.outlier_detail
                flips[int(f.tag)] = f
    pending_id = pending.id if pending is not None and match is None else None
    body = _answer(prep, match, pending_id, _outcomes(prep, {}, flips), warnings, dry_run=True)
    body["data_version"] = uow.data_version()
    return SubmitOutcome(status_code=200, body=body)


def _store(
    uow: UnitOfWork,
    principal: Principal,
    prep: PreparedRun,
    match: GpuMatch | None,
    pending: PendingGpu | None,
    warnings: list[str],
    digest: str,
    settings: Settings,
    now: dt.datetime,
) -> SubmitOutcome:
    s = uow.session
    body = prep.body
    alerts: list[AlertDraft] = []
    insert_ignore(
        uow,
        cast(Table, BenchmarkFingerprint.__table__),
        {"hash": prep.fingerprint_hash, "fields": prep.stack_fields, "first_seen_at": now},
        ["hash"],
    )
    pending_id: int | None = None
    if match is None:
        ident = body.gpu
        if pending is None:
            new_id = insert_ignore(
                uow,
                cast(Table, PendingGpu.__table__),
                {
                    "pci_device_id": prep.pci_device_id,
                    "nvml_name": ident.name.strip(),
                    "memory_total_bytes": ident.memory_total_bytes,
                    "pci_vendor_id": ident.pci_vendor_id,
                    "pci_subsystem_id": ident.pci_subsystem_id,
                    "status": "pending",
                    "first_seen_at": now,
                    "last_seen_at": now,
                },
                ["pci_device_id", "nvml_name", "memory_total_bytes"],
            )
            pending = s.scalars(
                select(PendingGpu).where(
                    PendingGpu.pci_device_id == prep.pci_device_id,
                    PendingGpu.nvml_name == ident.name.strip(),
                    PendingGpu.memory_total_bytes == ident.memory_total_bytes,
                )
            ).one()
            if new_id is not None:
                alerts.append(
                    AlertDraft(
                        kind="pending_gpu",
                        message=(
                            f"unknown GPU {ident.name.strip()!r} ({prep.pci_device_id}, {ident.memory_total_bytes} B) "
                            f"submitted results; map it to a catalog GPU (POST /v1/admin/pending-gpus/{new_id}/map)"
                        ),
                        pending_gpu_id=pending.id,
                        data={"result_count": len(prep.results)},
                    )
                )
        else:
            pending.last_seen_at = now
            if pending.status == "mapped":  # its GPU was deleted since: back to the queue
                pending.status, pending.mapped_gpu_id = "pending", None
        pending_id = pending.id
    elif pending is not None:
        pending_id = pending.id

    run = BenchmarkRun(
        run_id=body.run_id,
        api_key_id=principal.key_id,
        host=body.host,
        gpu_id=match.gpu_id if match else None,
        pending_gpu_id=pending_id if match is None else None,
        resolved_by=match.resolved_by if match else None,
        gpu_identity=body.gpu.model_dump(mode="json"),
        gpu_count=body.gpu_count,
        suite_version=body.suite_version,
        fingerprint=prep.fingerprint,
        fingerprint_hash=prep.fingerprint_hash,
        request_hash=digest,
        result_count=len(prep.results),
        started_at=_aware(body.started_at),
        finished_at=_aware(body.finished_at),
        notes=body.notes,
        received_at=now,
    )
    s.add(run)
    s.flush()  # a duplicate run_id fails here (IntegrityError), before any result is written

    gpu_id = match.gpu_id if match else None
    rows = [
        {
            "run_pk": run.id,
            "position": r.position,
            "gpu_id": gpu_id,
            "fingerprint_hash": prep.fingerprint_hash,
            "workload": r.workload,
            "params": r.params,
            "params_hash": r.params_hash,
            "status": r.status,
            "metrics": r.metrics,
            "main_value": r.main_value,
            "step_time_s": r.step_time_s,
            "peak_allocated_bytes": r.memory["peak_allocated_bytes"],
            "peak_reserved_bytes": r.memory["peak_reserved_bytes"],
            "nvml_used_bytes": r.memory["nvml_used_bytes"],
            "repeats": r.repeats,
            "error": r.error,
            "measured_at": r.measured_at,
            "check_reason": r.check_reason,
            "check_detail": r.check_detail,
            "outlier_detail": None,
            "quarantined": r.check_reason is not None,
            "quarantine_reason": r.check_reason,
            "quarantine_detail": r.check_detail,
            "retracted": False,
        }
        for r in prep.results
    ]
    ids = insert_results(s, rows, params_json=[r.params_json for r in prep.results])
    id_by_position = {r.position: i for r, i in zip(prep.results, ids, strict=True)}

    flips_by_position: dict[int, Flip] = {}
    if match is not None:
        cells = {_cell(match, prep, r) for r in prep.results if r.status == "ok"}
        lock_cells(uow, cells)  # after the insert: the critical section is the test itself
        flips = run_outlier_test(uow, cells, settings)
        write_flips(uow, flips)
        position_by_id = {i: p for p, i in id_by_position.items()}
        others: list[Flip] = []
        for f in flips:
            pos = position_by_id.get(f.id) if f.id is not None else None
            if pos is not None:
                flips_by_position[pos] = f
            else:
                others.append(f)
        a = outlier_alert(others, gpu_id=match.gpu_id, slug=match.slug, run_pk=run.id, context=f"after run {body.run_id}")
        if a is not None:
            alerts.append(a)

    outcomes = _outcomes(prep, id_by_position, flips_by_position)
    by_reason: dict[str, list[dict[str, Any]]] = {}
    for o in outcomes:
        if o["quarantined"] and o["quarantine_reason"]:
            by_reason.setdefault(o["quarantine_reason"], []).append(o)
    for reason, items in sorted(by_reason.items()):
        alerts.append(
            AlertDraft(
                kind=reason,
                message=f"run {body.run_id}: {len(items)} result(s) quarantined ({reason}) on "
                f"{match.slug if match else 'a pending GPU'}; e.g. {items[0]['quarantine_detail']}",
                gpu_id=gpu_id,
                run_pk=run.id,
                result_ids=[int(i["result_id"]) for i in items if i["result_id"] is not None],
                data={"example": items[0]["quarantine_detail"]},
            )
        )
    add_alerts(uow, alerts, now)

    answer = _answer(prep, match, pending_id if match is None else None, outcomes, warnings, dry_run=False)
    s.add(
        IdempotencyRecord(
            scope=IDEMPOTENCY_SCOPE,
            key=body.run_id,
            api_key_id=principal.key_id,
            request_hash=digest,
            status_code=201,
            response_body=_compact(answer),
            created_at=now,
        )
    )
    uow.mark_write()
    version = uow.commit()
    answer = dict(answer)
    answer["data_version"] = version if version is not None else uow.data_version()
    return SubmitOutcome(status_code=201, body=answer)


# ---- committed measurement datasets --------------------------------------------------------------

BUILTIN_AGENT_NAME = "builtin:committed-measurements"


def builtin_principal(uow: UnitOfWork) -> Principal:
    """The trusted identity committed datasets are attributed to: an API key row whose secret
    was never generated in a usable form (random hash), so nobody can authenticate as it."""
    row = uow.session.scalars(select(ApiKey).where(ApiKey.name == BUILTIN_AGENT_NAME)).first()
    if row is None:
        import secrets

        row = ApiKey(
            name=BUILTIN_AGENT_NAME,
            prefix="builtin",
            secret_hash=hashlib.sha256(secrets.token_bytes(32)).hexdigest(),
            scope="submit",
            trusted=True,
        )
        uow.session.add(row)
        uow.session.flush()
        uow.mark_write()
        uow.commit()
    return Principal(key_id=row.id, name=row.name, scope=row.scope, trusted=True)


@dataclass
class SeedMeasurementsReport:
    files: int = 0
    stored: int = 0
    replayed: int = 0
    refused: list[str] = field(default_factory=list)


def load_measurement_files(engine: Engine, settings: Settings, directory: Path | None = None) -> SeedMeasurementsReport:
    """Load every ``*.json`` (a JSON list of ``BenchmarkRunIn`` objects) from the directory,
    idempotently by run id, as the built-in trusted agent. A run that does not validate or
    conflicts with a stored one is reported and skipped; start-up goes on."""
    report = SeedMeasurementsReport()
    d = directory if directory is not None else settings.seed_measurements_dir
    if d is None or not Path(d).is_dir():
        return report
    factory = make_session_factory(engine)
    cache = AliasIndexCache()
    principal: Principal | None = None  # created on first use: an empty directory writes nothing
    for path in sorted(Path(d).glob("*.json")):
        report.files += 1
        try:
            runs = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            report.refused.append(f"{path.name}: not readable JSON: {exc}")
            continue
        if not isinstance(runs, list):
            report.refused.append(f"{path.name}: expected a JSON list of runs")
            continue
        for i, raw in enumerate(runs):
            where = f"{path.name}[{i}]"
            try:
                body = BenchmarkRunIn.model_validate(raw)
            except ValidationError as exc:
                report.refused.append(f"{where}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}")
                continue
            with UnitOfWork(factory) as uow:
                if principal is None:
                    principal = builtin_principal(uow)
                try:
                    out = submit_run(uow, cache, principal, body, settings=settings)
                except UseCaseError as exc:
                    report.refused.append(f"{where} ({body.run_id}): {exc.detail}")
                    continue
            if out.replayed:
                report.replayed += 1
            else:
                report.stored += 1
    for line in report.refused:
        log.warning("committed measurements: %s", line)
    log.info(
        "committed measurements: %d file(s), %d run(s) stored, %d already present, %d refused",
        report.files,
        report.stored,
        report.replayed,
        len(report.refused),
    )
    return report


def seed_measurements(engine: Engine, settings: Settings) -> None:
    """Bootstrap hook (``service.bootstrap.EXTRA_SEEDERS``)."""
    load_measurement_files(engine, settings)
