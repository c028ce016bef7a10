"""The step model of a decoder or encoder training step, one named term per function (the
terms as llm-analysis names them: matmuls, attention, elementwise and loss, optimizer, casts,
recompute, host dispatch, then the micro-step's overlap, the pipeline and the communication).
:mod:`service.core.estimation.performance` dresses the result as an answer; its module
docstring states the model.

Every term is the arithmetic it was inside one function, in the same order, so the answers are
bit-for-bit those of before the split (``benchmarks/estimate_golden.py --check``).
"""

from __future__ import annotations

from typing import NamedTuple

from service.core.catalog.models import CnnSpec, DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.estimation.efficiencies import Efficiencies
from service.core.estimation.memory import TrainConfig
from service.core.estimation.memory_config import fsdp_gathered_bytes
from service.core.estimation.network import Layout, layout_of, p2p_s
from service.core.estimation.network import communication_s as _communication
from service.core.estimation.stacks import STACK_EFFECTS, StackEffect
from service.core.estimation.step_terms import (
    _OPT_BYTES_PER_PARAM,
    H200_BANDWIDTH_GB_PER_S,
    HOST_CHECKPOINT_WRAPPER,
    HOST_COST_FORWARD,
    HOST_COST_RECOMPUTE,
    MOE_EAGER_GPU_S_PER_KERNEL,
    MOE_EAGER_KERNELS_BWD,
    MOE_EAGER_KERNELS_FWD,
    OPS_HEAD,
    OPS_HEAD_BWD,
    OPS_PER_FSDP_UNIT,
    OPT_ACCESSES,
    OPT_KERNELS_PER_TENSOR_FORLOOP,
    _adapters,
    _shape,
    _step_shape,
    _StepShape,
    attention_kernel_factor,
    fused_attention_eff,
    qlora_terms,
)

TIME_TERMS: tuple[str, ...] = ("compute", "memory", "communication", "host")
"""What a modelled step time splits into (``StepSummary.time_shares``); ``bound`` names the
largest. A pipeline's idle stages add a fifth share, ``pipeline_bubble``, never a bound."""


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


class _Ctx(NamedTuple):
    """What every term reads: peaks and bandwidth in per-second units, tokens, the shapes."""

    peak: float  # FLOP/s at the step's precision
    peak16: float  # FLOP/s at bf16 (attention kernels), else ``peak``
    bw: float  # effective bytes/s
    T: float  # tokens per micro-batch
    cb: float  # bytes per activation element
    full: bool  # full fine-tuning (every weight trainable)
    sh: _StepShape
    fx: StackEffect
    mm_eff: float
    attn_kernel: float  # the attention kernel's speed against SDPA's default (FA2 on Hopper)


class _Matmuls(NamedTuple):
    fwd: float
    bwd: float
    compute_bound: bool  # the GEMMs are not weight-streaming
    lora_params: float
    lora_ew: float
    ops_f: float  # kernels per layer, forward (adapters included)
    ops_b: float


class _Host(NamedTuple):
    fwd: float
    bwd: float


def _context(c: TrainConfig, gpu: GpuSpec, e: Efficiencies) -> _Ctx:
    assert not isinstance(c.model, CnnSpec)
    mode = c.mode
    peak_t = gpu.require_peak(c.precision)
    peak = peak_t * 1e12
    p16 = gpu.peak_for("bf16")
    peak16 = p16 * 1e12 if p16 else peak
    bw = gpu.require_bandwidth() * 1e9 * e.bw
    T = float(c.batch_size * c.seq_len)
    sh = _step_shape(c.model, c.tensor_parallel, mode.autocast, mode.compute)  # once per (model, tp, mode)
    fx = STACK_EFFECTS[c.stack]  # the training stack's factors on the eager terms (stacks.py)
    mm_eff = e.mm_for(c.precision) * _shape(e, T, sh.h)
    if fx.mm != 1.0:
        mm_eff = min(0.98, mm_eff * fx.mm)
    kernel = attention_kernel_factor(c.attention, gpu.compute_capability)
    return _Ctx(
        peak, peak16, bw, T, float(mode.compute), c.finetune == "full", sh, fx, mm_eff, attn_kernel=kernel
    )


