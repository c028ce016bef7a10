"""What rules a GPU out before anything is estimated, how many of it an option may use and
how those GPUs are placed on nodes."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from service.core.catalog.specs import GpuSpec
from service.core.estimation.engine_support import engine_refusal, format_refusal, served_format
from service.core.estimation.estimate import Job
from service.core.estimation.frozen import replace
from service.core.estimation.memory import NETWORK_GBIT_PER_S_PER_GPU, InferenceConfig, TrainConfig
from service.core.evidence.aggregate import CellView
from service.core.recommend.models import Constraints, Pool, RecommendData
from service.core.recommend.reasons import Reason

GiB: Final = 2**30

TRAIN_COUNTS: Final[tuple[int, ...]] = (1, 2, 4, 8)
"""Counts inside one node; above 8, whole nodes of the GPU's node size (powers of two of them)."""


def _gib(x: float) -> float:
    return round(x / GiB, 1)


@dataclass
class _Counter:
    candidates: int = 0
    memory: int = 0
    timed: int = 0


def _node_size(gpu: GpuSpec) -> int:
    node = gpu.node
    if node.nvlink_topology == "switched" and node.nvlink_domain_size > 8:
        return node.nvlink_domain_size
    return 8


# --------------------------------------------------------------------------------------------
# Static filters: what rules a GPU out before anything is estimated
# --------------------------------------------------------------------------------------------


def _static_reasons(gpu: GpuSpec, job: Job, cons: Constraints) -> list[Reason]:
    out: list[Reason] = []
    name = gpu.name or gpu.slug
    if gpu.slug in cons.excluded_gpus:
        out.append(Reason("EXCLUDED_BY_USER", {"gpu": name}))
    if cons.allowed_gpus is not None and gpu.slug not in cons.allowed_gpus:
        out.append(Reason("NOT_ALLOWED", {"gpu": name}))
    if cons.pools is not None and not any(p.gpu == gpu.slug for p in cons.pools):
        out.append(Reason("NOT_IN_INVENTORY", {"gpu": name}))
    if cons.vendors is not None and gpu.vendor not in cons.vendors:
        out.append(
            Reason("VENDOR_NOT_ALLOWED", {"gpu": name, "vendor": gpu.vendor, "allowed": list(cons.vendors)})
        )
    if cons.form_factors is not None and gpu.form_factor not in cons.form_factors:
        out.append(
            Reason(
                "FORM_FACTOR",
                {"gpu": name, "form_factor": gpu.form_factor, "allowed": list(cons.form_factors)},
            )
        )
    if cons.nvlink_required and gpu.node.nvlink_topology == "none":
        out.append(Reason("NO_NVLINK", {"gpu": name}))
    # either power cap needs the GPU's TDP: without it neither can be checked
    cap_w = cons.max_power_w_per_gpu if cons.max_power_w_per_gpu is not None else cons.max_power_w_total
    if cap_w is not None and gpu.tdp_w is None:
        out.append(Reason("POWER_UNKNOWN", {"gpu": name, "cap_w": cap_w}))
    elif (
        cons.max_power_w_per_gpu is not None
        and gpu.tdp_w is not None
        and gpu.tdp_w > cons.max_power_w_per_gpu
    ):
        out.append(
            Reason(
                "OVER_POWER_CAP",
                {"gpu": name, "tdp_w": gpu.tdp_w, "cap_w": cons.max_power_w_per_gpu, "per": "gpu"},
            )
        )
    if gpu.fit_memory_bytes is None:
        out.append(Reason("NO_MEMORY_FIGURE", {"gpu": name}))
    if gpu.support_for(job.precision) == "no":
        out.append(Reason("PRECISION_UNSUPPORTED", {"gpu": name, "precision": job.precision}))
    out.extend(_engine_reasons(gpu, job, name))
    return out


def _engine_reasons(gpu: GpuSpec, job: Job, name: str) -> list[Reason]:
    """A serving engine that does not run on the GPU, or not in the asked weight or KV format
    (the estimate's rule, :mod:`~service.core.estimation.engine_support`)."""
    c = job.config
    if not isinstance(c, InferenceConfig):
        return []
    if engine_refusal(c.engine, gpu) is not None:
        return [Reason("ENGINE_UNSUPPORTED", {"gpu": name, "engine": c.engine, "vendor": gpu.vendor})]
    weights = served_format(c.weight_format, "quant_method" in job.stated, c.kv_cache_dtype, c.engine, gpu)
    refused = format_refusal(weights, c.kv_cache_dtype, c.engine, gpu)
    if refused is None:
        return []
    fmt = c.kv_cache_dtype + " KV cache" if refused[0] == "kv_cache_dtype" else weights
    return [Reason("PRECISION_UNSUPPORTED", {"gpu": name, "precision": f"{fmt} with {c.engine}"})]


