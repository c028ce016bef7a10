"""Step time, throughput and time to train: a roofline per operation group (serving lives in
:mod:`service.core.estimation.serving`).

Every phase of a step is split into groups of kernels that share a bound:

* **matmuls** (linear layers, LM head): ``FLOPs / (peak x e_mm x shape)`` or, when the
  weights dominate (decode, tiny batches), ``bytes / (bandwidth x e_bw)``; ``shape`` is
  ``T/(T + T0) * h/(h + h0)`` -- GEMMs with few rows (tokens ``T``) or a narrow hidden size
  ``h`` reach less of the peak;
* **attention** (SDPA flash kernels): ``FLOPs / (peak x e_attn)``; eager attention adds the
  ``s^2`` score/softmax tensors as memory traffic;
* **elementwise** (norms, RoPE, casts, residual adds, SiLU, loss, optimizer): bytes moved
  ``/ (bandwidth x e_bw)``;
* **host dispatch**: PyTorch eager launches every op from Python; ``ops x t_dispatch`` is a
  floor under the GPU time (small models are launch-bound).

A step takes ``max(sum of GPU group times, dispatch time) + t_step`` plus the communication
that does not overlap with compute. Communication uses the node shape: NVLink per-direction
bandwidth inside an NVLink domain, otherwise PCIe, and the network between nodes.

FLOP conventions: a matmul of ``M x K`` by ``K x N`` is ``2MKN``; backward of a trainable
linear is twice its forward (input and weight gradients), of a frozen one once (input
gradient only); causal flash attention skips the upper triangle (``2 * 2 * s * d`` per query
token, halved), its backward is 2.5x its forward (it recomputes ``QK^T``); gradient
checkpointing adds one more forward.

The efficiencies live in :class:`Efficiencies`. :data:`SPEC_DEFAULTS` are the figures used
with datasheet peaks alone (provenance ``spec``); they were committed before any fitting and
are never edited to fit data -- calibration (``core/estimation/calibration.py``) produces new
:class:`Efficiencies` instead.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from service.core.catalog.models import CnnSpec, DecoderSpec, EncoderSpec
from service.core.catalog.precision import PEAK_KEY
from service.core.catalog.precision import TRAIN_MODES as _MODES
from service.core.catalog.specs import GpuSpec, NodeShape
from service.core.estimation.band import Band
from service.core.estimation.memory import NETWORK_GBIT_PER_S_PER_GPU, TrainConfig
from service.core.estimation.network import (
    PCIE_ASSUMED_PER_DIRECTION_GB_PER_S,
    Layout,
    collective_s,
    layout_of,
    p2p_s,
)
from service.core.estimation.stacks import STACK_EFFECTS

__all__ = [
    "H200_SXM",
    "SPEC_DEFAULTS",
    "Efficiencies",
    "StepEstimate",
    "StepSummary",
    "estimate_step",
    "step_summary",
    "time_to_train",
]


# --------------------------------------------------------------------------------------------
# GPU figures the estimator needs
# --------------------------------------------------------------------------------------------

__all__ += ["NETWORK_GBIT_PER_S_PER_GPU", "PCIE_ASSUMED_PER_DIRECTION_GB_PER_S", "TIME_TERMS"]

TIME_TERMS: tuple[str, ...] = ("compute", "memory", "communication", "host")
"""What a modelled step time splits into (``StepSummary.time_shares``); ``bound`` names the
largest. A pipeline's idle stages add a fifth share, ``pipeline_bubble``, never a bound."""


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
counted separately.
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


# --------------------------------------------------------------------------------------------
# Training step
# --------------------------------------------------------------------------------------------

# Host cost of eager PyTorch, per kernel launched (issue 11, launch-bound steps). Kernel counts
# of the HF Llama layer under autocast (transformers 5.17, torch 2.11, SDPA), from the torch
# profiler on the H200 (6- and 12-layer models differenced per layer; confirmed at 12 and 24
# layers by the issue-25 probe): forward 49 kernels per layer, backward 94, embeddings + final
# norm + LM head + loss 38 in forward and 31 in backward. Host time per kernel differs by who
# launches it: the backward is issued by autograd's C++ engine (the unit,
# ``Efficiencies.dispatch_s``), the forward from Python module code, and checkpoint recompute
# from Python inside the backward through the non-reentrant checkpoint's saved-tensor hooks; a
# checkpointed layer's forward also pays the wrapper. Ratios re-fitted (issue 25) on the
# probe's 24 realistic small steps (``data/probes/h200-physics-2026-12-04.jsonl``: gt-llama-110m
# / 350m shapes, b4/b8 x s512-2048, +/- checkpointing; medians of per-kernel host time): backward
# 29 us per kernel on that host, forward x1.13, recompute x1.86, wrapper 22 units per layer. The
# issue-11 probe (b1 x s32, where nothing but the host runs) had given 1.65, 4.4 and 37: at real
# shapes the recompute is far cheaper, which is why checkpointed small steps were over-charged.
# The host is noisy (+/-30 % between repeats of the same kernel count), so host-bound answers
# carry a wider band (:data:`HOST_BAND`).
OPS_PER_LAYER_FWD = 49
OPS_PER_LAYER_BWD = 94
OPS_HEAD = 38
OPS_HEAD_BWD = 31
HOST_COST_FORWARD = 1.13
HOST_COST_RECOMPUTE = 1.86
HOST_CHECKPOINT_WRAPPER = 22.0
HOST_DISPATCH_MEASURED_S = 29e-6
"""Host time per backward kernel measured on the H200 host (issue-25 probe, torch 2.11): the
centre of the prior a fit of ``llm-train`` points puts on ``dispatch_s`` (the spec default, 6 us,
is kept for answers without a fit)."""
OPS_PER_FSDP_UNIT = 40
"""FSDP2 kernels per wrapped unit and micro-batch: copy-in, all-gather and copy-out in forward
and again in backward, reduce-scatter with its copies, reshards."""
OPT_KERNELS_PER_TENSOR_FORLOOP = 9
"""``_single_tensor_adam``: mul_, lerp_, mul_, addcmul_, sqrt, div, add_, addcdiv_ (+ step)."""
OPT_ACCESSES = {"fused": 7.0, "foreach": 21.0, "forloop": 21.0}
"""AdamW element accesses per parameter (reads + writes of parameter, gradient, two states and
temporaries). Fused: one pass (p r/w, g r, m r/w, v r/w). foreach/for-loop: one pass per op --
weight decay (2), lerp (3), v*beta2 (2), addcmul (4), sqrt (2), / bias correction (2), + eps
(2), addcdiv (4). 7B amp_bf16 on the H200 measured +91 ms (foreach) and +78 ms (for-loop) over
fused, against +85 ms from these counts at 4.3 TB/s."""
OPS_ENCODER_LAYER_FWD = 30
OPS_ENCODER_LAYER_BWD = 50


