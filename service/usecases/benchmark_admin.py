"""Admin work on benchmark data: alerts, the pending-GPU queue, releasing or quarantining
results, retracting runs. Every write re-evaluates the touched cells (so aggregates follow)
and commits before returning."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, select, update

from service.core.cursor import decode_cursor, encode_cursor
from service.core.quarantine import REVIEW_QUARANTINED, REVIEW_RELEASED, static_findings
from service.core.specs import gpu_spec_from_doc
from service.db.models import AdminAlert, ApiKey, BenchmarkResult, BenchmarkRun, Gpu, PendingGpu
from service.db.uow import UnitOfWork
from service.schemas.benchmarks import (
    AlertList,
    AlertOut,
    PendingGpuList,
    PendingGpuOut,
    RetractOut,
    ReviewOut,
)
from service.settings import Settings
from service.usecases.benchmark_cells import (
    AlertDraft,
    CellKey,
    Flip,
    add_alerts,
    cells_of,
    outlier_alert,
    pending_candidates,
    reevaluate,
    set_state,
    utc,
)
from service.usecases.benchmark_queries import get_result, run_summary
from service.usecases.catalog import AliasIndexCache
from service.usecases.errors import FieldError, Invalid, NotFound
from service.usecases.keys import Principal

# ---- alerts -----------------------------------------------------------------------------------


def list_alerts(
    uow: UnitOfWork, *, kind: str | None, acknowledged: bool | None, limit: int, cursor: str | None
) -> AlertList:
    s = uow.session
    conds: list[Any] = []
    if kind is not None:
        conds.append(AdminAlert.kind == kind)
    if acknowledged is True:
        conds.append(AdminAlert.acknowledged_at.is_not(None))
    elif acknowledged is False:
        conds.append(AdminAlert.acknowledged_at.is_(None))
    if cursor:
        before = decode_cursor(cursor).get("before")
        if not isinstance(before, int):
            raise Invalid("the cursor is not valid", fields=[FieldError(("cursor",), "not an alerts cursor")])
        conds.append(AdminAlert.id < before)
    rows = s.execute(
        select(AdminAlert, Gpu.slug, BenchmarkRun.run_id)
        .outerjoin(Gpu, Gpu.id == AdminAlert.gpu_id)
        .outerjoin(BenchmarkRun, BenchmarkRun.id == AdminAlert.run_pk)
        .where(*conds)
        .order_by(AdminAlert.id.desc())
        .limit(limit + 1)
    ).all()
    more = len(rows) > limit
    items = [_alert_out(a, slug, run_id) for a, slug, run_id in rows[:limit]]
    nxt = encode_cursor({"before": items[-1].id}) if more and items else None
    return AlertList(items=items, count=len(items), next_cursor=nxt, data_version=uow.data_version())


def _alert_out(a: AdminAlert, slug: str | None, run_id: str | None) -> AlertOut:
    return AlertOut(
        id=a.id,
        kind=a.kind,
        message=a.message,
        gpu_slug=slug,
        run_id=run_id,
        pending_gpu_id=a.pending_gpu_id,
        result_count=a.result_count,
        data=a.data,
        created_at=utc(a.created_at),
        acknowledged_at=utc(a.acknowledged_at) if a.acknowledged_at else None,
    )


def acknowledge_alert(uow: UnitOfWork, principal: Principal, alert_id: int) -> AlertOut:
    a = uow.session.get(AdminAlert, alert_id)
    if a is None:
        raise NotFound(f"no alert with id {alert_id}")
    if a.acknowledged_at is None:
        a.acknowledged_at = dt.datetime.now(dt.UTC)
        a.acknowledged_by_key_id = principal.key_id
        uow.mark_write()
    uow.commit()
    slug = uow.session.scalar(select(Gpu.slug).where(Gpu.id == a.gpu_id)) if a.gpu_id else None
    run_id = uow.session.scalar(select(BenchmarkRun.run_id).where(BenchmarkRun.id == a.run_pk)) if a.run_pk else None
    return _alert_out(a, slug, run_id)


# ---- pending GPUs ----------------------------------------------------------------------------------


def _pending_out(uow: UnitOfWork, cache: AliasIndexCache, p: PendingGpu) -> PendingGpuOut:
    s = uow.session
    runs = s.scalar(select(func.count()).where(BenchmarkRun.pending_gpu_id == p.id)) or 0
    results = (
        s.scalar(
            select(func.count())
            .select_from(BenchmarkResult)
            .join(BenchmarkRun, BenchmarkRun.id == BenchmarkResult.run_pk)
            .where(BenchmarkRun.pending_gpu_id == p.id)
        )
        or 0
    )
    mapped = s.scalar(select(Gpu.slug).where(Gpu.id == p.mapped_gpu_id)) if p.mapped_gpu_id else None
    return PendingGpuOut(
        id=p.id,
        status=p.status,
        nvml_name=p.nvml_name,
        pci_device_id=p.pci_device_id,
        pci_vendor_id=p.pci_vendor_id,
        pci_subsystem_id=p.pci_subsystem_id,
        memory_total_bytes=p.memory_total_bytes,
        first_seen_at=utc(p.first_seen_at),
        last_seen_at=utc(p.last_seen_at),
        run_count=int(runs),
        result_count=int(results),
        mapped_gpu_slug=mapped,
        mapped_at=utc(p.mapped_at) if p.mapped_at else None,
        candidates=pending_candidates(uow, cache, p),
    )


def list_pending(uow: UnitOfWork, cache: AliasIndexCache, *, status: str | None) -> PendingGpuList:
    q = select(PendingGpu).order_by(PendingGpu.id)
    if status is not None:
        q = q.where(PendingGpu.status == status)
    items = [_pending_out(uow, cache, p) for p in uow.session.scalars(q)]
    return PendingGpuList(items=items, count=len(items), data_version=uow.data_version())


def map_pending(
    uow: UnitOfWork, cache: AliasIndexCache, principal: Principal, pending_id: int, slug: str, *, settings: Settings
) -> PendingGpuOut:
    """Attach a pending device's runs to a catalog GPU: results get the GPU, its catalog checks
    and the outlier test of their cells; later runs with this identity resolve to it."""
    s = uow.session
    p = s.get(PendingGpu, pending_id)
    if p is None:
        raise NotFound(f"no pending GPU with id {pending_id}")
    gpu = s.scalars(select(Gpu).where(Gpu.slug == slug, Gpu.deleted.is_(False))).first()
    if gpu is None:
        raise NotFound(
            f"no catalog GPU with slug {slug!r}; create it first with POST /v1/gpus",
            fields=[FieldError(("slug",), "unknown slug")],
        )
    if p.status == "mapped" and p.mapped_gpu_id == gpu.id:
        uow.commit()
        return _pending_out(uow, cache, p)
    now = dt.datetime.now(dt.UTC)
    run_ids = list(s.scalars(select(BenchmarkRun.id).where(BenchmarkRun.pending_gpu_id == p.id)))
    old_cells: set[CellKey] = cells_of(uow, BenchmarkResult.run_pk.in_(run_ids)) if run_ids else set()
    if run_ids:
        s.execute(
            update(BenchmarkRun)
            .where(BenchmarkRun.id.in_(run_ids))
            .values(gpu_id=gpu.id, resolved_by="admin_mapping")
        )
        s.execute(update(BenchmarkResult).where(BenchmarkResult.run_pk.in_(run_ids)).values(gpu_id=gpu.id))
    # catalog checks against the GPU the results now belong to
    spec = gpu_spec_from_doc(gpu.spec)
    flagged: dict[str, list[int]] = {}
    if run_ids:
        for r in s.scalars(select(BenchmarkResult).where(BenchmarkResult.run_pk.in_(run_ids))):
            found = static_findings(
                r.workload,
                r.params,
                {k: float(v) for k, v in r.metrics.items()},
                {
                    "peak_allocated_bytes": r.peak_allocated_bytes,
                    "peak_reserved_bytes": r.peak_reserved_bytes,
                    "nvml_used_bytes": r.nvml_used_bytes,
                },
                spec,
            )
            r.check_reason = found[0].reason if found else None
            r.check_detail = "; ".join(f.detail for f in found)[:2000] if found else None
            set_state(r)
            if r.check_reason and r.review_state is None:
                flagged.setdefault(r.check_reason, []).append(r.id)
        s.flush()
    new_cells = cells_of(uow, BenchmarkResult.run_pk.in_(run_ids)) if run_ids else set()
    changed = reevaluate(uow, old_cells | new_cells, settings)
    p.status = "mapped"
    p.mapped_gpu_id = gpu.id
    p.mapped_at = now
    p.mapped_by_key_id = principal.key_id
    drafts = [
        AlertDraft(
            kind=reason,
            message=f"{len(ids)} result(s) of mapped GPU {p.nvml_name!r} quarantined on {gpu.slug} ({reason})",
            gpu_id=gpu.id,
            pending_gpu_id=p.id,
            result_ids=ids,
        )
        for reason, ids in sorted(flagged.items())
    ]
    a = outlier_alert(changed, gpu_id=gpu.id, slug=gpu.slug, run_pk=None, context=f"after mapping pending GPU {p.id}")
    if a is not None:
        drafts.append(a)
    add_alerts(uow, drafts, now)
    uow.mark_write()
    uow.commit()
    return _pending_out(uow, cache, p)


# ---- review ----------------------------------------------------------------------------------------


def review_result(
    uow: UnitOfWork, principal: Principal, result_id: int, *, action: str, reason: str, settings: Settings
) -> ReviewOut:
    """``release`` (back into aggregates whatever the automatic checks say) or ``quarantine``
    (out, with the admin's reason). Sticky: re-evaluation never overrides it."""
    s = uow.session
    r = s.get(BenchmarkResult, result_id)
    if r is None:
        raise NotFound(f"no benchmark result with id {result_id}")
    state = {"release": REVIEW_RELEASED, "quarantine": REVIEW_QUARANTINED}[action]
    r.review_state = state
    r.review_reason = reason
    r.reviewed_at = dt.datetime.now(dt.UTC)
    r.reviewed_by_key_id = principal.key_id
    set_state(r)
    s.flush()
    changed: list[Flip] = []
    if r.gpu_id is not None and r.status == "ok":
        changed = reevaluate(uow, {(r.gpu_id, r.fingerprint_hash, r.workload, r.params_hash)}, settings)
    uow.mark_write()
    uow.commit()
    others = sum(1 for c in changed if c.id != r.id)
    return ReviewOut(result=get_result(uow, result_id), changed_results=others, data_version=uow.data_version())


# ---- retraction ------------------------------------------------------------------------------------


def set_retracted(
    uow: UnitOfWork, principal: Principal, run_id: str, *, retract: bool, reason: str | None, settings: Settings
) -> RetractOut:
    """Retract a run (its results leave every aggregate; the cells are re-tested) or restore it.
    Idempotent: retracting a retracted run changes nothing (the first reason stays)."""
    s = uow.session
    run = s.scalars(select(BenchmarkRun).where(BenchmarkRun.run_id == run_id)).first()
    if run is None:
        raise NotFound(f"no benchmark run with run_id {run_id!r}")
    changed: list[Flip] = []
    if (run.retracted_at is not None) != retract:
        if retract:
            run.retracted_at = dt.datetime.now(dt.UTC)
            run.retract_reason = reason
            run.retracted_by_key_id = principal.key_id
        else:
            run.retracted_at = None
            run.retract_reason = None
            run.retracted_by_key_id = None
        s.execute(update(BenchmarkResult).where(BenchmarkResult.run_pk == run.id).values(retracted=retract))
        s.flush()
        changed = reevaluate(uow, cells_of(uow, BenchmarkResult.run_pk == run.id), settings)
        uow.mark_write()
    uow.commit()
    slug = s.scalar(select(Gpu.slug).where(Gpu.id == run.gpu_id)) if run.gpu_id else None
    quarantined = s.scalar(
        select(func.count()).where(BenchmarkResult.run_pk == run.id, BenchmarkResult.quarantined.is_(True))
    )
    key = s.get(ApiKey, run.api_key_id) if run.api_key_id is not None else None
    summary = run_summary(
        run,
        slug=slug,
        key_name=key.name if key else None,
        trusted=key.trusted if key else False,
        quarantined=int(quarantined or 0),
    )
    return RetractOut(run=summary, changed_results=len(changed), data_version=uow.data_version())
