"""Stored results as the latest-measured rule sees them: :class:`~service.core.evidence.aggregate.Point`
per result, grouped by cell. Read-only.

A cell is (GPU, workload, parameters hash); retracted results are never returned; quarantined
ones are (the rule counts them as unusable but reports how many there are)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.evidence.aggregate import Point
from service.db.models import ApiKey, BenchmarkResult, BenchmarkRun, Gpu

CellKey = tuple[str, str, str]  # (gpu slug, workload, params hash)


@dataclass(frozen=True, slots=True)
class StoredCell:
    """Every non-retracted result of one cell, with its canonical parameters and the GPU."""

    gpu: GpuSpec
    workload: str
    params_hash: str
    params: dict[str, Any]
    points: tuple[Point, ...]


def _utc(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def results_with_runs(*columns: Any) -> Select[Any]:
    """Results joined to their run (host, run id, queue entry) and the run's API key (agent
    name, trusted): the one place this join is written. Result listings, the measurements view
    and the estimator's lookups all start here."""
    return (
        select(*columns)
        .select_from(BenchmarkResult)
        .join(BenchmarkRun, BenchmarkRun.id == BenchmarkResult.run_pk)
        .outerjoin(ApiKey, ApiKey.id == BenchmarkRun.api_key_id)
    )


def points_query() -> Select[Any]:
    """Non-retracted results with what :class:`Point` needs (rows for :func:`point_from_row`)."""
    R = BenchmarkResult
    return results_with_runs(
        R.id,
        R.gpu_id,
        R.workload,
        R.params_hash,
        R.fingerprint_hash,
        R.status,
        R.quarantined,
        R.measured_at,
        R.metrics,
        R.peak_allocated_bytes,
        R.peak_reserved_bytes,
        R.nvml_used_bytes,
        BenchmarkRun.host,
        ApiKey.trusted,
    ).where(R.retracted.is_(False))


def point_from_row(r: Any) -> Point:
    mem = {
        k: int(v)
        for k, v in (
            ("peak_allocated_bytes", r.peak_allocated_bytes),
            ("peak_reserved_bytes", r.peak_reserved_bytes),
            ("nvml_used_bytes", r.nvml_used_bytes),
        )
        if v is not None
    }
    return Point(
        result_id=int(r.id),
        fingerprint_hash=r.fingerprint_hash,
        host=r.host,
        trusted=bool(r.trusted),
        status=r.status,
        quarantined=bool(r.quarantined),
        measured_at=_utc(r.measured_at),
        metrics={k: float(v) for k, v in (r.metrics or {}).items()},
        memory=mem,
    )


class MeasurementRepository:
    def __init__(self, session: Session) -> None:
        self._s = session

    def cells(
        self, workloads: Sequence[str] | None = None, gpu_slugs: Iterable[str] | None = None
    ) -> list[StoredCell]:
        """Batch: every cell of the given workloads (and GPUs), catalog GPUs only, with the
        GPU's effective spec and the cell's canonical parameters (read once per cell)."""
        q = points_query().where(BenchmarkResult.gpu_id.is_not(None))
        if workloads is not None:
            q = q.where(BenchmarkResult.workload.in_(list(workloads)))
        gpu_ids: dict[int, GpuSpec] = {}
        gq = select(Gpu.id, Gpu.spec).where(Gpu.deleted.is_(False))
        if gpu_slugs is not None:
            gq = gq.where(Gpu.slug.in_(list(gpu_slugs)))
        for gid, doc in self._s.execute(gq):
            gpu_ids[int(gid)] = gpu_spec_from_doc(doc)
        if gpu_slugs is not None:
            q = q.where(BenchmarkResult.gpu_id.in_(list(gpu_ids)))
        grouped: dict[tuple[int, str, str], list[Point]] = {}
        for r in self._s.execute(q):
            if int(r.gpu_id) in gpu_ids:
                grouped.setdefault((int(r.gpu_id), r.workload, r.params_hash), []).append(point_from_row(r))
        if not grouped:
            return []
        first_ids = (
            select(func.min(BenchmarkResult.id))
            .where(BenchmarkResult.params_hash.in_(sorted({k[2] for k in grouped})))
            .group_by(BenchmarkResult.workload, BenchmarkResult.params_hash)
        )
        params: dict[tuple[str, str], dict[str, Any]] = {
            (wl, ph): p
            for wl, ph, p in self._s.execute(
                select(BenchmarkResult.workload, BenchmarkResult.params_hash, BenchmarkResult.params).where(
                    BenchmarkResult.id.in_(first_ids)
                )
            )
        }
        return [
            StoredCell(
                gpu=gpu_ids[gid],
                workload=wl,
                params_hash=ph,
                params=params.get((wl, ph), {}),
                points=tuple(pts),
            )
            for (gid, wl, ph), pts in sorted(
                grouped.items(), key=lambda kv: (gpu_ids[kv[0][0]].slug, kv[0][1], kv[0][2])
            )
        ]
