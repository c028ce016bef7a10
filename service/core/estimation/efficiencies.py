"""The efficiencies the step-time model runs at (fractions of datasheet peaks, fixed costs), the
spec defaults committed before any fitting, the H200 fixture, and the step result type."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from service.core.catalog.precision import PEAK_KEY
from service.core.catalog.specs import GpuSpec, NodeShape
from service.core.estimation.band import Band

# --------------------------------------------------------------------------------------------
# GPU figures the estimator needs
# --------------------------------------------------------------------------------------------


H200_SXM = GpuSpec(
    slug="nvidia-h200-sxm",
    vendor="nvidia",
    name="NVIDIA H200 SXM",
    architecture="Hopper",
    form_factor="sxm",
    compute_capability="9.0",
    memory_bytes=141 * 10**9,
    peaks={"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "int8": 1978.9},
    bandwidth_gb_per_s=4800.0,
    usable_memory_bytes=143_771 * 2**20,
    tdp_w=700.0,
    node=NodeShape(
        nvlink_topology="switched",
        nvlink_domain_size=8,
        nvlink_per_direction_gb_per_s=450.0,
        pcie_gen=5,
        pcie_lanes=16,
    ),
)
"""NVIDIA H200 SXM datasheet (dense): 141 GB HBM3e at 4.8 TB/s, 989.4 TFLOP/s BF16/FP16,
494.7 TF32, 66.9 FP32, 1978.9 FP8; NVLink 4 900 GB/s bidirectional; NVML reports 143,771 MiB.
A fixture for tests and benchmarks; the service reads the catalog."""


# --------------------------------------------------------------------------------------------
# Efficiencies
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Efficiencies:
    """Fractions of datasheet peaks reached, and fixed costs.

    * ``mm``: best-case matmul fraction of the dense peak, per precision key;
    * ``mm_tokens0`` / ``mm_hidden0``: half-efficiency points of the shape factor
      ``T/(T+T0) * h/(h+h0)``;
    * ``attn``: fused attention fraction of the 16-bit peak (FLOPs actually computed);
    * ``bw``: fraction of datasheet bandwidth reached by elementwise kernels;
    * ``elementwise_bwd``: backward/forward ratio of elementwise bytes;
    * ``dispatch_s``: host time to launch one op in eager PyTorch (autograd included);
    * ``step_s``: fixed per-step host cost (optimizer bookkeeping, Python loop);
    * ``comm``: fraction of link bandwidth collectives reach (NCCL bus bandwidth);
    * ``overlap``: fraction of gradient communication hidden behind backward (DDP/FSDP).
    * ``conv``: fraction of the 16-bit peak cuDNN convolutions reach (CNNs).
    """

    mm: Mapping[str, float]
    mm_tokens0: float
    mm_hidden0: float
    attn: float
    bw: float
    elementwise_bwd: float
    dispatch_s: float
    step_s: float
    comm: float
    overlap: float
    conv: float
    source: str = "spec"
    extra: Mapping[str, float] = field(default_factory=dict)

    def mm_for(self, precision: str) -> float:
        key = PEAK_KEY.get(precision, precision)
        return float(self.mm.get(key, self.mm.get("bf16", 0.7)))


SPEC_DEFAULTS = Efficiencies(
    mm={"fp32": 0.85, "tf32": 0.70, "bf16": 0.80, "fp16": 0.80, "fp8": 0.65, "int8": 0.65},
    mm_tokens0=256.0,
    mm_hidden0=512.0,
    attn=0.40,
    bw=0.80,
    elementwise_bwd=2.0,
    dispatch_s=6e-6,
    step_s=1e-3,
    comm=0.80,
    overlap=0.7,
    conv=0.35,
    source="spec",
)
"""Spec-default efficiencies, committed before any fitting (never edited to fit data).

Sources: cuBLAS large-GEMM rates of 75-85 % of the dense tensor-core peak on A100/H100 (an
8192^3 bf16 matmul ran at ~790 of 989 TFLOP/s on the H200 here: 0.80); SGEMM ~85-90 % of the
FP32 peak; TF32 ~70 %; FlashAttention-2 forward/backward at 35-50 % of the 16-bit peak on
Hopper (Dao 2023, and FA3 paper's FA2 baselines); device copies at ~90 % of datasheet
bandwidth (4.3 of 4.8 TB/s here), elementwise eager kernels lower (0.8); PyTorch eager
dispatch of 5-10 us per op with autograd; NCCL bus bandwidth ~80 % of the link rate;
ResNet-50 cuDNN training at roughly a third of the tensor peak once BN/ReLU traffic is
counted separately. Later measured (not used to edit these): torch 2.11's SDPA runs cuDNN's fused
kernels on sm90 by default, 25-53 % of the peak over 1k-16k-token causal rows, and ``attn`` is
read at 2,048 tokens (``step_terms.ATTN_SEQ0``); ``data/probes/h100-attention-kernels-2026-12-06.jsonl``.
"""


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StepEstimate:
    """One optimizer step per GPU. Times in seconds; ``phases`` break the micro-step down."""

    step_time_s: float
    step_time_band: Band
    micro_step_time_s: float
    accumulation_steps: int
    tokens_per_s: float
    samples_per_s: float
    model_flops_per_step: float
    mfu: float
    phases: dict[str, float]
    communication_s: float
    bound: str
    provenance: str = "spec"
    assumptions: tuple[str, ...] = ()
    time_shares: dict[str, float] = field(default_factory=dict)
    """Fractions of the step by term (:data:`TIME_TERMS`, and ``pipeline_bubble``)."""
