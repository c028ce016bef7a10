"""How many replicas serve a closed loop of ``concurrency`` clients.

``concurrency`` counts every client of the deployment, as ``requests_per_s`` counts every
arrival; ``R`` replicas hold ``ceil(C / R)`` each. A replica is sized to admit its share -- every
client in flight, none waiting for the KV cache or the scheduler -- so ``R >= C / cap`` (the
concurrency cap of one replica, :func:`~service.core.estimation.serving.concurrency_cap`); from
there the fewest replicas whose latencies meet the targets (a smaller share decodes faster), and
for ``fastest`` the fewest whose TPOT ties the lowest the GPU limit allows, for
``cost_per_million_tokens`` the count (a few beyond the fewest) whose price buys the most tokens. 1,500 clients of
Llama-3.1-8B were one replica each plan, holding (or queueing) all 1,500: an H100 was excluded
for the KV cache of 1,500 sequences while one H100 replica admits ~100.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.estimate import estimate
from service.core.estimation.memory import InferenceConfig, MemoryEstimate, estimate_inference, memory_held
from service.core.estimation.serving import CONTINUOUS_EFFICIENCIES, Deployment, concurrency_cap, deployment
from service.core.recommend.reasons import Reason
from service.core.recommend.replicas import _fastest_replicas, fewest_from
from service.core.recommend.serving_misses import latency_miss
from service.core.recommend.serving_price import affordable, replicas_per_hour

if TYPE_CHECKING:
    from service.core.recommend.serving import _ServingSearch

__all__ = ["in_flight_memory", "replica_admits", "size_for_clients"]


def replica_admits(gpu: GpuSpec, c: InferenceConfig, w: Any, tp: int) -> tuple[Deployment, int] | Reason:
    """One replica of ``c``: its deployment and the sequences it admits (KV cache and scheduler),
    or why it admits none (no memory for one sequence, or a figure the time model lacks)."""
    name = gpu.name or gpu.slug
    try:
        d = deployment(c, gpu)
    except InvalidConfiguration:
        return Reason("MEMORY_INSUFFICIENT", {"gpu": name, "tensor_parallel": tp})
    if d.missing:
        return Reason("NO_TIME_ESTIMATE", {"gpu": name, "missing": d.missing})
    seqs, _ = concurrency_cap(d, w.input_len, w.output_len, reserve_gib=CONTINUOUS_EFFICIENCIES.reserve_gib)
    if seqs < 1:
        return Reason("MEMORY_INSUFFICIENT", {"gpu": name, "tensor_parallel": tp})
    return d, seqs


def _share(clients: int, replicas: int) -> int:
    return -(-clients // replicas)


def size_for_clients(
    s: _ServingSearch,
    gpu: GpuSpec,
    fmt: str,
    tp: int,
    cap: int,
    fewest: int | None,
    expert_parallel: bool = False,
) -> tuple[InferenceConfig, MemoryEstimate] | Reason | None:
    """The configuration (replicas, each replica's share as its batch) and its memory for the
    closed loop on ``gpu`` at TP ``tp`` (experts spread over it where ``expert_parallel``); a
    reason when none under ``cap`` GPUs serves it; None when not fewer GPUs than ``fewest`` (a
    smaller TP's plan) would."""
    assert s.serving is not None and s.serving.concurrency is not None
    name = gpu.name or gpu.slug
    clients = s.serving.concurrency
    w = s.serving.workload
    one = replace(
        s.base,
        quant_method=fmt,
        tensor_parallel=tp,
        replicas=1,
        batch_size=1,
        expert_parallel=expert_parallel,
    )
    admits = replica_admits(gpu, one, w, tp)
    if isinstance(admits, Reason):
        return admits
    seqs = admits[1]
    max_rep = max(1, cap // tp)
    least = _share(clients, seqs)  # replicas that admit every client
    if least > max_rep:
        return Reason(
            "OVER_GPU_LIMIT",
            {
                "gpu": name,
                "tensor_parallel": tp,
                "max_gpus": cap,
                "replicas_needed_more_than": max_rep,
                "replicas_at_least": least,
            },
        )
    seen: dict[int, Any] = {}
    misses: dict[int, Reason] = {}

    def cfg(reps: int) -> InferenceConfig:
        return replace(one, replicas=reps, batch_size=_share(clients, reps))

    def ok(reps: int) -> bool:
        if reps not in seen:
            seen[reps] = _latencies(s, gpu, cfg(reps))
            if seen[reps] is not None:
                got = latency_miss(
                    s.serving, name, tp, seen[reps].ttft_s, seen[reps].tpot_s, _share(clients, reps)
                )
                if got is not None:
                    misses[reps] = got
        return seen[reps] is not None and reps not in misses

    hi = _search(ok, least, max_rep, fewest // tp if fewest is not None else None)
    if hi is None:
        if fewest is not None:
            return None
        return (
            misses.get(max_rep)
            or next(iter(misses.values()), None)
            or Reason("NO_TIME_ESTIMATE", {"gpu": name, "missing": "a figure the time model needs"})
        )
    if s.q.objective == "fastest":
        hi = _fastest_replicas(ok, seen, hi, affordable(s.data, s.q, gpu, tp, hi, max_rep))
    elif s.q.objective == "cost_per_million_tokens":
        hi = _cheapest_per_token(s, gpu, tp, ok, seen, hi, max_rep)
    chosen = cfg(hi)
    s.counter.memory += 1
    return chosen, estimate_inference(chosen)


PER_TOKEN_SCAN = 8
"""Replicas beyond the fewest that a cost-per-token question also prices: a closed loop's token
rate grows with the replicas (each decodes a smaller share faster), and a priced instance may
hold more GPUs than the fewest use (idle ones are paid for)."""


def _cheapest_per_token(
    s: _ServingSearch, gpu: GpuSpec, tp: int, ok: Any, seen: dict[int, Any], fewest: int, most: int
) -> int:
    """Of ``fewest`` .. ``fewest + PER_TOKEN_SCAN`` replicas (at most ``most``) meeting the
    targets, the count whose hourly price buys the most tokens."""
    best, best_cost = fewest, float("inf")
    for reps in range(fewest, min(most, fewest + PER_TOKEN_SCAN) + 1):
        per_hour = replicas_per_hour(s.data, s.q, gpu, tp, reps)
        if per_hour is None or not ok(reps) or seen[reps].output_tokens_per_s <= 0:
            continue
        cost = per_hour / seen[reps].output_tokens_per_s
        if cost < best_cost * (1.0 - 1e-9):
            best, best_cost = reps, cost
    return best


def _search(ok: Any, least: int, most: int, limit: int | None) -> int | None:
    """The fewest replicas in ``[least, most]`` (at most ``limit``) that meet the targets:
    doubling, then bisection (more replicas, a smaller share each: latencies only fall)."""
    top = most if limit is None else min(most, limit)
    if top < least:
        return None
    lo, hi = least - 1, least
    while not ok(hi):
        if hi >= top:
            return None
        lo, hi = hi, min(top, hi * 2)
    return fewest_from(ok, lo, hi)


def _latencies(s: _ServingSearch, gpu: GpuSpec, c: InferenceConfig) -> Any:
    """The serving answer of ``c`` (TTFT, TPOT at its share), or None where it has none."""
    s.counter.timed += 1
    assert s.serving is not None
    job = replace(s.job, config=c, solve_for=None, serving=replace(s.serving, concurrency=c.batch_size))
    measured = s.data.measured(gpu, job) if s.data.measured is not None else None
    try:
        return estimate(gpu, job, s.data.calibrations, measured).serving
    except (InvalidConfiguration, MissingFigure):
        return None


def in_flight_memory(
    s: _ServingSearch, c: InferenceConfig, in_flight: float, mem: MemoryEstimate, usable: int
) -> MemoryEstimate:
    """The memory of a replica at a rate with its mean ``in_flight`` sequences (Little's law),
    not one sequence's, at most those that fit (:func:`memory_held`): what the plan's fit and
    headroom are stated at."""
    n = max(1, math.ceil(in_flight))
    if n <= 1:
        return mem
    s.counter.memory += 1
    return memory_held(c, n, usable)
