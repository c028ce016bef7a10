"""Unit of work: one per request (or CLI command). It owns the session and the repositories
over it (``uow.catalog``, ``uow.benchmarks``, ``uow.keys``, ...). Repositories flush; only
:meth:`UnitOfWork.commit` commits -- and only ``service.usecases.transaction.commits`` calls
it, once, at the end of a write use case.

Watermarks (docs/architecture.md, "Watermarks"): a write use case says what it changed --
:meth:`touch_catalog` (GPUs, aliases, prices, FX) or :meth:`touch_cells` (results of cells:
new results, quarantine, retraction, a pending GPU mapped) -- and the commit, in the same
transaction, refreshes the touched stacks' summaries, moves the matching watermark and
journals the touched cells. A write that touches neither (a key, an alert acknowledgement, a
stored recommendation) moves no watermark.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from service.core.estimation.estimate import ESTIMATOR_VERSION
from service.core.evidence.versions import DataVersion, Watermarks
from service.db.repositories.benchmark_admin import BenchmarkAdminRepository
from service.db.repositories.benchmark_queries import BenchmarkQueryRepository
from service.db.repositories.benchmarks import BenchmarkRepository
from service.db.repositories.catalog import CatalogRepository
from service.db.repositories.keys import KeyRepository
from service.db.repositories.measurements import MeasurementRepository
from service.db.repositories.stacks import WATERMARKS_SQL, StackRepository

if TYPE_CHECKING:
    from service.db.repositories.recommendations import RecommendationRepository

DEFAULT_STACK_WINDOW = 100

CellKey = tuple[int | None, str, str, str]  # (gpu_id, fingerprint_hash, workload, params_hash)


class UnitOfWork:
    def __init__(self, factory: sessionmaker[Session], *, stack_window: int = DEFAULT_STACK_WINDOW) -> None:
        self._factory = factory
        self.session: Session = factory()
        self.stack_window = stack_window
        self._catalog_changed = False
        self._cells: set[tuple[int, str, str, str]] = set()
        self._watermarks: Watermarks | None = None
        self._everything = False
        self.catalog = CatalogRepository(self.session)
        self.benchmarks = BenchmarkRepository(self.session)
        self.benchmark_queries = BenchmarkQueryRepository(self.session)
        self.benchmark_admin = BenchmarkAdminRepository(self.session)
        self.keys = KeyRepository(self.session)
        self.measurements = MeasurementRepository(self.session)
        self.stacks = StackRepository(self.session)

    @cached_property
    def recommendations(self) -> RecommendationRepository:
        """Made on first use: its module brings in the recommender (~0.1 s), which the CLI's
        estimate, compare and gpus never need."""
        from service.db.repositories.recommendations import RecommendationRepository

        return RecommendationRepository(self.session)

    def __enter__(self) -> UnitOfWork:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.end()

    # ---- what this transaction changed ---------------------------------------------------

    def touch_catalog(self) -> None:
        """GPUs, aliases, prices or FX rates changed: the catalog watermark moves at commit."""
        self._catalog_changed = True

    def touch_cells(self, cells: Iterable[CellKey]) -> None:
        """Results of these (gpu_id, fingerprint, workload, parameters hash) cells changed: their
        stack summaries are refreshed, the measurement watermark moves and the cells are
        journalled at commit. Cells of pending GPUs (``gpu_id`` None) belong to no view."""
        for gpu_id, fp, workload, params_hash in cells:
            if gpu_id is not None:
                self._cells.add((int(gpu_id), fp, workload, params_hash))

    def touch_every_cell(self) -> None:
        """Every stack summary was rebuilt: the measurement watermark moves without a journal
        entry, so every reader reloads all cells."""
        self._everything = True

    # ---- commit --------------------------------------------------------------------------

    def commit(self) -> Watermarks | None:
        """Commit; first, in the same transaction, refresh the touched stacks, move the
        watermarks of what changed and journal the touched cells. Returns the new watermarks
        when one moved."""
        moved: Watermarks | None = None
        if self._cells:
            self.stacks.refresh(((g, ph, fp) for g, fp, _wl, ph in self._cells), self.stack_window)
        if self._cells or self._catalog_changed or self._everything:
            moved = self.stacks.bump(
                catalog=self._catalog_changed, measurement=bool(self._cells) or self._everything
            )
            if self._cells and not self._everything:
                self.stacks.journal(moved.measurement, ((g, wl, ph) for g, _fp, wl, ph in self._cells))
        self.session.commit()
        self._cells.clear()
        self._catalog_changed = False
        self._everything = False
        self._watermarks = None
        return moved

    def rollback(self) -> None:
        self.session.rollback()
        self._watermarks = None
        self._cells.clear()
        self._catalog_changed = False

    def close(self) -> None:
        self.session.close()

    def end(self) -> None:
        """Close, whatever state the connection is in: one whose rollback fails (the server
        went away mid-transaction) is invalidated -- dropped from the pool -- and the failure
        is not raised: the request already has its answer (an error of its own, or an outage)."""
        try:
            self.session.close()
        except Exception:
            with contextlib.suppress(Exception):
                self.session.invalidate()

    # ---- reads -----------------------------------------------------------------------------

    def watermarks(self) -> Watermarks:
        """The current watermarks, read once per unit of work (until it commits): however many
        parts of a read request ask, the request makes one watermark read."""
        if self._watermarks is None:
            if self.session.in_transaction():
                self._watermarks = self.stacks.watermarks()
            else:
                bind = self.session.get_bind()
                if not isinstance(bind, Engine):  # pragma: no cover - sessions here are bound to engines
                    self._watermarks = self.stacks.watermarks()
                else:
                    self._watermarks = read_watermarks(bind)
        return self._watermarks

    def known_watermarks(self) -> Watermarks | None:
        """The watermarks this unit of work has read already (``None``: reading them is SQL)."""
        return self._watermarks

    def use_watermarks(self, watermarks: Watermarks) -> None:
        """Watermarks the caller read before this unit of work's transaction (the API reads
        them without blocking its event loop, ``db.watermark_reader``); they count as this unit
        of work's one watermark read."""
        self._watermarks = watermarks

    def data_version(self) -> str:
        """``c<catalog>.m<measurement>.e<estimator>`` as answers carry it."""
        return str(DataVersion(self.watermarks(), ESTIMATOR_VERSION))


