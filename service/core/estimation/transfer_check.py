"""The leave-one-GPU-out check of the cross-GPU transfer on the published tables (what
``benchmarks/validate_estimates.py`` and ``accuracy.json`` report)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from service.core.estimation.transfer import (
    FAMILIES,
    FitPoint,
    fit_points,
)
from service.core.estimation.transfer_fit import fit

# --------------------------------------------------------------------------------------------
# Leave one GPU out
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PairResult:
    """The held-out ``target``'s throughput predicted from ``reference`` (same table and
    configuration), by the model and by the datasheet baseline."""

    table_id: str
    workload: str
    family: str
    target: str
    reference: str
    target_arch: str
    reference_arch: str
    measured: float
    predicted: float
    baseline: float
    uncorrected: float  # predicted with the reference's architecture constants for the target

    @property
    def error(self) -> float:
        return abs(self.predicted / self.measured - 1.0)

    @property
    def uncorrected_log_error(self) -> float:
        return math.log(self.uncorrected / self.measured)

    @property
    def baseline_error(self) -> float:
        return abs(self.baseline / self.measured - 1.0)

    @property
    def log_error(self) -> float:
        """``log(predicted / measured)``."""
        return math.log(self.predicted / self.measured)

    @property
    def scope(self) -> str:
        return "same-architecture" if self.target_arch == self.reference_arch else "cross-architecture"


@dataclass(frozen=True, slots=True)
class AnchorResult:
    """The held-out GPU's throughput predicted from its table's fitted speed alone."""

    table_id: str
    workload: str
    family: str
    target: str
    target_arch: str
    measured: float
    predicted: float

    @property
    def error(self) -> float:
        return abs(self.predicted / self.measured - 1.0)

    @property
    def log_error(self) -> float:
        return math.log(self.predicted / self.measured)


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


@dataclass(frozen=True, slots=True)
class LooReport:
    pairs: tuple[PairResult, ...]
    anchors: tuple[AnchorResult, ...]
    held_out: tuple[str, ...]
    tables: tuple[str, ...]
    n_points: int

    def summary(self, pairs: Sequence[PairResult] | None = None) -> tuple[float, float, int]:
        """(model MAPE, baseline MAPE, n) over ``pairs`` (default: all)."""
        ps = self.pairs if pairs is None else pairs
        return _mean([p.error for p in ps]), _mean([p.baseline_error for p in ps]), len(ps)

    def by_family(self) -> dict[str, tuple[float, float, int]]:
        return {
            f: self.summary([p for p in self.pairs if p.family == f])
            for f in FAMILIES
            if any(p.family == f for p in self.pairs)
        }

    def by_target_arch(self) -> dict[str, tuple[float, float, int]]:
        archs = sorted({p.target_arch for p in self.pairs})
        return {a: self.summary([p for p in self.pairs if p.target_arch == a]) for a in archs}

    def by_target(self) -> dict[str, tuple[float, float, int]]:
        return {g: self.summary([p for p in self.pairs if p.target == g]) for g in self.held_out}


def leave_one_gpu_out(points: Sequence[FitPoint] | None = None) -> LooReport:
    """Each GPU in turn leaves every table; the model refitted on the rest predicts its
    throughput from every other GPU of the same table and configuration (pair prediction:
    ``thr_ref x t_ref / t_target``), and from its table's fitted speed alone (anchor)."""
    pts = list(fit_points() if points is None else points)
    gpus = sorted({p.gpu.slug for p in pts})
    pairs: list[PairResult] = []
    anchors: list[AnchorResult] = []
    for g in gpus:
        train = [p for p in pts if p.gpu.slug != g]
        held = [p for p in pts if p.gpu.slug == g]
        if not train or not held:
            continue
        m = fit(train)
        for x in held:
            tx = m.unlevelled(x)
            px = m.predict(x)
            if px is not None:
                anchors.append(
                    AnchorResult(x.table_id, x.workload, x.family, g, x.arch, x.throughput, x.batch_size / px)
                )
            for y in train:
                if y.pair_key != x.pair_key:
                    continue
                ty = m.unlevelled(y)
                pred = y.throughput * (ty / tx) * (x.batch_size / y.batch_size)
                plain = y.throughput * (ty / m.unlevelled(x, like=y.gpu)) * (x.batch_size / y.batch_size)
                base = y.throughput * math.sqrt(
                    x.peak / y.peak * float(x.gpu.require_bandwidth()) / float(y.gpu.require_bandwidth())
                )
                pairs.append(
                    PairResult(
                        x.table_id,
                        x.workload,
                        x.family,
                        g,
                        y.gpu.slug,
                        x.arch,
                        y.arch,
                        x.throughput,
                        pred,
                        base,
                        plain,
                    )
                )
    return LooReport(
        tuple(pairs), tuple(anchors), tuple(gpus), tuple(dict.fromkeys(p.table_id for p in pts)), len(pts)
    )


def log_quantile(xs: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile (``q`` in [0, 1])."""
    s = sorted(xs)
    if not s:
        return math.nan
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)