def _matmuls(c: TrainConfig, gpu: GpuSpec, k: _Ctx) -> _Matmuls:
    """Linear layers and LM head: FLOPs at the GEMM efficiency or the weights' traffic, the
    longer; a trainable linear's backward is twice its forward, a frozen one's once."""
    sh, T = k.sh, k.T
    fwd_mm_flops = 2.0 * T * sh.mm_weights
    w_bytes_fwd = k.cb * sh.w_weights
    compute_bound = fwd_mm_flops / (k.peak * k.mm_eff) >= w_bytes_fwd / k.bw
    t_mm_fwd = max(fwd_mm_flops / (k.peak * k.mm_eff), w_bytes_fwd / k.bw)
    bwd_mult = 2.0 if k.full else 1.0
    t_mm_bwd = t_mm_fwd * bwd_mult
    ops_f, ops_b = sh.ops_f, sh.ops_b
    lora_ew = 0.0
    lora_params = 0.0
    if not k.full and sh.decoder:
        # PEFT adapters: two thin matmuls per target (rank r) at low efficiency, plus the
        # elementwise traffic of the adapter path -- input cast to the fp32 adapter dtype
        # (pure 16-bit) or autocast copy (amp), the scaled add into the base output and the
        # cast back: per token ~(6*in + 6*out) bytes under autocast, (6*in + 14*out) in pure
        # 16-bit, 12*out in fp32 -- and ~8 extra ops per target (:func:`_adapters`).
        m = c.model
        assert isinstance(m, DecoderSpec)
        autocast = c.mode.autocast
        ad = _adapters(m, c.tensor_parallel, c.lora_targets, c.lora_rank, autocast, c.mode.compute)
        adapter_peak = k.peak if autocast else gpu.require_peak("fp32") * 1e12
        lora_flops = 0.0
        rank = c.lora_rank
        for width in ad.widths:
            lora_flops += 2.0 * T * rank * width * sh.L
        lora_params, lora_ew = ad.params, ad.ew
        t_mm_fwd += lora_flops / (adapter_peak * k.mm_eff * 0.5)
        t_mm_bwd += 2 * lora_flops / (adapter_peak * k.mm_eff * 0.5)
        ops_f += 8 * len(c.lora_targets)
        ops_b += 10 * len(c.lora_targets)
    return _Matmuls(t_mm_fwd, t_mm_bwd, compute_bound, lora_params, lora_ew, ops_f, ops_b)


def _attention(c: TrainConfig, e: Efficiencies, k: _Ctx, notes: list[str]) -> tuple[float, float]:
    """(forward, backward) seconds: flash kernels at the attention efficiency; the math kernel
    adds the ``s^2`` score tensors as memory traffic."""
    sh, T, s = k.sh, k.T, c.seq_len
    heads_dim = sh.q  # q_dim per shard
    eager_like = (c.attention == "eager" or (k.cb == 4 and sh.gqa)) and c.stack != "megatron"
    attn_flops_fwd = 4.0 * T * s * heads_dim * sh.L * (1.0 if eager_like else sh.causal)
    if eager_like:
        a_heads = sh.a_heads
        s2 = float(c.batch_size) * a_heads * float(s) * float(s)
        attn_bytes_fwd = 30.0 * s2 * sh.L
        attn_mm_eff = k.mm_eff
        t_attn_fwd = attn_flops_fwd / (k.peak * attn_mm_eff) + attn_bytes_fwd / k.bw
        t_attn_bwd = 2.0 * attn_flops_fwd / (k.peak * attn_mm_eff) + 2.0 * attn_bytes_fwd / k.bw
        notes.append("math attention kernel (s^2 scores in memory)")
    else:
        attn_eff = fused_attention_eff(e, sh.hd, T, s, sh.causal) * k.attn_kernel
        t_attn_fwd = attn_flops_fwd / (k.peak16 * attn_eff)
        t_attn_bwd = 2.5 * t_attn_fwd
    return t_attn_fwd, t_attn_bwd


