"""Benchmark results as the service stores and re-evaluates them: the core types the
repositories return (stored runs, results, pending GPUs, admin alerts, coverage counts), the
inputs they take (a prepared result, an outlier policy, alert drafts), and the pure parts of
ingestion that both the database path and a dry run share -- the MAD test over a cell's
window, its detail sentence, GPU matching by memory.

A *cell* for quarantine purposes is (catalog GPU id, fingerprint hash, workload, parameters
hash): the outlier test never mixes stacks.

Pure: no web, DB or clock.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from service.core.catalog.specs import GpuSpec
from service.core.catalog.vocabulary import WORKLOADS
from service.core.evidence.aggregate import MIN_POINTS_FOR_OUTLIER_TEST, center_and_scale, outlier_score
from service.core.evidence.quarantine import STATISTICAL_OUTLIER

CellKey = tuple[int, str, str, str]  # (gpu_id, fingerprint_hash, workload, params_hash)


# ---- the outlier test ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OutlierPolicy:
    """The MAD test's settings: a cell's ``window`` most recent results take part; a value is
    an outlier when ``|x - median| / scale > mad_threshold``, ``scale`` floored at
    ``floor_fraction * |median|`` (:func:`service.core.evidence.aggregate.center_and_scale`)."""

    window: int
    mad_threshold: float
    floor_fraction: float


# (name, unit) of the figure the test runs on, per workload: the stored ``main_value``
MAIN_METRIC: dict[str, tuple[str, str]] = {
    name: (w.main_metric, (m.unit if (m := w.metric(w.main_metric)) else "")) for name, w in WORKLOADS.items()
}
MAIN_METRIC["gemm"] = ("rate", "TFLOP/s (TOP/s for integer precisions)")


def outlier_detail(workload: str, value: float, center: float, n: int, scale: float, threshold: float) -> str:
    """The quarantine detail of a statistical outlier: the figures at the time of flagging."""
    name, unit = MAIN_METRIC[workload]
    score = outlier_score(value, center, scale)
    return (
        f"{name} {value:g} {unit} is {score:.1f} scaled MADs from the median {center:g} {unit} "
        f"of its cell ({n} results; threshold {threshold:g}, scale {scale:.3g})"
    )


@dataclass(frozen=True, slots=True)
class VirtualPoint:
    """A result not stored (dry run) taking part in a cell's outlier test."""

    cell: CellKey
    value: float | None
    in_baseline: bool
    tag: Any


@dataclass(frozen=True, slots=True)
class Flip:
    """A result whose outlier flag changed (``outlier_detail`` None: no longer an outlier),
    with its new effective quarantine state once known."""

    id: int | None
    tag: Any
    outlier_detail: str | None
    quarantined: bool = False
    quarantine_reason: str | None = None
    quarantine_detail: str | None = None


# a stored member of a cell's test: (id, main value, in the baseline, flagged now, tag)
Member = tuple[int | None, float | None, bool, bool, Any]


def outlier_flips(
    members: Mapping[CellKey, Sequence[Member]], policy: OutlierPolicy, virtual: Sequence[VirtualPoint] = ()
) -> list[Flip]:
    """The MAD test over each cell's ``policy.window`` most recent members (by id; a dry
    run's virtual points are the newest of all). Returns the flips: stored members whose flag
    must change and virtual points that are outliers."""
    cells: dict[CellKey, list[Member]] = {}
    window = policy.window
    for cell, stored in members.items():  # the cell's most recent results, newest first
        rows = sorted(stored, key=lambda r: -(r[0] or 0))
        del rows[window:]
        cells[cell] = rows
    for v in virtual:
        rows = cells.setdefault(v.cell, [])
        rows.insert(0, (None, v.value, v.in_baseline, False, v.tag))
        del rows[window:]
    flips: list[Flip] = []
    threshold = policy.mad_threshold
    for cell, rows in cells.items():
        values = [r[1] for r in rows if r[2] and r[1] is not None]
        n = len(values)
        if n < MIN_POINTS_FOR_OUTLIER_TEST:
            flips.extend(
                Flip(id=rid, tag=tag, outlier_detail=None) for rid, _, _, flagged, tag in rows if flagged
            )
            continue
        center, scale = center_and_scale(values, policy.floor_fraction)
        # |x - m| > threshold * scale, inlined: this loop runs over every stored point of the cell
        limit = threshold * scale
        for rid, value, in_base, flagged, tag in rows:
            outlier = (
                in_base
                and value is not None
                and (abs(value - center) > limit if scale > 0 else value != center)
            )
            if outlier != flagged:
                detail = (
                    outlier_detail(cell[2], value, center, n, scale, threshold)
                    if outlier and value is not None
                    else None
                )
                flips.append(Flip(id=rid, tag=tag, outlier_detail=detail))
    return flips


