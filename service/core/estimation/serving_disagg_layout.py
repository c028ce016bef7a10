"""The inputs of disaggregated prefill/decode serving (the model is
:mod:`service.core.estimation.serving_disagg`; this module stays import-light so that
:class:`~service.core.estimation.memory.InferenceConfig` can carry them)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Disaggregation"]


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
