"""Where a training job's GPUs sit and how long its collectives take (issue 25).

A job of ``gpu_count`` GPUs fills nodes of ``gpus_per_node`` GPUs. Inside a node, ranks talk
over NVLink (within the GPU's NVLink domain) or PCIe; between nodes, over the network, whose
bandwidth is a property of the node (its NICs), not of one GPU.

Collectives are timed hierarchically, the way NCCL's ring and tree algorithms behave on
rail-optimised clusters: a group of ``n = r x k`` ranks (``r`` per node, ``k`` nodes) moves
``f(r) S`` bytes per rank over the node's links and ``f(k) S / r`` per rank across nodes, where
every GPU of a node that runs such a collective at the same time shares the node's network:

``t = f(r) S / (B_link e) + f(k) S (g / r) / (B_node e_net)``

with ``f(x) = 2 (x - 1) / x`` for an all-reduce and ``(x - 1) / x`` for an all-gather or a
reduce-scatter, ``S`` the bytes per rank, ``g`` the GPUs of the node busy with collectives at
once, ``e`` the collective efficiency (:attr:`~service.core.estimation.performance.Efficiencies.comm`)
and ``e_net`` that times :data:`~service.core.estimation.memory.SOCKET_NETWORK_EFFICIENCY`
without RDMA. On one node the second term vanishes and the first is the flat ring the estimator
always used. Across nodes a data-parallel all-reduce thus runs at about the node's aggregate NIC
bandwidth (nccl-tests bus bandwidth on DGX-class clusters is close to the sum of the node's
NICs), not at one NIC's: a structure from the algorithm, not fitted.

Rank placement follows Megatron-Core's default order: tensor-parallel ranks adjacent, then
data-parallel, then pipeline stages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from service.core.catalog.models import DecoderSpec
from service.core.catalog.precision import TRAIN_MODES as _MODES
from service.core.catalog.specs import GpuSpec
from service.core.estimation.efficiencies import Efficiencies
from service.core.estimation.frozen import fast_init
from service.core.estimation.memory import (
    NETWORK_GBIT_PER_S_PER_GPU,
    SOCKET_NETWORK_EFFICIENCY,
    InferenceConfig,
    TrainConfig,
)
from service.core.estimation.memory_config import fsdp_gathered_bytes
from service.core.estimation.serving_disagg_layout import NodeNetwork
from service.core.estimation.step_terms import _linear_params

__all__ = [
    "NCCL_NET_HOP_LATENCY_S",
    "PCIE_ASSUMED_PER_DIRECTION_GB_PER_S",
    "SPANNING_ENGINES",
    "Layout",
    "TpAllReduce",
    "collective_s",
    "communication_s",
    "layout_of",
    "link_bytes_per_s",
    "link_name",
    "node_layout",
    "p2p_s",
    "replica_layout",
    "spanning_degrees",
    "tp_all_reduce",
]

PCIE_ASSUMED_PER_DIRECTION_GB_PER_S = 0.985 * 2.0 * 16
"""PCIe gen4 x16 payload bandwidth per direction (GB/s), assumed for collectives when the
catalog does not source the GPU's PCIe generation and width (the answer says so)."""


@fast_init
@dataclass(frozen=True, slots=True)
class Layout:
    """The node layout and network a training job runs on, defaults resolved."""

    gpus_per_node: int
    nodes: int
    network_gbps_per_node: float
    rdma: bool
    stated: bool
    """Whether the caller gave the layout or the network (else both are the defaults)."""

    @property
    def network_bytes_per_s(self) -> float:
        """The node's network bandwidth in B/s, as NCCL reaches it (before ``comm``)."""
        eff = 1.0 if self.rdma else SOCKET_NETWORK_EFFICIENCY
        return self.network_gbps_per_node * 1e9 / 8.0 * eff

    def describe(self) -> str:
        """The sentence the answer carries."""
        how = "RDMA" if self.rdma else "no RDMA: NCCL sockets, assumed at half the RDMA rate"
        default = (
            ""
            if self.stated
            else f" (default: {NETWORK_GBIT_PER_S_PER_GPU:g} Gb/s per GPU, as DGX/HGX H100 and H200 nodes have)"
        )
        return (
            f"{self.nodes} node(s) of {self.gpus_per_node} GPUs; between nodes "
            f"{self.network_gbps_per_node:g} Gb/s per node, {how}{default}"
        )


def default_gpus_per_node(gpu: GpuSpec) -> int:
    """GPUs per node when the caller does not say: the NVLink domain, at least 8."""
    return max(gpu.node.nvlink_domain_size, 8)


