"""How much of a GPU's memory a serving engine gives its weights and KV cache: the engine's
memory setting (vLLM ``gpu_memory_utilization``, SGLang ``mem_fraction_static``, TensorRT-LLM
``kv_cache_free_gpu_mem_fraction``), as the request states it or as the engine picks it.

SGLang picks its fraction per GPU and parallel layout when the launch does not set it
(``python/sglang/srt/server_args.py``, ``ServerArgs.__post_init__``, SGLang 0.4.7-0.5): it
reserves memory for activations and CUDA-graph buffers, more on larger GPUs (whose default
chunked prefill and graph capture range are larger), and keeps ``(total - reserved) / total``
for weights and the KV pool, ``total`` being ``nvidia-smi``'s memory in MiB. Its KV pool is then
that fraction of the memory free at start less the weights (``ModelRunner.profile_max_num_token``:
``available - total x (1 - fraction)``): activations live in the reserve, not in the fraction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from service.core.catalog.specs import GpuSpec
from service.core.estimation.memory import InferenceConfig

if TYPE_CHECKING:  # the engine classes import this module
    from service.core.estimation.serving_engines import EngineClass

__all__ = [
    "SGLANG_FALLBACK_FRACTION",
    "engine_memory_fraction",
    "memory_setting",
    "sglang_mem_fraction_static",
]

MiB: Final = 2**20

SGLANG_FALLBACK_FRACTION: Final = 0.88
"""SGLang's fraction where it cannot read the GPU's memory (``server_args.py``: ``else 0.88``)."""

SGLANG_DP_ATTENTION_RESERVE_MIB: Final = 4 * 1024
"""Added to the reserve with data-parallel attention (``enable_dp_attention``)."""

SGLANG_SPECULATIVE_RESERVE_MIB: Final = 2 * 1024
"""Added to the reserve with speculative decoding (the draft's larger CUDA-graph buffers)."""


def _sglang_reserved_mib(total_mib: float, parallel: int) -> float:
    """SGLang's reserve for activations and CUDA-graph buffers by GPU memory (MiB): T4 / 4080 and
    A10 / L40 / 4090 class (2k chunked prefill, graphs to batch 8) 2.8 GiB + parallel / 10; H100 /
    A100 class (8k, 160) 9.5 GiB + parallel / 2; H20 and H200 class (8k, 256) 12 GiB + parallel / 2;
    B200 / MI300 class (16k, 512) 32 GiB."""
    if total_mib < 35 * 1024:
        return (2.8 + parallel / 10.0) * 1024
    if total_mib < 90 * 1024:
        return (9.5 + parallel / 2.0) * 1024
    if total_mib < 160 * 1024:
        return (12.0 + parallel / 2.0) * 1024
    return 32.0 * 1024


def sglang_mem_fraction_static(
    gpu: GpuSpec, parallel: int, dp_attention: bool = False, speculative: bool = False
) -> float:
    """SGLang's default ``mem_fraction_static`` on ``gpu`` for a replica of ``parallel`` GPUs
    (tensor x pipeline): 0.874 on one H100 SXM, 0.830 on eight, 0.911 / 0.886 on the H200 SXM,
    0.825 on any B200 group; 0.88 where the catalog has no memory figure."""
    total = gpu.fit_memory_bytes
    if not total:
        return SGLANG_FALLBACK_FRACTION
    total_mib = total / MiB
    reserved = _sglang_reserved_mib(total_mib, parallel)
    reserved += SGLANG_DP_ATTENTION_RESERVE_MIB if dp_attention else 0.0
    reserved += SGLANG_SPECULATIVE_RESERVE_MIB if speculative else 0.0
    return round(max(0.0, total_mib - reserved) / total_mib, 3)


def engine_memory_fraction(
    engine: str,
    engine_default: float,
    gpu: GpuSpec,
    parallel: int,
    *,
    dp_attention: bool = False,
    speculative: bool = False,
    stated: float | None = None,
) -> float:
    """The memory setting a replica runs with: the one the request states, else SGLang's own pick
    (:func:`sglang_mem_fraction_static`), else the engine class's documented default."""
    if stated is not None:
        return stated
    if engine == "sglang":
        return sglang_mem_fraction_static(gpu, parallel, dp_attention, speculative)
    return engine_default


def memory_setting(c: InferenceConfig, engine: EngineClass, gpu: GpuSpec) -> tuple[float, tuple[str, ...]]:
    """The memory setting one replica of ``c`` runs with on ``gpu``, and a note saying so where
    it is not the engine class's fixed default (a stated setting, or SGLang's pick)."""
    fraction = engine_memory_fraction(
        engine.name,
        engine.memory_fraction,
        gpu,
        c.tensor_parallel,
        dp_attention=c.expert_parallel,
        speculative=c.speculative is not None,
        stated=c.memory_fraction,
    )
    if engine.batching != "continuous" or (c.memory_fraction is None and engine.name != "sglang"):
        return fraction, ()
    how = "as stated" if c.memory_fraction is not None else "SGLang's own pick for this GPU and layout"
    return fraction, (f"{engine.name} memory setting {fraction:.3g} ({how})",)
