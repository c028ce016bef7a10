"""Per-stack cell summaries (``benchmark_stacks``), the watermarks row and the measurement
journal: the write side of the read path (docs/architecture.md, "Read path").

A stack is one fingerprint's results in one cell (GPU, parameters hash). Its summary is
recomputed -- by :func:`service.core.evidence.aggregate.summarise_stack`, the one rule -- from its newest
N non-quarantined results whenever a transaction changes the cell (new results, quarantine
or release, retraction or restore, a pending GPU mapped), in that same transaction, so readers
never scan results. Work per touched stack is bounded by N, not by the cell's history.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, insert, select, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from service.core.evidence.aggregate import Point, StackWindow, stack_from_doc, stack_to_doc, summarise_stack
from service.core.evidence.versions import Watermarks
from service.db.models import ApiKey, BenchmarkResult, BenchmarkRun, BenchmarkStack, Gpu, MeasurementJournal
from service.db.models import Watermarks as WatermarksRow
from service.db.repositories.measurements import point_from_row

WATERMARKS_SQL = "SELECT catalog, measurement FROM watermarks WHERE id = 1"
StackKey = tuple[int, str, str]  # (gpu_id, params_hash, fingerprint_hash)
JOURNAL_KEEP = 100_000
"""Journal entries kept; a snapshot older than the oldest one reloads everything."""


@dataclass(frozen=True, slots=True)
class StoredStack:
    """One stack summary as readers load it."""

    gpu_id: int
    gpu_slug: str
    workload: str
    params_hash: str
    params: dict[str, Any]
    stack: StackWindow


@dataclass(frozen=True, slots=True)
class JournalEntry:
    watermark: int
    cells: tuple[tuple[int, str, str], ...]  # (gpu_id, workload, params_hash)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class StackRepository:
    def __init__(self, session: Session) -> None:
        self._s = session

    # ---- watermarks and journal ---------------------------------------------------------

    def watermarks(self) -> Watermarks:
        """The one single-row read a read request makes."""
        # the hottest statement of the service: plain driver SQL on the session's connection
        # (the ORM execute path costs more than the read itself)
        row = self._s.connection().exec_driver_sql(WATERMARKS_SQL).one()
        return Watermarks(int(row[0]), int(row[1]))

    def moved_at(self) -> dt.datetime:
        """When either watermark last moved: with the watermarks, it tells this database's
        history from that of another database reusing the same URL (dropped and made again)."""
        row = self._s.execute(select(WatermarksRow.updated_at).where(WatermarksRow.id == 1)).one()
        return row[0]

    def bump(self, *, catalog: bool, measurement: bool) -> Watermarks:
        """Move the named watermarks by one (the row lock on PostgreSQL orders concurrent
        commits, so journal entries are written in watermark order)."""
        values: dict[str, Any] = {"updated_at": _now()}
        if catalog:
            values["catalog"] = WatermarksRow.catalog + 1
        if measurement:
            values["measurement"] = WatermarksRow.measurement + 1
        self._s.execute(update(WatermarksRow).where(WatermarksRow.id == 1).values(**values))
        return self.watermarks()

    def journal(self, watermark: int, cells: Iterable[tuple[int, str, str]]) -> None:
        self._s.execute(
            insert(MeasurementJournal).values(
                watermark=watermark, cells=[list(c) for c in sorted(set(cells))], created_at=_now()
            )
        )
        if watermark % 1000 == 0:
            self._s.execute(
                delete(MeasurementJournal).where(MeasurementJournal.watermark <= watermark - JOURNAL_KEEP)
            )

    def journal_since(self, watermark: int, upto: int) -> list[JournalEntry] | None:
        """Entries in ``(watermark, upto]``, or None when the journal no longer reaches back."""
        rows = self._s.execute(
            select(MeasurementJournal.watermark, MeasurementJournal.cells)
            .where(MeasurementJournal.watermark > watermark, MeasurementJournal.watermark <= upto)
            .order_by(MeasurementJournal.watermark)
        ).all()
        if len(rows) != upto - watermark:
            return None
        return [
            JournalEntry(int(w), tuple((int(c[0]), str(c[1]), str(c[2])) for c in cells)) for w, cells in rows
        ]

    # ---- stack summaries ----------------------------------------------------------------

    def _window_points(
        self, key: StackKey, window: int
    ) -> tuple[list[Point], dict[str, Any] | None, str | None]:
        gpu_id, params_hash, fp = key
        R = BenchmarkResult
        base = (
            select(
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
            )
            .join(BenchmarkRun, BenchmarkRun.id == R.run_pk)
            .outerjoin(ApiKey, ApiKey.id == BenchmarkRun.api_key_id)
            .where(
                R.gpu_id == gpu_id,
                R.fingerprint_hash == fp,
                R.params_hash == params_hash,
                R.retracted.is_(False),
            )
        )
        kept = list(self._s.execute(base.where(R.quarantined.is_(False)).order_by(R.id.desc()).limit(window)))
        oldest = min((int(r.id) for r in kept), default=None)
        q = base.where(R.quarantined.is_(True))
        if oldest is not None:
            q = q.where(R.id >= oldest)
        quarantined = list(self._s.execute(q.order_by(R.id.desc()).limit(window)))
        rows = kept + quarantined
        if not rows:
            return [], None, None
        newest_id = max(int(r.id) for r in rows)
        params_row = self._s.execute(select(R.params, R.workload).where(R.id == newest_id)).one()
        return [point_from_row(r) for r in rows], dict(params_row.params), str(params_row.workload)

    def refresh(self, keys: Iterable[StackKey], window: int) -> None:
        """Recompute the summaries of these stacks from their newest ``window`` results (in
        this transaction); a stack with no results left is removed."""
        for key in sorted(set(keys)):
            points, params, workload = self._window_points(key, window)
            gpu_id, params_hash, fp = key
            if not points or params is None or workload is None:
                self._s.execute(
                    delete(BenchmarkStack).where(
                        BenchmarkStack.gpu_id == gpu_id,
                        BenchmarkStack.params_hash == params_hash,
                        BenchmarkStack.fingerprint_hash == fp,
                    )
                )
                continue
            doc = stack_to_doc(summarise_stack(points, window))
            values = {
                "gpu_id": gpu_id,
                "params_hash": params_hash,
                "fingerprint_hash": fp,
                "workload": workload,
                "params": params,
                "summary": doc,
                "updated_at": _now(),
            }
            dialect = self._s.get_bind().dialect.name
            ins = (
                postgresql.insert(BenchmarkStack)
                if dialect == "postgresql"
                else sqlite.insert(BenchmarkStack)
            )
            stmt = ins.values(**values).on_conflict_do_update(
                index_elements=["gpu_id", "params_hash", "fingerprint_hash"],
                set_={
                    "workload": workload,
                    "params": params,
                    "summary": doc,
                    "updated_at": values["updated_at"],
                },
            )
            self._s.execute(stmt)

    def stacks_of_cells(self, cells: Iterable[tuple[int, str]] | None = None) -> list[StoredStack]:
        """Every stack of the given (gpu_id, params_hash) cells (all when None), catalog GPUs
        not deleted, with the GPU's slug."""
        q = (
            select(BenchmarkStack, Gpu.slug)
            .join(Gpu, Gpu.id == BenchmarkStack.gpu_id)
            .where(Gpu.deleted.is_(False))
        )
        wanted = sorted(set(cells)) if cells is not None else None
        out: list[StoredStack] = []
        if wanted is not None:
            if not wanted:
                return out
            chunks: Sequence[list[tuple[int, str]]] = [
                wanted[i : i + 500] for i in range(0, len(wanted), 500)
            ]
            for chunk in chunks:
                out.extend(
                    self._rows(q.where(tuple_(BenchmarkStack.gpu_id, BenchmarkStack.params_hash).in_(chunk)))
                )
            return out
        return self._rows(q)

    def _rows(self, q: Any) -> list[StoredStack]:
        return [
            StoredStack(
                gpu_id=int(st.gpu_id),
                gpu_slug=slug,
                workload=st.workload,
                params_hash=st.params_hash,
                params=dict(st.params),
                stack=stack_from_doc(st.summary),
            )
            for st, slug in self._s.execute(q)
        ]

    def all_stack_keys(self) -> list[StackKey]:
        """Every (GPU, parameters, fingerprint) with stored, non-retracted results: what a
        rebuild of the summaries covers."""
        R = BenchmarkResult
        q = (
            select(R.gpu_id, R.params_hash, R.fingerprint_hash)
            .where(R.gpu_id.is_not(None), R.retracted.is_(False))
            .group_by(R.gpu_id, R.params_hash, R.fingerprint_hash)
        )
        return [(int(g), str(ph), str(fp)) for g, ph, fp in self._s.execute(q) if g is not None]

    def slugs_of(self, gpu_ids: Iterable[int]) -> dict[int, str]:
        ids = sorted(set(gpu_ids))
        if not ids:
            return {}
        return {int(i): str(s) for i, s in self._s.execute(select(Gpu.id, Gpu.slug).where(Gpu.id.in_(ids)))}

    def count(self) -> int:
        return int(self._s.scalar(select(func.count()).select_from(BenchmarkStack)) or 0)

    def clear_stale(self) -> None:
        """Drop summaries whose stack no longer has a result (used by a rebuild)."""
        R = BenchmarkResult
        live = select(R.gpu_id, R.params_hash, R.fingerprint_hash).where(R.retracted.is_(False)).distinct()
        self._s.execute(
            delete(BenchmarkStack).where(
                ~tuple_(
                    BenchmarkStack.gpu_id, BenchmarkStack.params_hash, BenchmarkStack.fingerprint_hash
                ).in_(live)
            )
        )


__all__ = ["JOURNAL_KEEP", "JournalEntry", "StackKey", "StackRepository", "StoredStack"]
