"""Admin work on benchmark data: alerts, the pending-GPU queue, releasing or quarantining
results, retracting runs. Every write re-evaluates the touched cells (so aggregates follow)
and is committed once, at its end (:func:`~service.usecases.transaction.commits`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from service.core.catalog.specs import normalise_name
from service.core.evidence.quarantine import REVIEW_QUARANTINED, REVIEW_RELEASED, static_findings
from service.core.evidence.results import (
    AdminAlert,
    AlertDraft,
    CellKey,
    Flip,
    OutlierPolicy,
    PendingGpu,
    StoredResult,
    StoredRun,
    outlier_alert,
)
from service.db.uow import UnitOfWork
from service.usecases.benchmark_queries import get_result
from service.usecases.catalog import resolve
from service.usecases.errors import FieldError, NotFound
from service.usecases.keys import Principal
from service.usecases.paging import INT32_MAX, before_of, cut_page
from service.usecases.read_model import ReadModel
from service.usecases.transaction import commits

# ---- alerts -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlertPage:
    items: tuple[AdminAlert, ...]
    next_cursor: str | None
    data_version: str


def list_alerts(
    uow: UnitOfWork, *, kind: str | None, acknowledged: bool | None, limit: int, cursor: str | None
) -> AlertPage:
    """Newest first, keyset pagination."""
    before = before_of(cursor, "an alerts cursor", INT32_MAX)
    rows = uow.benchmark_admin.list_alerts(
        kind=kind, acknowledged=acknowledged, before=before, limit=limit + 1
    )
    items, nxt = cut_page(rows, limit, lambda a: a.id)
    return AlertPage(items=items, next_cursor=nxt, data_version=uow.data_version())


@commits
def acknowledge_alert(uow: UnitOfWork, principal: Principal, alert_id: int) -> AdminAlert:
    """Idempotent: acknowledging an acknowledged alert changes nothing."""
    found = uow.benchmark_admin.acknowledge_alert(
        alert_id, at=dt.datetime.now(dt.UTC), by_key_id=principal.key_id
    )
    if found is None:
        raise NotFound(f"no alert with id {alert_id}")
    alert, _changed = found
    return alert


# ---- pending GPUs ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PendingGpuEntry:
    """A queue entry with what waits on it and the catalog GPUs an admin might map it to."""

    gpu: PendingGpu
    run_count: int
    result_count: int
    mapped_gpu_slug: str | None
    candidates: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PendingGpuList:
    items: tuple[PendingGpuEntry, ...]
    data_version: str


def pending_candidates(uow: UnitOfWork, cache: ReadModel, p: PendingGpu) -> list[str]:
    """Catalog GPUs an admin might map a pending device to: same PCI id, or a close name."""
    slugs = uow.benchmarks.slugs_with_pci(p.pci_device_id)
    res = resolve(uow, cache, p.nvml_name) if normalise_name(p.nvml_name) else None
    if res is not None:
        slugs.update(res.slugs or res.close_matches)
    return sorted(slugs)


def _entries(uow: UnitOfWork, cache: ReadModel, queue: Sequence[PendingGpu]) -> tuple[PendingGpuEntry, ...]:
    usage = uow.benchmark_admin.pending_usage(queue)
    return tuple(
        PendingGpuEntry(
            gpu=p,
            run_count=usage[p.id].run_count,
            result_count=usage[p.id].result_count,
            mapped_gpu_slug=usage[p.id].mapped_gpu_slug,
            candidates=tuple(pending_candidates(uow, cache, p)),
        )
        for p in queue
    )


def list_pending(uow: UnitOfWork, cache: ReadModel, *, status: str | None) -> PendingGpuList:
    items = _entries(uow, cache, uow.benchmark_admin.list_pending(status=status))
    return PendingGpuList(items=items, data_version=uow.data_version())


@commits
def map_pending(
    uow: UnitOfWork,
    cache: ReadModel,
    principal: Principal,
    pending_id: int,
    slug: str,
    *,
    policy: OutlierPolicy,
) -> PendingGpuEntry:
    """Attach a pending device's runs to a catalog GPU: results get the GPU, its catalog checks
    and the outlier test of their cells; later runs with this identity resolve to it."""
    admin, repo = uow.benchmark_admin, uow.benchmarks
    p = admin.pending(pending_id)
    if p is None:
        raise NotFound(f"no pending GPU with id {pending_id}")
    gpu = repo.live_gpu_by_slug(slug)
    if gpu is None:
        raise NotFound(
            f"no catalog GPU with slug {slug!r}; create it first with POST /v1/gpus",
            fields=[FieldError(("slug",), "unknown slug")],
        )
    if p.status == "mapped" and p.mapped_gpu_id == gpu.id:
        return _entries(uow, cache, [p])[0]
    now = dt.datetime.now(dt.UTC)
    run_pks = admin.pending_run_pks(p.id)
    old_cells: set[CellKey] = repo.cells_of_runs(run_pks)
    admin.move_runs_to_gpu(run_pks, gpu.id)
    # catalog checks against the GPU the results now belong to
    findings: dict[int, tuple[str | None, str | None]] = {}
    flagged: dict[str, list[int]] = {}
    for r in admin.results_to_check(run_pks):
        found = static_findings(r.workload, r.params, r.metrics, r.memory, gpu.spec, gpu_count=r.gpu_count)
        reason = found[0].reason if found else None
        findings[r.id] = (reason, "; ".join(f.detail for f in found)[:2000] if found else None)
        if reason and r.review_state is None:
            flagged.setdefault(reason, []).append(r.id)
    admin.set_check_findings(findings)
    new_cells = repo.cells_of_runs(run_pks)
    changed = repo.reevaluate(old_cells | new_cells, policy)
    admin.mark_pending_mapped(p.id, gpu.id, at=now, by_key_id=principal.key_id)
    drafts = [
        AlertDraft(
            kind=reason,
            message=f"{len(ids)} result(s) of mapped GPU {p.nvml_name!r} quarantined on {gpu.slug} ({reason})",
            gpu_id=gpu.id,
            pending_gpu_id=p.id,
            result_ids=tuple(ids),
        )
        for reason, ids in sorted(flagged.items())
    ]
    a = outlier_alert(
        changed, gpu_id=gpu.id, slug=gpu.slug, run_pk=None, context=f"after mapping pending GPU {p.id}"
    )
    if a is not None:
        drafts.append(a)
    repo.add_alerts(drafts, now)
    uow.touch_cells(old_cells | new_cells)
    mapped = admin.pending(p.id)
    assert mapped is not None
    return _entries(uow, cache, [mapped])[0]


# ---- review ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Review:
    result: StoredResult
    changed_results: int  # other results of the cell whose quarantine state changed


@commits
def review_result(
    uow: UnitOfWork, principal: Principal, result_id: int, *, action: str, reason: str, policy: OutlierPolicy
) -> Review:
    """``release`` (back into aggregates whatever the automatic checks say) or ``quarantine``
    (out, with the admin's reason). Sticky: re-evaluation never overrides it."""
    state = {"release": REVIEW_RELEASED, "quarantine": REVIEW_QUARANTINED}[action]
    r = uow.benchmark_admin.review(
        result_id, state=state, reason=reason, at=dt.datetime.now(dt.UTC), by_key_id=principal.key_id
    )
    if r is None:
        raise NotFound(f"no benchmark result with id {result_id}")
    changed: list[Flip] = []
    if r.gpu_id is not None and r.status == "ok":
        changed = uow.benchmarks.reevaluate(
            {(r.gpu_id, r.fingerprint_hash, r.workload, r.params_hash)}, policy
        )
    if r.gpu_id is not None:
        uow.touch_cells({(r.gpu_id, r.fingerprint_hash, r.workload, r.params_hash)})
    others = sum(1 for c in changed if c.id != r.id)
    return Review(result=get_result(uow, result_id), changed_results=others)


# ---- retraction ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Retraction:
    run: StoredRun
    changed_results: int  # results whose quarantine state changed with the re-evaluation


@commits
def set_retracted(
    uow: UnitOfWork,
    principal: Principal,
    run_id: str,
    *,
    retract: bool,
    reason: str | None,
    policy: OutlierPolicy,
) -> Retraction:
    """Retract a run (its results leave every aggregate; the cells are re-tested) or restore it.
    Idempotent: retracting a retracted run changes nothing (the first reason stays)."""
    run = uow.benchmark_queries.run(run_id)
    if run is None:
        raise NotFound(f"no benchmark run with run_id {run_id!r}")
    changed: list[Flip] = []
    if (run.retracted_at is not None) != retract:
        uow.benchmark_admin.set_run_retracted(
            run.pk, retract=retract, reason=reason, at=dt.datetime.now(dt.UTC), by_key_id=principal.key_id
        )
        cells = uow.benchmarks.cells_of_run(run.pk)
        changed = uow.benchmarks.reevaluate(cells, policy)
        uow.touch_cells(cells)
    after = uow.benchmark_queries.run(run_id)
    assert after is not None
    return Retraction(run=after, changed_results=len(changed))
