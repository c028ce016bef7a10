"""Which weight formats a serving search tries on one GPU when quantisation is allowed.

``allow_quantization`` promises FP8, INT8 and 4-bit weights. Each GPU is tried in its own format,
one 8-bit format and the 4-bit formats its tensor cores or kernels run:

* 8-bit: FP8 (W8A8) where the GPU has FP8 tensor cores, else SmoothQuant-style INT8 (W8A8) where
  it has INT8 tensor cores and the engine serves it (not eager transformers), else FP8 weight-only
  where the GPU is not marked without FP8 (the estimator dequantises it into a 16-bit GEMM);
* 4-bit: AWQ (weight-only, every GPU), and the block-scaled FP4 format its tensor cores read
  directly: NVFP4 on Blackwell, MXFP4 on CDNA 4 (:mod:`service.core.estimation.fp4`).

A format the GPU cannot run is never tried, so it cannot surface as a memory or time exclusion.
"""

from __future__ import annotations

from service.core.catalog.specs import GpuSpec
from service.core.estimation.fp4 import fp4_refusal, fp4_tensor_cores

__all__ = ["QUANTISED_FORMATS", "formats_for"]

QUANTISED_FORMATS: tuple[str, ...] = ("fp8", "int8", "awq", "nvfp4", "mxfp4")
"""Every format a search may add to the workload's own (the superset; :func:`formats_for`
picks a GPU's)."""


_BITS: dict[str, int] = {"fp8": 8, "int8": 8, "awq": 4, "gptq": 4, "nvfp4": 4, "mxfp4": 4}
"""Bits per weight of each quantised format (the smaller-than test of :func:`formats_for`)."""


def _eight_bit(gpu: GpuSpec, engine: str) -> str | None:
    if gpu.support_for("fp8") == "yes":
        return "fp8"
    if gpu.support_for("int8") == "yes" and engine != "hf-transformers":
        return "int8"
    return None if gpu.support_for("fp8") == "no" else "fp8"


def _four_bit(gpu: GpuSpec, engine: str, kv_dtype: str) -> list[str]:
    native = [
        f
        for f in ("nvfp4", "mxfp4")
        if fp4_tensor_cores(f, gpu) and fp4_refusal(f, kv_dtype, engine, gpu) is None
    ]
    return ["awq", *native[:1]]  # Blackwell reads both FP4 formats: NVFP4 (finer scales) is tried


def formats_for(
    own: str, allow: bool, engine: str, kv_dtype: str, gpu: GpuSpec, stated: bool = True
) -> tuple[str, ...]:
    """The workload's format ``own``, and where ``allow`` and ``own`` is unquantised
    (``none``), the 8-bit and 4-bit formats ``gpu`` runs (module docstring). A checkpoint's own
    quantised format (not ``stated``) is tried with the smaller formats the GPU runs beside it
    (an FP8 DeepSeek-V3 re-quantised to NVFP4 on Blackwell), never a 16-bit copy of it."""
    if not allow or (own != "none" and stated):
        return (own,)
    eight = _eight_bit(gpu, engine)
    more = (*([eight] if eight else []), *_four_bit(gpu, engine, kv_dtype))
    if own == "none":
        return (own, *more)
    return (own, *(f for f in more if f != own and _BITS[f] < _BITS[own]))
