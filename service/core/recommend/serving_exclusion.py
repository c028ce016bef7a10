"""Why a GPU has no serving plan: no time figure, the GPU limit, a target or a deadline at a
degree that could be placed, no placement for the degree that fits, else memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.core.catalog.specs import GpuSpec
from service.core.recommend.candidates import _gib
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
    return Exclusion(
        gpu,
        Reason(
            "MEMORY_INSUFFICIENT",
            {
                "gpu": name,
                "tensor_parallel": tp,
                "gpu_count": tp,
                **_serving_memory(s.memory(fmt, tp), usable),
            },
        ),
    )