def _elementwise(e: Efficiencies, k: _Ctx, lora_ew: float) -> tuple[float, float, float]:
    """(forward, backward, loss) seconds of the layers' elementwise traffic and the loss."""
    ew_fwd = (k.sh.ew + lora_ew) * k.T * k.sh.L * k.fx.ew_traffic
    V = k.sh.V if k.fx.vocab_parallel_loss else k.sh.vocab  # transformers TP: every rank, every logit
    loss_bytes = (40.0 if k.cb != 4 else 32.0) * k.T * V * k.fx.loss_traffic
    return ew_fwd / k.bw, e.elementwise_bwd * ew_fwd / k.bw, loss_bytes / k.bw


def _optimizer(c: TrainConfig, e: Efficiencies, k: _Ctx, trainable: float) -> tuple[float, float]:
    """(optimizer state bytes moved, optimizer seconds): its traffic, or for the for-loop AdamW
    the longer of that and its launches, plus the fixed per-step cost."""
    zero = c.sharding in ("zero1", "zero2", "zero3")
    adamw = c.optimizer == "adamw"
    impl = c.optimizer_impl if adamw and not zero else "fused"
    opt_bpp = OPT_ACCESSES[impl] if adamw else _OPT_BYTES_PER_PARAM[c.optimizer]
    shard = float(c.data_parallel if c.sharding in ("fsdp", "zero1", "zero2", "zero3") else 1)
    opt_bytes = opt_bpp * float(c.mode.state if k.full else 4) * trainable / shard
    t_opt = opt_bytes / k.bw
    if impl == "forloop":  # the loop issues its kernels while earlier ones run: the longer of the two
        t_opt = max(t_opt, k.sh.forloop_tensors * OPT_KERNELS_PER_TENSOR_FORLOOP * e.dispatch_s)
    t_opt += e.step_s
    return opt_bytes, t_opt


def _casts(c: TrainConfig, k: _Ctx, trainable: float) -> tuple[float, int]:
    """(seconds, FSDP units): autocast weight and gradient casts, and FSDP2's gather and
    reduce-scatter copies (:func:`_fsdp_copy_bytes`)."""
    autocast = c.mode.autocast
    cast_bytes = 6.0 * k.sh.w_weights * k.fx.cast_traffic if autocast else 0.0
    grad_cast_bytes = 6.0 * trainable if autocast and k.full else 0.0
    t_casts = (cast_bytes + grad_cast_bytes) / k.bw
    fsdp_units = 0
    if c.sharding == "fsdp" and k.sh.decoder:
        fsdp_units = k.sh.L + 1
        t_casts += _fsdp_copy_bytes(c, k.sh.P, k.sh.nf4_params, trainable) / k.bw
    elif c.sharding in ("zero1", "zero2", "zero3"):
        t_casts += _zero_copy_bytes(c, k.sh.P, trainable) / k.bw
    return t_casts, fsdp_units


