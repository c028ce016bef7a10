"""A central estimate with the ends of its stated 80 % band.

"80 % band" means: on held-out measurements, 80 % of measured values fall inside
``[low, high]`` (coverage is measured by ``benchmarks/validate_estimates.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from service.core.estimation.frozen import fast_init


@fast_init
@dataclass(frozen=True, slots=True)
class Band:
    low: float
    mid: float
    high: float

    def scaled(self, k: float) -> Band:
        return Band(self.low * k, self.mid * k, self.high * k)

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high

    def widened(self, below: float, above: float) -> Band:
        """This band reaching ``below`` lower and ``above`` higher (never below zero)."""
        return Band(max(self.low - below, 0.0), self.mid, self.high + above)

    @staticmethod
    def relative(mid: float, rel: tuple[float, float]) -> Band:
        """``mid`` with a relative (below, above) band: ``[mid (1 - lo), mid (1 + hi)]``."""
        lo, hi = rel
        return Band(mid * (1.0 - lo), mid, mid * (1.0 + hi))