# ---- alerts ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class AlertDraft:
    """An admin alert to store."""

    kind: str
    message: str
    gpu_id: int | None = None
    run_pk: int | None = None
    pending_gpu_id: int | None = None
    result_ids: tuple[int, ...] = ()
    data: Mapping[str, Any] = field(default_factory=dict)


def outlier_alert(
    flips: Sequence[Flip], *, gpu_id: int, slug: str, run_pk: int | None, context: str
) -> AlertDraft | None:
    """One alert for stored results that a re-evaluation newly quarantined as outliers."""
    newly = [f for f in flips if f.id is not None and f.quarantine_reason == STATISTICAL_OUTLIER]
    if not newly:
        return None
    return AlertDraft(
        kind=STATISTICAL_OUTLIER,
        message=f"{len(newly)} stored result(s) on {slug} became statistical outliers {context}",
        gpu_id=gpu_id,
        run_pk=run_pk,
        result_ids=tuple(f.id for f in newly if f.id is not None),
        data={"example": newly[0].quarantine_detail},
    )


# ---- catalog GPUs for an NVML identity ---------------------------------------------------------

# Memory within this fraction of a catalog figure counts as a match. NVML reports the usable
# figure exactly with default ECC and ~the physical figure with ECC off (L40S: 46,068 vs
# 49,140 MiB, 6% apart), so both are compared.
MEMORY_MATCH_TOLERANCE = 0.02


@dataclass(frozen=True, slots=True)
class CatalogGpu:
    """A live catalog GPU as ingestion sees it: its row id, the memory figures materialised
    from its document, and its effective spec."""

    id: int
    slug: str
    memory_bytes: int | None
    usable_memory_bytes: int | None
    spec: GpuSpec


@dataclass(frozen=True, slots=True)
class GpuMatch:
    gpu_id: int
    slug: str
    spec: GpuSpec
    resolved_by: str  # admin_mapping | pci_memory | name | name_memory

    @classmethod
    def of(cls, gpu: CatalogGpu, how: str) -> GpuMatch:
        return cls(gpu_id=gpu.id, slug=gpu.slug, spec=gpu.spec, resolved_by=how)


def _memory_distance(mem: int, gpu: CatalogGpu) -> float | None:
    refs = [r for r in (gpu.usable_memory_bytes, gpu.memory_bytes) if r]
    if not refs:
        return None
    return min(abs(mem - r) / r for r in refs)


def pick_by_memory(cands: Sequence[CatalogGpu], mem: int) -> CatalogGpu | None:
    """One candidate whose usable (or physical) memory matches NVML's total; a lone candidate
    with no memory figure is accepted; ties or no match -> None."""
    if len(cands) == 1:
        d = _memory_distance(mem, cands[0])
        return cands[0] if d is None or d <= MEMORY_MATCH_TOLERANCE else None
    scored = [
        (d, g) for g in cands if (d := _memory_distance(mem, g)) is not None and d <= MEMORY_MATCH_TOLERANCE
    ]
    if not scored:
        return None
    scored.sort(key=lambda x: (x[0], x[1].slug))
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None
    return scored[0][1]


# ---- what gets stored --------------------------------------------------------------------------


