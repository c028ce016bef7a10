"""Multi-LoRA serving (issue 28): adapter memory, the batched LoRA matmuls' time, and how many
requests a batch admits when it may hold only ``max_loras`` distinct adapters.

Engines (vLLM ``--enable-lora``, SGLang ``--lora-paths``, TensorRT-LLM's LoRA plug-in) keep one
copy of the base weights and apply each request's adapter ``y += B (A x)`` beside the base GEMM,
batched over the adapters of a batch with segmented gather kernels (Punica's SGMV, S-LoRA's
MBGMV; vLLM's ``punica`` kernels). The physics this module states:

* **memory**: vLLM preallocates ``max_loras`` GPU slots of ``max_lora_rank`` for every module
  LoRA targets, in the model's activation dtype (``lora_dtype`` ``auto``: 16-bit, also under
  quantised base weights). A slot holds ``r (in + out)`` elements per module; under tensor
  parallelism a column-parallel module keeps ``A`` whole and shards ``B`` (``r in + r out /
  tp``), a row-parallel one (``o_proj``, ``down_proj``) shards ``A`` and keeps ``B`` whole
  (vLLM's ``ColumnParallelLinearWithLoRA`` / ``RowParallelLinearWithLoRA``). Those bytes come out
  of the KV cache.
* **time**: per token ``2 r (in + out)`` FLOPs per module (the per-GPU share), and per iteration
  each *distinct* adapter in the batch streamed once from HBM -- the SGMV cost grows with the
  rank and with the distinct adapters a batch holds, not with its size.
* **admission**: a batch holds at most ``max_loras`` distinct adapters. With ``adapters``
  equally popular, ``n`` requests carry ``D(n) = A (1 - (1 - 1/A)^n)`` distinct ones on
  average; when ``D(n) > max_loras`` only the requests of ``max_loras`` of them run
  (``n max_loras / D(n)``), the others wait.
* **loading**: an adapter that is not resident is copied host to device (vLLM's CPU LoRA cache)
  over PCIe before its request runs: with uniform popularity a request misses with probability
  ``1 - max_loras / adapters``.

LoRA on routed MoE experts is not modelled (vLLM added fused-MoE LoRA only lately): experts'
linears carry no adapter here, and the answer says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from service.core.catalog.decoder import DecoderSpec

__all__ = [
    "LORA_BYTES_PER_ELEMENT",
    "LORA_ROW_PARALLEL",
    "LoraServing",
    "admitted",
    "distinct_adapters",
    "lora_slot_elements",
    "miss_probability",
]

LORA_BYTES_PER_ELEMENT = 2.0
"""Adapter weights in 16-bit: vLLM's ``lora_dtype`` ``auto`` is the model dtype (bf16/fp16),
also when the base weights are quantised (the LoRA matmuls run on the activations' dtype)."""

LORA_ROW_PARALLEL: tuple[str, ...] = ("o_proj", "down_proj")
"""Row-parallel linears (input sharded over tensor-parallel ranks); every other targeted linear
is column-parallel (output sharded)."""


@dataclass(frozen=True, slots=True)
class LoraServing:
    """``adapters`` served, ``rank`` (vLLM ``max_lora_rank``), ``max_loras`` resident on the GPU
    and distinct in one batch (vLLM ``--max-loras``)."""

    adapters: int
    rank: int
    max_loras: int


def lora_slot_elements(m: DecoderSpec, rank: int, tp: int, targets: tuple[str, ...] | None = None) -> float:
    """Elements one adapter slot holds per GPU of a ``tp`` group: every linear of a layer except
    the router and routed experts (``copies > 1``), ``r (in + out)`` each, sharded as vLLM shards
    it (module docstring), times the layers. Twice this is the LoRA FLOPs per token per GPU.
    ``targets`` restricts it to those modules (an adapter file's ``target_modules``); an engine's
    slot covers every module whatever an adapter targets."""
    per_layer = 0.0
    for name, (i, o, copies) in m.linear_shapes().items():
        if copies != 1 or name == "router" or (targets is not None and name not in targets):
            continue
        if name in LORA_ROW_PARALLEL:
            per_layer += rank * (i / tp + o)
        else:
            per_layer += rank * (i + o / tp)
    return per_layer * m.num_layers


def distinct_adapters(adapters: int, requests: float) -> float:
    """Expected distinct adapters among ``requests`` requests over ``adapters`` equally popular
    ones: ``A (1 - (1 - 1/A)^n)`` (1 for one adapter, ``n`` for many)."""
    if adapters <= 1 or requests <= 0:
        return min(1.0, max(requests, 0.0)) if adapters >= 1 else 0.0
    return adapters * -_expm1_log1p(requests, -1.0 / adapters)


def _expm1_log1p(n: float, x: float) -> float:
    """``(1 + x)^n - 1`` without cancellation."""
    return math.expm1(n * math.log1p(x))


def admitted(lora: LoraServing, requests: float) -> float:
    """Requests of ``requests`` in flight that a batch of at most ``max_loras`` distinct adapters
    runs (module docstring): all when they carry no more, else ``n max_loras / D(n)``."""
    d = distinct_adapters(lora.adapters, requests)
    if d <= lora.max_loras:
        return requests
    return requests * lora.max_loras / d


def miss_probability(lora: LoraServing) -> float:
    """Probability a request's adapter is not resident (uniform popularity, ``max_loras`` slots)."""
    return max(0.0, 1.0 - lora.max_loras / lora.adapters)
