"""Which GPU counts a training search times, per GPU: the largest and what a lower bound
cannot rule out (``fastest``), a climb to the smallest count that meets a deadline, about
doubling counts (cost objectives); and which of the plans timed is chosen."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from service.core.catalog.specs import GpuSpec
from service.core.estimation.frozen import replace
from service.core.recommend.models import Option
from service.core.recommend.ranking import COST_OBJECTIVES
from service.core.recommend.ranking import _objective_value as objective_value
from service.core.recommend.reasons import Reason

if TYPE_CHECKING:
    from service.core.recommend.training import _TrainingSearch

LONG_RUN_HOURS: Final = 365.0 * 24.0
"""A plan longer than a year gets a warning naming a faster plan at similar cost."""

NEAR_TIE: Final = 0.01
"""Plans within 1 % of the fastest are a tie: the fewer GPUs win (more buy nothing measurable)."""

BOUND_MARGIN: Final = 0.95
"""Slack on the scaled non-communication time used as a lower bound (micro-batch rounding)."""


class _Timed:
    """The plans timed for one GPU, per count: every configuration :meth:`_TrainingSearch.fitting`
    returns, each estimated once."""

    def __init__(self, search: _TrainingSearch, gpu: GpuSpec, usable: int) -> None:
        self.search = search
        self.gpu = gpu
        self.usable = usable
        self.node = search._node(gpu)
        self.at: dict[int, list[Option]] = {}

    def plans(self, n: int) -> list[Option]:
        """Every plan that fits at ``n`` GPUs, timed (once)."""
        if n not in self.at:
            s = self.search
            plans = s.fitting(n, self.usable, self.node)
            self.at[n] = [o for o in (s._option(self.gpu, p, self.usable) for p in plans) if o is not None]
        return self.at[n]

    def best(self, n: int) -> Option | None:
        return min(self.plans(n), key=lambda o: o.time_value, default=None)

    def all(self) -> list[Option]:
        return [o for n in sorted(self.at) for o in self.at[n]]

    def floor_gpu_time(self, n: int) -> float:
        """A lower bound on ``time_value x count`` at any count: the non-communication part of
        the plans at ``n`` (compute, memory and host time per GPU do not shrink with more GPUs
        doing the same per-GPU work; only the collectives grow)."""
        return min(
            (o.time_value * (1.0 - _comm_share(o)) * o.gpu_count for o in self.at.get(n, [])),
            default=0.0,
        )


def _comm_share(o: Option) -> float:
    t = o.est.time
    return float(t.time_shares.get("communication", 0.0)) if t is not None else 0.0


def _fastest(timed: _Timed, ladder: list[int], node: int) -> None:
    """Time the largest count that has a plan (a held global batch leaves none at a count whose
    data-parallel ranks do not divide it: 24 GPUs for a global batch of 512), then smaller counts
    only while their lower bound could still beat the best: the same per-GPU work over fewer GPUs
    takes ``top / n`` as many steps; only the collectives may shrink, and inside one node a ring
    moves ``2 (x - 1) / x`` of the bytes per rank (``core.estimation.network``), so they shrink by
    at most ``f(n) / f(top)`` there (across nodes no credit is taken: all of the collective time
    may go)."""
    while ladder and (best := timed.best(ladder[-1])) is None:
        ladder = ladder[:-1]
    if not ladder or best is None:
        return
    top = ladder[-1]
    # only data-parallel plans bound the others: a tensor-parallel plan's per-GPU work is not
    # what fewer GPUs would each do (a global batch of 3 leaves 8 GPUs only TP8, at 4 % MFU,
    # and its time said 3 GPUs of DDP could not beat it: they run 3x faster)
    plans = [o for o in timed.at.get(top, []) if o.train is None or o.train.tensor_parallel == 1]
    for n in reversed(ladder[:-1]):
        keep = (n - 1) / n / ((top - 1) / top) if top <= node and top > 1 else 0.0
        bound = min(
            (o.time_value * top / n * (1.0 - _comm_share(o) * (1.0 - keep)) for o in plans), default=0.0
        )
        if bound * BOUND_MARGIN >= best.time_value:
            break
        o = timed.best(n)
        if o is not None and o.time_value < best.time_value:
            best = o


def _toward_deadline(timed: _Timed, ladder: list[int], deadline: float) -> None:
    """Climb to the smallest count whose band meets the deadline: each step jumps to the count
    perfect 1/n scaling would need (optimistic, so it never passes the smallest that meets),
    ending at the largest count when none does."""
    o = timed.best(ladder[0])
    for _ in range(8):
        if o is None or o.hours_band is None or o.hours_band[1] <= deadline:
            return
        want = o.gpu_count * o.hours_band[1] / deadline
        nxt = next((n for n in ladder if n >= want and n > o.gpu_count), None)
        if nxt is None:
            if ladder[-1] <= o.gpu_count:
                return
            nxt = ladder[-1]
        o = timed.best(nxt)


def _doubling(ladder: list[int], node: int = 0, sizes: frozenset[int] = frozenset()) -> list[int]:
    """Counts about doubling from the fewest (included) to the largest (a coarse view of the scaling), and
    the first count that fills whole nodes of ``node`` and every count that fills a priced
    instance (``sizes``): a plan that leaves GPUs of a rented node idle pays for them anyway, so
    the filled node is often the cheaper run (6 GPUs doubling to 12 skipped the 8 of the
    instance they were priced on; 2 A100 paid for the third of a 3-GPU instance)."""
    out: list[int] = [ladder[0]]
    want = ladder[0] * 2
    for n in ladder[1:]:
        if n >= want:
            out.append(n)
            want = n * 2
    if ladder[-1] not in out:
        out.append(ladder[-1])
    full = next((n for n in ladder if node > 1 and n % node == 0), None)
    if full is not None and full not in out:
        out.append(full)
    out += [n for n in ladder if n in sizes and n not in out]  # a priced instance's size, filled
    return sorted(out)


def _choose(
    found: list[Option],
    objective: str,
    deadline: float | None,
    admit: Callable[[Option], bool] | None = None,
) -> Option | None:
    """The plan for the objective among those that meet the deadline (band's upper end) and,
    where any does, the other constraints (``admit``: a budget the fastest plan breaks leaves the
    fastest plan that keeps it)."""
    meets = [
        o for o in found if deadline is None or (o.hours_band is not None and o.hours_band[1] <= deadline)
    ]
    if admit is not None:
        meets = [o for o in meets if admit(o)] or meets
    if not meets:
        return None
    if objective == "fastest":
        t = min(o.time_value for o in meets)
        return min(
            (o for o in meets if o.time_value <= t * (1.0 + NEAR_TIE)),
            key=lambda o: (o.gpu_count, o.time_value),
        )
    best = min(meets, key=lambda o: _objective_key(o, objective))
    if objective in COST_OBJECTIVES and best.run_cost is not None:
        return _fastest_at_cost(meets, best, objective)
    return best


def _fastest_at_cost(meets: list[Option], best: Option, objective: str) -> Option:
    """The fastest plan whose run costs within :data:`NEAR_TIE` of the cheapest: a run priced per
    GPU-hour often costs the same on more GPUs (Llama-3.1-8B fine-tuned on 1, 2 or 3 H100s:
    8.50 USD each, 6.6, 3.3 or 2.2 h), and the fewest GPUs had kept the run three times longer
    for 0.02 % less."""
    v = objective_value(best, objective)
    assert v is not None  # a run cost gives the value
    tied = [
        o for o in meets if (w := objective_value(o, objective)) is not None and w <= v * (1.0 + NEAR_TIE)
    ]
    chosen = min(tied, key=lambda o: (o.time_value, o.gpu_count))
    if chosen is best or best.run_cost is None or chosen.run_cost is None:
        return chosen
    said = {
        "gpu_count": best.gpu_count,
        "hours": round(best.time_value, 1),
        "cost": round(best.run_cost[1], 2),
        "currency": best.currency or "USD",
        "extra_pct": round(100.0 * (1.0 - best.run_cost[1] / chosen.run_cost[1]), 4),
        "slack_pct": 100.0 * NEAR_TIE,
    }
    return replace(chosen, reasons=(*chosen.reasons, Reason("FASTER_AT_NEAR_COST", said)))


def _objective_key(o: Option, objective: str) -> tuple[bool, float, int, float]:
    v = objective_value(o, objective)
    return (v is None, v or 0.0, o.gpu_count, o.time_value)
