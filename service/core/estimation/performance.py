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
from typing import NamedTuple

from service.core.catalog.models import CnnSpec, DecoderSpec
from service.core.catalog.precision import TRAIN_MODES as _MODES
from service.core.catalog.specs import GpuSpec
from service.core.estimation.band import Band
from service.core.estimation.efficiencies import H200_SXM, SPEC_DEFAULTS, Efficiencies, StepEstimate
from service.core.estimation.memory import NETWORK_GBIT_PER_S_PER_GPU, TrainConfig
from service.core.estimation.network import (
    PCIE_ASSUMED_PER_DIRECTION_GB_PER_S,
    Layout,
    layout_of,
    p2p_s,
)
from service.core.estimation.network import communication_s as _communication
from service.core.estimation.stacks import STACK_EFFECTS
from service.core.estimation.step_terms import (
    _OPT_BYTES_PER_PARAM,
    DEQUANT_BYTES_PER_PARAM,
    DEQUANT_HALF_PARAMS,
    DEQUANT_RATE,
    H200_BANDWIDTH_GB_PER_S,
    HOST_CHECKPOINT_WRAPPER,
    HOST_COST_FORWARD,
    HOST_COST_RECOMPUTE,
    HOST_DISPATCH_MEASURED_S,
    MOE_EAGER_GPU_S_PER_KERNEL,
    MOE_EAGER_HOST_UNITS,
    MOE_EAGER_INFER_KERNELS,
    MOE_EAGER_KERNELS_BWD,
    MOE_EAGER_KERNELS_FWD,
    NF4_PASS_BYTES_PER_PARAM,
    OPS_ENCODER_LAYER_BWD,
    OPS_ENCODER_LAYER_FWD,
    OPS_HEAD,
    OPS_HEAD_BWD,
    OPS_PER_FSDP_UNIT,
    OPS_PER_LAYER_BWD,
    OPS_PER_LAYER_FWD,
    OPT_ACCESSES,
    OPT_KERNELS_PER_TENSOR_FORLOOP,
    _adapters,
    _dequant_bytes,
    _shape,
    _step_shape,
    qlora_terms,
)

__all__ = [
    "CALIBRATED_BAND",
    "DEQUANT_BYTES_PER_PARAM",
    "DEQUANT_HALF_PARAMS",
    "DEQUANT_RATE",
    "H200_BANDWIDTH_GB_PER_S",
    "H200_SXM",
    "HOST_CHECKPOINT_WRAPPER",
    "HOST_COST_FORWARD",
    "HOST_COST_RECOMPUTE",
    "HOST_DISPATCH_MEASURED_S",
    "MOE_EAGER_GPU_S_PER_KERNEL",
    "MOE_EAGER_HOST_UNITS",
    "MOE_EAGER_INFER_KERNELS",
    "MOE_EAGER_KERNELS_BWD",
    "MOE_EAGER_KERNELS_FWD",
    "NETWORK_GBIT_PER_S_PER_GPU",
    "NF4_PASS_BYTES_PER_PARAM",
    "OPS_ENCODER_LAYER_BWD",
    "OPS_ENCODER_LAYER_FWD",
    "OPS_HEAD",
    "OPS_HEAD_BWD",
    "OPS_PER_FSDP_UNIT",
    "OPS_PER_LAYER_BWD",
    "OPS_PER_LAYER_FWD",
    "OPT_ACCESSES",
    "OPT_KERNELS_PER_TENSOR_FORLOOP",
    "PCIE_ASSUMED_PER_DIRECTION_GB_PER_S",
    "SPEC_BAND",
    "SPEC_DEFAULTS",
    "TIME_TERMS",
    "Efficiencies",
    "StepEstimate",
    "StepSummary",
    "_dequant_bytes",
    "estimate_step",
    "step_summary",
    "time_to_train",
]

TIME_TERMS: tuple[str, ...] = ("compute", "memory", "communication", "host")
"""What a modelled step time splits into (``StepSummary.time_shares``); ``bound`` names the
largest. A pipeline's idle stages add a fifth share, ``pipeline_bubble``, never a bound."""


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
    # positional (a named tuple built from keywords goes through Python-level argument matching)
    return StepSummary(
        r.step, step_band, r.accum, r.tokens / r.step, r.samples / r.step, r.mfu, r.bound, r.shares, r.layout
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
    t_opt = opt_bytes / bw
    if impl == "forloop":  # the loop issues its kernels while earlier ones run: the longer of the two
        t_opt = max(t_opt, sh.forloop_tensors * OPT_KERNELS_PER_TENSOR_FORLOOP * e.dispatch_s)
    t_opt += e.step_s
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

    if c.finetune == "qlora" and sh.decoder:  # bitsandbytes' NF4 dequantisation per GEMM pass
        dq_f, dq_b, dq_hf, dq_hb = qlora_terms(sh, bw, e.dispatch_s * fx.launches, c.gradient_checkpointing)
        t_ew_fwd, t_ew_bwd, host_fwd, host_bwd = (
            t_ew_fwd + dq_f,
            t_ew_bwd + dq_b,
            host_fwd + dq_hf,
            host_bwd + dq_hb,
        )
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
    g_fwd = gpu_micro * share
    g_bwd = gpu_micro - g_fwd
    # forward (an eager MoE layer syncs: its host and GPU time both count), then backward
    if host_fwd > g_fwd and not sh.moe_experts:
        host_part, compute_micro, memory_micro = host_fwd, 0.0, 0.0
    else:
        host_part = host_fwd if sh.moe_experts else 0.0
        compute_micro, memory_micro = c_fwd, g_fwd - c_fwd
    if host_bwd > g_bwd:
        host_part += host_bwd
    else:
        compute_micro += c_bwd
        memory_micro += g_bwd - c_bwd

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
        bubble = 0.0
    else:
        step = slots * (micro * stage + p2p) + t_opt_mem + t_opt_host + comm
        bubble = (pp - 1) * (micro * stage + p2p)
    # ---- the shares of the modelled time (they sum to 1)
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
    """The shares as an answer shows them (:data:`TIME_TERMS`, and the pipeline bubble when there
    is one): each term's fraction of the step."""
    out = {"compute": shares[0], "memory": shares[1], "communication": shares[2], "host": shares[3]}
    if len(shares) > 4 and shares[4] > 0:
        out["pipeline_bubble"] = shares[4]
    return out


SPEC_BAND = (0.30, 0.45)
"""80 % band of a spec-default estimate, relative (low, high): datasheet peaks with default
efficiencies are usually optimistic, so the band leans high."""

CALIBRATED_BAND = (0.12, 0.12)
"""80 % band of an estimate from efficiencies fitted on the same GPU (``interpolated``)."""


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
