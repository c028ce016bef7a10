"""One serving replica over several nodes: the TP degrees that span whole nodes, and the network
they are timed on -- the inventory pool's, else the one of the instance type the plan is priced on
(a plan is never timed on a network its rental does not have)."""

from __future__ import annotations

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.network import replica_layout
from service.core.estimation.serving_disagg_layout import DEFAULT_NODES, NodeNetwork
from service.core.recommend.candidates import spanned_network
from service.core.recommend.deployment import rented_network
from service.core.recommend.models import Constraints, Pool, RecommendData, RecommendQuestion
from service.core.recommend.reasons import Reason
from service.core.recommend.serving_price import replica_shape

__all__ = [
    "across_nodes",
    "free_nodes",
    "powers_of_two",
    "replica_nodes",
    "span_cap",
    "spans",
]


def powers_of_two(most: int) -> list[int]:
    """1, 2, 4, ... up to ``most``."""
    out, k = [], 1
    while k <= most:
        out.append(k)
        k *= 2
    return out


def spans(m: DecoderSpec, tp: int, per_node: int, free: int | None = None) -> bool:
    """Whether TP ``tp`` is one replica over whole nodes of ``per_node`` GPUs (SGLang
    ``--nnodes``, vLLM over Ray), its all-reduces over the network
    (:func:`~service.core.estimation.network.tp_all_reduce`); ``free``: the inventory's nodes
    with ``per_node`` GPUs free (:func:`free_nodes`; None: rented, any number)."""
    whole = per_node >= 1 and tp > per_node and tp % per_node == 0
    return whole and m.tp_splits_heads(tp) and (free is None or tp // per_node <= free)


def span_cap(gpu: GpuSpec, cons: Constraints, per_node: int, cap: int) -> int:
    """The GPUs replicas over nodes may use: the inventory's whole free nodes, at most ``cap``."""
    free = free_nodes(gpu, cons, per_node)
    return cap if free is None else min(cap, free * per_node)


def replica_nodes(
    data: RecommendData, q: RecommendQuestion, gpu: GpuSpec, tp: int, per_node: int
) -> NodeNetwork:
    """The nodes a replica of TP ``tp`` fills and their network: the inventory pool's (the
    default network where it states none), else the instance type's that one replica is priced
    on (the default where nothing prices it: the plan then shows no price)."""
    if tp <= per_node:
        return DEFAULT_NODES
    if q.constraints.pools is not None:
        return _on_pools(gpu, q.constraints, per_node)
    net = rented_network(data, q, gpu, replica_shape(gpu, 1, tp, per_node))
    if net is None:
        return NodeNetwork(gpus_per_node=per_node)
    return NodeNetwork(gpus_per_node=per_node, network_gbps_per_node=net[0], rdma=net[1], stated=True)


def _holding(gpu: GpuSpec, cons: Constraints, per_node: int) -> list[Pool]:
    """The inventory pools of ``gpu`` whose nodes each have ``per_node`` GPUs free."""
    return [p for p in cons.pools or () if p.gpu == gpu.slug and p.free_gpus_per_node >= per_node]


def free_nodes(gpu: GpuSpec, cons: Constraints, per_node: int) -> int | None:
    """Inventory nodes with ``per_node`` GPUs of ``gpu`` free (None without an inventory): a
    replica over ``k`` nodes needs ``k`` of them -- 8 + 4 + 4 free GPUs are not two nodes of 8."""
    if cons.pools is None:
        return None
    return sum(p.nodes for p in _holding(gpu, cons, per_node))


def _on_pools(gpu: GpuSpec, cons: Constraints, per_node: int) -> NodeNetwork:
    """The network of the pools a replica may span, the slowest (:func:`.candidates.spanned_network`):
    its all-reduces wait on the slowest node's link; RDMA unless a pool says not."""
    gbps, rdma = spanned_network(cons.pools or (), gpu, per_node)
    return NodeNetwork(
        gpus_per_node=per_node, network_gbps_per_node=gbps, rdma=rdma is not False, stated=bool(gbps)
    )


def across_nodes(cfg: InferenceConfig, gpu: GpuSpec) -> tuple[Reason, ...]:
    """``MULTI_NODE`` for a replica over several nodes."""
    layout = replica_layout(cfg.nodes, gpu, cfg.tensor_parallel)
    if layout.nodes <= 1:
        return ()
    return (
        Reason(
            "MULTI_NODE",
            {"nodes": layout.nodes, "gpus_per_node": layout.gpus_per_node, "network": layout.describe()},
        ),
    )
