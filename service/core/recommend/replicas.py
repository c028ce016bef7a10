"""How many replicas serve a request rate: a starting guess from the iteration time, and for
``fastest`` the fewest replicas whose TPOT ties the lowest the GPU limit allows."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from service.core.estimation.serving import CONTINUOUS_EFFICIENCIES, iteration_s

if TYPE_CHECKING:
    from service.core.recommend.models import Option

GUESS_MARGIN: Final = 1.25
"""How far the unrounded replica count (:func:`replicas_needed`) may be off before a plan is
given up on without a queueing evaluation (it assumes 90 % utilisation and an iteration time
affine in the sequences decoding)."""


UTILISATION: Final = 0.9
"""The working point a replica is sized at: near 1 the affine iteration time diverges."""


def replicas_needed(d: Any, w: Any, seqs: int, rate: float, tpot_target_s: float | None) -> float:
    """Replicas a replica's iteration time says the rate needs, unrounded, each replica at
    :data:`UTILISATION` (:data:`GUESS_MARGIN` covers the rest). Rounded up, where the search for
    the fewest replicas starts.

    The iteration time is taken as affine in what it carries, ``t = a + b n + c p``: ``n =
    lambda O t`` sequences decoding (Little's law) and ``p = lambda I t`` prompt tokens
    prefilled per iteration, so ``t = a / (1 - lambda (b O + c I))``; the largest per-replica
    rate keeps ``t`` under the TPOT target and the sequences in flight under the engine's cap.
    1.0 where nothing bounds it."""
    out_len = max(w.output_len, 1.0)
    in_len = max(w.input_len, 1.0)
    ctx = in_len + out_len / 2.0
    e = CONTINUOUS_EFFICIENCIES
    a = iteration_s(d, e, 0.0, ctx)
    b = (iteration_s(d, e, float(max(seqs, 1)), ctx) - a) / max(seqs, 1)
    c = (iteration_s(d, e, 0.0, ctx, in_len, in_len / 2.0, 1.0) - a) / in_len
    load = b * out_len + c * in_len  # seconds of iteration per unit of per-replica rate, per second
    if load <= 0:
        return 1.0
    lam = UTILISATION / load  # t = a / (1 - UTILISATION) at most
    if tpot_target_s is not None:
        if tpot_target_s <= a:
            return 1.0
        lam = min(lam, (1.0 - a / tpot_target_s) / load)
    t = a / max(1e-9, 1.0 - lam * load)
    lam = min(lam, UTILISATION * seqs / (out_len * t)) if seqs > 0 else lam
    return rate / lam if lam > 0 else 1.0


NEAR_TIE: Final = 0.01
"""TPOTs within 1 % of the lowest are a tie: the fewer GPUs win."""


def fewest_from(ok: Callable[[int], bool], lo: int, hi: int) -> int:
    """The fewest count in ``lo + 1 .. hi`` for which ``ok`` holds, given that it holds at ``hi``
    and at every count above one where it holds (more replicas, a smaller share each: latencies
    only fall): bisection."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _fastest_replicas(ok: Callable[[int], bool], seen: dict[int, Any], fewest: int, most: int) -> int:
    """The fewest replicas (at least ``fewest``, which meets the targets) whose TPOT is within
    :data:`NEAR_TIE` of the TPOT at ``most`` replicas (the lowest the GPU limit allows: each
    replica's share of the rate, hence its batch, only shrinks with more replicas)."""
    if most <= fewest or not ok(most):
        return fewest
    floor = seen[most].tpot_s * (1.0 + NEAR_TIE)
    lo, hi = fewest - 1, most
    if seen[fewest].tpot_s <= floor:
        return fewest
    lo = fewest
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid) and seen[mid].tpot_s <= floor:
            hi = mid
        else:
            lo = mid
    return hi


def best_tpot(candidates: list[Option]) -> float:
    """The lowest TPOT found so far, with the near-tie slack (a plan within it may still win on GPUs)."""
    return min(o.time_value for o in candidates) * (1.0 + NEAR_TIE)
