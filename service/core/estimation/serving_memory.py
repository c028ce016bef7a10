"""How much of a GPU's memory a serving engine gives its weights and KV cache: the engine's
memory setting (vLLM ``gpu_memory_utilization``, SGLang ``mem_fraction_static``, TensorRT-LLM
``kv_cache_free_gpu_mem_fraction``), as the request states it or as the engine picks it.

SGLang picks its fraction per GPU and layout when the launch does not set it (SGLang 0.5,
``python/sglang/srt/server_args.py``, ``ServerArgs._handle_gpu_memory_settings``): by the GPU's
memory (``nvidia-smi``'s total, MiB) it sets the chunked-prefill size and the largest CUDA-graph
batch, reserves memory for them -- 512 MiB of backend metadata, 1.5 MiB per prefill token,
2 MiB per graph batch slot, 1 GiB per 8 GPUs of the replica, more for data-parallel attention,
at least 10 GiB on a GPU over 60 GiB, 2 GiB more for a draft model -- and keeps
``(total - reserved) / total`` for weights and the KV pool. Its KV pool is then that fraction
of the memory free at start less the weights (``profile_max_num_token``: ``available - total x
(1 - fraction)``): activations live in the reserve, not in the fraction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from service.core.catalog.specs import GpuSpec
from service.core.estimation.memory import CUDA_CONTEXT_BYTES, NCCL_BUFFER_BYTES, InferenceConfig

if TYPE_CHECKING:  # the engine classes import this module
    from service.core.estimation.serving_engines import Deployment, EngineClass

__all__ = [
    "SGLANG_FALLBACK_FRACTION",
    "MiB",
    "kv_capacity_tokens",
    "memory_setting",
    "sglang_defaults",
    "sglang_mem_fraction_static",
    "smallest_memory_fraction",
]

MiB: Final = 2**20
GiB: Final = 2**30

SGLANG_FALLBACK_FRACTION: Final = 0.88
"""SGLang's fraction where it cannot read the GPU's memory (``else 0.88``)."""

_SGLANG_TIERS: Final[tuple[tuple[float, int, int, int], ...]] = (
    # (memory below, MiB; chunked prefill tokens; graph batch at TP < 4; at TP >= 4)
    (20 * 1024, 2048, 8, 8),  # T4, 4080
    (35 * 1024, 2048, 24, 80),  # A10, 4090, 5090
    (60 * 1024, 4096, 32, 160),  # A100 40 GB, L40
    (160 * 1024, 8192, 256, 512),  # H100, A100 80 GB, H20, H200
    (float("inf"), 16384, 512, 512),  # B200, MI300
)


def sglang_defaults(total_mib: float, tp: int) -> tuple[int, int]:
    """SGLang's (chunked-prefill size, largest CUDA-graph batch) for a GPU of ``total_mib``."""
    for below, chunk, small, large in _SGLANG_TIERS:
        if total_mib < below:
            return chunk, small if tp < 4 else large
    raise AssertionError("the last tier has no bound")


def _sglang_reserved_mib(
    total_mib: float, parallel: int, dp_attention: bool, speculative: str | None
) -> float:
    """SGLang's reserve for activations, CUDA graphs and metadata (MiB)."""
    chunk, graph_bs = sglang_defaults(total_mib, parallel)
    reserved = 512.0 + max(chunk, 2048) * 1.5 + graph_bs * 2.0 + parallel / 8.0 * 1024.0
    if dp_attention:  # data-parallel attention pads per rank (dp = the replica's GPUs here)
        reserved += graph_bs * parallel * 3.0 + (graph_bs * parallel * 1.5 if graph_bs > 300 else 0.0)
    if total_mib > 60 * 1024:
        reserved = max(reserved, 10.0 * 1024)
    if speculative is not None and speculative != "ngram":  # a draft model and its graphs
        reserved += 2.0 * 1024
    return reserved


