"""Statistics over benchmark results: quantiles, the MAD outlier test, and the
"latest measured" selection (DESIGN, "Latest measured, quarantine, provenance").

Pure: plain numbers and dataclasses in, plain dataclasses out; no clock, DB or web.

Conventions
-----------
- Quantiles use linear interpolation between closest ranks (Hyndman & Fan type 7, the
  default of numpy and R): for sorted ``x[0..n-1]`` the q-quantile is at rank ``q * (n - 1)``.
- The outlier test is the median absolute deviation (MAD): ``MAD = median(|x_i - m|)`` with
  ``m`` the median; ``1.4826 * MAD`` estimates the standard deviation of normal data
  (1.4826 = 1 / Phi^-1(3/4)). Identical repeats give ``MAD = 0`` and would flag any tiny
  difference, so the scale is floored at ``floor_fraction * |m|`` (a few percent of the median:
  run-to-run noise on a GPU is rarely below that). A value is an outlier when
  ``|x - m| / max(1.4826 * MAD, floor_fraction * |m|) > threshold``.
- "Latest measured" for a (GPU, workload, canonical parameters) cell: each fingerprint
  (software/hardware stack) is summarised over its newest ``N`` non-quarantined results
  (:func:`summarise_stack`); among the fingerprints with at least ``k`` usable results --
  status ``ok``, not quarantined, not retracted -- the one measured most recently (its newest
  usable result); when none reaches ``k``, the best-populated fingerprint (ties: the most
  recent), flagged ``thin``. Results of different fingerprints are never pooled.
- Provenance: a cell counts as ``measured`` for recommendations only with usable results from
  at least two hosts or from a trusted agent's key.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

MAD_TO_SIGMA = 1.4826  # 1 / Phi^-1(3/4): MAD -> standard deviation for normal data
MIN_POINTS_FOR_OUTLIER_TEST = 3  # with two points neither can be told from the other


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Type-7 quantile of already sorted values (linear between closest ranks)."""
    n = len(sorted_values)
    if n == 0:
        raise ValueError("quantile of no values")
    if not 0.0 <= q <= 1.0:
        raise ValueError("q must be within [0, 1]")
    pos = q * (n - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


def median(values: Iterable[float]) -> float:
    s = sorted(values)
    return quantile(s, 0.5)


@dataclass(frozen=True, slots=True)
class Summary:
    """Distribution of one figure: count, median, p10-p90 band, extremes."""

    count: int
    median: float
    p10: float
    p90: float
    min: float
    max: float


def summarise(values: Iterable[float]) -> Summary | None:
    s = sorted(values)
    if not s:
        return None
    return Summary(
        count=len(s),
        median=quantile(s, 0.5),
        p10=quantile(s, 0.1),
        p90=quantile(s, 0.9),
        min=s[0],
        max=s[-1],
    )


@dataclass(frozen=True, slots=True)
class OutlierVerdict:
    """The MAD test for one value: ``score`` is ``|x - median| / scale`` (scaled MADs)."""

    outlier: bool
    score: float
    median: float
    scale: float
    threshold: float

    def describe(self, value: float, what: str, unit: str) -> str:
        return (
            f"{what} {value:g} {unit} is {self.score:.1f} scaled MADs from the median {self.median:g} {unit} "
            f"of its cell (threshold {self.threshold:g}, scale {self.scale:.3g})"
        )


def center_and_scale(values: Sequence[float], floor_fraction: float) -> tuple[float, float]:
    """(median, scale) of the MAD test: ``scale = max(1.4826 * MAD, floor_fraction * |median|)``."""
    m = median(values)
    mad = median(abs(v - m) for v in values)
    return m, max(MAD_TO_SIGMA * mad, floor_fraction * abs(m))


def outlier_score(value: float, center: float, scale: float) -> float:
    """``|x - median| / scale``; a zero scale makes any deviation infinitely far."""
    dev = abs(value - center)
    if scale > 0:
        return dev / scale
    return 0.0 if dev == 0 else math.inf


def outlier_verdicts(
    values: Sequence[float],
    *,
    threshold: float,
    floor_fraction: float,
    min_points: int = MIN_POINTS_FOR_OUTLIER_TEST,
) -> list[OutlierVerdict]:
    """One verdict per value, in order. Fewer than ``min_points`` values: nothing is flagged."""
    n = len(values)
    if n == 0:
        return []
    m, scale = center_and_scale(values, floor_fraction)
    out: list[OutlierVerdict] = []
    for v in values:
        score = outlier_score(v, m, scale)
        flagged = n >= min_points and score > threshold
        out.append(OutlierVerdict(outlier=flagged, score=score, median=m, scale=scale, threshold=threshold))
    return out


# ---- latest measured ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Point:
    """One stored result as the aggregation sees it (already restricted to one cell)."""

    result_id: int
    fingerprint_hash: str
    host: str
    trusted: bool
    status: str  # ok | oom | error
    quarantined: bool
    measured_at: dt.datetime
    metrics: Mapping[str, float] = field(default_factory=dict)
    memory: Mapping[str, int] = field(default_factory=dict)

    @property
    def usable(self) -> bool:
        return self.status == "ok" and not self.quarantined


@dataclass(frozen=True, slots=True)
class FingerprintStats:
    fingerprint_hash: str
    usable: int
    total: int
    newest_usable: dt.datetime | None
    newest: dt.datetime


@dataclass(frozen=True, slots=True)
class StackWindow:
    """One stack (fingerprint) of one cell, summarised over its newest ``window`` non-quarantined
    results (stored order): what the rule needs to choose a stack and what a view shows of it.
    The service keeps one of these per (cell, fingerprint), refreshed as results are written,
    so no reader scans a cell's history."""

    fingerprint_hash: str
    usable: int  # ok results in the window
    total: int  # non-quarantined results in the window (ok, oom, error)
    newest_usable: dt.datetime | None
    newest: dt.datetime
    metrics: Mapping[str, Summary]
    memory: Mapping[str, Summary]
    status_counts: Mapping[str, int]
    quarantined: int  # quarantined results stored since the window's oldest result
    hosts: tuple[str, ...]  # distinct hosts of the usable results
    trusted: bool  # a trusted agent among the usable results
    evidence_hosts: int  # distinct hosts of the ok and oom results
    evidence_trusted: bool

    @property
    def stats(self) -> FingerprintStats:
        return FingerprintStats(
            self.fingerprint_hash, self.usable, self.total, self.newest_usable, self.newest
        )


@dataclass(frozen=True, slots=True)
class CellView:
    """The latest-measured view of one cell."""

    fingerprint_hash: str
    thin: bool
    count: int  # usable results in the chosen fingerprint's window
    metrics: Mapping[str, Summary]
    memory: Mapping[str, Summary]
    status_counts: Mapping[str, int]
    quarantined_count: int
    oom_count_all_fingerprints: int
    newest_measured_at: dt.datetime | None
    host_count: int
    trusted_agent: bool
    provenance: str | None  # "measured" or None
    provenance_code: str
    provenance_reason: str
    other_fingerprints: tuple[FingerprintStats, ...]
    evidence_hosts: int = 0  # hosts behind the chosen fingerprint's non-quarantined results, OOMs included
    evidence_trusted: bool = False  # ... and whether a trusted agent is among them

    @property
    def measured_oom(self) -> bool:
        """The chosen stack ran this configuration out of memory and never ran it ``ok``, on
        evidence that counts (>= 2 hosts or a trusted agent, as for ``measured``)."""
        return (
            self.count == 0
            and self.status_counts.get("oom", 0) > 0
            and (self.evidence_hosts >= 2 or self.evidence_trusted)
        )

    def median(self, metric: str) -> float | None:
        s = self.metrics.get(metric)
        return s.median if s is not None else None


def fingerprint_stats(points: Iterable[Point]) -> list[FingerprintStats]:
    by_fp: dict[str, list[Point]] = {}
    for p in points:
        by_fp.setdefault(p.fingerprint_hash, []).append(p)
    out = []
    for fp, pts in by_fp.items():
        usable = [p for p in pts if p.usable]
        out.append(
            FingerprintStats(
                fingerprint_hash=fp,
                usable=len(usable),
                total=len(pts),
                newest_usable=max((p.measured_at for p in usable), default=None),
                newest=max(p.measured_at for p in pts),
            )
        )
    return out


def choose_fingerprint(stats: Sequence[FingerprintStats], k: int) -> tuple[FingerprintStats, bool]:
    """(chosen fingerprint, thin). Newest with >= k usable results; else best-populated."""
    if not stats:
        raise ValueError("no fingerprints to choose from")
    full = [s for s in stats if s.usable >= k]
    if full:
        return max(full, key=lambda s: (s.newest_usable or s.newest, s.usable, s.fingerprint_hash)), False
    with_usable = [s for s in stats if s.usable > 0]
    if with_usable:
        return max(
            with_usable, key=lambda s: (s.usable, s.newest_usable or s.newest, s.fingerprint_hash)
        ), True
    return max(stats, key=lambda s: (s.total, s.newest, s.fingerprint_hash)), True


def provenance(hosts: int, trusted: bool, usable: int) -> tuple[str | None, str, str]:
    """(provenance, code, sentence) for a chosen fingerprint's usable results."""
    if usable == 0:
        return None, "no_usable_results", "no usable (ok, non-quarantined) results in this cell"
    if trusted:
        return "measured", "trusted_agent", "results include a trusted agent's submissions"
    if hosts >= 2:
        return "measured", "multiple_hosts", f"results from {hosts} hosts"
    return (
        None,
        "single_untrusted_host",
        "results come from one host and no trusted agent; a second host or a trusted agent "
        "is needed before recommendations treat this cell as measured",
    )


def summarise_stack(points: Sequence[Point], window: int | None = None) -> StackWindow:
    """Summarise one fingerprint's results (all of one cell and one fingerprint): the newest
    ``window`` non-quarantined results by stored order (all when ``window`` is None)."""
    if not points:
        raise ValueError("no results to summarise")
    fp = points[0].fingerprint_hash
    ordered = sorted(points, key=lambda p: p.result_id)
    kept = [p for p in ordered if not p.quarantined]
    if window is not None and len(kept) > window:
        kept = kept[-window:]
    oldest = kept[0].result_id if kept else None
    quarantined = sum(1 for p in ordered if p.quarantined and (oldest is None or p.result_id >= oldest))
    usable = [p for p in kept if p.status == "ok"]
    metric_values: dict[str, list[float]] = {}
    memory_values: dict[str, list[float]] = {}
    for p in usable:
        for name, v in p.metrics.items():
            metric_values.setdefault(name, []).append(v)
        for name, b in p.memory.items():
            memory_values.setdefault(name, []).append(float(b))
    status_counts = {"ok": 0, "oom": 0, "error": 0}
    for p in kept:
        status_counts[p.status] = status_counts.get(p.status, 0) + 1
    evidence = [p for p in kept if p.status in ("ok", "oom")]
    return StackWindow(
        fingerprint_hash=fp,
        usable=len(usable),
        total=len(kept),
        newest_usable=max((p.measured_at for p in usable), default=None),
        newest=max(p.measured_at for p in (kept or ordered)),
        metrics={n: s for n, vs in metric_values.items() if (s := summarise(vs)) is not None},
        memory={n: s for n, vs in memory_values.items() if (s := summarise(vs)) is not None},
        status_counts=status_counts,
        quarantined=quarantined,
        hosts=tuple(sorted({p.host for p in usable})),
        trusted=any(p.trusted for p in usable),
        evidence_hosts=len({p.host for p in evidence}),
        evidence_trusted=any(p.trusted for p in evidence),
    )


def view_of(stacks: Sequence[StackWindow], k: int) -> CellView:
    """The rule over one cell's stack summaries: choose the stack, report it."""
    chosen_stats, thin = choose_fingerprint([s.stats for s in stacks], k)
    chosen = next(s for s in stacks if s.fingerprint_hash == chosen_stats.fingerprint_hash)
    prov, code, reason = provenance(len(chosen.hosts), chosen.trusted, chosen.usable)
    return CellView(
        fingerprint_hash=chosen.fingerprint_hash,
        thin=thin,
        count=chosen.usable,
        metrics=chosen.metrics,
        memory=chosen.memory,
        status_counts=dict(chosen.status_counts),
        quarantined_count=chosen.quarantined,
        oom_count_all_fingerprints=sum(s.status_counts.get("oom", 0) for s in stacks),
        newest_measured_at=chosen.newest_usable,
        host_count=len(chosen.hosts),
        trusted_agent=chosen.trusted,
        provenance=prov,
        provenance_code=code,
        provenance_reason=reason,
        other_fingerprints=tuple(
            sorted(
                (s.stats for s in stacks if s.fingerprint_hash != chosen.fingerprint_hash),
                key=lambda s: (s.newest, s.fingerprint_hash),
                reverse=True,
            )
        ),
        evidence_hosts=chosen.evidence_hosts,
        evidence_trusted=chosen.evidence_trusted,
    )


def latest_measured(points: Sequence[Point], k: int, window: int | None = None) -> CellView:
    """Apply the latest-measured rule to the points of one (GPU, workload, parameters) cell:
    summarise each stack's newest ``window`` non-quarantined results, then choose the newest
    stack with >= ``k`` usable results, else the best-populated one (``thin``)."""
    by_fp: dict[str, list[Point]] = {}
    for p in points:
        by_fp.setdefault(p.fingerprint_hash, []).append(p)
    return view_of([summarise_stack(pts, window) for pts in by_fp.values()], k)


# ---- stored form of a stack summary -------------------------------------------------------------


def _summary_doc(s: Summary) -> dict[str, float]:
    return {"count": s.count, "median": s.median, "p10": s.p10, "p90": s.p90, "min": s.min, "max": s.max}


def _summary_of(d: Mapping[str, float]) -> Summary:
    return Summary(
        count=int(d["count"]),
        median=float(d["median"]),
        p10=float(d["p10"]),
        p90=float(d["p90"]),
        min=float(d["min"]),
        max=float(d["max"]),
    )


def stack_to_doc(s: StackWindow) -> dict[str, object]:
    """A JSON-safe document of a stack summary (what the database stores per stack)."""
    return {
        "fingerprint_hash": s.fingerprint_hash,
        "usable": s.usable,
        "total": s.total,
        "newest_usable": s.newest_usable.isoformat() if s.newest_usable else None,
        "newest": s.newest.isoformat(),
        "metrics": {k: _summary_doc(v) for k, v in s.metrics.items()},
        "memory": {k: _summary_doc(v) for k, v in s.memory.items()},
        "status_counts": dict(s.status_counts),
        "quarantined": s.quarantined,
        "hosts": list(s.hosts),
        "trusted": s.trusted,
        "evidence_hosts": s.evidence_hosts,
        "evidence_trusted": s.evidence_trusted,
    }


def stack_from_doc(d: Mapping[str, object]) -> StackWindow:
    def ts(v: object) -> dt.datetime:
        t = dt.datetime.fromisoformat(str(v))
        return t if t.tzinfo else t.replace(tzinfo=dt.UTC)

    metrics = d.get("metrics") or {}
    memory = d.get("memory") or {}
    assert isinstance(metrics, Mapping) and isinstance(memory, Mapping)
    counts = d.get("status_counts") or {}
    assert isinstance(counts, Mapping)
    hosts = d.get("hosts") or []
    assert isinstance(hosts, list)
    return StackWindow(
        fingerprint_hash=str(d["fingerprint_hash"]),
        usable=int(str(d["usable"])),
        total=int(str(d["total"])),
        newest_usable=ts(d["newest_usable"]) if d.get("newest_usable") else None,
        newest=ts(d["newest"]),
        metrics={str(k): _summary_of(v) for k, v in metrics.items()},
        memory={str(k): _summary_of(v) for k, v in memory.items()},
        status_counts={str(k): int(v) for k, v in counts.items()},
        quarantined=int(str(d["quarantined"])),
        hosts=tuple(str(h) for h in hosts),
        trusted=bool(d["trusted"]),
        evidence_hosts=int(str(d["evidence_hosts"])),
        evidence_trusted=bool(d["evidence_trusted"]),
    )
