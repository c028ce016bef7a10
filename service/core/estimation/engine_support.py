"""What a serving engine can run on a GPU: one rule for the estimate (a 422 naming the field) and
the recommender (an exclusion), so that neither answers for a deployment that cannot start.

* TensorRT-LLM builds CUDA engines: NVIDIA GPUs only (AMD and Intel parts serve with vLLM or
  SGLang).
* Its FP8 (weights or KV cache) needs FP8 tensor cores -- Ada, Hopper, Blackwell; on Ampere and
  older ModelOpt's FP8 checkpoints do not build (vLLM's weight-only FP8 Marlin kernels do run
  there, and the estimator times them as weight-only).
* FP4 formats: :func:`~service.core.estimation.fp4.fp4_refusal`.
"""

from __future__ import annotations

from service.core.catalog.specs import GpuSpec
from service.core.estimation.fp4 import fp4_refusal

__all__ = ["engine_refusal", "format_refusal", "served_format"]


def engine_refusal(engine: str, gpu: GpuSpec) -> str | None:
    """Why ``engine`` cannot run on ``gpu`` at all (None: it can)."""
    if engine == "tensorrt-llm" and gpu.vendor != "nvidia":
        return f"TensorRT-LLM runs on NVIDIA GPUs only; {gpu.slug} is {gpu.vendor} (use vllm or sglang)"
    return None


def format_refusal(weight_format: str, kv_dtype: str, engine: str, gpu: GpuSpec) -> tuple[str, str] | None:
    """``(field, reason)`` when ``engine`` on ``gpu`` cannot serve these weights or this KV cache;
    None when it can."""
    fp8 = [f for f, v in (("quant_method", weight_format), ("kv_cache_dtype", kv_dtype)) if v == "fp8"]
    if engine == "tensorrt-llm" and fp8 and gpu.support_for("fp8") != "yes":
        arch = gpu.architecture or "an unknown architecture"
        return (
            fp8[0],
            f"TensorRT-LLM's FP8 needs FP8 tensor cores (Ada, Hopper, Blackwell); {gpu.slug} is {arch} "
            "(use int8 or awq weights, or vllm's weight-only FP8)",
        )
    return fp4_refusal(weight_format, kv_dtype, engine, gpu)


def served_format(weight_format: str, stated: bool, kv_dtype: str, engine: str, gpu: GpuSpec) -> str:
    """The weights ``engine`` serves on ``gpu``: as asked (``stated``: a format the GPU cannot run
    is refused, not swapped); a checkpoint's own format it cannot run is loaded as 16-bit weights
    (``none``: gpt-oss's MXFP4 experts on a GPU with no MXFP4 kernel)."""
    if stated or weight_format == "none":
        return weight_format
    refused = format_refusal(weight_format, kv_dtype, engine, gpu)
    return "none" if refused is not None and refused[0] == "quant_method" else weight_format