class NewResult(NamedTuple):
    """One vocabulary-checked, canonicalised result ready to store: ``params_hash`` and
    ``params_json`` come from one serialisation of the canonical parameters; ``check_*`` are
    the catalog checks' verdict (None: passed, or no catalog GPU yet). A named tuple rather
    than a frozen dataclass: a run carries up to 10,000 of them (three times cheaper to build)."""

    position: int
    workload: str
    params: Mapping[str, Any]
    params_hash: str
    params_json: str
    status: str
    metrics: Mapping[str, float]
    main_value: float | None
    step_time_s: float | None
    memory: Mapping[str, int | None]  # peak_allocated_bytes, peak_reserved_bytes, nvml_used_bytes
    repeats: int | None
    error: str | None
    measured_at: dt.datetime
    check_reason: str | None = None
    check_detail: str | None = None


@dataclass(frozen=True, slots=True)
class NewRun:
    run_id: str
    api_key_id: int | None
    host: str
    gpu_id: int | None
    pending_gpu_id: int | None
    resolved_by: str | None
    gpu_identity: Mapping[str, Any]
    gpu_count: int
    suite_version: str
    fingerprint: Mapping[str, Any]
    fingerprint_hash: str
    request_hash: str
    result_count: int
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    notes: str | None
    received_at: dt.datetime


@dataclass(frozen=True, slots=True)
class ResultOutcome:
    """Per submitted result: its id (None on a dry run) and quarantine state."""

    index: int
    result_id: int | None
    status: str
    quarantined: bool
    quarantine_reason: str | None
    quarantine_detail: str | None


@dataclass(frozen=True, slots=True)
class SubmissionAnswer:
    """The answer to a submission, as stored for replays (without a data version)."""

    run_id: str
    state: str  # accepted | pending
    gpu_slug: str | None
    fingerprint_hash: str
    result_count: int
    quarantined_count: int
    results: tuple[ResultOutcome, ...]
    warnings: tuple[str, ...]
    resolved_by: str | None
    pending_gpu_id: int | None
    dry_run: bool


@dataclass(frozen=True, slots=True)
class StoredAnswer:
    """An idempotency record: the digest of the body first submitted, and the answer given."""

    request_hash: str
    answer: SubmissionAnswer
    api_key_id: int | None = None  # the key that stored the run


# ---- what gets read back -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoredResult:
    """One stored result with its run, agent and GPU. ``pending_gpu_id`` is the run's queue
    entry (set while the GPU is unknown)."""

    id: int
    run_id: str
    position: int
    gpu_slug: str | None
    pending_gpu_id: int | None
    workload: str
    params: Mapping[str, Any]
    params_hash: str
    fingerprint_hash: str
    host: str
    agent_key_id: int | None
    agent_name: str | None
    agent_trusted: bool
    status: str
    metrics: Mapping[str, float]
    step_time_s: float | None
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    nvml_used_bytes: int | None
    repeats: int | None
    error: str | None
    measured_at: dt.datetime
    quarantined: bool
    quarantine_reason: str | None
    quarantine_detail: str | None
    review_state: str | None
    review_reason: str | None
    reviewed_at: dt.datetime | None
    reviewed_by_key_id: int | None
    retracted: bool


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One stored run with its agent (the API key), GPU and quarantined-result count."""

    pk: int
    run_id: str
    agent_key_id: int | None
    agent_name: str | None
    agent_trusted: bool
    host: str
    gpu_id: int | None
    gpu_slug: str | None
    pending_gpu_id: int | None
    resolved_by: str | None
    gpu_identity: Mapping[str, Any]
    gpu_count: int
    suite_version: str
    fingerprint: Mapping[str, Any]
    fingerprint_hash: str
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    received_at: dt.datetime
    notes: str | None
    result_count: int
    quarantined_count: int
    retracted_at: dt.datetime | None
    retract_reason: str | None

    @property
    def state(self) -> str:
        if self.retracted_at is not None:
            return "retracted"
        return "accepted" if self.gpu_id is not None else "pending"


@dataclass(frozen=True, slots=True)
class PendingGpu:
    """A device the catalog does not know, by its NVML identity (the admin queue)."""

    id: int
    status: str  # pending | mapped
    nvml_name: str
    pci_device_id: str
    pci_vendor_id: str | None
    pci_subsystem_id: str | None
    memory_total_bytes: int
    first_seen_at: dt.datetime
    last_seen_at: dt.datetime
    mapped_gpu_id: int | None
    mapped_at: dt.datetime | None


@dataclass(frozen=True, slots=True)
class PendingGpuUsage:
    """What waits on a pending GPU, and where it went once mapped."""

    run_count: int
    result_count: int
    mapped_gpu_slug: str | None


@dataclass(frozen=True, slots=True)
class AdminAlert:
    id: int
    kind: str
    message: str
    gpu_slug: str | None
    run_id: str | None
    pending_gpu_id: int | None
    result_count: int
    data: Mapping[str, Any]
    created_at: dt.datetime
    acknowledged_at: dt.datetime | None


@dataclass(frozen=True, slots=True)
class ResultToCheck:
    """A stored result as the catalog checks see it (re-checked when its GPU changes)."""

    id: int
    workload: str
    params: Mapping[str, Any]
    metrics: Mapping[str, float]
    memory: Mapping[str, int | None]
    review_state: str | None
    gpu_count: int = 1
    """GPUs of the result's run (the plausibility bounds scale with it)."""


