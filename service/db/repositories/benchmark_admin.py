"""Admin work on benchmark data: alerts, the pending-GPU queue and its mapping, reviews and
retraction. Returns :mod:`service.core.evidence.results` types; flushes, never commits. The cells
these changes touch are re-evaluated through :class:`~service.db.repositories.benchmarks.BenchmarkRepository`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from service.core.evidence.quarantine import effective_state
from service.core.evidence.results import (
    AdminAlert,
    PendingGpu,
    PendingGpuUsage,
    ResultToCheck,
    ReviewedResult,
)
from service.db.models import AdminAlert as AlertRow
from service.db.models import BenchmarkResult, BenchmarkRun, Gpu
from service.db.models import PendingGpu as PendingGpuRow
from service.db.repositories.benchmarks import pending_gpu, utc


def _set_state(r: BenchmarkResult) -> None:
    """Materialise the effective quarantine state on a result row."""
    st = effective_state(
        check_reason=r.check_reason,
        check_detail=r.check_detail,
        outlier_detail=r.outlier_detail,
        review_state=r.review_state,
        review_reason=r.review_reason,
    )
    r.quarantined, r.quarantine_reason, r.quarantine_detail = st.quarantined, st.reason, st.detail


def _alert(a: AlertRow, slug: str | None, run_id: str | None) -> AdminAlert:
    return AdminAlert(
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


class BenchmarkAdminRepository:
    def __init__(self, session: Session) -> None:
        self._s = session

    # ---- alerts -----------------------------------------------------------------------------------

    def list_alerts(
        self, *, kind: str | None, acknowledged: bool | None, before: int | None, limit: int
    ) -> list[AdminAlert]:
        """Newest first (by id), at most ``limit``, ids below ``before``."""
        conds: list[Any] = []
        if kind is not None:
            conds.append(AlertRow.kind == kind)
        if acknowledged is True:
            conds.append(AlertRow.acknowledged_at.is_not(None))
        elif acknowledged is False:
            conds.append(AlertRow.acknowledged_at.is_(None))
        if before is not None:
            conds.append(AlertRow.id < before)
        rows = self._s.execute(
            select(AlertRow, Gpu.slug, BenchmarkRun.run_id)
            .outerjoin(Gpu, Gpu.id == AlertRow.gpu_id)
            .outerjoin(BenchmarkRun, BenchmarkRun.id == AlertRow.run_pk)
            .where(*conds)
            .order_by(AlertRow.id.desc())
            .limit(limit)
        ).all()
        return [_alert(a, slug, run_id) for a, slug, run_id in rows]

    def acknowledge_alert(
        self, alert_id: int, *, at: dt.datetime, by_key_id: int | None
    ) -> tuple[AdminAlert, bool] | None:
        """Acknowledge an alert (the first acknowledgement stays): the alert, and whether this
        call changed it; None when there is no such alert."""
        a = self._s.get(AlertRow, alert_id)
        if a is None:
            return None
        changed = a.acknowledged_at is None
        if changed:
            a.acknowledged_at = at
            a.acknowledged_by_key_id = by_key_id
            self._s.flush()
        slug = self._s.scalar(select(Gpu.slug).where(Gpu.id == a.gpu_id)) if a.gpu_id else None
        run_id = (
            self._s.scalar(select(BenchmarkRun.run_id).where(BenchmarkRun.id == a.run_pk))
            if a.run_pk
            else None
        )
        return _alert(a, slug, run_id), changed

    # ---- the pending-GPU queue -------------------------------------------------------------------------

    def pending(self, pending_id: int) -> PendingGpu | None:
        p = self._s.get(PendingGpuRow, pending_id)
        return pending_gpu(p) if p is not None else None

    def list_pending(self, *, status: str | None) -> list[PendingGpu]:
        """By id; every entry, or those with this status."""
        q = select(PendingGpuRow).order_by(PendingGpuRow.id)
        if status is not None:
            q = q.where(PendingGpuRow.status == status)
        return [pending_gpu(p) for p in self._s.scalars(q)]

    def pending_usage(self, entries: Sequence[PendingGpu]) -> dict[int, PendingGpuUsage]:
        """Per queue entry: runs and results waiting on it, and the GPU it was mapped to."""
        ids = [p.id for p in entries]
        if not ids:
            return {}
        runs = dict(
            self._s.execute(
                select(BenchmarkRun.pending_gpu_id, func.count())
                .where(BenchmarkRun.pending_gpu_id.in_(ids))
                .group_by(BenchmarkRun.pending_gpu_id)
            ).all()
        )
        results = dict(
            self._s.execute(
                select(BenchmarkRun.pending_gpu_id, func.count())
                .select_from(BenchmarkResult)
                .join(BenchmarkRun, BenchmarkRun.id == BenchmarkResult.run_pk)
                .where(BenchmarkRun.pending_gpu_id.in_(ids))
                .group_by(BenchmarkRun.pending_gpu_id)
            ).all()
        )
        gpu_ids = {p.mapped_gpu_id for p in entries if p.mapped_gpu_id}
        slugs = (
            dict(self._s.execute(select(Gpu.id, Gpu.slug).where(Gpu.id.in_(gpu_ids))).all())
            if gpu_ids
            else {}
        )
        return {
            p.id: PendingGpuUsage(
                run_count=int(runs.get(p.id, 0)),
                result_count=int(results.get(p.id, 0)),
                mapped_gpu_slug=slugs.get(p.mapped_gpu_id) if p.mapped_gpu_id else None,
            )
            for p in entries
        }

    def pending_run_pks(self, pending_id: int) -> list[int]:
        """Runs submitted from a queued identity (primary keys)."""
        return list(self._s.scalars(select(BenchmarkRun.id).where(BenchmarkRun.pending_gpu_id == pending_id)))

    def move_runs_to_gpu(self, run_pks: Sequence[int], gpu_id: int) -> None:
        """Attach runs and their results to a catalog GPU (an admin's mapping)."""
        if not run_pks:
            return
        ids = list(run_pks)
        self._s.execute(
            update(BenchmarkRun)
            .where(BenchmarkRun.id.in_(ids))
            .values(gpu_id=gpu_id, resolved_by="admin_mapping")
        )
        self._s.execute(update(BenchmarkResult).where(BenchmarkResult.run_pk.in_(ids)).values(gpu_id=gpu_id))

    def results_to_check(self, run_pks: Sequence[int]) -> list[ResultToCheck]:
        if not run_pks:
            return []
        gpus = {
            int(pk): int(n)
            for pk, n in self._s.execute(
                select(BenchmarkRun.id, BenchmarkRun.gpu_count).where(BenchmarkRun.id.in_(list(run_pks)))
            ).all()
        }
        return [
            ResultToCheck(
                id=r.id,
                workload=r.workload,
                params=r.params,
                metrics={k: float(v) for k, v in r.metrics.items()},
                memory={
                    "peak_allocated_bytes": r.peak_allocated_bytes,
                    "peak_reserved_bytes": r.peak_reserved_bytes,
                    "nvml_used_bytes": r.nvml_used_bytes,
                },
                review_state=r.review_state,
                gpu_count=int(gpus.get(r.run_pk) or 1),
            )
            for r in self._s.scalars(select(BenchmarkResult).where(BenchmarkResult.run_pk.in_(list(run_pks))))
        ]

    def set_check_findings(self, findings: Mapping[int, tuple[str | None, str | None]]) -> None:
        """Store the catalog checks' verdict (reason, detail) per result id and materialise
        each result's effective quarantine state."""
        if not findings:
            return
        for r in self._s.scalars(select(BenchmarkResult).where(BenchmarkResult.id.in_(list(findings)))):
            r.check_reason, r.check_detail = findings[r.id]
            _set_state(r)
        self._s.flush()

    def mark_pending_mapped(
        self, pending_id: int, gpu_id: int, *, at: dt.datetime, by_key_id: int | None
    ) -> None:
        p = self._s.get(PendingGpuRow, pending_id)
        if p is None:  # pragma: no cover - the caller loaded it in this transaction
            return
        p.status = "mapped"
        p.mapped_gpu_id = gpu_id
        p.mapped_at = at
        p.mapped_by_key_id = by_key_id
        self._s.flush()

    # ---- review and retraction ----------------------------------------------------------------------

    def review(
        self, result_id: int, *, state: str, reason: str, at: dt.datetime, by_key_id: int | None
    ) -> ReviewedResult | None:
        """Record an admin's sticky decision on a result and materialise its state; None when
        there is no such result."""
        r = self._s.get(BenchmarkResult, result_id)
        if r is None:
            return None
        r.review_state = state
        r.review_reason = reason
        r.reviewed_at = at
        r.reviewed_by_key_id = by_key_id
        _set_state(r)
        self._s.flush()
        return ReviewedResult(
            id=r.id,
            gpu_id=r.gpu_id,
            fingerprint_hash=r.fingerprint_hash,
            workload=r.workload,
            params_hash=r.params_hash,
            status=r.status,
        )

    def set_run_retracted(
        self, run_pk: int, *, retract: bool, reason: str | None, at: dt.datetime, by_key_id: int | None
    ) -> None:
        """Retract a run (with the reason) or restore it; its results follow."""
        run = self._s.get(BenchmarkRun, run_pk)
        if run is None:  # pragma: no cover - the caller loaded it in this transaction
            return
        if retract:
            run.retracted_at = at
            run.retract_reason = reason
            run.retracted_by_key_id = by_key_id
        else:
            run.retracted_at = None
            run.retract_reason = None
            run.retracted_by_key_id = None
        self._s.execute(
            update(BenchmarkResult).where(BenchmarkResult.run_pk == run.id).values(retracted=retract)
        )
        self._s.flush()