def _shape(e: Efficiencies, tokens: float, hidden: float) -> float:
    return tokens / (tokens + e.mm_tokens0) * hidden / (hidden + e.mm_hidden0)


class _StepShape(NamedTuple):
    """What the step model reads of a decoder or encoder, per tensor-parallel shard and numeric
    mode: functions of (model, tp, autocast, compute bytes) alone, so computed once for each by
    :func:`_step_shape` instead of on every estimate. Each field is the exact expression the step
    model used inline (sums kept as written), so the figures are bit-for-bit the same."""

    decoder: bool
    L: int
    h: float
    q: float  # q_dim / tp (the encoder: hidden)
    kv: float
    f: float
    V: float
    layer_mm: float  # one layer's matmul weights a token passes through (active experts)
    layer_w_all: float  # one layer's matmul weights (every expert)
    mm_weights: float  # L * layer_mm + h * V
    w_weights: float  # L * layer_w_all + h * V
    causal: float
    ops_f: int
    ops_b: int
    ew: float  # elementwise bytes per token per layer (forward), by precision
    gqa: bool  # a decoder whose queries share KV heads (fp32 SDPA runs the math kernel)
    a_heads: float  # num_heads / tp
    hd: float  # head_dim
    P: float  # total parameters / tp
    matmul_per_token: float
    heads_x_dim: float  # num_heads * head_dim (model FLOPs)
    forloop_tensors: float  # parameter tensors a for-loop optimizer visits
    dequant_bytes: float  # one NF4 dequantisation pass over the decoder linears, bytes (size-weighted)
    moe_experts: int  # experts per MoE layer (0: dense)
    linears: int  # decoder linear matrices (experts each), all layers


_SHAPE_CACHE: dict[tuple[int, int, bool, int], tuple[DecoderSpec | EncoderSpec, _StepShape]] = {}


def _step_shape(m: DecoderSpec | EncoderSpec, tp: int, autocast: bool, compute: int) -> _StepShape:
    """:class:`_StepShape` of ``m``, memoised per (model, tp, mode) like the parameter counts
    (keyed by identity with the spec kept beside its entry; bounded)."""
    key = (id(m), tp, autocast, compute)
    hit = _SHAPE_CACHE.get(key)
    if hit is not None and hit[0] is m:
        return hit[1]
    cb = float(compute)
    if isinstance(m, DecoderSpec):
        L = m.num_layers
        h = float(m.hidden_size)
        q, kv = float(m.q_dim) / tp, float(m.kv_dim) / tp
        f = float(m.intermediate_size) / tp
        V = float(m.vocab_size) / tp
        cnt = m._c()
        layer_mm = float(cnt.active_per_layer - cnt.norms) / tp
        layer_w_all = float(cnt.per_layer - cnt.norms) / tp
        causal = 0.5
        ops_f, ops_b = OPS_PER_LAYER_FWD, OPS_PER_LAYER_BWD
        # elementwise bytes per token per layer (forward), by precision (module docstring)
        if autocast:
            ew = 106.0 * h + 36.0 * (q + kv) + 10.0 * f
        elif cb == 4:
            ew = 76.0 * h + 40.0 * (q + kv) + 20.0 * f
        else:
            ew = 76.0 * h + 20.0 * (q + kv) + 10.0 * f
        if m.is_moe:
            ew += 10.0 * f * (m.experts_per_token - 1) + 8.0 * m.num_experts
            # transformers' eager expert loop: per expert, routing masks, index gathers, three
            # GEMMs, the weighted index_add and their autograd kernels
            # (host units: a loop kernel costs more host time than a layer's, MOE_EAGER_HOST_UNITS)
            ops_f += round(m.num_experts * MOE_EAGER_KERNELS_FWD * MOE_EAGER_HOST_UNITS[0])
            ops_b += round(m.num_experts * MOE_EAGER_KERNELS_BWD * MOE_EAGER_HOST_UNITS[1])
        forloop = float(L * (len(m.linear_shapes()) + 2) + 3)
    else:  # EncoderSpec
        L = m.num_layers
        h = float(m.hidden_size)
        q = kv = h
        f = float(m.intermediate_size)
        V = float(m.vocab_size)
        layer_mm = layer_w_all = float(4 * m.hidden_size**2 + 2 * m.hidden_size * m.intermediate_size)
        causal = 1.0
        ops_f, ops_b = OPS_ENCODER_LAYER_FWD, OPS_ENCODER_LAYER_BWD
        ew = (110.0 * h + 12.0 * f) if autocast else (90.0 * h + 16.0 * f)
        forloop = 16.0 * L
    decoder = isinstance(m, DecoderSpec)
    gqa = isinstance(m, DecoderSpec) and m.num_heads > m.num_kv_heads
    hd = float(getattr(m, "head_dim", 64))
    shape = _StepShape(
        decoder=decoder,
        L=L,
        h=h,
        q=q,
        kv=kv,
        f=f,
        V=V,
        layer_mm=layer_mm,
        layer_w_all=layer_w_all,
        mm_weights=L * layer_mm + h * V,
        w_weights=L * layer_w_all + h * V,
        causal=causal,
        ops_f=ops_f,
        ops_b=ops_b,
        ew=ew,
        gqa=gqa,
        a_heads=float(m.num_heads) / tp,
        hd=hd,
        P=float(m.total_params) / tp,
        matmul_per_token=float(m.matmul_params_per_token),
        heads_x_dim=float(m.num_heads * getattr(m, "head_dim", 64)),
        forloop_tensors=forloop,
        dequant_bytes=_dequant_bytes(m, tp) if isinstance(m, DecoderSpec) else 0.0,
        moe_experts=m.num_experts if isinstance(m, DecoderSpec) and m.is_moe else 0,
        linears=sum(k for _, _, k in m.linear_shapes().values()) * L if isinstance(m, DecoderSpec) else 0,
    )
    if len(_SHAPE_CACHE) > 4096:
        _SHAPE_CACHE.clear()
    _SHAPE_CACHE[key] = (m, shape)
    return shape