def _count_cap(gpu: GpuSpec, cons: Constraints) -> tuple[int, Reason | None]:
    """Most GPUs of this kind one option may use: ``max_gpus``, the free GPUs of its pools and
    the total power cap. The reason says which bound binds when it leaves fewer than one."""
    cap = cons.max_gpus
    why: Reason | None = None
    if cons.pools is not None:
        free = sum(p.free for p in cons.pools if p.gpu == gpu.slug)
        cap = min(cap, free)
        if free < 1:
            why = Reason("NOT_IN_INVENTORY", {"gpu": gpu.name or gpu.slug, "free": 0})
    if cons.max_power_w_total is not None and gpu.tdp_w:
        by_power = int(cons.max_power_w_total // gpu.tdp_w)
        if by_power < cap:
            cap = by_power
            if cap < 1:
                why = Reason(
                    "OVER_POWER_CAP",
                    {
                        "gpu": gpu.name or gpu.slug,
                        "tdp_w": gpu.tdp_w,
                        "cap_w": cons.max_power_w_total,
                        "per": "total",
                    },
                )
    return cap, why


def best_pool(gpu: GpuSpec, cons: Constraints) -> Pool | None:
    """The inventory pool of this GPU with the most free GPUs per node (then the most nodes):
    the node layout its plans are placed, timed and priced on; None without one."""
    pools = [p for p in cons.pools or () if p.gpu == gpu.slug and p.free_gpus_per_node > 0]
    return max(pools, key=lambda p: (p.free_gpus_per_node, p.nodes), default=None)


def _pool_shape(gpu: GpuSpec, cons: Constraints) -> tuple[int, int] | None:
    """(free GPUs per node, nodes) of the best pool of this GPU, or None without inventory."""
    if cons.pools is None:
        return None
    best = best_pool(gpu, cons)
    if best is None:
        return (0, 0)
    return best.free_gpus_per_node, sum(
        p.nodes for p in cons.pools if p.gpu == gpu.slug and p.free_gpus_per_node == best.free_gpus_per_node
    )


def spanned_network(pools: Sequence[Pool], gpu: GpuSpec, per_node: int) -> tuple[float, bool | None]:
    """(Gb/s per node, RDMA) of the inventory nodes a job over nodes of ``per_node`` free GPUs
    may sit on: the slowest, which every collective waits on (0: none stated, the default; a pool
    that states none beside stated ones counts at the default; RDMA None: none stated)."""
    mine = [p for p in pools if p.gpu == gpu.slug and p.free_gpus_per_node >= per_node]
    stated = [p.network_gbps_per_node for p in mine if p.network_gbps_per_node]
    gbps = min(stated) if stated else 0.0
    if stated and len(stated) < len(mine):
        gbps = min(gbps, NETWORK_GBIT_PER_S_PER_GPU * per_node)
    rdma = False if any(p.rdma is False for p in mine) else (True if any(p.rdma for p in mine) else None)
    return gbps, rdma


def on_pool(cfg: TrainConfig, gpu: GpuSpec, cons: Constraints) -> TrainConfig:
    """A training plan larger than one of the inventory's nodes runs on its nodes: their free GPUs
    per node, and the network and RDMA the pools state (the slowest: :func:`spanned_network`),
    time its collectives (a 100 Gb/s pool without RDMA is not the 3,200 Gb/s RDMA default of an
    HGX node)."""
    best = best_pool(gpu, cons)
    if best is None or cfg.gpu_count <= best.free_gpus_per_node:
        return cfg
    gbps, rdma = spanned_network(cons.pools or (), gpu, best.free_gpus_per_node)
    cfg = replace(cfg, gpus_per_node=best.free_gpus_per_node)
    if gbps:
        cfg = replace(cfg, network_gbps_per_node=gbps)
    return cfg if rdma is None else replace(cfg, rdma=rdma)


def _placement(gpu: GpuSpec, n: int, cons: Constraints) -> tuple[int, int]:
    """(nodes, GPUs per node) for ``n`` GPUs: the pool's free GPUs per node, else whole nodes
    of the GPU's node size."""
    shape = _pool_shape(gpu, cons)
    per = shape[0] if shape is not None and shape[0] > 0 else _node_size(gpu)
    per = min(per, n)
    return max(1, math.ceil(n / per)), per


def measured_elsewhere(data: RecommendData, job: Job) -> Callable[[str], CellView | None] | None:
    """The job's cell as measured on another GPU, by slug: what anchors a transferred training
    answer on its source GPU's measurement (:mod:`service.core.estimation.source_anchor`)."""
    m, specs = data.measured, data.specs
    return None if m is None else (lambda slug: m(specs[slug], job) if slug in specs else None)
