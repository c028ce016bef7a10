"""Reads of benchmark data: a stored result or run, result and run listings with their
filters, the points behind the latest-measured view of a GPU, and the coverage counts.
Returns :mod:`service.core.evidence.results` types (and :class:`~service.core.evidence.aggregate.Point`);
read-only."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Select, and_, case, distinct, func, select
from sqlalchemy.orm import Session

from service.core.catalog.vocabulary import FINGERPRINT_UNHASHED
from service.core.evidence.aggregate import Point
from service.core.evidence.results import (
    CoverageStats,
    LiveGpu,
    ParamFilter,
    ResultQuery,
    StoredResult,
    StoredRun,
    fp_value_matches,
)
from service.db.models import ApiKey, BenchmarkFingerprint, BenchmarkResult, BenchmarkRun, Gpu
from service.db.repositories.benchmarks import utc, utc_or_none
from service.db.repositories.measurements import point_from_row, points_query, results_with_runs


def _stored_result(
    r: BenchmarkResult,
    run_id: str,
    host: str,
    key_id: int | None,
    key_name: str | None,
    trusted: bool | None,
    slug: str | None,
    pending_gpu_id: int | None,
) -> StoredResult:
    return StoredResult(
        id=r.id,
        run_id=run_id,
        position=r.position,
        gpu_slug=slug,
        pending_gpu_id=pending_gpu_id,
        workload=r.workload,
        params=r.params,
        params_hash=r.params_hash,
        fingerprint_hash=r.fingerprint_hash,
        host=host,
        agent_key_id=key_id,
        agent_name=key_name,
        agent_trusted=bool(trusted),
        status=r.status,
        metrics={k: float(v) for k, v in r.metrics.items()},
        step_time_s=r.step_time_s,
        peak_allocated_bytes=r.peak_allocated_bytes,
        peak_reserved_bytes=r.peak_reserved_bytes,
        nvml_used_bytes=r.nvml_used_bytes,
        repeats=r.repeats,
        error=r.error,
        measured_at=utc(r.measured_at),
        quarantined=r.quarantined,
        quarantine_reason=r.quarantine_reason,
        quarantine_detail=r.quarantine_detail,
        review_state=r.review_state,
        review_reason=r.review_reason,
        reviewed_at=utc_or_none(r.reviewed_at),
        reviewed_by_key_id=r.reviewed_by_key_id,
        retracted=r.retracted,
    )


def stored_run(
    run: BenchmarkRun, *, slug: str | None, key_name: str | None, trusted: bool | None, quarantined: int
) -> StoredRun:
    return StoredRun(
        pk=run.id,
        run_id=run.run_id,
        agent_key_id=run.api_key_id,
        agent_name=key_name,
        agent_trusted=bool(trusted),
        host=run.host,
        gpu_id=run.gpu_id,
        gpu_slug=slug,
        pending_gpu_id=run.pending_gpu_id,
        resolved_by=run.resolved_by,
        gpu_identity=run.gpu_identity,
        gpu_count=run.gpu_count,
        suite_version=run.suite_version,
        fingerprint=run.fingerprint,
        fingerprint_hash=run.fingerprint_hash,
        started_at=utc_or_none(run.started_at),
        finished_at=utc_or_none(run.finished_at),
        received_at=utc(run.received_at),
        notes=run.notes,
        result_count=run.result_count,
        quarantined_count=quarantined,
        retracted_at=utc_or_none(run.retracted_at),
        retract_reason=run.retract_reason,
    )


def _result_query() -> Select[Any]:
    """Results with their run, agent and GPU slug (the join of :func:`results_with_runs`)."""
    return results_with_runs(
        BenchmarkResult,
        BenchmarkRun.run_id,
        BenchmarkRun.host,
        BenchmarkRun.api_key_id,
        ApiKey.name,
        ApiKey.trusted,
        Gpu.slug,
        BenchmarkRun.pending_gpu_id,
    ).outerjoin(Gpu, Gpu.id == BenchmarkResult.gpu_id)


def _results(rows: Iterable[Any]) -> list[StoredResult]:
    return [_stored_result(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]) for r in rows]


class BenchmarkQueryRepository:
    def __init__(self, session: Session) -> None:
        self._s = session

    def gpu_id(self, slug: str) -> int | None:
        gid = self._s.scalar(select(Gpu.id).where(Gpu.slug == slug))
        return int(gid) if gid is not None else None

    # ---- results and runs ------------------------------------------------------------------------

    def result(self, result_id: int) -> StoredResult | None:
        row = self._s.execute(_result_query().where(BenchmarkResult.id == result_id)).first()
        return _results([row])[0] if row is not None else None

    def run_results(self, run_pk: int) -> list[StoredResult]:
        """A run's results by position."""
        rows = self._s.execute(
            _result_query().where(BenchmarkResult.run_pk == run_pk).order_by(BenchmarkResult.position)
        ).all()
        return _results(rows)

    def run(self, run_id: str) -> StoredRun | None:
        s = self._s
        run = s.scalars(select(BenchmarkRun).where(BenchmarkRun.run_id == run_id)).first()
        if run is None:
            return None
        slug = s.scalar(select(Gpu.slug).where(Gpu.id == run.gpu_id)) if run.gpu_id is not None else None
        key = s.get(ApiKey, run.api_key_id) if run.api_key_id is not None else None
        quarantined = s.scalar(
            select(func.count()).where(
                BenchmarkResult.run_pk == run.id, BenchmarkResult.quarantined.is_(True)
            )
        )
        return stored_run(
            run,
            slug=slug,
            key_name=key.name if key else None,
            trusted=bool(key and key.trusted),
            quarantined=int(quarantined or 0),
        )

    def status_counts(self, run_pk: int) -> dict[str, int]:
        """Results of a run by status (statuses with no result absent)."""
        return {
            str(k): int(v)
            for k, v in self._s.execute(
                select(BenchmarkResult.status, func.count())
                .where(BenchmarkResult.run_pk == run_pk)
                .group_by(BenchmarkResult.status)
            ).all()
        }

    def _param_conditions(self, params: Sequence[ParamFilter]) -> list[Any]:
        """Typed JSON comparisons on the canonical parameters."""
        conds: list[Any] = []
        for p in params:
            col = BenchmarkResult.params[p.name]
            if p.type == "int":
                conds.append(col.as_integer() == p.value)
            elif p.type == "float":
                conds.append(col.as_float() == p.value)
            elif p.type == "bool":
                conds.append(col.as_boolean().is_(True) if p.value else col.as_boolean().is_(False))
            else:
                conds.append(col.as_string() == p.value)
        return conds

    def _fingerprint_conditions(self, fp: Mapping[str, str]) -> list[Any]:
        """``fp.<field>=<value>`` (known field names): stack fields are matched against the
        (small) fingerprint table and become a ``fingerprint_hash IN (...)``; host identity
        fields compare on the run."""
        if not fp:
            return []
        conds: list[Any] = []
        stack: dict[str, str] = {}
        for name, value in fp.items():
            if name in FINGERPRINT_UNHASHED:
                conds.append(BenchmarkRun.fingerprint[name].as_string() == value)
            else:
                stack[name] = value
        if stack:
            hashes = [
                h
                for h, fields in self._s.execute(
                    select(BenchmarkFingerprint.hash, BenchmarkFingerprint.fields)
                )
                if all(fp_value_matches(fields.get(k), v) for k, v in stack.items())
            ]
            conds.append(BenchmarkResult.fingerprint_hash.in_(hashes))
        return conds

    def list_results(self, f: ResultQuery, *, before: int | None, limit: int) -> list[StoredResult]:
        """Newest first (by id), at most ``limit``, ids below ``before``."""
        conds: list[Any] = []
        if f.gpu_id is not None:
            conds.append(BenchmarkResult.gpu_id == f.gpu_id)
        if f.pending_gpu_id is not None:
            conds.append(
                and_(BenchmarkRun.pending_gpu_id == f.pending_gpu_id, BenchmarkResult.gpu_id.is_(None))
            )
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
        conds.extend(self._param_conditions(f.params))
        conds.extend(self._fingerprint_conditions(f.fingerprint))
        if before is not None:
            conds.append(BenchmarkResult.id < before)
        rows = self._s.execute(
            _result_query().where(*conds).order_by(BenchmarkResult.id.desc()).limit(limit)
        ).all()
        return _results(rows)

    def list_runs(
        self, *, agent: int | None, state: str | None, gpu_slug: str | None, before: int | None, limit: int
    ) -> list[StoredRun]:
        """Newest first (by primary key), at most ``limit``, keys below ``before``."""
        s = self._s
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
        if before is not None:
            conds.append(BenchmarkRun.id < before)
        q = (
            select(BenchmarkRun, Gpu.slug, ApiKey.name, ApiKey.trusted)
            .outerjoin(Gpu, Gpu.id == BenchmarkRun.gpu_id)
            .outerjoin(ApiKey, ApiKey.id == BenchmarkRun.api_key_id)
            .where(*conds)
            .order_by(BenchmarkRun.id.desc())
            .limit(limit)
        )
        rows = s.execute(q).all()
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
        return [
            stored_run(run, slug=slug, key_name=name, trusted=trusted, quarantined=qcount.get(run.id, 0))
            for run, slug, name, trusted in rows
        ]

    # ---- the latest-measured view ------------------------------------------------------------------

    def measured_points(
        self,
        gpu_id: int,
        *,
        workload: str | None = None,
        params: Sequence[ParamFilter] = (),
        fingerprint: Mapping[str, str] | None = None,
        fingerprint_hash: str | None = None,
    ) -> dict[tuple[str, str], list[Point]]:
        """Every non-retracted result of a GPU matching the filters, as the latest-measured
        rule sees it, by (workload, parameters hash) cell."""
        conds: list[Any] = [BenchmarkResult.gpu_id == gpu_id]
        if workload is not None:
            conds.append(BenchmarkResult.workload == workload)
        conds.extend(self._param_conditions(params))
        conds.extend(self._fingerprint_conditions(fingerprint or {}))
        if fingerprint_hash is not None:
            conds.append(BenchmarkResult.fingerprint_hash == fingerprint_hash)
        cells: dict[tuple[str, str], list[Point]] = {}
        for r in self._s.execute(points_query().where(*conds)):
            cells.setdefault((r.workload, r.params_hash), []).append(point_from_row(r))
        return cells

    def cell_parameters(self, gpu_id: int, params_hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        """One canonical parameters document per parameters hash (identical across a cell's
        rows): the first stored one on this GPU."""
        hashes = sorted(set(params_hashes))
        if not hashes:
            return {}
        first_ids = (
            select(func.min(BenchmarkResult.id))
            .where(BenchmarkResult.gpu_id == gpu_id, BenchmarkResult.params_hash.in_(hashes))
            .group_by(BenchmarkResult.params_hash)
        )
        return {
            ph: p
            for ph, p in self._s.execute(
                select(BenchmarkResult.params_hash, BenchmarkResult.params).where(
                    BenchmarkResult.id.in_(first_ids)
                )
            )
        }

    def fingerprint_fields(self, hashes: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = set(hashes)
        if not wanted:
            return {}
        return {
            h: f
            for h, f in self._s.execute(
                select(BenchmarkFingerprint.hash, BenchmarkFingerprint.fields).where(
                    BenchmarkFingerprint.hash.in_(wanted)
                )
            )
        }

    # ---- coverage --------------------------------------------------------------------------------

    def coverage_stats(self) -> dict[tuple[int, str], CoverageStats]:
        """(GPU id, workload) -> counts over non-retracted results of catalog GPUs."""
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
        stats: dict[tuple[int, str], CoverageStats] = {}
        for g, wl, n, ok, qn, oom, err, cfg, fps, hosts, newest in self._s.execute(q):
            stats[(int(g), wl)] = CoverageStats(
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
        return stats

    def live_gpu_list(self) -> list[LiveGpu]:
        """Every live catalog GPU, by slug."""
        q = select(Gpu.id, Gpu.slug, Gpu.name).where(Gpu.deleted.is_(False)).order_by(Gpu.slug)
        return [LiveGpu(id=int(gid), slug=slug, name=name) for gid, slug, name in self._s.execute(q)]

    def pending_run_count(self) -> int:
        """Runs waiting for an unknown GPU to be mapped (retracted ones aside)."""
        n = self._s.scalar(
            select(func.count()).where(BenchmarkRun.gpu_id.is_(None), BenchmarkRun.retracted_at.is_(None))
        )
        return int(n or 0)
