"""One serving replica over several nodes: the TP degrees that span whole nodes, and the network
they are timed on -- the inventory pool's, else the one of the instance type the plan is priced on
(a plan is never timed on a network its rental does not have)."""

from __future__ import annotations

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.network import replica_layout
from service.core.estimation.serving_disagg_layout import DEFAULT_NODES, NodeNetwork
from service.core.recommend.candidates import best_pool
from service.core.recommend.deployment import rented_network
from service.core.recommend.models import RecommendData, RecommendQuestion
from service.core.recommend.reasons import Reason
from service.core.recommend.serving_price import replica_shape

__all__ = ["SPANNING_ENGINES", "across_nodes", "powers_of_two", "replica_nodes", "spans", "splits_heads"]

SPANNING_ENGINES = frozenset({"vllm", "sglang"})
"""Engines whose replica is searched over several nodes: vLLM (a Ray cluster) and SGLang (its
server on every node, ``--nnodes``), as the artifacts start them; TensorRT-LLM over nodes needs
an MPI launch they do not write."""


def powers_of_two(most: int) -> list[int]:
    """1, 2, 4, ... up to ``most``."""
    out, k = [], 1
    while k <= most:
        out.append(k)
        k *= 2
    return out


def splits_heads(m: DecoderSpec, k: int) -> bool:
    """TP ``k`` divides the KV heads or is a multiple of them (each head replicated, as vLLM and
    SGLang do)."""
    return m.num_kv_heads % k == 0 or (k % m.num_kv_heads == 0 and m.num_heads % k == 0)


def spans(m: DecoderSpec, tp: int, per_node: int) -> bool:
    """Whether TP ``tp`` is one replica over whole nodes of ``per_node`` GPUs (SGLang
    ``--nnodes``, vLLM over Ray, TensorRT-LLM over MPI), its all-reduces over the network
    (:func:`~service.core.estimation.network.tp_all_reduce`)."""
    return per_node >= 1 and tp > per_node and tp % per_node == 0 and splits_heads(m, tp)


def replica_nodes(
    data: RecommendData, q: RecommendQuestion, gpu: GpuSpec, tp: int, per_node: int
) -> NodeNetwork:
    """The nodes a replica of TP ``tp`` fills and their network: the inventory pool's (the
    default network where it states none), else the instance type's that one replica is priced
    on (the default where nothing prices it: the plan then shows no price)."""
    if tp <= per_node:
        return DEFAULT_NODES
    if q.constraints.pools is not None:
        pool = best_pool(gpu, q.constraints)
        if pool is None:
            return NodeNetwork(gpus_per_node=per_node)
        return NodeNetwork(
            gpus_per_node=per_node,
            network_gbps_per_node=pool.network_gbps_per_node or 0.0,
            rdma=True if pool.rdma is None else pool.rdma,
            stated=bool(pool.network_gbps_per_node),
        )
    net = rented_network(data, q, gpu, replica_shape(gpu, 1, tp, per_node))
    if net is None:
        return NodeNetwork(gpus_per_node=per_node)
    return NodeNetwork(gpus_per_node=per_node, network_gbps_per_node=net[0], rdma=net[1], stated=True)


def across_nodes(cfg: InferenceConfig, gpu: GpuSpec) -> tuple[Reason, ...]:
    """``MULTI_NODE`` for a replica over several nodes."""
    layout = replica_layout(cfg.nodes, gpu, cfg.tensor_parallel)
    if layout.nodes <= 1:
        return ()
    return (Reason("MULTI_NODE", {"nodes": layout.nodes, "gpus_per_node": layout.gpus_per_node}),)
