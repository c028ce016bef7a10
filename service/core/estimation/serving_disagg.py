"""Disaggregated prefill/decode serving (issue 28): prompts on one pool of GPUs, generation on
another, the prompt's KV cache moved between them (vLLM's P/D connectors, SGLang's
``--disaggregation-mode``, NVIDIA Dynamo, llm-d).

Both pools run replicas of ``tensor_parallel`` GPUs with the continuous-batching iteration of
:mod:`service.core.estimation.serving_engines`:

* **prefill pool** (``Rp`` replicas): prompts only, batched up to the token budget. One prompt
  costs ``s`` -- the iteration carrying ``k = max(1, budget // I)`` prompts, divided by ``k``
  (a lone prompt is never cheaper than its share of a full batch). At ``lambda`` requests/s a
  replica is busy ``rho_p = lambda s / Rp`` and a prompt waits ``rho_p s / (2 (1 - rho_p))``
  (M/D/1: batching only shortens it);
* **KV transfer**: each tensor-parallel rank sends its shard of the prompt's KV cache, ``I x
  kv bytes per token per GPU``, point to point -- over NVLink (or PCIe) when both pools sit in
  one node, else over the network, every GPU of the node sending at once with its share of the
  node's NICs (:func:`service.core.estimation.network.p2p_s`);
* **decode pool** (``Rd`` replicas): iterations without prompts -- TPOT is the decode step
  alone, ``t = iteration(n, I + O/2)`` with ``n = lambda O t / Rd`` in flight (Little's law),
  solved for ``t``; the KV cache caps ``n``.

TTFT = request overhead + prefill wait + the prompt's prefill + the KV transfer + one decode
iteration (the first token leaves the decode replica). It is never below the transfer: the
floor :func:`kv_transfer_s` states. At a fixed concurrency ``N = n Rd`` clients each keep one
request in flight; the rate ``X`` solves ``X (TTFT(X) + O t(X)) = N`` (Little's law on the
whole loop).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from service.core.catalog.specs import GpuSpec
from service.core.estimation.network import Layout, link_name, node_layout, p2p_s
from service.core.estimation.serving_disagg_layout import Disaggregation
from service.core.estimation.serving_engines import Deployment, EngineEfficiencies, iteration_s
from service.core.estimation.serving_queue import _root, concurrency_cap

__all__ = [
    "DisaggPoint",
    "Disaggregation",
    "crosses_nodes",
    "disagg_at_rate",
    "disagg_capacity",
    "disagg_concurrency",
    "disagg_layout",
    "kv_transfer_s",
]


def disagg_layout(dis: Disaggregation, gpu: GpuSpec) -> Layout:
    """The node layout both pools fill: the caller's, else the GPU's node with 400 Gb/s per GPU."""
    stated = bool(dis.gpus_per_node or dis.network_gbps_per_node) or not dis.rdma
    gpus = dis.prefill_gpus + dis.decode_gpus
    return node_layout(gpu, gpus, dis.gpus_per_node, dis.network_gbps_per_node, dis.rdma, stated)


def crosses_nodes(dis: Disaggregation, gpu: GpuSpec) -> bool:
    """Whether prefill and decode GPUs sit on different nodes (both pools do not fit in one)."""
    return dis.prefill_gpus + dis.decode_gpus > disagg_layout(dis, gpu).gpus_per_node


@dataclass(frozen=True, slots=True)
class DisaggPoint:
    """One disaggregated deployment at a rate (or the rate a concurrency settles at)."""

    requests_per_s: float
    stable: bool
    ttft_s: float
    tpot_s: float
    kv_transfer_s: float
    prefill_s: float  # one prompt's share of a prefill iteration
    prefill_wait_s: float
    prefill_utilisation: float
    in_flight_per_decode_replica: float
    decode_cap: int
    link: str  # the scale-up fabric's name (:attr:`~.GpuSpec.scale_up_fabric`), "PCIe" or "network"


def kv_transfer_s(d: Deployment, dis: Disaggregation, e: EngineEfficiencies, input_len: float) -> float:
    """Seconds to move one prompt's KV cache from a prefill to a decode replica: every rank its
    shard (``I`` tokens x the per-GPU KV bytes), point to point (module docstring)."""
    layout = disagg_layout(dis, d.gpu)
    return p2p_s(
        input_len * d.kv_per_token, crosses_nodes(dis, d.gpu), d.gpu, layout, e.comm, _span(dis, layout)
    )


def _span(dis: Disaggregation, layout: Layout) -> int:
    """The GPUs of one node both pools sit among: a prefill GPU sends to a decode GPU anywhere in
    them (two NVLink-bridged pairs reach each other over PCIe only)."""
    return min(dis.prefill_gpus + dis.decode_gpus, layout.gpus_per_node)


def _link(d: Deployment, dis: Disaggregation) -> str:
    """The link a prompt's KV cache crosses (the one :func:`kv_transfer_s` times), by name."""
    if crosses_nodes(dis, d.gpu):
        return "network"
    return link_name(d.gpu, 2, _span(dis, disagg_layout(dis, d.gpu)))