def _fsdp_copy_bytes(c: TrainConfig, P: float, nf4_params: float, trainable: float) -> float:
    """Bytes FSDP2 moves per micro-batch around its collectives. Each unit is gathered in forward
    and backward: the local shard copied into the all-gather buffer (copy-in, read + write) and
    the gathered parameters split out of it (copy-out, read + write) -- under the
    MixedPrecisionPolicy the shard is first cast from fp32 (read 4) to bf16 (write 2); its
    gradients are copied into the fp32 reduce-scatter input (the unsharded gradient read, the
    input written) and the rest of the reduction touches the reduced shard. Matched at one rank
    to the H200 runs (4 bytes per gathered byte, the reduction ``2 g + 16`` per trainable
    parameter); the shard-sized parts scale with ``1 / data_parallel`` (PyTorch
    ``_fsdp_collectives``: the all-gather input is a slice of its output holding the local
    shard; the reduce-scatter output is the shard), and with a peer the collective's own reads
    and writes of its buffers are its time (:func:`~.network.communication_s`), not copies."""
    policy = c.mixed_precision == "fsdp_policy"
    gathered = 2.0 if policy else float(c.mode.param)
    shard = 1.0 / max(c.data_parallel, 1)
    g_bytes = fsdp_gathered_bytes(c, P, gathered, nf4_params)
    gathers = 2.0 * (2.0 * g_bytes * shard + 2.0 * g_bytes)  # forward and backward: copy-in, copy-out
    reduce_full = gathered + 4.0  # the unsharded gradient read, the fp32 reduce input written
    reduce_rest = (2.0 * gathered + 4.0 * 4.0 if policy else 4.0 * 4.0) - reduce_full
    reduce = (reduce_full + reduce_rest * shard) * trainable
    cast = 2.0 * 2.0 * P * shard if policy else 0.0  # the gather casts the fp32 shard to bf16
    return gathers + reduce + cast


def _zero_copy_bytes(c: TrainConfig, P: float, trainable: float) -> float:
    """Bytes DeepSpeed ZeRO moves per micro-batch around its collectives: every gradient copied
    into the flat reduction bucket (read + write, ``contiguous_gradients``, the default), and
    under ZeRO-3 the local 16-bit partition copied into the all-gather buffer in forward and
    backward -- shard-sized; the gathered parameters are views of that buffer, no copy-out
    (DeepSpeed ``stage3`` / ``partitioned_param_coordinator``), which is most of what FSDP2
    moves more (:func:`_fsdp_copy_bytes`)."""
    grad = float(c.mode.grad)
    bucket = 2.0 * grad * trainable
    gather_in = 2.0 * 2.0 * 2.0 * P / max(c.data_parallel, 1) if c.sharding == "zero3" else 0.0
    return bucket + gather_in


def _host(c: TrainConfig, e: Efficiencies, k: _Ctx, mm: _Matmuls, fsdp_units: int) -> _Host:
    """Host dispatch seconds per phase: every op launched from Python, the checkpoint wrappers
    and recomputed forward, FSDP's per-unit hooks (QLoRA's launches: :func:`_qlora_and_experts`)."""
    L = k.sh.L
    host_fwd = (L * mm.ops_f + OPS_HEAD) * HOST_COST_FORWARD
    host_bwd = float(L * mm.ops_b + OPS_HEAD_BWD)
    if c.gradient_checkpointing:
        host_fwd += L * HOST_CHECKPOINT_WRAPPER
        host_bwd += L * mm.ops_f * HOST_COST_RECOMPUTE
    host_fwd += fsdp_units * OPS_PER_FSDP_UNIT / 2
    host_bwd += fsdp_units * OPS_PER_FSDP_UNIT / 2
    host_fwd *= e.dispatch_s * k.fx.launches
    host_bwd *= e.dispatch_s * k.fx.launches
    return _Host(host_fwd, host_bwd)


def _recompute(c: TrainConfig, k: _Ctx, t_mm_fwd: float, t_attn_fwd: float, t_ew_fwd: float) -> float:
    """Gradient checkpointing: one more forward of the layers (not the LM head)."""
    if not c.gradient_checkpointing:
        return 0.0
    return (t_mm_fwd * k.sh.L * k.sh.layer_mm / k.sh.mm_weights) + t_attn_fwd + t_ew_fwd