MOE_EAGER_KERNELS_FWD = 24
MOE_EAGER_KERNELS_BWD = 42
"""Kernels per expert and MoE layer that transformers' eager expert loop launches beyond a dense
MLP, in forward and in backward (H200 probe, issue 25: a Mixtral-layout model, 8 experts top-2,
against its dense twin of the same FLOPs per token: +194 forward and +334 backward kernels per
layer, at 4k and 8k tokens alike)."""

MOE_EAGER_HOST_UNITS = (1.5, 1.8)
"""Host time of one expert-loop kernel in units of a dense layer's kernel of the same phase: the
loop's Python per expert (indexing, ``where``, slicing) issues its kernels slower (the probe:
+63.3 ms over 1,552 forward and +103 ms over 2,669 backward loop kernels, against 27 us and
21.6 us per kernel of the dense twin in the same run: 1.5x and 1.8x; fitted on that probe)."""

MOE_EAGER_GPU_S_PER_KERNEL = (3.7e-6, 11.2e-6)
"""GPU time each of those kernels adds in forward and in backward on the H200 (the same probe:
+5.8 ms over 1,552 forward and +29.7 ms over 2,669 backward kernels at 4k tokens; small grids,
and index_add's atomics in backward). Scaled to other GPUs by memory bandwidth (an assumption:
the cross-GPU issue owns the scaling); never larger on a GPU with more bandwidth."""

MOE_EAGER_INFER_KERNELS = 14
"""Kernels per expert an eager ``generate``/forward launches per MoE layer without autograd or
autocast (the probe's batch-1 prefill of the same model: +29.5 ms over its dense twin at 1k
tokens, host-bound, at ~33 us per launch: ~112 per layer, 14 per expert)."""

H200_BANDWIDTH_GB_PER_S = 4800.0

DEQUANT_BYTES_PER_PARAM = 0.5 + 1.0 / 64.0 + 2.0
"""One NF4 dequantisation of a weight (QLoRA, bitsandbytes ``dequantize_4bit``): read the packed
4-bit value and its block's absmax, write the 16-bit weight the GEMM then reads."""

DEQUANT_RATE = 0.59
"""Asymptotic rate of an NF4 dequantisation kernel relative to the bandwidth elementwise kernels
reach: measured on the H200 (issue-25 probe, a Triton kernel of bitsandbytes' format, since
bitsandbytes is not installed there): 1.65 TB/s on 58.7M-parameter matrices against a 4.21 TB/s
copy; smaller matrices reach less (0.89 TB/s at 16.8M), modelled as a size ``n0`` of
:data:`DEQUANT_HALF_PARAMS` added to each matrix (a fixed cost per kernel)."""

DEQUANT_HALF_PARAMS = 30.3e6
"""Matrix size (parameters) at which the dequantisation kernel runs at half its asymptotic rate
(fitted on the two measured sizes: 0.89 TB/s at 16.8M, 1.65 TB/s at 58.7M)."""


def _dequant_bytes(m: DecoderSpec, tp: int) -> float:
    """Bytes one dequantisation pass over every decoder linear moves, each matrix counted with
    the fixed cost of its kernel (:data:`DEQUANT_HALF_PARAMS`); per tensor-parallel shard."""
    total = 0.0
    for i, o, k in m.linear_shapes().values():
        n = float(i * o) / tp
        total += k * (n + DEQUANT_HALF_PARAMS) * DEQUANT_BYTES_PER_PARAM
    return total * m.num_layers