def prefill_share_s(d: Deployment, e: EngineEfficiencies, input_len: float, budget: float) -> float:
    """One prompt's share of a prefill-only iteration carrying as many prompts as the budget holds."""
    k = max(1.0, math.floor(budget / max(input_len, 1.0)))
    return iteration_s(d, e, 0.0, 0.0, k * input_len, input_len / 2.0, k) / k


def disagg_at_rate(
    d: Deployment,
    e: EngineEfficiencies,
    dis: Disaggregation,
    requests_per_s: float,
    input_len: float,
    output_len: float,
) -> DisaggPoint:
    """Both pools at ``requests_per_s`` (Poisson, split evenly over each pool's replicas)."""
    rp, rd = dis.prefill_gpus // d.tp, dis.decode_gpus // d.tp
    cap, budget = concurrency_cap(d, input_len, output_len, reserve_gib=e.reserve_gib)
    s = prefill_share_s(d, e, input_len, budget)
    xfer = kv_transfer_s(d, dis, e, input_len)
    ctx = input_len + output_len / 2.0
    rho = requests_per_s * s / rp
    lam_d = requests_per_s / rd
    t1 = iteration_s(d, e, 1.0, ctx)
    link = _link(d, dis)
    inf = math.inf
    if rho >= 1.0 or cap < 1:
        return DisaggPoint(requests_per_s, False, inf, inf, xfer, s, inf, rho, float(cap), cap, link)
    if lam_d > 0:
        t_hi = cap / (lam_d * output_len)

        def h(t: float) -> float:
            return iteration_s(d, e, lam_d * output_len * t, ctx) - t

        if t_hi <= t1 or h(t_hi) >= 0:
            return DisaggPoint(requests_per_s, False, inf, inf, xfer, s, inf, rho, float(cap), cap, link)
        t = _root(h, iteration_s(d, e, 0.0, ctx), t_hi)
        n = lam_d * output_len * t
        tpot = iteration_s(d, e, n + 1.0, ctx)  # the tagged request beside the n in flight (PASTA)
    else:
        n, tpot = 0.0, t1
    wait = rho * s / (2.0 * (1.0 - rho))
    ttft = e.request_s + wait + s + xfer + tpot
    return DisaggPoint(requests_per_s, True, ttft, tpot, xfer, s, wait, rho, n, cap, link)


def disagg_concurrency(
    d: Deployment,
    e: EngineEfficiencies,
    dis: Disaggregation,
    clients_per_decode_replica: float,
    input_len: float,
    output_len: float,
) -> DisaggPoint:
    """``N = n Rd`` clients each keeping one request in flight: the rate ``X`` with ``X (TTFT + O
    TPOT) = N``, found by bisection (the left side grows with ``X``); clients beyond what the
    pools sustain wait, and their wait is part of TTFT (Little's law)."""
    rd = dis.decode_gpus // d.tp
    clients = clients_per_decode_replica * rd

    def cycle(x: float) -> DisaggPoint:
        return disagg_at_rate(d, e, dis, x, input_len, output_len)

    def short(x: float) -> bool:  # the pools sustain x with fewer than N clients busy
        p = cycle(x)
        return p.stable and x * (p.ttft_s + output_len * p.tpot_s) < clients

    lo, hi = 0.0, 1.0
    while short(hi) and hi < 1e7:
        lo, hi = hi, hi * 2.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if short(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-6 * hi:
            break
    x = max(lo, 1e-9)
    p = cycle(x)
    busy = x * (p.ttft_s + output_len * p.tpot_s)
    extra = max(0.0, clients - busy) / x  # clients the pools cannot take wait for a slot
    return DisaggPoint(
        x,
        True,
        p.ttft_s + extra,
        p.tpot_s,
        p.kv_transfer_s,
        p.prefill_s,
        p.prefill_wait_s + extra,
        p.prefill_utilisation,
        p.in_flight_per_decode_replica,
        p.decode_cap,
        p.link,
    )


def disagg_capacity(
    d: Deployment,
    e: EngineEfficiencies,
    dis: Disaggregation,
    input_len: float,
    output_len: float,
    ttft_target_s: float | None,
    tpot_target_s: float | None,
    max_utilisation: float = 0.9,
) -> float:
    """Largest rate both pools sustain within the p50 targets, the prefill pool at most
    ``max_utilisation`` busy (0 when a lone request misses them); bisection, latency grows with
    the rate."""

    def ok(lam: float) -> bool:
        p = disagg_at_rate(d, e, dis, lam, input_len, output_len)
        if not p.stable or p.prefill_utilisation > max_utilisation:
            return False
        if p.in_flight_per_decode_replica > max_utilisation * p.decode_cap:
            return False
        if ttft_target_s is not None and p.ttft_s > ttft_target_s:
            return False
        return not (tpot_target_s is not None and p.tpot_s > tpot_target_s)

    if not ok(1e-6):
        return 0.0
    lo, hi = 0.0, 1.0
    while ok(hi) and hi < 1e7:
        lo, hi = hi, hi * 2.0
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        if ok(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-4 * max(lo, 1e-3):
            break
    return lo