def _qlora_and_experts(
    c: TrainConfig, gpu: GpuSpec, e: Efficiencies, k: _Ctx, t_ew_fwd: float, t_ew_bwd: float, host: _Host
) -> tuple[float, float, _Host]:
    """The (forward, backward) elementwise seconds and the host time with QLoRA's bitsandbytes
    NF4 dequantisation per GEMM pass added (:func:`qlora_terms`), then an eager MoE expert
    loop's small kernels (:data:`MOE_EAGER_GPU_S_PER_KERNEL`)."""
    sh = k.sh
    if c.finetune == "qlora" and sh.decoder:
        dq_f, dq_b, dq_hf, dq_hb = qlora_terms(
            sh, k.bw, e.dispatch_s * k.fx.launches, c.gradient_checkpointing
        )
        t_ew_fwd, t_ew_bwd = t_ew_fwd + dq_f, t_ew_bwd + dq_b
        host = _Host(host.fwd + dq_hf, host.bwd + dq_hb)
    if sh.moe_experts:
        scale = H200_BANDWIDTH_GB_PER_S / gpu.require_bandwidth()
        t_moe_f = sh.L * sh.moe_experts * MOE_EAGER_KERNELS_FWD * MOE_EAGER_GPU_S_PER_KERNEL[0] * scale
        t_ew_fwd += t_moe_f
        t_ew_bwd += sh.L * sh.moe_experts * MOE_EAGER_KERNELS_BWD * MOE_EAGER_GPU_S_PER_KERNEL[1] * scale
        if c.gradient_checkpointing:
            t_ew_bwd += t_moe_f
    return t_ew_fwd, t_ew_bwd, host


class _Micro(NamedTuple):
    """One micro-step: its time and the split of its critical path."""

    time: float
    gpu_fwd: float
    gpu_bwd: float
    host: float  # host seconds, both phases
    compute: float  # critical-path seconds per term
    memory: float
    host_part: float


def _micro(
    c: TrainConfig,
    k: _Ctx,
    mm: _Matmuls,
    attn: tuple[float, float],
    ew: tuple[float, float, float],
    t_recompute: float,
    t_casts: float,
    host: _Host,
) -> _Micro:
    """The host issues the forward, then the backward: the GPU idles in a phase whose kernels
    are issued slower than they run, so each phase takes the longer of the two (a step is not
    max(total GPU, total host): a launch-bound backward cannot borrow a GPU-bound forward's
    slack). Then the critical path by term: a phase issued slower than it runs is host time;
    otherwise its tensor-core work (GEMMs that are not weight-streaming, attention, their
    recompute) is compute and the rest memory traffic."""
    sh = k.sh
    (t_attn_fwd, t_attn_bwd), (t_ew_fwd, t_ew_bwd, t_loss) = attn, ew
    host_fwd, host_bwd = host
    gpu_fwd = mm.fwd + t_attn_fwd + t_ew_fwd + t_loss * 0.4
    gpu_bwd = mm.bwd + t_attn_bwd + t_ew_bwd + t_loss * 0.6 + t_recompute
    gpu_micro = gpu_fwd + gpu_bwd + t_casts
    share = (gpu_fwd + 0.5 * t_casts) / gpu_micro if gpu_micro > 0 else 0.5
    micro = max(gpu_micro * share, host_fwd) + max(gpu_micro * (1 - share), host_bwd)
    if sh.moe_experts:
        # the eager expert loop asks which experts were hit (``nonzero``): one host-device sync
        # per MoE layer, so forward host and GPU time add instead of overlapping (H200 probe:
        # forward 75 ms host + 13 ms GPU for an 88 ms forward)
        micro += min(gpu_micro * share, host_fwd)
    c_fwd = t_attn_fwd + (mm.fwd if mm.compute_bound else 0.0)
    c_bwd = t_attn_bwd + (mm.bwd if mm.compute_bound else 0.0)
    if c.gradient_checkpointing:
        c_bwd += t_attn_fwd + (mm.fwd * sh.L * sh.layer_mm / sh.mm_weights if mm.compute_bound else 0.0)
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
    return _Micro(micro, gpu_fwd, gpu_bwd, host_fwd + host_bwd, compute_micro, memory_micro, host_part)


