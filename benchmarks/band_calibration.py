"""Held-out calibration of the 80 % memory bands: split-conformal widths and leave-one-out
coverage per workload class (issue 25).

A class's residuals are ``measured / predicted - 1``. Fitted on ``m`` points, the band's ends
are the residuals of rank ``k_lo = max(1, floor(0.1 (m + 1)))`` and ``k_hi = min(m, ceil(0.9
(m + 1)))`` (clipped so the band contains its centre): a new exchangeable point falls inside
with probability ``(k_hi - k_lo) / (m + 1)`` -- 78 % for m = 8, 81 % for m = 122 -- where the
empirical 10th/90th percentiles of a small sample cover well under 80 %. Held out: each point's
band is fitted on the other points of its class only (leave-one-out), so no point is inside the
sample its band came from."""

from __future__ import annotations

import math
from collections.abc import Sequence


def conformal_widths(residuals: Sequence[float]) -> tuple[float, float]:
    """Relative (below, above) widths of an 80 % band from ``residuals`` (measured / mid - 1)."""
    r = sorted(residuals)
    m = len(r)
    if m < 2:
        return math.nan, math.nan
    k_lo = max(1, math.floor(0.1 * (m + 1)))
    k_hi = min(m, math.ceil(0.9 * (m + 1)))
    return max(0.0, -r[k_lo - 1]), max(0.0, r[k_hi - 1])


def inside(r: float, widths: tuple[float, float]) -> bool:
    lo, hi = widths
    return -lo - 1e-12 <= r <= hi + 1e-12


def loo_coverage(residuals: Sequence[float]) -> float:
    """Share of points inside the band fitted on the other points of their class."""
    n = len(residuals)
    if n < 3:
        return math.nan
    hits = sum(
        inside(r, conformal_widths([x for j, x in enumerate(residuals) if j != i]))
        for i, r in enumerate(residuals)
    )
    return hits / n


def stated_coverage(rows: Sequence[tuple[float, float, float]]) -> float:
    """Coverage of the service's stated bands: rows of (residual, below, above)."""
    return sum(inside(r, (lo, hi)) for r, lo, hi in rows) / len(rows) if rows else math.nan
