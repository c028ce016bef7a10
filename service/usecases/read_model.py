"""The per-process read snapshot (docs/architecture.md, "Read path").

Every advisory read (a GPU, the catalog list, prices, ``/v1/estimate``, the measurements view,
later ``/v1/compare`` and ``/v1/recommend``) answers from memory: the catalog (records, specs,
the alias index, prices, FX) keyed by the catalog watermark, and the measured cells (every
stack's window summary, the stack fingerprints, the calibrations) keyed by the measurement
watermark. A request reads the two watermarks (one single-row read, memoised on its unit of
work) and, only when one moved, brings its part forward:

* the catalog is small (tens of GPUs): it is reloaded whole, in two queries;
* measurements follow the **journal**: the cells touched by each commit since the snapshot's
  watermark are reloaded (their stack summaries, one indexed query), so a run's worth of
  changes costs milliseconds; the calibrations those cells feed -- only those -- are refitted
  on a background worker thread and swapped in when done (a fit takes up to a second; it
  never runs on the request path). Until then answers use the previous fits and say from
  which measurement watermark they are (``calibration_watermark``). A journal that no longer
  reaches back means a full reload (the fits then refit in the background too).

A write through one replica is seen by the next request to any replica: the watermark read is
against the shared database, and the journal tells every process what to reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from service.core.catalog.records import FxRate, GpuRecord, PriceRow
from service.core.catalog.specs import AliasEntry, GpuSpec
from service.core.estimation.calibration import (
    CALIBRATED_WORKLOADS,
    CalibrationSet,
    CellMeasurement,
    GroupKey,
    fit_calibrations,
    gemm_rates,
    group_of,
)
from service.core.evidence.aggregate import CellView, StackWindow, view_of
from service.core.evidence.versions import Watermarks
from service.core.pricing.cost import PriceBook
from service.core.pricing.shapes import GpuLink
from service.db.repositories.stacks import StoredStack
from service.db.uow import UnitOfWork
from service.usecases.transaction import commits

CellId = tuple[str, str, str]  # (gpu slug, workload, parameters hash)


@dataclass(frozen=True, slots=True)
class CatalogSnapshot:
    watermark: int
    records: Mapping[str, GpuRecord]  # live GPUs by slug
    specs: Mapping[str, GpuSpec]
    alias_index: Mapping[str, list[AliasEntry]]
    prices: Mapping[str, tuple[PriceRow, ...]]  # by slug, every GPU (deleted ones too)
    fx_rates: tuple[FxRate, ...]  # newest first
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """Per-snapshot memo of derived views (the price book per day): a snapshot is immutable."""

    def price_book(self, today: dt.date) -> PriceBook:
        """The :class:`~service.core.pricing.cost.PriceBook` of this snapshot's prices and FX rates,
        built once per snapshot and day (ages and staleness are counted from ``today``)."""
        key = ("price_book", today)
        book = self.memo.get(key)
        if book is None:
            if len(self.memo) > 64:
                self.memo.clear()
            links = {
                slug: GpuLink(spec.form_factor, spec.node.nvlink_domain_size, spec.vendor)
                for slug, spec in self.specs.items()
            }
            from service.catalog.skypilot_snapshot import instance_shapes  # priced answers only

            book = self.memo[key] = PriceBook.build(
                self.prices, self.fx_rates, today=today, shapes=instance_shapes(), links=links
            )
        return book


@dataclass(frozen=True, slots=True)
class MeasuredCellStacks:
    """Every stack of one cell (GPU, workload, canonical parameters)."""

    gpu_slug: str
    workload: str
    params_hash: str
    params: Mapping[str, Any]
    stacks: tuple[StackWindow, ...]

    def view(self, k: int) -> CellView:
        return view_of(self.stacks, k)


@dataclass(frozen=True, slots=True)
class MeasurementSnapshot:
    watermark: int
    cells: Mapping[CellId, MeasuredCellStacks]
    by_gpu: Mapping[str, tuple[CellId, ...]]
    fingerprints: Mapping[str, Mapping[str, Any]]  # stack hash -> fingerprint fields
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    """Per-snapshot memo of derived views (a cell's view at k, its presentation): a snapshot
    is immutable, so what is derived from it never goes stale; a new snapshot starts empty."""

    def cell(self, slug: str, workload: str, params_hash: str) -> MeasuredCellStacks | None:
        return self.cells.get((slug, workload, params_hash))


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one request reads: the catalog, the measured cells and the fitted calibrations."""

    catalog: CatalogSnapshot
    measurements: MeasurementSnapshot
    calibrations: CalibrationSet
    calibration_watermark: int  # the measurement watermark the calibrations were fitted at

    @property
    def watermarks(self) -> Watermarks:
        return Watermarks(self.catalog.watermark, self.measurements.watermark)

    def price_book(self, today: dt.date) -> PriceBook:
        """The catalog's price book on ``today`` (:meth:`CatalogSnapshot.price_book`)."""
        return self.catalog.price_book(today)


@dataclass
class ReadModelStats:
    """Counters tests and metrics read: what the snapshot had to do."""

    catalog_loads: int = 0
    full_measurement_loads: int = 0
    journal_applications: int = 0
    cells_reloaded: int = 0
    full_fits: int = 0
    refitted_groups: list[GroupKey] = field(default_factory=list)


def _cells_of(stacks: Iterable[StoredStack]) -> dict[CellId, MeasuredCellStacks]:
    grouped: dict[CellId, list[StoredStack]] = {}
    for s in stacks:
        grouped.setdefault((s.gpu_slug, s.workload, s.params_hash), []).append(s)
    out: dict[CellId, MeasuredCellStacks] = {}
    for key, ss in grouped.items():
        ss.sort(key=lambda s: s.stack.fingerprint_hash)
        newest = max(ss, key=lambda s: s.stack.newest)
        out[key] = MeasuredCellStacks(
            gpu_slug=key[0],
            workload=key[1],
            params_hash=key[2],
            params=newest.params,
            stacks=tuple(s.stack for s in ss),
        )
    return out


def _by_gpu(cells: Mapping[CellId, MeasuredCellStacks]) -> dict[str, tuple[CellId, ...]]:
    out: dict[str, list[CellId]] = {}
    for key in sorted(cells):
        out.setdefault(key[0], []).append(key)
    return {k: tuple(v) for k, v in out.items()}


def cell_measurements(
    cells: Iterable[MeasuredCellStacks], specs: Mapping[str, GpuSpec], k: int
) -> list[CellMeasurement]:
    """The calibration inputs of measured cells: each cell's latest-measured medians (the one
    rule), on the GPU's current spec."""
    out: list[CellMeasurement] = []
    for c in cells:
        if c.workload not in CALIBRATED_WORKLOADS or c.gpu_slug not in specs:
            continue
        view = c.view(k)
        medians = {name: s.median for name, s in view.metrics.items()}
        if medians:
            out.append(
                CellMeasurement(gpu=specs[c.gpu_slug], workload=c.workload, params=c.params, medians=medians)
            )
    return out


class CalibrationStore(Protocol):
    """Where a short-lived process (the CLI) keeps full fits between runs: a fit depends only
    on the catalog and measurement watermarks (and the estimator's code, the store's key), so
    a fit stored at the same watermarks is the fit this process would make."""

    def load(self, catalog_watermark: int, measurement_watermark: int) -> CalibrationSet | None: ...

    def save(self, catalog_watermark: int, measurement_watermark: int, fits: CalibrationSet) -> None: ...


class ReadModel:
    """One per process (``app.state.read_model``); thread-safe. ``background=False`` refits
    on the calling thread (the CLI, some tests); ``store`` reuses full fits made at the same
    watermarks by an earlier process instead of refitting."""

    FIRST_FIT_WAIT_S = 120.0

    def __init__(
        self,
        *,
        min_points: int = 3,
        window: int = 100,
        background: bool = True,
        store: CalibrationStore | None = None,
    ) -> None:
        self.store = store
        self.min_points = min_points
        self.window = window
        self.stats = ReadModelStats()
        self._lock = threading.Lock()
        self._catalog: CatalogSnapshot | None = None
        self._measurements: MeasurementSnapshot | None = None
        self._calibrations = CalibrationSet()
        self._calibration_watermark = -1
        self._fitted_specs: Mapping[str, GpuSpec] = {}
        self._pending_groups: set[GroupKey] = set()
        self._full_fit_pending = True
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refit") if background else None
        self._future: Future[None] | None = None
        self._first_fit = threading.Event()
        self._waiters: list[Callable[[], None]] = []  # event-loop waiters for the first fit

    # ---- the request path ------------------------------------------------------------------

    def snapshot(self, uow: UnitOfWork, *, calibrated: bool = True) -> Snapshot:
        """The snapshot at the database's current watermarks (one watermark read).
        ``calibrated``: wait for the first calibration fit (up to :attr:`FIRST_FIT_WAIT_S`)
        rather than answer from no calibrations at all; catalog reads do not need it."""
        marks = uow.watermarks()
        catalog = self._catalog
        if catalog is None or catalog.watermark != marks.catalog:
            catalog = self._load_catalog(uow, marks.catalog)
        measured = self._measurements
        if measured is None or measured.watermark != marks.measurement:
            measured = self._advance_measurements(uow, marks.measurement)
        self._schedule_fits(catalog, measured)
        if calibrated and self._calibration_watermark < 0:
            # the first fit runs on the refit thread (or, without one, on this thread)
            self._first_fit.wait(timeout=self.FIRST_FIT_WAIT_S)
        with self._lock:
            return Snapshot(
                catalog=catalog,
                measurements=measured,
                calibrations=self._calibrations,
                calibration_watermark=self._calibration_watermark,
            )

    def get(self, uow: UnitOfWork) -> Mapping[str, list[AliasEntry]]:
        """The alias index (what name resolution needs; no calibration wait)."""
        return self.snapshot(uow, calibrated=False).catalog.alias_index

    def current(self, marks: Watermarks, *, calibrated: bool = True) -> bool:
        """Whether a request at ``marks`` can be answered without SQL or a fit wait: the
        snapshot is loaded at those watermarks (and the first fit is done, if ``calibrated``)."""
        catalog, measured = self._catalog, self._measurements
        return (
            (self._first_fit.is_set() or not calibrated)
            and catalog is not None
            and catalog.watermark == marks.catalog
            and measured is not None
            and measured.watermark == marks.measurement
        )

    async def first_fit(self, timeout_s: float | None = None) -> bool:
        """Wait on the event loop -- holding no thread -- for the first calibration fit, up to
        ``timeout_s`` (default :attr:`FIRST_FIT_WAIT_S`); whether it has finished."""
        if self._first_fit.is_set():
            return True
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def settle() -> None:
            if not done.done():
                done.set_result(None)

        def wake() -> None:
            loop.call_soon_threadsafe(settle)

        with self._lock:
            self._waiters.append(wake)
        if self._first_fit.is_set():  # set between the check and the registration
            return True
        try:
            await asyncio.wait_for(asyncio.shield(done), timeout_s or self.FIRST_FIT_WAIT_S)
        except TimeoutError:
            return False
        return True

    # ---- catalog -----------------------------------------------------------------------------

    def _load_catalog(self, uow: UnitOfWork, watermark: int) -> CatalogSnapshot:
        repo = uow.catalog
        records = repo.records()
        prices: dict[str, list[PriceRow]] = {}
        for p in repo.prices():
            prices.setdefault(p.gpu_slug, []).append(p)
        from service.core.catalog.specs import gpu_spec_from_doc

        snap = CatalogSnapshot(
            watermark=watermark,
            records=records,
            specs={slug: gpu_spec_from_doc(r.document) for slug, r in records.items()},
            alias_index=repo.alias_index(),
            prices={k: tuple(v) for k, v in prices.items()},
            fx_rates=tuple(repo.fx_rates()),
        )
        with self._lock:
            if self._catalog is None or self._catalog.watermark < watermark:
                self._catalog = snap
                self.stats.catalog_loads += 1
            return self._catalog

    # ---- measurements --------------------------------------------------------------------------

    def _advance_measurements(self, uow: UnitOfWork, watermark: int) -> MeasurementSnapshot:
        current = self._measurements
        entries = uow.stacks.journal_since(current.watermark, watermark) if current is not None else None
        if current is None or entries is None or watermark < current.watermark:
            stacks = uow.stacks.stacks_of_cells(None)
            cells = _cells_of(stacks)
            snap = MeasurementSnapshot(
                watermark=watermark,
                cells=cells,
                by_gpu=_by_gpu(cells),
                fingerprints=uow.benchmark_queries.fingerprint_fields(
                    {s.stack.fingerprint_hash for s in stacks}
                ),
            )
            with self._lock:
                if self._measurements is None or self._measurements.watermark < watermark or entries is None:
                    self._measurements = snap
                    self._full_fit_pending = True
                    self.stats.full_measurement_loads += 1
                return self._measurements
        touched = {(g, wl, ph) for e in entries for g, wl, ph in e.cells}
        reloaded = _cells_of(uow.stacks.stacks_of_cells({(g, ph) for g, _wl, ph in touched}))
        slugs = uow.stacks.slugs_of({g for g, _wl, _ph in touched})
        cells = dict(current.cells)
        for g, wl, ph in touched:
            if g in slugs:
                cells.pop((slugs[g], wl, ph), None)
        cells.update(reloaded)
        new_fps = {s.fingerprint_hash for c in reloaded.values() for s in c.stacks} - set(
            current.fingerprints
        )
        fingerprints = dict(current.fingerprints)
        if new_fps:
            fingerprints.update(uow.benchmark_queries.fingerprint_fields(new_fps))
        snap = MeasurementSnapshot(
            watermark=watermark, cells=cells, by_gpu=_by_gpu(cells), fingerprints=fingerprints
        )
        groups = self._groups_of(list(reloaded.values()), [slugs[g] for g, _wl, _ph in touched if g in slugs])
        with self._lock:
            if self._measurements is not None and self._measurements.watermark >= watermark:
                return self._measurements  # another request got here first
            self._measurements = snap
            self._pending_groups |= groups
            self.stats.journal_applications += 1
            self.stats.cells_reloaded += len(reloaded)
            return snap

    def _groups_of(self, cells: Sequence[MeasuredCellStacks], removed_slugs: Sequence[str]) -> set[GroupKey]:
        """The calibration groups these cells feed (a removed cell's group needs a refit too:
        it is identified from its GPU; the group key needs its workload and family, so every
        group of that GPU and workload is refitted)."""
        keys: set[GroupKey] = set()
        specs = self._catalog.specs if self._catalog is not None else {}
        for m in cell_measurements(cells, specs, self.min_points):
            key = group_of(m)
            if key is not None:
                keys.add(key)
        for c in cells:
            if c.workload == "gemm" and c.gpu_slug in specs:
                keys.add((c.gpu_slug, "gemm", "*"))
        keys.update((slug, "*", "*") for slug in removed_slugs if slug not in {c.gpu_slug for c in cells})
        return keys

    # ---- calibrations: fitted off the request path ---------------------------------------------

    def _schedule_fits(self, catalog: CatalogSnapshot, measured: MeasurementSnapshot) -> None:
        with self._lock:
            if self._fitted_specs is not catalog.specs:
                changed = {
                    s
                    for s in set(catalog.specs) | set(self._fitted_specs)
                    if catalog.specs.get(s) != self._fitted_specs.get(s)
                }
                if self._fitted_specs:
                    self._pending_groups |= {(s, "*", "*") for s in changed}
                self._fitted_specs = catalog.specs
            work = self._full_fit_pending or bool(self._pending_groups)
            if not work or (self._future is not None and not self._future.done()):
                return
            full, groups = self._full_fit_pending, set(self._pending_groups)
            self._full_fit_pending = False
            self._pending_groups.clear()
            if self._executor is None:
                job: Future[None] | None = None
            else:
                job = self._executor.submit(self._fit, catalog, measured, full, groups)
                self._future = job
        if job is None:
            self._fit(catalog, measured, full, groups)

    def _fit(
        self, catalog: CatalogSnapshot, measured: MeasurementSnapshot, full: bool, groups: set[GroupKey]
    ) -> None:
        try:
            self._fit_now(catalog, measured, full, groups)
        finally:
            self._first_fit.set()
            with self._lock:
                waiters, self._waiters = self._waiters, []
            for wake in waiters:
                with contextlib.suppress(RuntimeError):  # that event loop has closed meanwhile
                    wake()

    def _fit_now(
        self, catalog: CatalogSnapshot, measured: MeasurementSnapshot, full: bool, groups: set[GroupKey]
    ) -> None:
        stored = self.store.load(catalog.watermark, measured.watermark) if full and self.store else None
        cms = (
            cell_measurements(measured.cells.values(), catalog.specs, self.min_points)
            if stored is None
            else []
        )
        if stored is not None:
            fitted = stored
        elif full:
            fitted = fit_calibrations(cms)
            with self._lock:
                self.stats.full_fits += 1
            if self.store is not None:
                self.store.save(catalog.watermark, measured.watermark, fitted)
        else:
            wanted: dict[GroupKey, list[CellMeasurement]] = {}
            for m in cms:
                key = group_of(m)
                if key is None:
                    continue
                if key in groups or (key[0], "*", "*") in groups or (key[0], key[1], "*") in groups:
                    wanted.setdefault(key, []).append(m)
            # groups named but with no cells left are dropped by refitting them empty
            for g in groups:
                if "*" not in g and g not in wanted:
                    wanted[g] = []
            base = self._calibrations
            from dataclasses import replace

            fitted = replace(base, gemm_tflops=gemm_rates(cms), _picked={}).refitted(
                {k: sorted(v, key=lambda m: repr(sorted(m.params.items()))) for k, v in wanted.items()}
            )
            with self._lock:
                self.stats.refitted_groups.extend(sorted(wanted))
        with self._lock:
            if measured.watermark >= self._calibration_watermark:
                self._calibrations = fitted
                self._calibration_watermark = measured.watermark

    def warm(self, uow: UnitOfWork) -> None:
        """Load the catalog and measurements and fit every calibration now (at start-up, off
        the request path), so no request pays for the full fit; returns once it is done."""
        self.snapshot(uow)

    def adopt(self, other: ReadModel) -> None:
        """Start from ``other``'s loaded snapshot and fits instead of loading and fitting again
        (a full fit takes seconds). Only for a database that is a copy of the one ``other``
        read, made after its fits: at the same watermarks the data is then the same, and the
        first write moves the watermarks, after which this model follows the copy's journal as
        it would have anyway. The tests' per-test databases are such copies of one template."""
        with other._lock:
            catalog, measured = other._catalog, other._measurements
            fits, fitted_at, specs = other._calibrations, other._calibration_watermark, other._fitted_specs
            busy = other._full_fit_pending or bool(other._pending_groups)
        if catalog is None or measured is None or fitted_at != measured.watermark or busy:
            raise ValueError("adopt() needs a read model whose fits are done at its snapshot")
        if (other.min_points, other.window) != (self.min_points, self.window):
            raise ValueError("adopt() needs a read model with the same min_points and window")
        with self._lock:
            self._catalog, self._measurements = catalog, measured
            self._calibrations, self._calibration_watermark = fits, fitted_at
            self._fitted_specs, self._full_fit_pending = specs, False
            self._pending_groups.clear()
        self._first_fit.set()

    @property
    def warmed(self) -> bool:
        """Whether the first full calibration fit has finished."""
        return self._first_fit.is_set()

    def wait_for_fits(self, timeout: float = 120.0) -> None:
        """Block until scheduled fits are done (tests, the load benchmark's warm-up)."""
        f = self._future
        if f is not None:
            f.result(timeout=timeout)

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)


@commits
def rebuild_stacks(uow: UnitOfWork, *, only_if_missing: bool = True) -> int:
    """Recompute every stack summary from the stored results (a database upgraded from before
    summaries existed, or a changed ``measurement_window``). With ``only_if_missing``, only
    when results exist and no summary does. Returns the number of stacks rebuilt."""
    if only_if_missing and uow.stacks.count() > 0:
        return 0
    keys = uow.stacks.all_stack_keys()
    if not keys:
        return 0
    uow.stacks.refresh(keys, uow.stack_window)
    uow.stacks.clear_stale()
    uow.touch_every_cell()
    return len(keys)
