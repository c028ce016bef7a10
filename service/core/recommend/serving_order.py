"""How one GPU's serving plans are ordered for the objective: the first is the GPU's option."""

from __future__ import annotations

import math
from collections.abc import Callable

from service.core.recommend.models import Option
from service.core.recommend.replicas import NEAR_TIE

__all__ = ["within_gpu"]


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
        return lambda o: (o.cost_per_million_tokens or math.inf, o.gpu_count, o.time_value)
    return lambda o: (_hourly_or_run(o), o.gpu_count, o.time_value)
