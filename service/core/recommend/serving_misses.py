"""What a serving plan that misses a latency target says: the target it misses first, with the
figure (a lone request's, or at the closed loop's concurrency), and of several misses the one
nearest its target; and a plan that meets them with little headroom."""

from __future__ import annotations

import math
from typing import Any

from service.core.estimation.estimate_inputs import ServingQuestion
from service.core.recommend.reasons import Reason, ReasonCode

__all__ = ["closest_miss", "headroom", "latency_miss"]


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


LITTLE_HEADROOM_BELOW = 0.10
"""A plan whose targets hold at under 10 % more than the load is flagged: p50 targets at a
near-saturated admission queue leave a long tail (the mean TTFT several times the p50)."""


def headroom(sv: Any) -> tuple[Reason, ...]:
    """``LITTLE_HEADROOM`` for a plan sized at a rate whose capacity within the targets is
    less than :data:`LITTLE_HEADROOM_BELOW` above the load."""
    r = sv.rate
    if r is None or not math.isfinite(r.headroom) or r.headroom >= LITTLE_HEADROOM_BELOW:
        return ()
    return (
        Reason(
            "LITTLE_HEADROOM",
            {
                "headroom_pct": round(100.0 * r.headroom, 1),
                "capacity_requests_per_s": round(r.capacity_requests_per_s, 3),
                "ttft_mean_ms": round(r.ttft_mean_s * 1e3, 1),
            },
        ),
    )
