"""An offline batch: ``tokens`` output tokens to generate, every request queued at once (no
rate, no clients). One replica runs what its scheduler and KV cache admit
(:func:`~service.core.estimation.serving_queue.offline_throughput`) and replicas share nothing,
so ``R`` replicas take ``1 / R`` of one's time at the same GPU-hours. A deadline takes the fewest
replicas that meet it at the time band's upper end; ``fastest`` the most the GPU limit (and a
per-hour budget) allow; every other objective one, since the tokens set the GPU-hours and so
the run's cost at any count (an instance's idle GPUs aside)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from service.core.catalog.specs import GpuSpec
from service.core.estimation.estimate import Estimate
from service.core.estimation.memory import InferenceConfig, MemoryEstimate
from service.core.estimation.serving import ENGINE_CLASSES
from service.core.pricing.cost import RentQuote, Tco, run_cost
from service.core.recommend.reasons import Reason
from service.core.recommend.serving_price import affordable

if TYPE_CHECKING:
    from service.core.recommend.serving import _ServingSearch

__all__ = ["deadline_met", "offline_hours", "offline_in_flight", "offline_replicas", "offline_run_cost"]


def offline_hours(full: Estimate | None) -> tuple[float, tuple[float, float]] | None:
    """Hours to generate the job's tokens and their band, from the estimate (None: no time)."""
    sv = full.serving if full is not None else None
    t = sv.time_to_generate if sv is not None else None
    if t is None:
        return None
    return t.mid / 3600.0, (t.low / 3600.0, t.high / 3600.0)


def deadline_met(
    deadline: float | None, hours: tuple[float, tuple[float, float]] | None
) -> tuple[Reason, ...]:
    """``MEETS_DEADLINE`` for a batch whose band's upper end is within the deadline."""
    if deadline is None or hours is None or hours[1][1] > deadline:
        return ()
    return (Reason("MEETS_DEADLINE", {"hours_high": round(hours[1][1], 1), "deadline_hours": deadline}),)


def offline_in_flight(c: InferenceConfig, sequences: int) -> float:
    """Whole sequences' worth of KV cache a full replica holds: an engine that allocates pages on
    demand holds ``sequences`` at their mean length (``input + output / 2``), one that reserves
    each request's whole length up front holds them whole."""
    if ENGINE_CLASSES[c.engine].kv_reservation == "full":
        return float(sequences)
    whole = c.input_len + c.output_len
    return sequences * (c.input_len + c.output_len / 2.0) / whole if whole else float(sequences)


def offline_run_cost(
    hourly: RentQuote | Tco | None, hours: tuple[float, tuple[float, float]] | None
) -> tuple[float, float, float] | None:
    """(low, mid, high) cost of the run at the plan's hourly price."""
    if hourly is None or hours is None:
        return None
    mid, (low, high) = hours
    rc = run_cost(hourly, mid, hours_low=min(low, mid), hours_high=max(high, mid))
    return rc.low, rc.amount, rc.high


def offline_replicas(
    s: _ServingSearch, gpu: GpuSpec, cfg: InferenceConfig, tp: int, cap: int, mem: MemoryEstimate
) -> int | Reason:
    """Replicas of ``cfg`` (one TP group each) for the batch on ``gpu`` (module docstring), or
    why none under ``cap`` GPUs meets the deadline (or no time can be estimated)."""
    most = max(1, cap // tp)
    deadline = s.q.constraints.deadline_hours
    if deadline is None:
        return affordable(s.data, s.q, gpu, tp, 1, most) if s.q.objective == "fastest" else 1
    name = gpu.name or gpu.slug
    got = s._estimated(gpu, replace(s.job, config=replace(cfg, replicas=1), solve_for=None), mem, name, tp)
    if isinstance(got, Reason):
        return got
    one = offline_hours(got[0])
    if one is None:
        return Reason("NO_TIME_ESTIMATE", {"gpu": name, "missing": "a figure the time model needs"})
    need = max(1, math.ceil(one[1][1] / deadline * (1.0 - 1e-9)))
    if need <= most:
        return need
    return Reason(
        "MISSES_DEADLINE",
        {
            "gpu": name,
            "gpu_count": most * tp,
            "hours_high": round(one[1][1] / most, 1),
            "hours": round(one[0] / most, 1),
            "deadline_hours": deadline,
            "max_gpus": cap,
        },
    )
