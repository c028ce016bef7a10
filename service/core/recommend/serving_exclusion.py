"""Why a GPU has no serving plan: no time figure, the GPU limit, a target or a deadline at a
degree that could be placed, no placement for the degree that fits, else memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.core.catalog.specs import GpuSpec
from service.core.estimation.network import SPANNING_ENGINES
from service.core.recommend import serving_nodes as sn
from service.core.recommend.candidates import _count_cap, _gib
from service.core.recommend.models import Exclusion
from service.core.recommend.reasons import Reason
from service.core.recommend.serving_memory import _serving_memory

if TYPE_CHECKING:
    from service.core.recommend.serving import _ServingSearch

__all__ = ["no_plan"]


def no_plan(
    s: _ServingSearch,
    gpu: GpuSpec,
    usable: int,
    tps: list[int],
    per_node: int,
    smallest_need: tuple[float, int, str] | None,
    placement_block: int | None,
    why: Reason | None,
    no_time: bool,
) -> Exclusion:
    """Why no plan: no time figure, the limit or a target at a placed degree (``why``), no
    placement, else memory (the smallest need found)."""
    name = gpu.name or gpu.slug
    if no_time and smallest_need is not None and smallest_need[0] < 0:
        return Exclusion(
            gpu,
            Reason(
                "NO_TIME_ESTIMATE",
                {
                    "gpu": name,
                    "gpu_count": smallest_need[1],
                    "needed_gib": _gib(-smallest_need[0]),
                    "usable_gib": _gib(usable),
                    "missing": "memory bandwidth" if not gpu.bandwidth_gb_per_s else "16-bit tensor peak",
                },
            ),
        )
    if why is not None:
        # a degree that could be placed was sized and fell short (the GPU limit, or a target
        # at the degree that came closest): that, not a larger degree nobody timed
        missed = s.missed.get(gpu.slug) if why.code == "MISSES_DEADLINE" else None
        return Exclusion(gpu, missed[1], plan=missed[0]) if missed else Exclusion(gpu, why)
    if placement_block is not None:
        return Exclusion(
            gpu,
            Reason(
                "NO_PLACEMENT",
                {"gpu": name, "tensor_parallel": placement_block, "free_per_node": per_node},
            ),
        )
    tp = smallest_need[1] if smallest_need is not None else (tps[-1] if tps else 1)
    fmt = smallest_need[2] if smallest_need is not None else s.base.quant_method
    params = {
        "gpu": name,
        "tensor_parallel": tp,
        "gpu_count": tp,
        **_serving_memory(s.memory(fmt, tp), usable),
    }
    return Exclusion(gpu, Reason("MEMORY_INSUFFICIENT", {**params, **_unspanned(s, gpu, usable, per_node)}))


def _unspanned(s: _ServingSearch, gpu: GpuSpec, usable: int, per_node: int) -> dict[str, object]:
    """Where one replica over whole nodes would hold the model but was not searched, the degree
    and what ruled it out (``span_blocked``: ``max_gpus``, ``engine`` or ``free_nodes``) -- not
    "memory" alone, which reads as "this GPU cannot serve it"."""
    if s.base.disaggregated or s.base.expert_parallel or not s.continuous or per_node < 1:
        return {}
    m = s.base.model
    fits = [
        k
        for k in sn.powers_of_two(64)
        if k > per_node and sn.spans(m, k, per_node)
        if any(s.memory(f, k).fits(usable) for f in s.formats_on(gpu))
    ]
    if not fits:
        return {}
    k = fits[0]
    cap, _ = _count_cap(gpu, s.q.constraints)
    free = sn.free_nodes(gpu, s.q.constraints, per_node)
    if s.base.engine not in SPANNING_ENGINES:
        blocked = "engine"
    elif free is not None and k // per_node > free:
        blocked = "free_nodes"
    elif k > cap:
        blocked = "max_gpus"
    else:
        return {}
    return {"span_tensor_parallel": k, "span_nodes": k // per_node, "span_blocked": blocked}
