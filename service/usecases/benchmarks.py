"""Benchmark submission (``POST /v1/benchmark-runs``) and its dry run (``/validate``).

One submission is one transaction, committed (by :func:`~service.usecases.transaction.commits`)
before the answer is returned:

1. the run id is the idempotency key: a stored run with the same body digest is answered with
   the stored answer; a different body is refused (:class:`IdempotencyConflict`);
2. vocabulary checks (:mod:`service.core.evidence.run_check`, the agent's check too: workload,
   parameters, metrics and units, finite non-negative numbers, fingerprint completeness) --
   every violation is reported with its path; nothing else is refused (DESIGN: only schema
   and unit errors are 422); canonical parameters come from a process-wide cache
   (:mod:`service.usecases.canonical_cache`);
3. the GPU is resolved (:mod:`service.usecases.run_placement`: admin mapping of this identity,
   PCI id + memory, NVML name); an unknown one makes the run ``pending`` in the admin queue;
4. catalog checks per result (above the dense peak, above usable memory) and, once the rows
   are in, the MAD outlier test over every touched (GPU, fingerprint, parameters) cell, with
   quarantine reasons and admin alerts;
5. rows go in with one bulk statement (COPY on PostgreSQL); hashes are computed once per
   distinct parameter set. This module: the idempotent replay, the storage and the answer.

The run arrives as a :class:`~service.core.evidence.submission.RunSubmission`: its shape was checked
by the wire model in the API layer (or the bootstrap, for committed datasets).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from service.core.evidence.results import (
    AlertDraft,
    CellKey,
    Flip,
    GpuMatch,
    NewResult,
    NewRun,
    OutlierPolicy,
    ResultOutcome,
    SubmissionAnswer,
    VirtualPoint,
    outlier_alert,
)
from service.core.evidence.run_check import PreparedRun, RunInvalid, aware, check_run, dotted
from service.core.evidence.submission import RunSubmission
from service.db.repositories.benchmarks import DuplicateRun
from service.db.uow import UnitOfWork
from service.usecases.canonical_cache import canonical
from service.usecases.errors import FieldError, IdempotencyConflict, Invalid, PayloadTooLarge, RunIdTaken
from service.usecases.keys import Principal
from service.usecases.read_model import ReadModel
from service.usecases.run_placement import Placement, place
from service.usecases.transaction import commits


def prepare_run(run: RunSubmission, *, received_at: dt.datetime) -> PreparedRun:
    """The vocabulary check (:func:`~service.core.evidence.run_check.check_run`) with the
    process's canonical-parameters cache; every violation is named in one :class:`Invalid`
    (paths relative to the submitted run)."""
    try:
        return check_run(run, received_at=received_at, canonical=canonical)
    except RunInvalid as exc:
        errors = [FieldError(p.loc, p.message, type="vocabulary") for p in exc.problems]
        first = exc.problems[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        # the detail reads as it always has: the path as the client wrote the body
        raise Invalid(f"{dotted(('body', *first.loc))}: {first.message}{more}", fields=errors) from None


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
    placed = place(uow, cache, prep)
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
    placed = place(uow, cache, prep)
    try:
        return Submission(_store(uow, principal, prep, placed, policy, now), stored=True)
    except DuplicateRun:
        # A concurrent twin with the same run_id committed first: answer as a replay would.
        uow.rollback()
        stored = _replay(uow, principal, run)
        if stored is None:
            raise
        return Submission(stored, replayed=True)


def _queue_unknown(
    uow: UnitOfWork, prep: PreparedRun, placed: Placement, now: dt.datetime, alerts: list[AlertDraft]
) -> int | None:
    """The admin-queue entry of the run's GPU identity: created (with an alert) for an unknown
    GPU, touched for a queued one; ``None`` when the GPU matched and was never queued."""
    repo, pending = uow.benchmarks, placed.pending
    if placed.match is not None:
        return pending.id if pending is not None else None
    ident = prep.run.gpu
    name = ident.name.strip()
    if pending is not None:  # a mapped identity whose GPU was deleted since goes back to the queue
        repo.touch_pending(pending.id, now, requeue=pending.status == "mapped")
        return pending.id
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
                data={"result_count": len(placed.results)},
            )
        )
    return pending.id


def _new_run(
    principal: Principal, prep: PreparedRun, match: GpuMatch | None, pending_id: int | None, now: dt.datetime
) -> NewRun:
    run = prep.run
    return NewRun(
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
        result_count=len(prep.results),
        started_at=aware(run.started_at),
        finished_at=aware(run.finished_at),
        notes=run.notes,
        received_at=now,
    )


def _reevaluate(
    uow: UnitOfWork,
    prep: PreparedRun,
    placed: Placement,
    policy: OutlierPolicy,
    run_pk: int,
    id_by_position: Mapping[int, int],
    alerts: list[AlertDraft],
) -> dict[int, Flip]:
    """The outlier test over every cell the run touched; flips of this run's results by
    position, an alert for flips of earlier results."""
    match = placed.match
    if match is None:
        return {}
    cells = {_cell(match, prep, r) for r in placed.results if r.status == "ok"}
    # the cells are locked after the insert: the critical section is the test itself
    flips = uow.benchmarks.reevaluate(cells, policy)
    position_by_id = {i: p for p, i in id_by_position.items()}
    mine: dict[int, Flip] = {}
    others: list[Flip] = []
    for f in flips:
        pos = position_by_id.get(f.id) if f.id is not None else None
        if pos is not None:
            mine[pos] = f
        else:
            others.append(f)
    context = f"after run {prep.run.run_id}"
    a = outlier_alert(others, gpu_id=match.gpu_id, slug=match.slug, run_pk=run_pk, context=context)
    if a is not None:
        alerts.append(a)
    return mine


def _quarantine_alerts(
    run_id: str, match: GpuMatch | None, run_pk: int, outcomes: Sequence[ResultOutcome]
) -> list[AlertDraft]:
    """One alert per quarantine reason among this run's results."""
    by_reason: dict[str, list[ResultOutcome]] = {}
    for o in outcomes:
        if o.quarantined and o.quarantine_reason:
            by_reason.setdefault(o.quarantine_reason, []).append(o)
    return [
        AlertDraft(
            kind=reason,
            message=f"run {run_id}: {len(items)} result(s) quarantined ({reason}) on "
            f"{match.slug if match else 'a pending GPU'}; e.g. {items[0].quarantine_detail}",
            gpu_id=match.gpu_id if match else None,
            run_pk=run_pk,
            result_ids=tuple(int(i.result_id) for i in items if i.result_id is not None),
            data={"example": items[0].quarantine_detail},
        )
        for reason, items in sorted(by_reason.items())
    ]


def _store(
    uow: UnitOfWork,
    principal: Principal,
    prep: PreparedRun,
    placed: Placement,
    policy: OutlierPolicy,
    now: dt.datetime,
) -> SubmissionAnswer:
    repo = uow.benchmarks
    run, match, results = prep.run, placed.match, placed.results
    alerts: list[AlertDraft] = []
    repo.ensure_fingerprint(prep.fingerprint_hash, prep.stack_fields, now)
    pending_id = _queue_unknown(uow, prep, placed, now, alerts)
    # a duplicate run_id fails here (DuplicateRun), before any result is written
    run_pk = repo.add_run(_new_run(principal, prep, match, pending_id, now))
    ids = repo.add_results(run_pk, match.gpu_id if match else None, prep.fingerprint_hash, results)
    id_by_position = {r.position: i for r, i in zip(results, ids, strict=True)}
    flips = _reevaluate(uow, prep, placed, policy, run_pk, id_by_position, alerts)
    outcomes = _outcomes(results, id_by_position, flips)
    alerts.extend(_quarantine_alerts(run.run_id, match, run_pk, outcomes))
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