@dataclass(frozen=True, slots=True)
class ReviewedResult:
    """A result an admin just reviewed: what its cell's re-evaluation needs."""

    id: int
    gpu_id: int | None
    fingerprint_hash: str
    workload: str
    params_hash: str
    status: str


@dataclass(frozen=True, slots=True)
class CoverageStats:
    """Counts over the non-retracted results of one (GPU, workload)."""

    results: int
    usable: int
    quarantined: int
    oom: int
    error: int
    configurations: int  # distinct canonical parameter sets
    fingerprints: int
    hosts: int
    newest_measured_at: dt.datetime | None


@dataclass(frozen=True, slots=True)
class LiveGpu:
    id: int
    slug: str
    name: str


# ---- filters -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParamFilter:
    """``param.<name>=<value>`` after coercion to the parameter's type."""

    name: str
    type: str  # int | float | bool | str (any other type compares as a string)
    value: Any


@dataclass(frozen=True, slots=True)
class ResultQuery:
    """Filters of a result listing, checked and resolved (the GPU to its row id)."""

    gpu_id: int | None = None
    pending_gpu_id: int | None = None
    workload: str | None = None
    status: str | None = None
    quarantined: bool | None = None
    agent: int | None = None
    host: str | None = None
    since: dt.datetime | None = None
    run_id: str | None = None
    fingerprint_hash: str | None = None
    include_retracted: bool = False
    params: tuple[ParamFilter, ...] = ()
    fingerprint: Mapping[str, str] = field(default_factory=dict)


def fp_value_matches(stored: Any, query: str) -> bool:
    """Whether a stored fingerprint value equals a query-string value (``fp.<field>=``):
    null as ``null``/``none``/empty, booleans in their usual spellings, numbers by value."""
    q = query.strip()
    if stored is None:
        return q.lower() in ("", "null", "none")
    if isinstance(stored, bool):
        return q.lower() in (("true", "1", "on", "yes") if stored else ("false", "0", "off", "no"))
    if isinstance(stored, (int, float)):
        try:
            return float(q) == float(stored)
        except ValueError:
            return False
    if isinstance(stored, str):
        return stored == q
    return json.dumps(stored, sort_keys=True) == q


def main_metric_of(workload: str, present: Iterable[str]) -> str:
    """The workload's main metric, or the first it defines that a cell has (an integer GEMM
    reports ``tops``, not ``tflops``)."""
    w = WORKLOADS[workload]
    names = set(present)
    if w.main_metric in names or not names:
        return w.main_metric
    return next((m.name for m in w.metrics if m.name in names), w.main_metric)


def metric_unit(workload: str, metric: str) -> str:
    """The vocabulary's unit of a workload's metric ("" when unknown)."""
    w = WORKLOADS.get(workload)
    m = w.metric(metric) if w else None
    return m.unit if m else ""
