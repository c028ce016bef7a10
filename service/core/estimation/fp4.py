"""FP4 weights and KV cache (issue 28): the two block-scaled 4-bit formats, their bytes, and
the GPUs whose tensor cores read them.

* **NVFP4** -- E2M1 values with one FP8 (E4M3) scale per 16 elements and one FP32 scale per
  tensor: ``0.5 + 1/16`` bytes per element (NVIDIA, "Introducing NVFP4 for Efficient and
  Accurate Low-Precision Inference", 2025). Read by the 5th-generation tensor cores of
  Blackwell (B200/B300, RTX PRO 6000/RTX 50); no earlier NVIDIA GPU and no AMD GPU has it, so
  NVFP4 weights and the NVFP4 KV cache (TensorRT-LLM, vLLM >= 0.21 ``--kv-cache-dtype nvfp4``,
  SGLang) are refused elsewhere.
* **MXFP4** -- E2M1 values with one E8M0 scale per 32 elements: ``0.5 + 1/32`` bytes
  (OCP Microscaling Formats (MX) Specification v1.0, 2023). Tensor cores on Blackwell and AMD
  CDNA 4 (MI350X/MI355X). Hopper, Ada, Ampere and CDNA 3 run MXFP4 checkpoints weight-only, the
  4-bit weights dequantised in a 16-bit GEMM (how vLLM and transformers serve gpt-oss on H100 and
  A100, and vLLM on the MI300X; TensorRT-LLM's GPT-OSS deployment guide, 2025-2026, lists the H200
  with BF16 activations against MXFP4 MoE weights on its Triton backend); older GPUs are refused.

FP4 GEMMs on FP4 tensor cores run at the catalog's dense FP4 peak (``fp4_tflops``: B200 9,000,
B300 14,000, RTX PRO 6000 2,015, MI355X 10,000, MI350X 9,228 TFLOPS), at the FP8 peak where a
GPU's FP4 peak is not sourced (an answer says so). Decode streams weights, so its time follows the bytes above.
Quantisers leave embeddings, norms and the LM head in 16 bits (as for every format here); the
gpt-oss checkpoints also keep attention in bf16 (+1.4 GB for gpt-oss-120b over this count).
"""

from __future__ import annotations

from service.core.catalog.specs import GpuSpec

__all__ = [
    "FP4_KV_DTYPES",
    "FP4_WEIGHT_FORMATS",
    "MXFP4_BYTES_PER_ELEMENT",
    "NVFP4_BYTES_PER_ELEMENT",
    "fp4_gemm_peak",
    "fp4_refusal",
    "fp4_tensor_cores",
]

NVFP4_BYTES_PER_ELEMENT = 0.5 + 1.0 / 16.0
MXFP4_BYTES_PER_ELEMENT = 0.5 + 1.0 / 32.0
FP4_WEIGHT_FORMATS: tuple[str, ...] = ("nvfp4", "mxfp4")
FP4_KV_DTYPES: tuple[str, ...] = ("nvfp4",)

NVFP4_FAMILIES: tuple[str, ...] = ("blackwell", "blackwellultra")
"""Architectures (normalised, :func:`~service.core.catalog.specs.normalise_architecture`)
whose tensor cores take NVFP4."""
MXFP4_FAMILIES: tuple[str, ...] = (*NVFP4_FAMILIES, "cdna4")
"""... and MXFP4."""
MXFP4_WEIGHT_ONLY_FAMILIES: tuple[str, ...] = ("hopper", "ada", "ampere", "cdna3")
"""Architectures that serve MXFP4 checkpoints weight-only (dequantised into a 16-bit GEMM). CDNA 3
(MI300X, MI325X): vLLM's gpt-oss release ran the MXFP4 MoE weights on the MI300X ("vLLM Now
Supports gpt-oss", vLLM blog, 2025-08-05: Blackwell and Hopper, AMD MI300X and MI355X), with
no FP4 tensor cores on CDNA 3."""


def fp4_tensor_cores(fmt: str, gpu: GpuSpec) -> bool:
    """Whether ``gpu``'s tensor cores read the 4-bit format ``fmt`` directly."""
    families = NVFP4_FAMILIES if fmt == "nvfp4" else MXFP4_FAMILIES if fmt == "mxfp4" else ()
    return gpu.family in families


def fp4_gemm_peak(fmt: str, gpu: GpuSpec) -> str | None:
    """The peak key ``fmt`` GEMMs run at on ``gpu``'s FP4 tensor cores: the dense FP4 peak, the FP8
    peak where the FP4 one is not sourced; None where they run weight-only (dequantised into a
    16-bit GEMM). One rule for the serving estimator and the cross-source transfer."""
    if not fp4_tensor_cores(fmt, gpu):
        return None
    if gpu.peak_for("fp4"):
        return "fp4"
    return "fp8" if gpu.peak_for("fp8") else None


def fp4_refusal(weight_format: str, kv_dtype: str, engine: str, gpu: GpuSpec) -> tuple[str, str] | None:
    """``(field, reason)`` when ``gpu`` cannot serve these FP4 weights or this FP4 KV cache;
    None when it can (or nothing is FP4)."""
    arch = gpu.architecture or "an unknown architecture"
    if weight_format == "nvfp4" and not fp4_tensor_cores("nvfp4", gpu):
        instead = (
            "use mxfp4, which its FP4 tensor cores run natively"
            if fp4_tensor_cores("mxfp4", gpu)
            else "use fp8, awq/gptq, or mxfp4 weight-only where offered"
        )
        return (
            "quant_method",
            f"NVFP4 weights need Blackwell's FP4 tensor cores; {gpu.slug} is {arch} ({instead})",
        )
    if weight_format == "mxfp4" and not (
        fp4_tensor_cores("mxfp4", gpu) or gpu.family in MXFP4_WEIGHT_ONLY_FAMILIES
    ):
        return (
            "quant_method",
            f"MXFP4 weights run on Blackwell or CDNA 4 tensor cores, or weight-only on Hopper, "
            f"Ada, Ampere and CDNA 3; {gpu.slug} is {arch}",
        )
    if kv_dtype in FP4_KV_DTYPES:
        if not fp4_tensor_cores("nvfp4", gpu):
            return (
                "kv_cache_dtype",
                f"an NVFP4 KV cache is read by Blackwell's FP4 tensor cores only; {gpu.slug} is {arch} "
                "(use fp8)",
            )
        if engine == "hf-transformers":
            return ("kv_cache_dtype", "an NVFP4 KV cache needs a serving engine (vllm, tensorrt-llm, sglang)")
    return None
