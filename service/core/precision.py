"""Numeric modes: which datasheet peak a precision runs at, which support flag it needs,
how many bytes each role takes, and the calibration family it belongs to.

DESIGN "Benchmark vocabulary": ``fp32`` is strict (no TF32), ``tf32`` uses TF32 tensor cores
for FP32 matmuls, ``amp_*`` keep fp32 parameters under autocast, ``bf16``/``fp16`` are pure
half parameters and optimizer state, ``fp8``/``int8``/``int4`` compute or store in 8/4 bits.
"""

from __future__ import annotations

from dataclasses import dataclass

PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp_fp16", "amp_bf16", "fp16", "bf16", "fp8", "int8", "int4")

PEAK_KEY: dict[str, str] = {
    "fp32": "fp32", "tf32": "tf32", "amp_fp16": "fp16", "fp16": "fp16", "amp_bf16": "bf16",
    "bf16": "bf16", "fp8": "fp8", "int8": "int8", "int4": "int4",
}
"""Precision -> the dense peak it runs at (catalog ``<key>_tflops`` / ``<key>_tops``)."""

SUPPORT_KEY: dict[str, str] = dict(PEAK_KEY)
"""Precision -> the catalog support flag it needs (``supports.<key>``)."""


@dataclass(frozen=True, slots=True)
class Mode:
    """Bytes per element by role in training."""

    param: int  # stored parameters
    grad: int  # gradients
    state: int  # one AdamW/SGD state tensor element
    compute: int  # matmul inputs/outputs (autocast dtype or parameter dtype)
    residual: int  # the residual stream between layers
    autocast: bool


TRAIN_MODES: dict[str, Mode] = {
    "fp32": Mode(4, 4, 4, 4, 4, False),
    "tf32": Mode(4, 4, 4, 4, 4, False),
    "amp_bf16": Mode(4, 4, 4, 2, 4, True),
    "amp_fp16": Mode(4, 4, 4, 2, 4, True),
    "bf16": Mode(2, 2, 2, 2, 2, False),
    "fp16": Mode(2, 2, 2, 2, 2, False),
}
TRAIN_PRECISIONS: tuple[str, ...] = tuple(TRAIN_MODES)


def precision_family(precision: str) -> str:
    """``fp32`` (fp32, tf32), ``16bit`` (amp_*, bf16, fp16) or ``8bit`` (fp8, int8, int4):
    calibrations are fitted and applied within one family (different kernels)."""
    if precision in ("fp32", "tf32"):
        return "fp32"
    if precision in ("fp8", "int8", "int4"):
        return "8bit"
    return "16bit"
