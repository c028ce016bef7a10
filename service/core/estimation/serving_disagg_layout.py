"""The node-layout inputs of serving: disaggregated prefill/decode pools (the model is
:mod:`service.core.estimation.serving_disagg`) and the nodes one tensor-parallel replica spans
(:func:`service.core.estimation.network.tp_all_reduce`); this module stays import-light so that
:class:`~service.core.estimation.memory.InferenceConfig` can carry them."""

from __future__ import annotations

from dataclasses import dataclass

from service.core.errors import InvalidConfiguration

__all__ = ["DEFAULT_NODES", "Disaggregation", "NodeNetwork", "replica_nodes"]


@dataclass(frozen=True, slots=True)
class Disaggregation:
    """The pools (GPUs each, in tensor-parallel groups) and the node layout the KV transfer
    crosses: ``gpus_per_node`` 0 means the GPU's NVLink domain (at least 8),
    ``network_gbps_per_node`` 0 means 400 Gb/s per GPU of the node."""

    prefill_gpus: int
    decode_gpus: int
    gpus_per_node: int = 0
    network_gbps_per_node: float = 0.0
    rdma: bool = True


@dataclass(frozen=True, slots=True)
class NodeNetwork:
    """The nodes a serving replica's GPUs fill and the network between them, for a
    tensor-parallel group larger than one node (SGLang ``--nnodes``, vLLM over Ray):
    ``gpus_per_node`` 0 means the GPU's NVLink domain (at least 8), ``network_gbps_per_node`` 0
    means 400 Gb/s per GPU of the node. ``stated``: the caller gave them (else the answer says
    what it assumed)."""

    gpus_per_node: int = 0
    network_gbps_per_node: float = 0.0
    rdma: bool = True
    stated: bool = False


DEFAULT_NODES = NodeNetwork()
"""The GPU's own node and the default network: what a replica inside one node never uses."""


def replica_nodes(
    pipeline_parallel: int, gpus_per_node: int | None, network_gbps_per_node: float | None, rdma: bool
) -> NodeNetwork:
    """The nodes a serving replica spans as a request states them (pipeline stages are not a
    serving layout here: a replica over nodes is tensor-parallel over them)."""
    if pipeline_parallel > 1:
        raise InvalidConfiguration(
            "pipeline_parallel",
            "pipeline_parallel is modelled for training; to serve a model larger than one node give "
            "tensor_parallel over the nodes' GPUs (e.g. 16 on 2 nodes of 8, its all-reduces over the "
            "network: gpus_per_node, network_gbps_per_node, rdma)",
        )
    if not (gpus_per_node or network_gbps_per_node or not rdma):
        return DEFAULT_NODES
    return NodeNetwork(gpus_per_node or 0, network_gbps_per_node or 0.0, rdma, stated=True)