def node_layout(
    gpu: GpuSpec, gpus: int, gpus_per_node: int, network_gbps_per_node: float, rdma: bool, stated: bool
) -> Layout:
    """``gpus`` GPUs on nodes of ``gpus_per_node`` (0: the GPU's node) joined by
    ``network_gbps_per_node`` (0: one 400 Gb/s NIC per GPU): the one rule training, a serving
    replica and disaggregated pools are laid out by."""
    g = gpus_per_node or default_gpus_per_node(gpu)
    return Layout(
        gpus_per_node=g,
        nodes=-(-gpus // g),
        network_gbps_per_node=network_gbps_per_node or NETWORK_GBIT_PER_S_PER_GPU * g,
        rdma=rdma,
        stated=stated,
    )


def layout_of(c: TrainConfig, gpu: GpuSpec) -> Layout:
    """The layout ``c`` runs on: its own figures, else the GPU's node and one 400 Gb/s NIC per GPU."""
    stated = bool(c.gpus_per_node or c.network_gbps_per_node) or not c.rdma
    return node_layout(gpu, c.gpu_count, c.gpus_per_node, c.network_gbps_per_node, c.rdma, stated)


def link_bytes_per_s(gpu: GpuSpec, ranks_in_node: int, span: int | None = None) -> float:
    """Per-direction bandwidth (B/s) between ``ranks_in_node`` GPUs of one node: the scale-up
    fabric inside its domain (:meth:`~.GpuSpec.scale_up_gb_per_s`: a mesh's share of it), PCIe
    otherwise (gen4 x16 when the catalog does not source it). ``span``: the GPUs a strided group
    stretches over."""
    fabric = gpu.scale_up_gb_per_s(ranks_in_node, span)
    if fabric:
        return fabric * 1e9
    return (gpu.node.pcie_per_direction_gb_per_s or PCIE_ASSUMED_PER_DIRECTION_GB_PER_S) * 1e9


def link_name(gpu: GpuSpec, ranks_in_node: int, span: int | None = None) -> str:
    """What :func:`link_bytes_per_s` crosses, by name: the vendor's scale-up fabric
    (:attr:`~.GpuSpec.scale_up_fabric`) where it carries the group, else PCIe."""
    return gpu.scale_up_fabric if gpu.scale_up_gb_per_s(ranks_in_node, span) else "PCIe"


def collective_s(
    nbytes: float,
    ranks: int,
    stride: int,
    all_reduce: bool,
    gpu: GpuSpec,
    layout: Layout,
    comm: float,
    busy_per_node: int,
) -> float:
    """Seconds of one collective over ``ranks`` ranks ``stride`` GPUs apart (module docstring),
    ``nbytes`` per rank; ``busy_per_node`` GPUs of a node run such collectives at once."""
    if ranks <= 1:
        return 0.0
    g = layout.gpus_per_node
    r = max(1, min(ranks, g // max(stride, 1)))
    k = -(-ranks // r)
    factor = 2.0 if all_reduce else 1.0
    t = factor * (r - 1) / r * nbytes / (link_bytes_per_s(gpu, r, r * stride) * comm) if r > 1 else 0.0
    if k > 1:
        share = max(1, min(busy_per_node, g)) / r
        t += factor * (k - 1) / k * nbytes * share / (layout.network_bytes_per_s * comm)
    return t


def p2p_s(
    nbytes: float, crosses_nodes: bool, gpu: GpuSpec, layout: Layout, comm: float, span: int | None = None
) -> float:
    """One point-to-point transfer of ``nbytes`` between pipeline stages: over the node's links,
    or over the network when the stages sit on different nodes (every GPU of the node sending at
    once, each with its share of the node's network). ``span``: the GPUs the two ends sit among
    (a pair of NVLink-bridged cards reaches no third card over the bridge)."""
    if crosses_nodes:
        return nbytes * layout.gpus_per_node / (layout.network_bytes_per_s * comm)
    return nbytes / (link_bytes_per_s(gpu, 2, span) * comm)


NCCL_NET_HOP_LATENCY_S = 5.0e-6
"""Latency of one network hop of a tree all-reduce in NCCL's low-latency protocol, from NCCL's
own tuning model (``hwLat[NET][Tree][LL]`` = 5.0 us against 0.5 us for an NVLink hop;
NVIDIA/nccl ``src/graph/tuning.cc``): an all-reduce over ``k`` nodes adds ``2 log2(k)`` such hops
to the one inside a node. Decode's all-reduces are small messages, which NCCL sends with LL."""


@fast_init
@dataclass(frozen=True, slots=True)
class TpAllReduce:
    """What one tensor-parallel all-reduce of a serving replica costs beyond the engine's own
    latency: ``s_per_byte`` seconds per byte each rank contributes (before the collective
    efficiency), ``extra_latency_s`` the network hops where the group spans ``nodes`` nodes,
    ``link`` what it crosses by name."""

    s_per_byte: float
    extra_latency_s: float
    nodes: int
    link: str


def replica_layout(nodes: NodeNetwork, gpu: GpuSpec, tp: int) -> Layout:
    """The nodes one replica of ``tp`` GPUs fills: the caller's, else the GPU's node with
    400 Gb/s per GPU."""
    n = nodes
    return node_layout(gpu, tp, n.gpus_per_node, n.network_gbps_per_node, n.rdma, n.stated)


def tp_all_reduce(gpu: GpuSpec, tp: int, nodes: NodeNetwork) -> TpAllReduce:
    """A ``tp``-rank all-reduce, hierarchical where the group spans nodes (module docstring):
    ``2 (r-1)/r`` of each rank's bytes over the node's links and ``2 (k-1)/k`` over its share of
    the node's network, plus the tree's network hops."""
    if tp <= 1:
        return TpAllReduce(0.0, 0.0, 1, "")
    layout = replica_layout(nodes, gpu, tp)
    r = min(tp, layout.gpus_per_node)
    k = -(-tp // r)
    inner = 2.0 * (r - 1) / r / link_bytes_per_s(gpu, r) if r > 1 else 0.0
    if k == 1:
        return TpAllReduce(inner, 0.0, 1, link_name(gpu, tp))
    share = layout.gpus_per_node / r
    outer = 2.0 * (k - 1) / k * share / layout.network_bytes_per_s
    hops = 2 * int(math.log2(k))  # NCCL's log2i: floor
    return TpAllReduce(inner + outer, hops * NCCL_NET_HOP_LATENCY_S, k, "network")


SPANNING_ENGINES = frozenset({"vllm", "sglang"})
"""Engines one replica of which may span nodes (vLLM over Ray, SGLang ``--nnodes``)."""


def spanning_degrees(c: InferenceConfig, gpu: GpuSpec) -> list[int]:
    """Tensor-parallel degrees of one replica over 2, 4, ... whole nodes (at most 64 GPUs) that
    split the heads, its all-reduces over the network (``c.nodes``); none for an engine that is
    not started over nodes (:data:`SPANNING_ENGINES`)."""
    if c.engine not in SPANNING_ENGINES:
        return []
    g = c.nodes.gpus_per_node or default_gpus_per_node(gpu)
    out, k = [], 2 * g
    while k <= 64:
        if c.model.tp_splits_heads(k):
            out.append(k)
        k *= 2
    return out


def exposed_s(t: float, overlap: float, backward_s: float) -> float:
    """What a collective of ``t`` seconds leaves exposed when ``overlap`` of it hides under the
    backward pass (never more than the backward pass can hide)."""
    return max(t - overlap * backward_s, t * (1 - overlap))


def communication_s(
    c: TrainConfig,
    gpu: GpuSpec,
    e: Efficiencies,
    P: float,
    T: float,
    h: float,
    L: int,
    cb: float,
    t_bwd: float,
    lay: Layout,
    stack_overlap: float = 0.0,
) -> float:
    """Exposed communication per optimizer step (s), over the node layout (:mod:`.network`).

    DDP: all-reduce of the gradients, overlapped with backward by ``overlap``. ZeRO-1/2:
    reduce-scatter of gradients + all-gather of parameters. FSDP/ZeRO-3: parameters all-gathered
    in forward and backward plus the gradient reduce-scatter, overlapped likewise. Tensor
    parallelism: two all-reduces of the ``T x h`` activations per layer in forward and two in
    backward, not overlapped. ``P`` is this rank's share of the parameters (one pipeline stage).
    """
    dp, tp, pp = c.data_parallel, c.tensor_parallel, c.pipeline_parallel
    total = 0.0
    overlap = max(e.overlap, stack_overlap)
    busy = min(c.gpu_count, lay.gpus_per_node)
    if dp > 1:
        trainable = P if c.finetune == "full" else P * 0.01
        grad_bytes = trainable * (
            4.0 if _MODES[c.precision].grad == 4 and c.sharding in ("none", "ddp") else 2.0
        )
        if c.sharding in ("none", "ddp"):
            t = collective_s(grad_bytes, dp, tp, True, gpu, lay, e.comm, busy)
        elif c.sharding in ("zero1", "zero2"):
            t = collective_s(grad_bytes + 2.0 * P, dp, tp, False, gpu, lay, e.comm, busy)
        elif c.sharding == "fsdp":  # gathers in forward and backward, gradients reduce-scattered
            gathered = 2.0 if c.mixed_precision == "fsdp_policy" else float(c.mode.param)
            m = c.model
            linear = _linear_params(m, tp) if c.finetune == "qlora" and isinstance(m, DecoderSpec) else 0.0
            nbytes = 2.0 * fsdp_gathered_bytes(c, P, gathered, linear) + float(c.mode.grad) * trainable
            t = collective_s(nbytes, dp, tp, False, gpu, lay, e.comm, busy)
        else:
            t = collective_s(3 * 2.0 * P, dp, tp, False, gpu, lay, e.comm, busy)
        total += exposed_s(t, overlap, t_bwd * c.accumulation_steps)
    if tp > 1:
        per = collective_s(T * h * cb, tp, 1, True, gpu, lay, e.comm, busy)
        total += 4 * (-(-L // pp)) * per * c.accumulation_steps
    return total