def sglang_mem_fraction_static(
    gpu: GpuSpec, parallel: int, dp_attention: bool = False, speculative: str | None = None
) -> float:
    """SGLang's default ``mem_fraction_static`` on ``gpu`` for a replica of ``parallel`` GPUs
    (tensor x pipeline): 0.835 on one H100 SXM, 0.818 on eight, 0.907 / 0.897 on the H200 SXM,
    0.855 / 0.852 on four / eight B200s; 0.88 where the catalog has no memory figure."""
    total = gpu.fit_memory_bytes
    if not total:
        return SGLANG_FALLBACK_FRACTION
    total_mib = total / MiB
    reserved = _sglang_reserved_mib(total_mib, parallel, dp_attention, speculative)
    return round(max(0.0, total_mib - reserved) / total_mib, 3)


def memory_setting(c: InferenceConfig, engine: EngineClass, gpu: GpuSpec) -> tuple[float, tuple[str, ...]]:
    """The memory setting one replica of ``c`` runs with on ``gpu`` -- the one the request states,
    else SGLang's own pick (:func:`sglang_mem_fraction_static`), else the engine class's documented
    default -- and a note saying so where it is not that fixed default."""
    if c.memory_fraction is not None:
        stated = f"{engine.name} memory setting {c.memory_fraction:.3g} (as stated)"
        return c.memory_fraction, (stated,) if engine.batching == "continuous" else ()
    if engine.name != "sglang":
        return engine.memory_fraction, ()
    fraction = sglang_mem_fraction_static(gpu, c.tensor_parallel, c.expert_parallel, c.speculative)
    return fraction, (f"sglang memory setting {fraction:.3g} (SGLang's own pick for this GPU and layout)",)


def _activation_bytes(d: Deployment, tokens: float) -> float:
    """Per-GPU activation workspace for an iteration of ``tokens`` tokens (the engine profiles or
    preallocates it): one layer's largest buffers in 16-bit (``4h + 3f + 2(q + 2kv)`` per token)
    plus fp32 logits of a few hundred sequences."""
    return tokens * d.act_per_token + d.act_fixed


def _pool_bytes(d: Deployment, fraction: float, max_tokens: float, reserve_gib: float) -> float:
    """Bytes of KV pool on one GPU of the replica at memory setting ``fraction`` (negative where
    the weights do not leave it room): linear in the setting, in each engine's own way
    (``EngineClass.kv_memory``; SGLang's ``static`` pool is the setting's share of the memory free
    once the context and NCCL are up, less the weights)."""
    usable = float(d.gpu.fit_memory_bytes or 0)
    started = CUDA_CONTEXT_BYTES + (NCCL_BUFFER_BYTES if d.tp > 1 else 0)
    fixed = started + reserve_gib * GiB
    act = _activation_bytes(d, max_tokens)
    lora = d.lora.max_loras * d.lora_slot_bytes if d.lora else 0.0
    weights = d.w_dense + d.w_experts + d.w_resident + lora
    if d.engine.kv_memory == "free":
        return fraction * (usable - weights - act - fixed)
    if d.engine.kv_memory == "static":
        return fraction * (usable - started) - weights
    return fraction * usable - weights - act - fixed


def kv_capacity_tokens(d: Deployment, max_tokens: int, reserve_gib: float = 2.0) -> float:
    """Tokens of KV cache one GPU of the replica holds (per-GPU share of every token), after
    the weights, the activation workspace, the CUDA context (and NCCL buffers when TP > 1), at
    the replica's memory setting."""
    fraction = d.memory_fraction or d.engine.memory_fraction
    return max(0.0, _pool_bytes(d, fraction, float(max_tokens), reserve_gib)) / d.kv_per_token


def smallest_memory_fraction(
    d: Deployment, tokens: float, max_tokens: float, reserve_gib: float = 2.0
) -> float | None:
    """The smallest memory setting whose pool holds ``tokens`` of KV cache (the pool is linear in
    the setting); None where even the whole memory does not."""
    base = _pool_bytes(d, 0.0, max_tokens, reserve_gib)
    slope = _pool_bytes(d, 1.0, max_tokens, reserve_gib) - base
    need = tokens * d.kv_per_token
    if slope <= 0 or base + slope < need:
        return None
    return max(0.0, (need - base) / slope)
