"""Serving layouts the search may pick besides replicas x TP (issue 28): expert parallelism for
an MoE model, and separate prefill and decode pools at a request rate.

Each layout is sized like the aggregated plans (the fewest GPUs that meet the targets at the
rate; ``fastest``: the fewest within :data:`NEAR_TIE` of the lowest TPOT the GPU limit allows)
and competes with them on the objective: nothing here prefers a layout, the physics of
:mod:`service.core.estimation.serving_ep` and :mod:`service.core.estimation.serving_disagg`
decides. Expert-parallel options are returned with their full estimate (``finish`` would use the
aggregated memory breakdown); disaggregated ones, like the aggregated plans, get theirs in
``finish`` if they are returned (or when made, where the constraints read bands or provenance).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.memory import estimate_inference
from service.core.estimation.serving import CONTINUOUS_EFFICIENCIES, Deployment, decode_bound, deployment
from service.core.estimation.serving_disagg import DisaggPoint, disagg_at_rate
from service.core.estimation.serving_disagg_layout import Disaggregation
from service.core.recommend.candidates import best_pool
from service.core.recommend.models import Option
from service.core.recommend.reasons import Reason
from service.core.recommend.replicas import NEAR_TIE, fewest_from
from service.core.recommend.serving_clients import size_for_clients

if TYPE_CHECKING:
    from service.core.recommend.serving import _ServingSearch

__all__ = ["layout_options"]

MAX_BUSY = 0.9
"""The largest share of its capacity a pool may run at (the aggregated search's limit)."""


@dataclass(frozen=True, slots=True)
class _Timed:
    """What the search's option builder reads of a queueing result."""

    ttft_s: float
    tpot_s: float
    bound: str
    in_flight: float = 1.0
    """Sequences a (decode) replica holds at once: what its memory is stated at."""


def layout_options(
    s: _ServingSearch, gpu: GpuSpec, cap: int, tps: list[int], per_node: int, found: list[Option]
) -> list[Option]:
    """Expert-parallel and disaggregated plans for ``gpu`` (empty where neither applies);
    ``found``: the aggregated plans, which bound what a cost objective lets a layout use."""
    if not s.continuous:
        return []
    usable = int(gpu.fit_memory_bytes or 0)
    out = _ep_options(s, gpu, cap, usable, tps, per_node)
    most = cap
    if s.q.objective != "fastest" and found:
        most = min(cap, min(o.gpu_count for o in found))  # fewer GPUs or none: cost ties on count
    out += _disagg_options(s, gpu, most, usable, tps, per_node)
    return out


def _ep_options(
    s: _ServingSearch, gpu: GpuSpec, cap: int, usable: int, tps: list[int], per_node: int
) -> list[Option]:
    """Whole experts over each TP degree that divides them, attention data-parallel."""
    m = s.base.model
    if not (s.q.constraints.allow_expert_parallel and isinstance(m, DecoderSpec) and m.is_moe):
        return []
    if s.base.lora is not None or s.base.expert_parallel:
        return []  # not modelled with LoRA; asked for already: the plain search sized it
    out: list[Option] = []
    for fmt in s.formats_on(gpu):
        for tp in tps:
            if tp < 2 or tp > per_node or m.num_experts % tp:
                continue
            cfg = replace(s.base, quant_method=fmt, tensor_parallel=tp, replicas=1, expert_parallel=True)
            s.counter.memory += 1
            mem = estimate_inference(cfg)
            if not mem.fits(usable):
                continue
            if s.rate is not None:
                sized = s._size_for_rate(gpu, cfg, tp, cap, None)
                if sized is None or isinstance(sized, Reason):
                    continue
                found = s._option(gpu, fmt, tp, usable, mem, replace(cfg, replicas=sized[0]), sized[1])
            elif s.closed:  # the clients over as many EP replicas as admit them and meet the targets
                clients = size_for_clients(s, gpu, fmt, tp, cap, None, expert_parallel=True)
                if clients is None or isinstance(clients, Reason):
                    continue
                cfg, mem = clients
                found = s._option(gpu, fmt, tp, usable, mem, cfg, None)
            else:
                found = s._option(gpu, fmt, tp, usable, mem, cfg, None)
            if isinstance(found, Option):
                why = Reason(
                    "EXPERT_PARALLEL",
                    {"experts": m.num_experts, "tensor_parallel": tp, "experts_per_gpu": m.num_experts // tp},
                )
                out.append(s.full(_with(found, why), mem))  # finish would not know the EP breakdown
    return out


def _disagg_options(
    s: _ServingSearch, gpu: GpuSpec, cap: int, usable: int, tps: list[int], per_node: int
) -> list[Option]:
    """At a rate: per weight format and TP degree, the smallest decode pool meeting the TPOT
    target, then the smallest prefill pool meeting the TTFT target beside it, ``cap`` GPUs at
    most."""
    if not (s.q.constraints.allow_disaggregation and s.rate is not None and s.serving is not None):
        return []
    if s.base.speculative is not None or s.base.expert_parallel:
        return []  # not modelled together (service.core.estimation.estimate_inputs)
    out: list[Option] = []
    for fmt in s.formats_on(gpu):
        for tp in tps:
            if tp > per_node or cap // tp < 2 or not s.memory(fmt, tp).fits(usable):
                continue
            cfg = replace(s.base, quant_method=fmt, tensor_parallel=tp, replicas=1)
            try:
                d = deployment(cfg, gpu)
            except InvalidConfiguration:
                continue
            if d.missing:
                continue
            pools = _pools(s, d, tp, cap // tp)
            if pools is None:
                continue
            (rp, rd), p = pools
            dis = _on_nodes(s, gpu, Disaggregation(rp * tp, rd * tp))
            s.counter.candidates += 1
            found = s._option(
                gpu,
                fmt,
                tp,
                usable,
                s.memory(fmt, tp),
                replace(cfg, replicas=rp + rd, disaggregated=dis),
                _Timed(
                    p.ttft_s,
                    p.tpot_s,
                    decode_bound(d, CONTINUOUS_EFFICIENCIES, p.in_flight_per_decode_replica),
                    p.in_flight_per_decode_replica,
                ),
            )
            if isinstance(found, Option):
                why = Reason(
                    "DISAGGREGATED",
                    {
                        "prefill_gpus": rp * tp,
                        "decode_gpus": rd * tp,
                        "kv_transfer_ms": round(p.kv_transfer_s * 1e3, 2),
                        "link": p.link,
                        "prefill_busy_pct": round(p.prefill_utilisation * 100.0, 0),
                    },
                )
                out.append(_with(found, why))  # made full by finish if returned (same breakdown)
    return out


def _pools(
    s: _ServingSearch, d: Deployment, tp: int, most: int
) -> tuple[tuple[int, int], DisaggPoint] | None:
    """Prefill and decode replicas (``most`` in all, at least one each) for the rate: the
    decode pool sized with a prefill pool that never binds, then the prefill pool beside it
    (the pools share nothing but the KV transfer)."""
    assert s.serving is not None and s.rate is not None
    w, rate = s.serving.workload, s.rate
    ttft_t, tpot_t = s.serving.ttft_target_s, s.serving.tpot_target_s

    seen: dict[tuple[int, int], DisaggPoint] = {}

    def at(rp: int, rd: int) -> DisaggPoint:
        if (rp, rd) not in seen:
            s.counter.timed += 1
            dis = _on_nodes(s, d.gpu, Disaggregation(rp * tp, rd * tp))
            seen[rp, rd] = disagg_at_rate(d, CONTINUOUS_EFFICIENCIES, dis, rate, w.input_len, w.output_len)
        return seen[rp, rd]

    def decode_ok(rd: int) -> bool:
        p = at(most, rd)
        if not p.stable or p.in_flight_per_decode_replica > MAX_BUSY * p.decode_cap:
            return False
        return tpot_t is None or p.tpot_s <= tpot_t

    def prefill_ok(rp: int, rd: int) -> bool:
        p = at(rp, rd)
        if not p.stable or p.prefill_utilisation > MAX_BUSY:
            return False
        return ttft_t is None or p.ttft_s <= ttft_t

    fewest = _smallest(decode_ok, most - 1)
    if fewest is None:
        return None
    rd = fewest
    if s.q.objective == "fastest":  # the fewest decode replicas near the lowest TPOT allowed
        best = at(most, most - 1).tpot_s * (1.0 + NEAR_TIE)
        rd = _smallest(lambda r: r >= fewest and at(most, r).tpot_s <= best, most - 1) or fewest
    rp = _smallest(lambda r: prefill_ok(r, rd), most - rd)
    if rp is None:
        return None
    return (rp, rd), at(rp, rd)


def _on_nodes(s: _ServingSearch, gpu: GpuSpec, dis: Disaggregation) -> Disaggregation:
    """The pools on the inventory's nodes where the request gives one (its free GPUs per node,
    network and RDMA), so that the KV transfer crosses the network the team has, not an 8-GPU
    node it does not."""
    best = best_pool(gpu, s.q.constraints)
    if best is None:
        return dis
    return replace(
        dis,
        gpus_per_node=best.free_gpus_per_node,
        network_gbps_per_node=best.network_gbps_per_node or 0.0,
        rdma=True if best.rdma is None else best.rdma,
    )


def _smallest(ok: Callable[[int], bool], top: int) -> int | None:
    """The smallest count in ``1..top`` for which ``ok`` holds (it holds for every larger one)."""
    if top < 1 or not ok(top):
        return None
    return fewest_from(ok, 0, top)


def _with(o: Option, why: Reason) -> Option:
    """``o`` with ``why`` after its FITS reason (what the layout is comes before how fast)."""
    return replace(o, reasons=(*o.reasons[:1], why, *o.reasons[1:]))
