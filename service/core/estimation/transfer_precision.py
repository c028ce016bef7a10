"""Which peak a published row's math ran at on each GPU (issue 27): the precision handling per
architecture of the cross-source transfer (:mod:`~.transfer_sources`).

A row's own precision where the source states it (FP32 on Volta/Turing and TF32 on Ampere+ as
the source says). MLPerf Training recipes are not stated: LLM training runs FP8 where the GPU has
an FP8 peak (Ada, Hopper, Blackwell, CDNA 3+) and 16-bit otherwise -- NVFP4 where the
submitter's own configuration files for the system's layout leave no other recipe
(``submitter-nvfp4``). 4-bit weights run on FP4 tensor cores where the part has them, else
weight-only at the 16-bit peak, as the serving estimator times them
(:func:`~.serving_engines.gemm_format`): one rule for a transferred ratio and a served answer.
"""

from __future__ import annotations

from service.core.catalog.specs import GpuSpec
from service.core.estimation.fp4 import fp4_gemm_peak
from service.core.evidence.published import PublishedRow

__all__ = ["baseline_precision", "effective_precision"]


def effective_precision(r: PublishedRow, cls: str, gpu: GpuSpec) -> str:
    """The peak key the row's math ran at on ``gpu`` (this module's docstring)."""
    p = r.precision
    if p == "submitter-nvfp4" and gpu.peak_for("fp4"):  # the submitter's configs leave only NVFP4
        return "fp4"
    if p.startswith("submitter"):  # MLPerf Training: the recipe is the submitter's, not stated
        if cls == "llm-train" and gpu.peak_for("fp8"):
            return "fp8"
        return _sixteen_bit(gpu)
    if p in ("amp_fp16", "fp16"):
        return "fp16"
    if p in ("amp_bf16", "bf16"):
        return _sixteen_bit(gpu)
    if p in ("fp4", "mxfp4"):
        return _four_bit_gemm(gpu)
    if p in ("fp8", "mxfp8"):
        return "fp8" if gpu.peak_for("fp8") else "fp16"
    if p in ("int8", "int4"):
        return p if gpu.peak_for(p) else ("int8" if gpu.peak_for("int8") else "fp16")
    return p  # fp32, tf32 as the source states


def _four_bit_gemm(gpu: GpuSpec) -> str:
    """The peak 4-bit weights' GEMMs run at, as the serving estimator counts them
    (:func:`~.fp4.fp4_gemm_peak`); elsewhere weight-only, dequantised into a 16-bit GEMM
    (:mod:`~.fp4`: TensorRT-LLM's GPT-OSS deployment guide runs the H200 on BF16 activations
    against the MXFP4 MoE weights, its TRITON backend)."""
    return fp4_gemm_peak("mxfp4", gpu) or _sixteen_bit(gpu)


def _sixteen_bit(gpu: GpuSpec) -> str:
    """BF16 where the part has a BF16 peak, else FP16 (Volta, Turing)."""
    return "bf16" if gpu.peak_for("bf16") else "fp16"


def baseline_precision(r: PublishedRow, gpu: GpuSpec) -> str:
    """The datasheet baseline's peak: the precision that ran, 16-bit where it is not stated."""
    if r.precision.startswith("submitter"):
        return _sixteen_bit(gpu)
    return effective_precision(r, "", gpu)