class _Adapters(NamedTuple):
    """The LoRA adapters as the step model reads them (per shard): per target, ``in + out`` of
    the adapted linear (for the adapter FLOPs, which scale with tokens); the adapter parameters
    and elementwise bytes per token, summed over the targets in the order given."""

    widths: tuple[int, ...]
    params: float
    ew: float


_ADAPTER_CACHE: dict[tuple[int, int, tuple[str, ...], int, bool, int], tuple[DecoderSpec, _Adapters]] = {}


def _adapters(
    m: DecoderSpec, tp: int, targets: tuple[str, ...], rank: int, autocast: bool, compute: int
) -> _Adapters:
    """:class:`_Adapters` for LoRA ``targets`` of rank ``rank``, memoised per model (bounded)."""
    key = (id(m), tp, targets, rank, autocast, compute)
    hit = _ADAPTER_CACHE.get(key)
    if hit is not None and hit[0] is m:
        return hit[1]
    cb = float(compute)
    shapes = m.linear_shapes()
    L = m.num_layers
    params = ew = 0.0
    for t in targets:
        i0, o0, copies = shapes[t]
        params += float(rank * (i0 + o0) * copies * L) / tp
        i = float(i0) / (tp if t in ("o_proj", "down_proj") else 1)
        o = float(o0) / (1 if t in ("o_proj", "down_proj") else tp)
        ew += (6.0 * i + 6.0 * o) if autocast else ((6.0 * i + 14.0 * o) if cb == 2 else 12.0 * o)
    out = _Adapters(tuple(shapes[t][0] + shapes[t][1] for t in targets), params, ew)
    if len(_ADAPTER_CACHE) > 4096:
        _ADAPTER_CACHE.clear()
    _ADAPTER_CACHE[key] = (m, out)
    return out


_OPT_BYTES_PER_PARAM = {"sgd": 4.0, "adafactor": 4.0, "adamw_8bit": 4.5}
"""Element accesses per parameter of the optimizers other than AdamW (:data:`OPT_ACCESSES`)."""


class StepSummary(NamedTuple):
    """What an answer reads of a step (:func:`step_summary`): the :class:`StepEstimate` fields of
    the same names, without the phase breakdown, model FLOPs and assumptions."""

    step_time_s: float
    step_time_band: Band
    accumulation_steps: int
    tokens_per_s: float
    samples_per_s: float
    mfu: float
    bound: str
    shares: tuple[float, float, float, float, float]
    """Fractions of the step: :data:`TIME_TERMS`, then the pipeline bubble."""
    layout: Layout | None


class _Step(NamedTuple):
    """Every figure of a decoder/encoder step (:func:`_step`), before it is dressed as a
    :class:`StepEstimate` or a :class:`StepSummary`."""

    step: float
    micro: float
    accum: int
    tokens: float
    samples: float
    model_flops: float
    mfu: float
    bound: str
    gpu_fwd: float
    gpu_bwd: float
    casts: float
    optimizer: float
    host: float
    communication: float
    notes: list[str]
    shares: tuple[float, float, float, float, float]  # TIME_TERMS, then the pipeline bubble
    layout: Layout | None  # the node layout and network (None on one GPU)


HOST_BAND = (0.25, 0.30)
"""Relative band of the host's share of a step: the host time per kernel varied by about
+/-30 % between repeats of the same kernel count on the H200 host (issue-25 probe), and hosts
differ more than that; a launch-bound answer's band is at least this times its host share."""


def _band(
    step: float,
    e: Efficiencies,
    band: tuple[float, float] | None,
    provenance: str | None,
    host_share: float = 0.0,
) -> tuple[Band, str]:
    prov = provenance or e.source
    lo, hi = band if band is not None else (SPEC_BAND if prov == "spec" else CALIBRATED_BAND)
    if host_share > 0.0:
        lo = max(lo, HOST_BAND[0] * host_share)
        hi = max(hi, HOST_BAND[1] * host_share)
    return Band(step * (1 - lo), step, step * (1 + hi)), prov


def estimate_step(
    c: TrainConfig,
    gpu: GpuSpec,
    e: Efficiencies = SPEC_DEFAULTS,
    band: tuple[float, float] | None = None,
    provenance: str | None = None,
) -> StepEstimate:
    """Time of one optimizer step (``accumulation_steps`` micro-steps + optimizer + the
    communication left exposed) per GPU, with the model FLOPs and MFU.

    ``band`` is the relative (low, high) 80 % band; by default the spec band
    (:data:`SPEC_BAND`) or, for fitted efficiencies, :data:`CALIBRATED_BAND`.
    """
    m = c.model
    if isinstance(m, CnnSpec):
        return _cnn_step(c, m, gpu, e, band, provenance)
    r = _step(c, gpu, e)
    step_band, prov = _band(r.step, e, band, provenance, r.shares[3])
    return StepEstimate(
        step_time_s=r.step,
        step_time_band=step_band,
        micro_step_time_s=r.micro,
        accumulation_steps=r.accum,
        tokens_per_s=r.tokens / r.step,
        samples_per_s=r.samples / r.step,
        model_flops_per_step=r.model_flops,
        mfu=r.mfu,
        phases={
            "forward": r.gpu_fwd,
            "backward": r.gpu_bwd,
            "weight_casts": r.casts,
            "optimizer": r.optimizer,
            "host_dispatch": r.host,
            "communication": r.communication,
        },
        communication_s=r.communication,
        bound=r.bound,
        provenance=prov,
        assumptions=tuple(r.notes),
        time_shares=time_shares(r.shares),
    )