def _pipeline(
    c: TrainConfig, gpu: GpuSpec, e: Efficiencies, k: _Ctx, lay: Layout | None
) -> tuple[float, float]:
    """(stage, p2p seconds): the slowest pipeline stage's fraction of a micro-step's work (the
    last: its layers and the LM head) and the activations and gradients it sends per micro-batch."""
    pp, sh = c.pipeline_parallel, k.sh
    if pp == 1:
        return 1.0, 0.0
    assert lay is not None
    layers = -(-sh.L // pp)
    stage = (layers * sh.layer_mm + sh.h * sh.V) / sh.mm_weights
    crosses = c.tensor_parallel * c.data_parallel >= lay.gpus_per_node
    return stage, 2.0 * p2p_s(k.T * sh.h * k.cb / c.tensor_parallel, crosses, gpu, lay, e.comm)


def _step(c: TrainConfig, gpu: GpuSpec, e: Efficiencies) -> _Step:
    """The step model for decoders and encoders (module docstring of ``performance``)."""
    assert not isinstance(c.model, CnnSpec)
    notes: list[str] = []
    k = _context(c, gpu, e)
    sh, bw = k.sh, k.bw
    mm = _matmuls(c, gpu, k)
    attn = _attention(c, e, k, notes)
    t_ew_fwd, t_ew_bwd, t_loss = _elementwise(e, k, mm.lora_ew)
    trainable = sh.P if k.full else mm.lora_params
    opt_bytes, t_opt = _optimizer(c, e, k, trainable)
    t_casts, fsdp_units = _casts(c, k, trainable)
    t_recompute = _recompute(c, k, mm.fwd, attn[0], t_ew_fwd)
    t_ew_fwd, t_ew_bwd, host = _qlora_and_experts(
        c, gpu, e, k, t_ew_fwd, t_ew_bwd, _host(c, e, k, mm, fsdp_units)
    )
    ew = (t_ew_fwd, t_ew_bwd, t_loss)
    mi = _micro(c, k, mm, attn, ew, t_recompute, t_casts, host)

    accum, pp = c.accumulation_steps, c.pipeline_parallel
    lay = layout_of(c, gpu) if c.gpu_count > 1 else None
    stage, p2p = _pipeline(c, gpu, e, k, lay)
    # ---- communication (none on one GPU), for this rank's share of the parameters
    comm = (
        _communication(c, gpu, e, sh.P * stage, k.T, sh.h, sh.L, k.cb, mi.gpu_bwd * stage, lay, k.fx.overlap)
        if lay
        else 0.0
    )
    t_opt_mem = opt_bytes / bw * stage
    t_opt_host = t_opt - opt_bytes / bw
    slots = accum + pp - 1  # 1F1B: m micro-batches + (pp - 1) fill and drain slots
    if pp == 1:
        step = accum * mi.time + t_opt + comm
        bubble = 0.0
    else:
        step = slots * (mi.time * stage + p2p) + t_opt_mem + t_opt_host + comm
        bubble = (pp - 1) * (mi.time * stage + p2p)
    # ---- the shares of the modelled time (they sum to 1)
    busy = accum * stage
    shares = (
        busy * mi.compute / step,
        (busy * mi.memory + t_opt_mem) / step,
        (comm + accum * p2p) / step,
        (busy * mi.host_part + t_opt_host) / step,
        bubble / step,
    )
    b, s = c.batch_size, c.seq_len
    tokens = float(accum * b * s)
    model_flops = 2.0 * k.T * sh.matmul_per_token * (3.0 if k.full else 2.0) * accum
    model_flops += 4.0 * k.T * s * sh.heads_x_dim * sh.L * sh.causal * 3 * accum
    mfu = model_flops / (step * k.peak * c.tensor_parallel * pp)
    return _Step(
        step,
        mi.time,
        accum,
        tokens,
        accum * b,
        model_flops,
        mfu,
        _bound(shares),
        mi.gpu_fwd,
        mi.gpu_bwd,
        t_casts,
        t_opt,
        mi.host,
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
