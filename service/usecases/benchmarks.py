"""Benchmark submission (``POST /v1/benchmark-runs``) and its dry run (``/validate``).

One submission is one transaction, committed (by :func:`~service.usecases.transaction.commits`)
before the answer is returned:

1. the run id is the idempotency key: a stored run with the same body digest is answered with
   the stored answer; a different body is refused (:class:`IdempotencyConflict`);
2. vocabulary checks (workload, parameters, metrics and units, finite non-negative numbers,
   fingerprint completeness) -- every violation is reported with its path; nothing else is
   refused (DESIGN: only schema and unit errors are 422);
3. the GPU is resolved (admin mapping of this identity, PCI id + memory, NVML name); an unknown
   one makes the run ``pending`` in the admin queue;
4. catalog checks per result (above the dense peak, above usable memory) and, once the rows
   are in, the MAD outlier test over every touched (GPU, fingerprint, parameters) cell, with
   quarantine reasons and admin alerts;
5. rows go in with one bulk statement (COPY on PostgreSQL); hashes are computed once per
   distinct parameter set.

The run arrives as a :class:`~service.core.evidence.submission.RunSubmission`: its shape was checked
by the wire model in the API layer (or the bootstrap, for committed datasets).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from math import isfinite
from typing import Any

from service.core.catalog.vocabulary import (
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
from service.core.evidence.quarantine import static_findings
from service.core.evidence.results import (
    AlertDraft,
    CellKey,
    Flip,
    GpuMatch,
    NewResult,
    NewRun,
    OutlierPolicy,
    PendingGpu,
    ResultOutcome,
    SubmissionAnswer,
    VirtualPoint,
    outlier_alert,
    pick_by_memory,
)
from service.core.evidence.submission import RunSubmission
from service.db.repositories.benchmarks import DuplicateRun
from service.db.uow import UnitOfWork
from service.usecases.catalog import resolve
from service.usecases.errors import FieldError, IdempotencyConflict, Invalid, PayloadTooLarge, RunIdTaken
from service.usecases.keys import Principal
from service.usecases.read_model import ReadModel
from service.usecases.transaction import commits

# ---- validation (pure) -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PreparedRun:
    run: RunSubmission
    pci_device_id: str
    fingerprint: dict[str, Any]
    fingerprint_hash: str
    stack_fields: dict[str, Any]
    results: tuple[NewResult, ...]
    warnings: tuple[str, ...] = ()


def _aware(value: dt.datetime | None) -> dt.datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def params_identity(workload: str, canonical: Mapping[str, Any]) -> tuple[str, str]:
    """(``parameters_hash``, canonical JSON of the parameters) from one serialisation: the
    hash is :func:`service.core.catalog.vocabulary.parameters_hash` -- SHA-256 of the sorted, compact
    JSON of ``{"parameters": ..., "workload": ...}`` -- built around the parameters' own JSON,
    which is also what gets stored (tests check the two stay equal)."""
    pj = _CANONICAL_JSON.encode(canonical)
    blob = f'{{"parameters":{pj},"workload":{_CANONICAL_JSON.encode(workload)}}}'
    return hashlib.sha256(blob.encode()).hexdigest()[:16], pj


# the settings of service.core.catalog.vocabulary.stable_hash, built once (json.dumps builds one per call)
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
        canon = canonical_parameters(workload, params, ("parameters",), typed=True)
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


def prepare_run(run: RunSubmission, *, received_at: dt.datetime) -> PreparedRun:
    """Vocabulary validation and canonicalisation; every violation is collected, then one
    :class:`Invalid` names them all (paths relative to the submitted run)."""
    errors: list[FieldError] = []

    def err(loc: tuple[str | int, ...], msg: str) -> None:
        errors.append(FieldError(loc, msg, type="vocabulary"))

    fp = run.fingerprint
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
        pci = normalise_pci_id(run.gpu.pci_device_id, ("gpu", "pci_device_id"))
    except VocabularyError as exc:
        err(exc.loc, exc.message)

    run_time = _aware(run.finished_at) or _aware(run.started_at) or received_at
    results: list[NewResult] = []
    for i, r in enumerate(run.results):
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
            NewResult(
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
        # the detail reads as it always has: the path as the client wrote the body
        raise Invalid(
            f"{'.'.join(['body', *(str(p) for p in first.path)])}: {first.msg}{more}", fields=errors
        )

    warnings: list[str] = []
    if checked_fp.get("suite_version") != run.suite_version:
        warnings.append(
            f"fingerprint.suite_version {checked_fp.get('suite_version')!r} differs from suite_version {run.suite_version!r}"
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
        run=run,
        pci_device_id=pci,
        fingerprint=checked_fp,
        fingerprint_hash=fingerprint_hash(checked_fp),
        stack_fields=stack,
        results=tuple(results),
        warnings=tuple(warnings),
    )


# ---- GPU resolution -------------------------------------------------------------------------------


def resolve_gpu(
    uow: UnitOfWork, cache: ReadModel, *, pci: str, name: str, mem: int
) -> tuple[GpuMatch | None, PendingGpu | None]:
    """Catalog GPU for an NVML identity: an admin's mapping of this exact identity, else PCI
    device id + memory, else the NVML name through the alias index (memory picks among an
    ambiguous name's variants). Returns (match, queue entry if this identity is queued)."""
    repo = uow.benchmarks
    pending = repo.find_pending(pci, name, mem)
    if pending is not None and pending.status == "mapped" and pending.mapped_gpu_id is not None:
        gpu = repo.live_gpu(pending.mapped_gpu_id)
        if gpu is not None:
            return GpuMatch.of(gpu, "admin_mapping"), pending
    by_pci = repo.live_gpus_with_pci(pci)
    picked = pick_by_memory(by_pci, mem) if by_pci else None
    if picked is not None:
        return GpuMatch.of(picked, "pci_memory"), pending
    res = resolve(uow, cache, name) if name.strip() else None
    if res is not None and res.slugs:
        rows = repo.live_gpus_by_slugs(res.slugs)
        if len(rows) == 1:
            return GpuMatch.of(rows[0], "name"), pending
        picked = pick_by_memory(rows, mem)
        if picked is not None:
            return GpuMatch.of(picked, "name_memory"), pending
    return None, pending


@dataclass(frozen=True, slots=True)
class _Placement:
    """Where a prepared run goes: its GPU (or queue entry) and its results after the catalog
    checks."""

    match: GpuMatch | None
    pending: PendingGpu | None
    results: tuple[NewResult, ...]
    warnings: tuple[str, ...]


def _checked(r: NewResult, match: GpuMatch, gpu_count: int) -> NewResult:
    found = static_findings(r.workload, r.params, r.metrics, r.memory, match.spec, gpu_count=gpu_count)
    if not found:
        return r
    return r._replace(check_reason=found[0].reason, check_detail="; ".join(f.detail for f in found)[:2000])


def _place(uow: UnitOfWork, cache: ReadModel, prep: PreparedRun) -> _Placement:
    ident = prep.run.gpu
    name = ident.name.strip()
    match, pending = resolve_gpu(uow, cache, pci=prep.pci_device_id, name=name, mem=ident.memory_total_bytes)
    warnings = list(prep.warnings)
    results = prep.results
    if match is not None:
        if ident.slug and ident.slug != match.slug:
            warnings.append(f"the agent guessed gpu.slug {ident.slug!r}; the service resolved {match.slug!r}")
        results = tuple(_checked(r, match, prep.run.gpu_count) for r in results)
    else:
        warnings.append(
            f"GPU {name!r} ({prep.pci_device_id}, {ident.memory_total_bytes} B) is not in the catalog: "
            "the run is kept as pending and counts once an admin maps it"
        )
    return _Placement(match=match, pending=pending, results=results, warnings=tuple(warnings))


# ---- submission --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Submission:
    """The answer to a submission; ``stored``: this call stored the run (else a replay of the
    stored answer, or a dry run); ``replayed``: the stored answer to an earlier submission."""

    answer: SubmissionAnswer
    stored: bool = False
    replayed: bool = False


def _check_request(run: RunSubmission, idempotency_key: str | None, max_results: int) -> None:
    if idempotency_key is not None and idempotency_key != run.run_id:
        raise Invalid(
            "Idempotency-Key must equal the body's run_id (the run id is the idempotency key)",
            fields=[
                FieldError(
                    ("Idempotency-Key",),
                    f"expected {run.run_id!r}",
                    location="header",
                    type="idempotency_key",
                )
            ],
        )
    n = len(run.results)
    if n > max_results:
        raise PayloadTooLarge(
            f"a run may carry at most {max_results} results; this one has {n}: split it",
            max_results_per_run=max_results,
        )


def _replay(uow: UnitOfWork, principal: Principal, run: RunSubmission) -> SubmissionAnswer | None:
    """The stored answer for ``run_id``, if this key stored it. A run id is globally unique:
    another key's run id is a 409 that says nothing of the stored run -- not whether the body
    matches, not its GPU, results or owner -- checked before the body hash is compared."""
    stored = uow.benchmarks.find_answer(run.run_id)
    if stored is None:
        return None
    if stored.api_key_id != principal.key_id:
        raise RunIdTaken(f"run_id {run.run_id!r} is already in use; choose a new run_id", run_id=run.run_id)
    if stored.request_hash != run.request_hash:
        raise IdempotencyConflict(
            f"run {run.run_id!r} was already submitted with a different body; use a new run_id for new results",
            run_id=run.run_id,
        )
    return stored.answer


def _outcomes(
    results: Sequence[NewResult], ids: Mapping[int, int], flips: Mapping[int, Flip]
) -> tuple[ResultOutcome, ...]:
    """Per result: its id and quarantine state (catalog checks, then any outlier flip)."""
    out = []
    for r in results:
        f = flips.get(r.position)
        if f is not None:
            q, reason, detail = f.quarantined, f.quarantine_reason, f.quarantine_detail
        else:
            q, reason, detail = r.check_reason is not None, r.check_reason, r.check_detail
        out.append(
            ResultOutcome(
                index=r.position,
                result_id=ids.get(r.position),
                status=r.status,
                quarantined=q,
                quarantine_reason=reason,
                quarantine_detail=detail,
            )
        )
    return tuple(out)


def _answer(
    prep: PreparedRun,
    match: GpuMatch | None,
    pending_id: int | None,
    outcomes: tuple[ResultOutcome, ...],
    warnings: Sequence[str],
    *,
    dry_run: bool,
) -> SubmissionAnswer:
    return SubmissionAnswer(
        run_id=prep.run.run_id,
        state="accepted" if match is not None else "pending",
        gpu_slug=match.slug if match else None,
        fingerprint_hash=prep.fingerprint_hash,
        result_count=len(outcomes),
        quarantined_count=sum(1 for o in outcomes if o.quarantined),
        results=outcomes,
        warnings=tuple(warnings),
        resolved_by=match.resolved_by if match else None,
        pending_gpu_id=pending_id,
        dry_run=dry_run,
    )


def _cell(match: GpuMatch, prep: PreparedRun, r: NewResult) -> CellKey:
    return (match.gpu_id, prep.fingerprint_hash, r.workload, r.params_hash)


def validate_run(
    uow: UnitOfWork,
    cache: ReadModel,
    principal: Principal,
    run: RunSubmission,
    *,
    policy: OutlierPolicy,
    max_results: int,
    idempotency_key: str | None = None,
    now: dt.datetime | None = None,
) -> Submission:
    """Dry run: the checks of :func:`submit_run` and what storing the run would do (catalog
    checks, the outlier test against stored data); nothing is written."""
    _check_request(run, idempotency_key, max_results)
    now = now or dt.datetime.now(dt.UTC)
    stored = _replay(uow, principal, run)
    if stored is not None:
        warning = "this run is already stored; submitting it again replays the stored answer"
        return Submission(replace(stored, dry_run=True, warnings=(*stored.warnings, warning)))
    prep = prepare_run(run, received_at=now)
    placed = _place(uow, cache, prep)
    match = placed.match
    flips: dict[int, Flip] = {}
    if match is not None:
        virtual = [
            VirtualPoint(
                cell=_cell(match, prep, r),
                value=r.main_value,
                in_baseline=r.check_reason is None,
                tag=r.position,
            )
            for r in placed.results
            if r.status == "ok"
        ]
        found = uow.benchmarks.outlier_test({v.cell for v in virtual}, policy, virtual=virtual)
        for f in found:
            if f.id is None and f.outlier_detail is not None:
                flips[int(f.tag)] = replace(
                    f,
                    quarantined=True,
                    quarantine_reason="statistical_outlier",
                    quarantine_detail=f.outlier_detail,
                )
    pending = placed.pending
    pending_id = pending.id if pending is not None and match is None else None
    outcomes = _outcomes(placed.results, {}, flips)
    return Submission(_answer(prep, match, pending_id, outcomes, placed.warnings, dry_run=True))


@commits
def submit_run(
    uow: UnitOfWork,
    cache: ReadModel,
    principal: Principal,
    run: RunSubmission,
    *,
    policy: OutlierPolicy,
    max_results: int,
    idempotency_key: str | None = None,
    now: dt.datetime | None = None,
) -> Submission:
    """Store one run, or answer with the stored answer to the same run (a replay)."""
    _check_request(run, idempotency_key, max_results)
    now = now or dt.datetime.now(dt.UTC)
    stored = _replay(uow, principal, run)
    if stored is not None:
        return Submission(stored, replayed=True)
    prep = prepare_run(run, received_at=now)
    placed = _place(uow, cache, prep)
    try:
        return Submission(_store(uow, principal, prep, placed, policy, now), stored=True)
    except DuplicateRun:
        # A concurrent twin with the same run_id committed first: answer as a replay would.
        uow.rollback()
        stored = _replay(uow, principal, run)
        if stored is None:
            raise
        return Submission(stored, replayed=True)


def _store(
    uow: UnitOfWork,
    principal: Principal,
    prep: PreparedRun,
    placed: _Placement,
    policy: OutlierPolicy,
    now: dt.datetime,
) -> SubmissionAnswer:
    repo = uow.benchmarks
    run = prep.run
    match, pending, results = placed.match, placed.pending, placed.results
    alerts: list[AlertDraft] = []
    repo.ensure_fingerprint(prep.fingerprint_hash, prep.stack_fields, now)
    pending_id: int | None = None
    if match is None:
        ident = run.gpu
        name = ident.name.strip()
        if pending is None:
            pending, created = repo.add_pending(
                pci=prep.pci_device_id,
                name=name,
                mem=ident.memory_total_bytes,
                pci_vendor_id=ident.pci_vendor_id,
                pci_subsystem_id=ident.pci_subsystem_id,
                seen_at=now,
            )
            if created:
                alerts.append(
                    AlertDraft(
                        kind="pending_gpu",
                        message=(
                            f"unknown GPU {name!r} ({prep.pci_device_id}, {ident.memory_total_bytes} B) "
                            f"submitted results; map it to a catalog GPU (POST /v1/admin/pending-gpus/{pending.id}/map)"
                        ),
                        pending_gpu_id=pending.id,
                        data={"result_count": len(results)},
                    )
                )
        else:  # a mapped identity whose GPU was deleted since goes back to the queue
            repo.touch_pending(pending.id, now, requeue=pending.status == "mapped")
        pending_id = pending.id
    elif pending is not None:
        pending_id = pending.id

    run_pk = repo.add_run(
        NewRun(
            run_id=run.run_id,
            api_key_id=principal.key_id,
            host=run.host,
            gpu_id=match.gpu_id if match else None,
            pending_gpu_id=pending_id if match is None else None,
            resolved_by=match.resolved_by if match else None,
            gpu_identity=run.gpu.as_document(),
            gpu_count=run.gpu_count,
            suite_version=run.suite_version,
            fingerprint=prep.fingerprint,
            fingerprint_hash=prep.fingerprint_hash,
            request_hash=run.request_hash,
            result_count=len(results),
            started_at=_aware(run.started_at),
            finished_at=_aware(run.finished_at),
            notes=run.notes,
            received_at=now,
        )
    )  # a duplicate run_id fails here (DuplicateRun), before any result is written

    gpu_id = match.gpu_id if match else None
    ids = repo.add_results(run_pk, gpu_id, prep.fingerprint_hash, results)
    id_by_position = {r.position: i for r, i in zip(results, ids, strict=True)}

    flips_by_position: dict[int, Flip] = {}
    if match is not None:
        cells = {_cell(match, prep, r) for r in results if r.status == "ok"}
        # the cells are locked after the insert: the critical section is the test itself
        flips = repo.reevaluate(cells, policy)
        position_by_id = {i: p for p, i in id_by_position.items()}
        others: list[Flip] = []
        for f in flips:
            pos = position_by_id.get(f.id) if f.id is not None else None
            if pos is not None:
                flips_by_position[pos] = f
            else:
                others.append(f)
        a = outlier_alert(
            others, gpu_id=match.gpu_id, slug=match.slug, run_pk=run_pk, context=f"after run {run.run_id}"
        )
        if a is not None:
            alerts.append(a)

    outcomes = _outcomes(results, id_by_position, flips_by_position)
    by_reason: dict[str, list[ResultOutcome]] = {}
    for o in outcomes:
        if o.quarantined and o.quarantine_reason:
            by_reason.setdefault(o.quarantine_reason, []).append(o)
    for reason, items in sorted(by_reason.items()):
        alerts.append(
            AlertDraft(
                kind=reason,
                message=f"run {run.run_id}: {len(items)} result(s) quarantined ({reason}) on "
                f"{match.slug if match else 'a pending GPU'}; e.g. {items[0].quarantine_detail}",
                gpu_id=gpu_id,
                run_pk=run_pk,
                result_ids=tuple(int(i.result_id) for i in items if i.result_id is not None),
                data={"example": items[0].quarantine_detail},
            )
        )
    repo.add_alerts(alerts, now)

    answer = _answer(
        prep, match, pending_id if match is None else None, outcomes, placed.warnings, dry_run=False
    )
    repo.save_answer(answer, api_key_id=principal.key_id, request_hash=run.request_hash, created_at=now)
    if match is not None:
        uow.touch_cells(_cell(match, prep, r) for r in prep.results)
    return answer


# ---- the built-in agent of committed datasets ------------------------------------------------------

BUILTIN_AGENT_NAME = "builtin:committed-measurements"


@commits
def builtin_principal(uow: UnitOfWork) -> Principal:
    """The trusted identity committed datasets are attributed to: an API key row whose secret
    was never generated in a usable form (random hash), so nobody can authenticate as it."""
    found = uow.benchmarks.key_by_name(BUILTIN_AGENT_NAME)
    if found is not None:
        key_id, name, scope = found
        return Principal(key_id=key_id, name=name, scope=scope, trusted=True)
    key_id = uow.benchmarks.add_trusted_key(
        name=BUILTIN_AGENT_NAME,
        prefix="builtin",
        secret_hash=hashlib.sha256(secrets.token_bytes(32)).hexdigest(),
        scope="submit",
    )
    return Principal(key_id=key_id, name=BUILTIN_AGENT_NAME, scope="submit", trusted=True)