def step_summary(
    c: TrainConfig,
    gpu: GpuSpec,
    e: Efficiencies = SPEC_DEFAULTS,
    band: tuple[float, float] | None = None,
    provenance: str | None = None,
) -> StepSummary:
    """:func:`estimate_step`'s step time, band, throughput, MFU and bound alone (the same
    figures): what an estimate answers, without building the phase breakdown it does not show."""
    m = c.model
    if isinstance(m, CnnSpec):
        st = _cnn_step(c, m, gpu, e, band, provenance)
        return StepSummary(
            step_time_s=st.step_time_s,
            step_time_band=st.step_time_band,
            accumulation_steps=st.accumulation_steps,
            tokens_per_s=st.tokens_per_s,
            samples_per_s=st.samples_per_s,
            mfu=st.mfu,
            bound=st.bound,
            shares=_cnn_shares(st),
            layout=None,
        )
    r = _step(c, gpu, e)
    step_band, _ = _band(r.step, e, band, provenance, r.shares[3])
    return StepSummary(
        step_time_s=r.step,
        step_time_band=step_band,
        accumulation_steps=r.accum,
        tokens_per_s=r.tokens / r.step,
        samples_per_s=r.samples / r.step,
        mfu=r.mfu,
        bound=r.bound,
        shares=r.shares,
        layout=r.layout,
    )


def _cnn_shares(st: StepEstimate) -> tuple[float, float, float, float, float]:
    """The CNN step's shares from its phases (compute, memory; host dispatch and the fixed costs)."""
    step = st.step_time_s
    c, m = st.phases.get("compute", 0.0), st.phases.get("memory", 0.0)
    return (c / step, m / step, 0.0, max(0.0, 1.0 - (c + m) / step), 0.0)