def read_watermarks(engine: Engine) -> Watermarks:
    """One watermark read on a pooled connection of its own, outside any transaction: one
    round trip on PostgreSQL (the DBAPI connection is put in autocommit for the statement, so
    psycopg sends no BEGIN and the pool's reset-on-return has nothing to roll back; SQLite's
    connections are in autocommit already). There is no pre-ping per checkout: a connection
    the server dropped fails here, is invalidated, and the read is retried once on a fresh one."""
    dbapi = engine.dialect.loaded_dbapi
    retryable = (dbapi.OperationalError, dbapi.InterfaceError)
    for attempt in (0, 1):
        raw = engine.raw_connection()
        try:
            driver: Any = raw.driver_connection
            switch = getattr(driver, "autocommit", None) is False
            if switch:
                driver.autocommit = True
            try:
                cur = raw.cursor()
                try:
                    cur.execute(WATERMARKS_SQL)
                    row = cur.fetchone()
                finally:
                    cur.close()
            finally:
                if switch and not getattr(driver, "closed", False):
                    driver.autocommit = False
            if row is None:
                raise LookupError("the watermarks row is missing: run gpu-advisor migrate")
            return Watermarks(int(row[0]), int(row[1]))
        except retryable:
            raw.invalidate()
            if attempt:
                raise
        finally:
            raw.close()
    raise AssertionError("unreachable")  # pragma: no cover
