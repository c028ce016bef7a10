"""How one GPU's serving plans are ordered for the objective: the first is the GPU's option."""

from __future__ import annotations

import math
from collections.abc import Callable

from service.core.recommend.models import Option
from service.core.recommend.replicas import NEAR_TIE

__all__ = ["paid_gpus", "settle_ties", "within_gpu"]


def _hourly_or_run(o: Option) -> float:
    """What ``cheapest`` compares within a GPU: the run's cost for a batch, else the hour's."""
    if o.run_cost is not None:
        return o.run_cost[1]
    return o.quote.per_hour if o.quote else math.inf


def within_gpu(obj: str, pool: list[Option]) -> Callable[[Option], tuple[float, ...]]:
    """How one GPU's plans are ordered for the objective (the best is the GPU's option).

    ``fastest``: the fewest GPUs among the plans within :data:`NEAR_TIE` of the fastest plan of
    ``pool`` (the plans the constraints keep), then the rest by time. Measured from every plan,
    one over a budget hid the faster plans the budget pays for behind the fewest GPUs."""
    if obj == "fastest":
        low = min(o.time_value for o in pool) * (1.0 + NEAR_TIE)
        return lambda o: (
            (0.0, o.gpu_count, o.time_value) if o.time_value <= low else (1.0, o.time_value, o.gpu_count)
        )
    if obj == "perf_per_watt":
        return lambda o: (-(o.perf_per_watt or 0.0), o.gpu_count)
    if obj == "cost_per_million_tokens":  # a closed loop's plans serve different token rates
        return lambda o: (
            o.cost_per_million_tokens or math.inf,
            paid_gpus(o),
            _load_share(o),
            o.gpu_count,
            o.time_value,
        )
    return lambda o: (_hourly_or_run(o), paid_gpus(o), _load_share(o), o.gpu_count, o.time_value)


def paid_gpus(o: Option) -> int:
    """GPUs the plan pays for: its instances' whole (three L40S on two 2-GPU instances pay for
    four, and the fourth left idle had ranked them above two TP2 replicas on the same four)."""
    return o.quote.gpus_paid if o.quote is not None else o.gpu_count


def settle_ties(obj: str, candidates: list[Option], full: Callable[[Option], Option]) -> list[Option]:
    """``candidates`` with the full estimate (:func:`_load_share` reads its capacity) made for
    the plans that tie first on a cost objective's cost and the GPUs they pay for -- the only
    ones the load share orders; the search's quick plans carry none."""
    if obj in ("fastest", "perf_per_watt") or len(candidates) < 2:
        return candidates
    cost = (
        (lambda o: o.cost_per_million_tokens or math.inf)
        if obj == "cost_per_million_tokens"
        else _hourly_or_run
    )
    first = min((cost(o), paid_gpus(o)) for o in candidates)
    tied = [o for o in candidates if (cost(o), paid_gpus(o)) == first]
    if len(tied) < 2:
        return candidates
    return [full(o) if any(o is t for t in tied) else o for o in candidates]


def _load_share(o: Option) -> float:
    """The share of the plan's capacity at the targets its load takes (0 without a rate): of two
    plans of one cost on as many GPUs, the one further from saturation is the safer, and the
    TPOT alone had picked a disaggregated plan at 98 % of its capacity, TTFT 1.8 s, over an
    aggregated one at 93 %, TTFT 0.35 s, on the same eight GPUs."""
    serving = o.est.serving
    rate = serving.rate if serving is not None else None
    if rate is None or not rate.stable:
        return math.inf if rate is not None else 0.0
    return 1.0 / (1.0 + max(rate.headroom, -0.99))