def _step(c: TrainConfig, gpu: GpuSpec, e: Efficiencies) -> _Step:
    """The step model for decoders and encoders (module docstring)."""
    m = c.model
    assert not isinstance(m, CnnSpec)
    mode = c.mode
    autocast = mode.autocast
    peak_t = gpu.require_peak(c.precision)
    peak = peak_t * 1e12
    p16 = gpu.peak_for("bf16")
    peak16 = p16 * 1e12 if p16 else peak
    bw = gpu.require_bandwidth() * 1e9 * e.bw
    tp = c.tensor_parallel
    b, s = c.batch_size, c.seq_len
    T = float(b * s)
    cb = float(mode.compute)
    full = c.finetune == "full"
    notes: list[str] = []
    sh = _step_shape(m, tp, autocast, mode.compute)  # the model's shapes, once per (model, tp, mode)
    L, h, V, layer_mm, causal = sh.L, sh.h, sh.V, sh.layer_mm, sh.causal
    ops_f, ops_b = sh.ops_f, sh.ops_b

    fx = STACK_EFFECTS[c.stack]  # the training stack's factors on the eager terms (stacks.py)
    mm_eff = e.mm_for(c.precision) * _shape(e, T, h)
    if fx.mm != 1.0:
        mm_eff = min(0.98, mm_eff * fx.mm)
    # ---- matmuls
    fwd_mm_flops = 2.0 * T * sh.mm_weights
    w_bytes_fwd = cb * sh.w_weights
    mm_compute = fwd_mm_flops / (peak * mm_eff) >= w_bytes_fwd / bw
    t_mm_fwd = max(fwd_mm_flops / (peak * mm_eff), w_bytes_fwd / bw)
    bwd_mult = 2.0 if full else 1.0
    t_mm_bwd = t_mm_fwd * bwd_mult
    lora_ew = 0.0
    lora_params = 0.0
    if not full and sh.decoder:
        # PEFT adapters: two thin matmuls per target (rank r) at low efficiency, plus the
        # elementwise traffic of the adapter path -- input cast to the fp32 adapter dtype
        # (pure 16-bit) or autocast copy (amp), the scaled add into the base output and the
        # cast back: per token ~(6*in + 6*out) bytes under autocast, (6*in + 14*out) in pure
        # 16-bit, 12*out in fp32 -- and ~8 extra ops per target (:func:`_adapters`).
        assert isinstance(m, DecoderSpec)
        ad = _adapters(m, tp, c.lora_targets, c.lora_rank, autocast, mode.compute)
        adapter_peak = peak if autocast else gpu.require_peak("fp32") * 1e12
        lora_flops = 0.0
        rank = c.lora_rank
        for width in ad.widths:
            lora_flops += 2.0 * T * rank * width * L
        lora_params, lora_ew = ad.params, ad.ew
        t_mm_fwd += lora_flops / (adapter_peak * mm_eff * 0.5)
        t_mm_bwd += 2 * lora_flops / (adapter_peak * mm_eff * 0.5)
        ops_f += 8 * len(c.lora_targets)
        ops_b += 10 * len(c.lora_targets)
    # ---- attention
    heads_dim = sh.q  # q_dim per shard
    eager_like = (c.attention == "eager" or (cb == 4 and sh.gqa)) and c.stack != "megatron"
    attn_flops_fwd = 4.0 * T * s * heads_dim * L * (1.0 if eager_like else causal)
    if eager_like:
        a_heads = sh.a_heads
        s2 = float(b) * a_heads * float(s) * float(s)
        attn_bytes_fwd = 30.0 * s2 * L
        attn_mm_eff = mm_eff
        t_attn_fwd = attn_flops_fwd / (peak * attn_mm_eff) + attn_bytes_fwd / bw
        t_attn_bwd = 2.0 * attn_flops_fwd / (peak * attn_mm_eff) + 2.0 * attn_bytes_fwd / bw
        notes.append("math attention kernel (s^2 scores in memory)")
    else:
        hd = sh.hd
        attn_eff = e.attn * hd / (hd + 32.0) * 1.5 * _shape(e, T, 1e9)
        t_attn_fwd = attn_flops_fwd / (peak16 * attn_eff)
        t_attn_bwd = 2.5 * t_attn_fwd
    # ---- elementwise (layers + loss)
    ew_fwd = (sh.ew + lora_ew) * T * L * fx.ew_traffic
    loss_bytes = (40.0 if cb != 4 else 32.0) * T * V * fx.loss_traffic
    t_ew_fwd = ew_fwd / bw
    t_ew_bwd = e.elementwise_bwd * ew_fwd / bw
    t_loss = loss_bytes / bw
    # ---- per-step weight traffic: autocast casts, gradient casts, optimizer
    P = sh.P
    trainable = P if full else lora_params
    cast_bytes = 6.0 * sh.w_weights * fx.cast_traffic if autocast else 0.0
    grad_cast_bytes = 6.0 * trainable if autocast and full else 0.0
    sharding = c.sharding
    zero = sharding in ("zero1", "zero2", "zero3")
    adamw = c.optimizer == "adamw"
    impl = c.optimizer_impl if adamw and not zero else "fused"
    opt_bpp = OPT_ACCESSES[impl] if adamw else _OPT_BYTES_PER_PARAM[c.optimizer]
    dp = c.data_parallel
    shard = float(dp if sharding in ("fsdp", "zero3") else 1)
    opt_bytes = opt_bpp * float(mode.state if full else 4) * trainable / shard
    t_opt = opt_bytes / bw + e.step_s
    if impl == "forloop":
        t_opt += sh.forloop_tensors * OPT_KERNELS_PER_TENSOR_FORLOOP * e.dispatch_s
    t_casts = (cast_bytes + grad_cast_bytes) / bw
    # FSDP2 (any world size, also one rank): per micro-batch each unit is gathered in forward and
    # backward (copy-in and copy-out, read + write each: 4 bytes moved per gathered byte) and its
    # gradients reduce-scattered (the fp32 reduce input written and read, the shard accumulated)
    fsdp_units = 0
    if sharding == "fsdp" and sh.decoder:
        fsdp_units = L + 1
        policy = c.mixed_precision == "fsdp_policy"
        gathered = 2.0 if policy else float(mode.param)
        fsdp_bytes = (
            2.0 * 4.0 * gathered * P + (2.0 * gathered + 4.0 * 4.0 if policy else 4.0 * 4.0) * trainable
        )
        if policy:  # the gather casts fp32 shards (read 4) into bf16 (write 2) instead of copying
            fsdp_bytes += 2.0 * 2.0 * P
        t_casts += fsdp_bytes / bw

    # ---- checkpointing: one more forward of the layers
    t_recompute = 0.0
    host_fwd = (L * ops_f + OPS_HEAD) * HOST_COST_FORWARD
    host_bwd = float(L * ops_b + OPS_HEAD_BWD)
    if c.gradient_checkpointing:
        t_recompute = (t_mm_fwd * L * layer_mm / sh.mm_weights) + t_attn_fwd + t_ew_fwd
        host_fwd += L * HOST_CHECKPOINT_WRAPPER
        host_bwd += L * ops_f * HOST_COST_RECOMPUTE
    host_fwd += fsdp_units * OPS_PER_FSDP_UNIT / 2
    host_bwd += fsdp_units * OPS_PER_FSDP_UNIT / 2
    host_fwd *= e.dispatch_s * fx.launches
    host_bwd *= e.dispatch_s * fx.launches

    # ---- QLoRA: every frozen NF4 linear is dequantised to 16-bit before each of its GEMMs:
    # forward, backward (input gradient) and, checkpointed, the recompute
    t_dq = 0.0
    if c.finetune == "qlora" and sh.decoder:
        t_dq = sh.dequant_bytes / (bw * DEQUANT_RATE)
        host_fwd += sh.linears * HOST_COST_FORWARD * e.dispatch_s * fx.launches
        host_bwd += (
            sh.linears
            * (1.0 + (HOST_COST_RECOMPUTE if c.gradient_checkpointing else 0.0))
            * e.dispatch_s
            * fx.launches
        )
    t_ew_fwd += t_dq
    t_ew_bwd += t_dq * (2.0 if c.gradient_checkpointing else 1.0)
    if sh.moe_experts:  # the eager expert loop's small kernels (MOE_EAGER_GPU_S_PER_KERNEL)
        scale = H200_BANDWIDTH_GB_PER_S / gpu.require_bandwidth()
        t_moe_f = L * sh.moe_experts * MOE_EAGER_KERNELS_FWD * MOE_EAGER_GPU_S_PER_KERNEL[0] * scale
        t_ew_fwd += t_moe_f
        t_ew_bwd += L * sh.moe_experts * MOE_EAGER_KERNELS_BWD * MOE_EAGER_GPU_S_PER_KERNEL[1] * scale
        if c.gradient_checkpointing:
            t_ew_bwd += t_moe_f
    gpu_fwd = t_mm_fwd + t_attn_fwd + t_ew_fwd + t_loss * 0.4
    gpu_bwd = t_mm_bwd + t_attn_bwd + t_ew_bwd + t_loss * 0.6 + t_recompute
    gpu_micro = gpu_fwd + gpu_bwd + t_casts
    host_micro = host_fwd + host_bwd
    # The host issues the forward, then the backward: the GPU idles in a phase whose kernels are
    # issued slower than they run, so each phase takes the longer of the two (a step is not
    # max(total GPU, total host): a launch-bound backward cannot borrow a GPU-bound forward's slack).
    share = (gpu_fwd + 0.5 * t_casts) / gpu_micro if gpu_micro > 0 else 0.5
    micro = max(gpu_micro * share, host_fwd) + max(gpu_micro * (1 - share), host_bwd)
    if sh.moe_experts:
        # the eager expert loop asks which experts were hit (``nonzero``): one host-device sync
        # per MoE layer, so forward host and GPU time add instead of overlapping (H200 probe:
        # forward 75 ms host + 13 ms GPU for an 88 ms forward)
        micro += min(gpu_micro * share, host_fwd)
    # the micro-step's critical path by term: a phase issued slower than it runs is host time;
    # otherwise its tensor-core work (GEMMs that are not weight-streaming, attention, their
    # recompute) is compute and the rest memory traffic
    c_fwd = t_attn_fwd + (t_mm_fwd if mm_compute else 0.0)
    c_bwd = t_attn_bwd + (t_mm_bwd if mm_compute else 0.0)
    if c.gradient_checkpointing:
        c_bwd += t_attn_fwd + (t_mm_fwd * L * layer_mm / sh.mm_weights if mm_compute else 0.0)
    g_fwd, g_bwd = gpu_micro * share, gpu_micro * (1 - share)
    host_part = compute_micro = memory_micro = 0.0
    for host_t, gpu_t, comp_t, synced in (
        (host_fwd, g_fwd, c_fwd, bool(sh.moe_experts)),
        (host_bwd, g_bwd, c_bwd, False),
    ):
        if synced or host_t <= gpu_t:
            compute_micro += comp_t
            memory_micro += gpu_t - comp_t
        if synced or host_t > gpu_t:
            host_part += host_t

    accum = c.accumulation_steps
    lay = layout_of(c, gpu) if c.gpu_count > 1 else None
    pp = c.pipeline_parallel
    stage = 1.0  # fraction of the model's per-micro-step work on the slowest pipeline stage
    p2p = 0.0
    if pp > 1:
        assert lay is not None
        layers = -(-L // pp)
        stage = (layers * layer_mm + h * V) / sh.mm_weights  # the last stage: its layers + LM head
        crosses = tp * dp >= lay.gpus_per_node
        # activations forward and their gradients backward, per micro-batch and stage boundary
        p2p = 2.0 * p2p_s(T * h * cb / tp, crosses, gpu, lay, e.comm)
    # ---- communication (none on one GPU), for this rank's share of the parameters
    comm = _communication(c, gpu, e, P * stage, T, h, L, cb, gpu_bwd * stage, lay, fx.overlap) if lay else 0.0
    t_opt_mem = opt_bytes / bw * stage
    t_opt_host = t_opt - opt_bytes / bw
    slots = accum + pp - 1  # 1F1B: m micro-batches + (pp - 1) fill and drain slots
    if pp == 1:
        step = accum * micro + t_opt + comm
    else:
        step = slots * (micro * stage + p2p) + t_opt_mem + t_opt_host + comm
    # ---- the shares of the modelled time (they sum to 1)
    bubble = (pp - 1) * (micro * stage + p2p)
    busy = accum * stage
    shares = (
        busy * compute_micro / step,
        (busy * memory_micro + t_opt_mem) / step,
        (comm + accum * p2p) / step,
        (busy * host_part + t_opt_host) / step,
        bubble / step,
    )
    tokens = float(accum * b * s)
    model_flops = 2.0 * T * sh.matmul_per_token * (3.0 if full else 2.0) * accum
    model_flops += 4.0 * T * s * sh.heads_x_dim * L * causal * 3 * accum
    mfu = model_flops / (step * peak * tp * pp)
    return _Step(
        step,
        micro,
        accum,
        tokens,
        accum * b,
        model_flops,
        mfu,
        _bound(shares),
        gpu_fwd,
        gpu_bwd,
        t_casts,
        t_opt,
        host_micro,
        comm,
        notes,
        shares,
        lay,
    )


def _bound(shares: tuple[float, float, float, float, float]) -> str:
    """The term that dominates the modelled time (:data:`TIME_TERMS`; the bubble is never one)."""
    best = 0
    for i in (1, 2, 3):
        if shares[i] > shares[best]:
            best = i
    return TIME_TERMS[best]


def time_shares(shares: tuple[float, ...]) -> dict[str, float]:
    """The shares as an answer shows them: each term's fraction of the step, rounded to 0.1 %."""
    out = {name: round(v, 3) for name, v in zip(TIME_TERMS, shares, strict=False)}
    if len(shares) > 4 and shares[4] > 0:
        out["pipeline_bubble"] = round(shares[4], 3)
    return out


SPEC_BAND = (0.30, 0.45)
"""80 % band of a spec-default estimate, relative (low, high): datasheet peaks with default
efficiencies are usually optimistic, so the band leans high."""

CALIBRATED_BAND = (0.12, 0.12)
"""80 % band of an estimate from efficiencies fitted on the same GPU (``interpolated``)."""


def _communication(
    c: TrainConfig,
    gpu: GpuSpec,
    e: Efficiencies,
    P: float,
    T: float,
    h: float,
    L: int,
    cb: float,
    t_bwd: float,
    lay: Layout,
    stack_overlap: float = 0.0,
) -> float:
    """Exposed communication per optimizer step (s), over the node layout (:mod:`.network`).

    DDP: all-reduce of the gradients, overlapped with backward by ``overlap``. ZeRO-1/2:
    reduce-scatter of gradients + all-gather of parameters. FSDP/ZeRO-3: parameters all-gathered
    in forward and backward plus the gradient reduce-scatter, overlapped likewise. Tensor
    parallelism: two all-reduces of the ``T x h`` activations per layer in forward and two in
    backward, not overlapped. ``P`` is this rank's share of the parameters (one pipeline stage).
    """
    dp, tp, pp = c.data_parallel, c.tensor_parallel, c.pipeline_parallel
    total = 0.0
    overlap = max(e.overlap, stack_overlap)
    busy = min(c.gpu_count, lay.gpus_per_node)
    if dp > 1:
        trainable = P if c.finetune == "full" else P * 0.01
        grad_bytes = trainable * (
            4.0 if _MODES[c.precision].grad == 4 and c.sharding in ("none", "ddp") else 2.0
        )
        if c.sharding in ("none", "ddp"):
            t = collective_s(grad_bytes, dp, tp, True, gpu, lay, e.comm, busy)
        elif c.sharding in ("zero1", "zero2"):
            t = collective_s(grad_bytes + 2.0 * P, dp, tp, False, gpu, lay, e.comm, busy)
        elif c.sharding == "fsdp":  # gathers in forward and backward, gradients reduce-scattered
            gathered = 2.0 if c.mixed_precision == "fsdp_policy" else float(c.mode.param)
            nbytes = 2.0 * gathered * P + float(c.mode.grad) * trainable
            t = collective_s(nbytes, dp, tp, False, gpu, lay, e.comm, busy)
        else:
            t = collective_s(3 * 2.0 * P, dp, tp, False, gpu, lay, e.comm, busy)
        total += max(t - overlap * t_bwd * c.accumulation_steps, t * (1 - overlap))
    if tp > 1:
        per = collective_s(T * h * cb, tp, 1, True, gpu, lay, e.comm, busy)
        total += 4 * (-(-L // pp)) * per * c.accumulation_steps
    return total


def _cnn_step(
    c: TrainConfig,
    m: CnnSpec,
    gpu: GpuSpec,
    e: Efficiencies,
    band: tuple[float, float] | None,
    provenance: str | None,
) -> StepEstimate:
    """ResNet training step: conv FLOPs (3x forward) at ``conv`` efficiency, plus activation
    traffic (each activation written and read ~12 times across forward and backward: conv out,
    BN read twice, ReLU, and their gradients), plus ~160 kernel launches per forward."""
    mode = _MODES[c.precision]
    peak = gpu.require_peak(c.precision) * 1e12
    bw = gpu.require_bandwidth() * 1e9 * e.bw
    b = c.batch_size
    flops = 3.0 * m.forward_flops_per_image * b
    act_bytes = float(m.activation_elements_per_image) * mode.compute * 12.0 * b
    eff = e.conv * b / (b + 16.0)
    gpu_t = flops / (peak * eff) + act_bytes / bw
    host = 160 * 3 * e.dispatch_s
    # Launch overhead is added, not overlapped: at ResNet-50 sizes an H200 finishes most
    # kernels faster than eager PyTorch launches them, so the GPU waits on the host for much
    # of the step (seen on the H200: a ~10 ms intercept under a linear per-image cost). This
    # structure was changed after seeing that data; SPEC_DEFAULTS are unchanged.
    step = gpu_t + host + float(m.total_params) * 16.0 / bw + e.step_s
    prov = provenance or e.source
    lo, hi = band if band is not None else (SPEC_BAND if prov == "spec" else CALIBRATED_BAND)
    t_compute = flops / (peak * eff)
    t_memory = act_bytes / bw + float(m.total_params) * 16.0 / bw
    shares = (t_compute / step, t_memory / step, 0.0, (host + e.step_s) / step, 0.0)
    return StepEstimate(
        step_time_s=step,
        step_time_band=Band(step * (1 - lo), step, step * (1 + hi)),
        micro_step_time_s=step,
        accumulation_steps=1,
        tokens_per_s=b / step,
        samples_per_s=b / step,
        model_flops_per_step=flops,
        mfu=flops / step / peak,
        phases={"compute": t_compute, "memory": t_memory},
        communication_s=0.0,
        bound=_bound(shares),
        provenance=prov,
        time_shares=time_shares(shares),
    )


def time_to_train(
    c: TrainConfig,
    tokens: float,
    gpu: GpuSpec,
    e: Efficiencies = SPEC_DEFAULTS,
    band: tuple[float, float] | None = None,
) -> tuple[float, Band, StepEstimate]:
    """Seconds to train on ``tokens`` tokens with the global batch held fixed: optimizer
    steps ``= ceil(tokens / (global_batch x seq_len))``; each step is ``accumulation_steps``
    micro-steps on every data-parallel rank (DESIGN "Recommendation": the global batch does not
    change with the GPU count)."""
    st = estimate_step(c, gpu, e, band)
    per_step = c.effective_global_batch * c.seq_len
    steps = math.ceil(tokens / per_step)
    t = steps * st.step_time_s
    return t, st.step_time_band.scaled(steps), st


def with_efficiencies(e: Efficiencies, **changes: Any) -> Efficiencies:
    """A copy of ``e`` with fields replaced (used by calibration)."""
    return replace(e, **changes)
