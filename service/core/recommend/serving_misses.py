"""What a serving plan that misses a latency target says: the target it misses first, with the
figure (a lone request's, or at the closed loop's concurrency), and of several misses the one
nearest its target."""

from __future__ import annotations

from service.core.estimation.estimate_inputs import ServingQuestion
from service.core.recommend.reasons import Reason, ReasonCode

__all__ = ["closest_miss", "latency_miss"]


def latency_miss(
    s: ServingQuestion | None, name: str, tp: int, ttft: float, tpot: float, concurrency: int | None = None
) -> Reason | None:
    """The first target a plan misses, with its figure: a lone request's, or at the closed
    loop's ``concurrency`` (per replica) where the figure is that load's."""
    at = {"concurrency": concurrency} if concurrency else {}
    if s is None:
        return None
    for code, key, got, target, digits in (
        (ReasonCode.MISSES_TTFT, "ttft_ms", ttft, s.ttft_target_s, 1),
        (ReasonCode.MISSES_TPOT, "tpot_ms", tpot, s.tpot_target_s, 2),
    ):
        if target is not None and not got <= target:
            params = {"gpu": name, "tensor_parallel": tp, key: round(got * 1e3, digits)}
            return Reason(code, {**params, "target_ms": round(target * 1e3, digits), **at})
    return None


def closest_miss(a: Reason | None, b: Reason) -> Reason:
    """Of two latency misses, the one nearest its target (what the exclusion quotes: the degree
    that came closest, not the first tried)."""
    if a is None:
        return b

    def over(r: Reason) -> float:
        p = r.params
        return float(p.get("tpot_ms", p.get("ttft_ms", 0.0))) / max(float(p.get("target_ms", 1.0)), 1e-9)

    return b if over(b) < over(a) else a
