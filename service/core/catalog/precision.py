"""Numeric modes: which datasheet peak a precision runs at, which support flag it needs,
how many bytes each role takes, and the calibration family it belongs to.

DESIGN "Benchmark vocabulary": ``fp32`` is strict (no TF32), ``tf32`` uses TF32 tensor cores
for FP32 matmuls, ``amp_*`` keep fp32 parameters under autocast, ``bf16``/``fp16`` are pure
half parameters and optimizer state, ``fp8``/``int8``/``int4`` compute or store in 8/4 bits.
"""

from __future__ import annotations

from dataclasses import dataclass

PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp_fp16", "amp_bf16", "fp16", "bf16", "fp8", "int8", "int4")

FP16_FOR: dict[str, str] = {"bf16": "fp16", "amp_bf16": "amp_fp16"}
"""The fp16 precision that stands in for each bf16 one on GPUs with FP16 tensor cores but no bf16
(Volta, Turing): the same bytes, loss-scaled when training."""

PEAK_KEY: dict[str, str] = {
    "fp32": "fp32",
    "tf32": "tf32",
    "amp_fp16": "fp16",
    "fp16": "fp16",
    "amp_bf16": "bf16",
    "bf16": "bf16",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "int4",
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

FSDP_POLICY_MODE = Mode(4, 4, 4, 2, 2, False)
"""``amp_*`` under FSDP ``MixedPrecisionPolicy(param_dtype=half, reduce_dtype=fp32)`` without
autocast: fp32 sharded parameters, gradients and optimizer state; the gathered parameters, and
so every activation, in 16 bits (the layer computes as pure bf16 does)."""


def train_mode(precision: str, mixed_precision: str = "autocast") -> Mode:
    """Bytes by role for a training precision; ``mixed_precision='fsdp_policy'`` turns an
    ``amp_*`` precision into :data:`FSDP_POLICY_MODE` (no autocast, 16-bit compute)."""
    if mixed_precision == "fsdp_policy" and precision.startswith("amp_"):
        return FSDP_POLICY_MODE
    return TRAIN_MODES[precision]


def precision_family(precision: str) -> str:
    """``fp32`` (fp32, tf32), ``16bit`` (amp_*, bf16, fp16) or ``8bit`` (fp8, int8, int4):
    calibrations are fitted and applied within one family (different kernels)."""
    if precision in ("fp32", "tf32"):
        return "fp32"
    if precision in ("fp8", "int8", "int4"):
        return "8bit"
    return "16bit"
