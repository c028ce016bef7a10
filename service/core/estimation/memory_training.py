"""Decoder training memory by phase (forward, loss, backward by layer, optimizer step), FSDP2
and pipeline stages, and the memoised breakdown an estimate reads."""

from __future__ import annotations

from math import trunc  # int() of a float, without int's constructor call (~3x cheaper)
from typing import Any, NamedTuple

from service.core.catalog.models import DecoderSpec, EncoderSpec, ModelSpec
from service.core.estimation.memory_band import (
    _band_for,
    _finish,
)
from service.core.estimation.memory_config import (
    _NOTE_STACK,
    CUBLAS_WORKSPACES_TRAINING_BYTES,
    DDP_BUCKET_FRACTION,
    NF4_BYTES_PER_PARAM,
    ZERO3_MAX_LIVE_PARAMETERS,
    ZERO_BUCKET_ELEMENTS,
    GiB,
    MemoryEstimate,
    TrainConfig,
    allocator_block_waste_bytes,
    fsdp_gathered_bytes,
)
from service.core.estimation.memory_encoders import (
    _training_cnn,
    _training_encoder,
)
from service.core.estimation.memory_layers import (
    _decoder_layer_saved,
    _decoder_trainables,
    _Dims,
    _dims,
    _layer0,
    _lora_note,
    _optimizer_bytes,
)
from service.core.estimation.stacks import STACK_EFFECTS

# --------------------------------------------------------------------------------------------
# FSDP2 layout
# --------------------------------------------------------------------------------------------

FSDP_LIVE_UNITS = 2
"""Decoder layers whose parameters FSDP2 holds unsharded at once inside forward or backward:
the one computing and the one prefetched (implicit forward prefetch, default explicit backward
prefetch of one unit)."""

_FSDP_NOTE = (
    "FSDP2 as the agent's multi-GPU suite runs it: fully_shard per decoder layer and on the "
    "root, reshard_after_forward default (layers reshard, the root's embeddings and LM head "
    "stay gathered from forward to backward); storage-dtype shards and gathers"
)
_FSDP_NOTE_AUTOCAST = (
    _FSDP_NOTE + " under torch.autocast, whose cache keeps every bf16 weight cast until "
    "autocast exits (not sharded)"
)
_FSDP_NOTE_POLICY = _FSDP_NOTE.removesuffix("storage-dtype shards and gathers") + (
    "MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): fp32 shards, bf16 gathers, no autocast"
)
_ADAMW_NOTES = {
    "fused": "AdamW fused: no step temporaries",
    "foreach": "AdamW foreach: one state-dtype copy of the parameter group during step() (_foreach_sqrt)",
    "forloop": "AdamW forloop: sqrt and quotient of one tensor during step(), plus the previous denominator",
}


class _Stage(NamedTuple):
    """One pipeline stage (1F1B): its layers, the micro-batches whose activations it holds at
    once, and whether it holds the embeddings (first) and the final norm, LM head and loss (last)."""

    layers: int
    in_flight: float
    first: bool
    last: bool
    name: str


def _pipeline_stages(m: DecoderSpec, c: TrainConfig) -> tuple[_Stage, _Stage]:
    """The two stages whose memory can peak under 1F1B: the first (``min(pp, micro-batches)``
    micro-batches in flight, the embeddings) and the last (one micro-batch in flight, the LM head
    and the loss buffers). Layers split evenly, the larger share on both (``ceil(L / pp)``)."""
    pp = c.pipeline_parallel
    layers = -(-m.num_layers // pp)
    in_flight = float(min(pp, c.accumulation_steps))
    return (
        _Stage(layers, in_flight, True, False, f"first of {pp} pipeline stages"),
        _Stage(layers, 1.0, False, True, f"last of {pp} pipeline stages"),
    )


def _training_pipeline(m: DecoderSpec, c: TrainConfig) -> MemoryEstimate:
    """Pipeline parallelism (1F1B): the larger of the first and the last stage's peaks."""
    first, last = (_training_decoder(m, c, st) for st in _pipeline_stages(m, c))
    return first if first.peak_allocated_bytes >= last.peak_allocated_bytes else last


def _block_waste(m: DecoderSpec, dtype_bytes: int) -> float:
    """Bytes the caching allocator's block rounding adds to one copy of the model's parameters in
    ``dtype_bytes`` (:func:`allocator_block_waste_bytes` per matrix: decoder linears, embeddings,
    an untied LM head). Seen on the H200: gt-llama-350m (11 MiB fp32 MLP matrices) sat 213-288
    MiB above the model in every phase, its optimizer step included: 72 MiB per copy, so 216 MiB
    for parameters and two AdamW states (every phase) and 288 MiB with the gradients (optimizer
    step; measured 6,032-6,057 MiB there, modelled 6,065). Zero for the >= 1B models measured
    (their matrices are 2 MiB multiples)."""
    key = (id(m), dtype_bytes)
    hit = _WASTE_CACHE.get(key)
    if hit is not None and hit[0] is m:
        return hit[1]
    total = 0.0
    for i, o, k in m.linear_shapes().values():
        total += k * allocator_block_waste_bytes(float(i * o * dtype_bytes))
    total *= m.num_layers
    emb = allocator_block_waste_bytes(float(m.vocab_size * m.hidden_size * dtype_bytes))
    total += emb * (1 if m.tie_word_embeddings else 2)
    if len(_WASTE_CACHE) > 4096:
        _WASTE_CACHE.clear()
    _WASTE_CACHE[key] = (m, total)
    return total


_WASTE_CACHE: dict[tuple[int, int], tuple[DecoderSpec, float]] = {}
""":func:`_block_waste` per (model, dtype), keyed by identity with the spec kept beside its
entry (as the step shapes are; bounded)."""


class _StageShape(NamedTuple):
    """The layers and tensors this rank holds: the whole model, or one pipeline stage's share."""

    L: int
    in_flight: float  # micro-batches whose activations are alive at once
    first_stage: bool  # holds the embeddings
    has_head: bool  # holds the final norm, LM head and loss
    P: float  # parameters per shard
    emb: float
    linear: float


def _stage_shape(m: DecoderSpec, tp: int, d: _Dims, stage: _Stage | None, notes: list[str]) -> _StageShape:
    """A pipeline stage's layers; embeddings first, final norm + LM head last."""
    h, *_, P, V, emb, linear, _root, unit = d  # one unpacking (see _decoder_layer_saved)
    if stage is None:
        return _StageShape(m.num_layers, 1.0, True, True, P, emb, linear)
    L, in_flight, first_stage, has_head = stage.layers, stage.in_flight, stage.first, stage.last
    linear = d.linear * L / m.num_layers
    emb = emb if first_stage else 0.0
    P = L * unit + emb + ((V * h + h / tp) if has_head else 0.0)
    notes.append(
        f"pipeline parallelism, 1F1B: {stage.name}, {L} layers, activations of {in_flight:g} "
        "micro-batch(es) in flight"
    )
    return _StageShape(L, in_flight, first_stage, has_head, P, emb, linear)


class _State(NamedTuple):
    """Per-rank persistent bytes before data-parallel sharding."""

    w: float  # parameters
    g: float  # gradients
    lora_w: float  # adapters
    opt_state: float
    opt_temp: float  # optimizer-step temporaries


def _adafactor_shapes(m: DecoderSpec, c: TrainConfig, L: int) -> list[tuple[int, int]] | None:
    """The matrix shapes Adafactor's factored second moments need (``None`` for any other)."""
    if c.optimizer != "adafactor":
        return None
    shapes2d: list[tuple[int, int]] = []
    for i, o, k in m.linear_shapes().values():
        shapes2d.extend([(i, o)] * (k * L))
    shapes2d.append((m.vocab_size, m.hidden_size))
    if not m.tie_word_embeddings:
        shapes2d.append((m.vocab_size, m.hidden_size))
    return shapes2d


def _parameters_and_optimizer(
    m: DecoderSpec, c: TrainConfig, s: _StageShape, staged: bool, notes: list[str]
) -> _State:
    """Parameters, gradients and optimizer state per rank, before data-parallel sharding
    (``staged``: one pipeline stage's)."""
    mode, tp, P = c.mode, c.tensor_parallel, s.P
    shapes2d = _adafactor_shapes(m, c, s.L)
    # optimizer temporaries see the rank's tensors: FSDP/ZeRO-3 shards, tensor-parallel slices
    opt_shard = 1.0 * (tp * (c.data_parallel if c.sharding in ("fsdp", "zero3") else 1))
    order = _decoder_trainables(m, c)
    largest, window, n_adapters, _, lora_notes = order  # one unpacking (see _decoder_layer_saved)
    largest, window = largest / opt_shard, window / opt_shard
    zero = c.sharding in ("zero1", "zero2", "zero3")
    if c.finetune == "full":
        if zero:
            # DeepSpeed bf16: 16-bit params and grads, fp32 master + 2 states in the optimizer
            w = 2.0 * P
            g = 2.0 * P
            opt_state = 12.0 * P if c.optimizer == "adamw" else 8.0 * P
            opt_temp = 0.0
            notes.append(
                "DeepSpeed ZeRO variant: bf16 parameters/gradients, fp32 master weights "
                "and AdamW states in DeepSpeed's fused optimizer"
            )
        else:
            w = mode.param * P
            g = mode.grad * P
            opt_state, opt_temp = _optimizer_bytes(c, P, mode.state, largest, shapes2d, window)
            if not staged and tp == 1 and (c.data_parallel == 1 or c.sharding in ("none", "ddp")):
                w += _block_waste(m, mode.param)  # whole tensors in fresh allocator segments
                g += _block_waste(m, mode.grad)
                opt_state += 2.0 * _block_waste(m, mode.state) if c.optimizer == "adamw" else 0.0
        lora_w = 0.0
    else:
        adapters = 1.0 * n_adapters / tp
        if c.finetune == "qlora":
            other = P - s.linear
            w = s.linear * NF4_BYTES_PER_PARAM + other * mode.param
            notes.append(
                "QLoRA: NF4 (double-quantised) decoder linears; embeddings, norms and lm_head unquantised"
            )
        else:
            w = mode.param * P
        lora_w = 4.0 * adapters  # PEFT keeps adapters in fp32 (autocast_adapter_dtype=True)
        g = 4.0 * adapters
        opt_state, opt_temp = _optimizer_bytes(c, adapters, 4, largest, None, window)
        notes.append(lora_notes.get(tp) or _lora_note(order, c.lora_rank, tp, adapters))
    if c.optimizer == "adamw" and not zero:
        notes.append(_ADAMW_NOTES[c.optimizer_impl])
    return _State(w, g, lora_w, opt_state, opt_temp)


class _Sharded(NamedTuple):
    """Per-rank persistent bytes after data-parallel sharding, and the buffers sharding adds."""

    state: _State
    gather_buffer: float  # alive in every phase (ZeRO buckets and live parameters)
    ddp_buckets: float
    fsdp_root: float  # FSDP2: forward/backward only
    fsdp_units: float
    fsdp_unit_grads: float


def _sharding(c: TrainConfig, st: _State, P: float, d: _Dims, notes: list[str]) -> _Sharded:
    """Sharding of persistent state over data-parallel ranks (DDP buckets, ZeRO 1-3, FSDP2)."""
    w, g, lora_w, opt_state, opt_temp = st
    dp, sharding, mode = c.data_parallel, c.sharding, c.mode
    gather_buffer = 0.0
    ddp_buckets = 0.0
    fsdp_root = fsdp_units = fsdp_unit_grads = 0.0
    if dp > 1 or sharding != "none":
        if sharding == "ddp" or (sharding == "none" and dp > 1):
            ddp_buckets = DDP_BUCKET_FRACTION * g
        elif sharding == "zero1":
            opt_state /= dp
            gather_buffer = min(float(ZERO_BUCKET_ELEMENTS), P) * 2.0
        elif sharding == "zero2":
            opt_state /= dp
            g /= dp
            gather_buffer = min(float(ZERO_BUCKET_ELEMENTS), P) * 2.0 * 2
        elif sharding == "zero3":
            opt_state /= dp
            g /= dp
            w /= dp
            gather_buffer = min(float(ZERO3_MAX_LIVE_PARAMETERS), P) * 2.0
        elif sharding == "fsdp":
            # FSDP2 fully_shard on every layer and the root, default reshard_after_forward: layers
            # reshard after forward, the root keeps embeddings, final norm and LM head gathered
            # to its post-backward. Shards keep the storage dtype (fp32 under amp_*), gathered
            # copies too under autocast, bf16 under the policy (QLoRA: NF4 linears, packed).
            policy = c.mixed_precision == "fsdp_policy"
            full = c.finetune == "full"
            w /= dp
            g /= dp
            opt_state /= dp
            opt_temp /= dp  # foreach/for-loop temporaries follow the rank's DTensor shards
            gathered = 2.0 if policy else float(mode.param)
            # root: embeddings, an untied LM head and the final norm; unit: one decoder layer
            fsdp_root = gathered * d.root
            fsdp_units = FSDP_LIVE_UNITS * fsdp_gathered_bytes(c, d.unit, gathered, d.layer_matmul)
            # backward of a unit: its unsharded gradients (gathered dtype) and the fp32
            # reduce-scatter input (a cast copy under the policy, the gradients themselves
            # otherwise)
            fsdp_unit_grads = (gathered + (4.0 if policy else 0.0)) * d.unit if full else 0.0
            notes.append(
                _FSDP_NOTE_POLICY if policy else _FSDP_NOTE_AUTOCAST if mode.autocast else _FSDP_NOTE
            )
    state = _State(w, g, lora_w, opt_state, opt_temp)
    return _Sharded(state, gather_buffer, ddp_buckets, fsdp_root, fsdp_units, fsdp_unit_grads)


class _Acts(NamedTuple):
    """Saved activations: the top layer's terms, the bottom layer's, and all layers together."""

    t_saved: float
    t_copies: float
    t_fwd: float
    t_bwd: float
    t_ckpt: float
    b_saved: float
    b_copies: float
    b_bwd: float
    copies_all: float  # autocast's cached weight casts
    acts_all: float
    no_cache: bool  # autocast keeps no weight casts (ZeRO-3, or no autocast)


def _activations(m: DecoderSpec, c: TrainConfig, d: _Dims, s: _StageShape) -> _Acts:
    mode = c.mode
    top = _decoder_layer_saved(m, c, False, mode, d)
    bottom = top if c.finetune == "full" else _layer0(m, c, top, mode, d)
    no_cache = c.sharding == "zero3" or not mode.autocast
    t_saved, t_copies, t_fwd, t_bwd, t_ckpt = top
    b_saved, b_copies, _, b_bwd, _ = bottom
    if not s.first_stage:  # no embedding below: every layer's input carries a gradient
        b_saved, b_copies, b_bwd = t_saved, t_copies, t_bwd
    copies_all = 0.0 if no_cache else t_copies * (s.L - 1) + b_copies
    acts_all = t_saved * (s.L - 1) + b_saved
    if s.in_flight != 1.0:  # 1F1B: each micro-batch in flight keeps its activations and casts
        acts_all *= s.in_flight
        copies_all *= s.in_flight
    return _Acts(
        t_saved, t_copies, t_fwd, t_bwd, t_ckpt, b_saved, b_copies, b_bwd, copies_all, acts_all, no_cache
    )


class _Head(NamedTuple):
    saved: float  # final norm + lm_head input
    copy: float  # the LM head's autocast cast
    loss_fwd: float
    loss_bwd: float
    lm_head_grad: float
    logits: float


def loss_vocab(m: DecoderSpec, c: TrainConfig, V_shard: float) -> float:
    """Vocabulary entries per token whose logits and loss a rank holds: its shard under a
    vocab-parallel loss, else the whole vocabulary (transformers gathers the tensor-parallel LM
    head's output onto every rank, :attr:`~.stacks.StackEffect.vocab_parallel_loss`)."""
    if c.tensor_parallel == 1 or STACK_EFFECTS[c.stack].vocab_parallel_loss:
        return V_shard
    return float(m.vocab_size)


def _head(
    m: DecoderSpec, c: TrainConfig, d: _Dims, s: _StageShape, no_cache: bool, notes: list[str]
) -> _Head:
    """Final norm, LM head input and loss (none on a pipeline stage before the last)."""
    mode, cb, full = c.mode, c.mode.compute, c.finetune == "full"
    h, V = d.h, d.V
    T = 1.0 * (c.batch_size * c.seq_len)  # as float(...), without float's constructor call
    lm_head_w = V * h  # multiplied whether tied or not
    if mode.autocast:
        head_saved = (4.0 * T * h + (4.0 * T * h if full else 0.0)) + (cb * T * h if full else 0.0)
        head_copy = 0.0 if no_cache else cb * lm_head_w
    elif mode.residual == 4:
        head_saved = 4.0 * T * h * (3.0 if full else 1.0)
        head_copy = 0.0
    else:
        head_saved = 4.0 * T * h + (2.0 * T * h + 2.0 * T * h if full else 0.0)
        head_copy = 0.0
    NV = T * loss_vocab(m, c, V)
    logits_bytes = cb * NV
    loss_fwd = (logits_bytes + 8.0 * NV) if cb != 4 else 8.0 * NV
    loss_bwd = 12.0 * NV
    shards_grads = c.sharding in ("zero2", "zero3", "fsdp")
    lm_head_grad = (mode.grad * lm_head_w if full and not m.tie_word_embeddings else 0.0) / (
        c.data_parallel if shards_grads else 1
    )
    if not s.has_head:  # a pipeline stage before the last: no final norm, LM head or loss
        head_saved = head_copy = loss_fwd = loss_bwd = lm_head_grad = logits_bytes = 0.0
    notes.append(
        f"loss buffers {loss_bwd / GiB:.2f} GiB at the start of backward (fp32 logits "
        "upcast inside ForCausalLMLoss)"
    )
    return _Head(head_saved, head_copy, loss_fwd, loss_bwd, lm_head_grad, logits_bytes)


class _Base(NamedTuple):
    """What every phase holds, and the gradients by phase."""

    base: float  # persistent state, workspace and sharding buffers
    fb: float  # forward/backward: the FSDP root stays gathered
    g_full: float
    g_emb: float  # the embeddings' gradients (not yet written at the bottom layer)
    g_fwd: float  # gradients alive during forward (accumulation)
    misc: float  # input ids + labels, cuBLAS workspace


def _base(c: TrainConfig, s: _StageShape, sh: _Sharded) -> _Base:
    st = sh.state
    T = 1.0 * (c.batch_size * c.seq_len)
    misc = (
        16.0 * T + CUBLAS_WORKSPACES_TRAINING_BYTES
    )  # int64 input ids + labels; fwd and bwd cuBLAS workspaces
    shards_grads = c.sharding in ("zero2", "zero3", "fsdp")
    g_full = st.g
    g_emb = (c.mode.grad * s.emb if c.finetune == "full" else 0.0) / (c.data_parallel if shards_grads else 1)
    g_fwd = g_full if c.accumulation_steps > 1 else 0.0
    base = st.w + st.lora_w + st.opt_state + misc + sh.gather_buffer + sh.ddp_buckets
    return _Base(base, base + sh.fsdp_root, g_full, g_emb, g_fwd, misc)


def _phases(
    c: TrainConfig, d: _Dims, s: _StageShape, sh: _Sharded, a: _Acts, hd: _Head, b: _Base, notes: list[str]
) -> dict[str, float]:
    """Bytes by phase; each branch builds its phases as one literal (presized; item stores
    resize at the sixth)."""
    fb, g_fwd, g_full, g_emb = b.fb, b.g_fwd, b.g_full, b.g_emb
    units = sh.fsdp_units
    step = b.base + g_full + sh.state.opt_temp  # the optimizer step
    if c.gradient_checkpointing:
        ckpts = a.t_ckpt * s.L * s.in_flight
        # forward: autocast caches the casts of trainable weights until it exits (frozen LoRA
        # bases are cast per call and, checkpointed, not kept)
        cached = (a.copies_all + hd.copy) if c.finetune == "full" else 0.0
        layer_work = a.t_saved + a.t_copies * (0 if a.no_cache else 1) + a.t_bwd + units + sh.fsdp_unit_grads
        notes.append("gradient checkpointing: one saved input per layer, one layer recomputed at a time")
        return {
            "forward-loss": fb + g_fwd + cached + ckpts + hd.saved + hd.loss_fwd,
            "backward-loss": fb + g_fwd + ckpts + hd.saved + hd.loss_bwd,
            "backward-top-layer": fb + max(g_fwd, hd.lm_head_grad) + ckpts + layer_work,
            "backward-bottom-layer": fb + (g_full - g_emb) + a.t_ckpt + layer_work,
            "optimizer-step": step,
        }
    T = 1.0 * (c.batch_size * c.seq_len)
    return {
        "forward-loss": fb + g_fwd + a.copies_all + hd.copy + a.acts_all + hd.saved + hd.loss_fwd,
        "backward-loss": fb + g_fwd + a.copies_all + hd.copy + a.acts_all + hd.saved + hd.loss_bwd,
        "backward-top-layer": (
            fb
            + max(g_fwd, hd.lm_head_grad)
            + a.copies_all
            + a.acts_all
            + a.t_bwd
            + c.mode.compute * T * d.h
            + units
            + sh.fsdp_unit_grads
        ),
        "backward-bottom-layer": (
            fb + (g_full - g_emb) + a.b_saved + a.b_copies + a.b_bwd + units + sh.fsdp_unit_grads
        ),
        # forward transient of one layer with everything below it saved
        "forward-layer": fb + g_fwd + a.copies_all + a.acts_all - a.t_saved + a.t_fwd + units,
        "optimizer-step": step,
    }


def _peak(phases: dict[str, float]) -> tuple[str, float]:
    """The first of equal peaks, as max(phases, key=...) (a loop: cheaper)."""
    peak_phase = ""
    peak = 0.0
    for phase, value in phases.items():
        if not peak_phase or value > peak:
            peak_phase, peak = phase, value
    return peak_phase, peak


def _components(
    c: TrainConfig, s: _StageShape, sh: _Sharded, a: _Acts, hd: _Head, b: _Base, peak_phase: str, peak: float
) -> dict[str, int]:
    """What is alive at the peak, by component; ``transient`` is the rest of the peak."""
    st, full, ckpt = sh.state, c.finetune == "full", c.gradient_checkpointing
    in_fb = peak_phase != "optimizer-step"
    at_bottom = peak_phase == "backward-bottom-layer"
    layer_phase = at_bottom or peak_phase in ("forward-layer", "backward-top-layer")
    all_saved = in_fb and not at_bottom  # every layer's activations are alive at the peak
    held = hd.logits if c.loop == "keeps_outputs" else 0
    components = {
        "parameters": trunc(st.w),
        "lora_adapters": trunc(st.lora_w),
        "gradients": trunc(b.g_full if not in_fb else (b.g_full - b.g_emb if at_bottom else b.g_fwd)),
        "optimizer_states": trunc(st.opt_state),
        "optimizer_step_temporaries": trunc(0 if in_fb else st.opt_temp),
        "autocast_weight_copies": trunc(
            a.copies_all + hd.copy
            if all_saved and not (ckpt and (peak_phase != "forward-loss" or not full))
            else 0
        ),
        "activations": trunc(
            (a.t_ckpt * s.L * s.in_flight if ckpt else a.acts_all)
            if all_saved
            else (a.b_saved if at_bottom else 0)
        ),
        "logits_and_loss": trunc(
            hd.loss_fwd
            if peak_phase == "forward-loss"
            else hd.loss_bwd
            if peak_phase == "backward-loss"
            else 0
        ),
        "logits_held_by_loop": trunc(held),
        "fsdp_gathered_parameters": trunc(
            (sh.fsdp_root if in_fb else 0.0) + (sh.fsdp_units if layer_phase else 0.0)
        ),
        "sharding_buffers": trunc(sh.gather_buffer + sh.ddp_buckets),
        "workspace": trunc(b.misc),
    }
    components["transient"] = trunc(peak - sum(components.values()))
    return components


def _training_decoder(m: DecoderSpec, c: TrainConfig, stage: _Stage | None = None) -> MemoryEstimate:
    """A decoder's (or one pipeline stage's) training memory by phase: the persistent state,
    sharded; the activations; the head and loss; the phases; the peak's components."""
    notes: list[str] = [_NOTE_STACK]
    d = _dims(m, c.tensor_parallel)  # the model's shapes per shard, computed once per (model, tp)
    s = _stage_shape(m, c.tensor_parallel, d, stage, notes)
    sh = _sharding(c, _parameters_and_optimizer(m, c, s, stage is not None, notes), s.P, d, notes)
    persistent = {
        "parameters": trunc(sh.state.w),
        "lora_adapters": trunc(sh.state.lora_w),
        "optimizer_states": trunc(sh.state.opt_state),
    }
    a = _activations(m, c, d, s)
    hd = _head(m, c, d, s, a.no_cache, notes)
    # keeps_outputs: the output object's logits (B x S x V in the compute dtype) are alive in
    # every phase -- this step's through backward and the optimizer step, the previous step's
    # during the forward that replaces them.
    held = hd.logits
    b = _base(c, s, sh)
    phases = _phases(c, d, s, sh, a, hd, b, notes)
    if c.loop == "keeps_outputs":
        phases = {k: v + held for k, v in phases.items()}
        notes.append(
            f"loop keeps_outputs: the output's logits ({held / GiB:.2f} GiB) are held through "
            "backward and the optimizer step until the next forward returns"
        )
    peak_phase, peak = _peak(phases)
    components = _components(c, s, sh, a, hd, b, peak_phase, peak)
    upper_extra = 0.0
    if c.loop is None:
        upper_extra = held
        notes.append(
            f"loop not stated: central estimate for a loop that keeps only the loss (HF Trainer); "
            f"the band's upper end adds the {held / GiB:.2f} GiB of logits a loop that keeps the "
            "model output (out = model(**batch)) holds"
        )
    return _finish(
        c, peak, phases, peak_phase, components, persistent, notes, _band_for(c), upper_extra=upper_extra
    )


def estimate_training(c: TrainConfig) -> MemoryEstimate:
    """Per-GPU training memory for ``c`` (see the module docstring for the loop modelled)."""
    m = c.model
    if isinstance(m, DecoderSpec):
        return _training_decoder(m, c) if c.pipeline_parallel == 1 else _training_pipeline(m, c)
    if isinstance(m, EncoderSpec):
        return _training_encoder(m, c)
    return _training_cnn(m, c)


TRAINING_BREAKDOWN_CACHE_SIZE = 2048
"""Entries :func:`training_breakdown` keeps before it starts over (each holds one breakdown)."""

_BREAKDOWN_CACHE: dict[tuple[Any, ...], tuple[ModelSpec, MemoryEstimate]] = {}


def forget_training_breakdowns() -> None:
    """Empty :func:`training_breakdown`'s memo (``benchmarks/estimate_speed.py`` times an estimate
    of a configuration not seen before with it)."""
    _BREAKDOWN_CACHE.clear()


def training_breakdown(c: TrainConfig) -> MemoryEstimate:
    """:func:`estimate_training`, memoised (bounded) for the estimate path: the breakdown depends
    on the configuration alone, never on the GPU, so ``/v1/compare``, a batch and a repeated
    request over several GPUs compute it once. The key is every field memory reads, the model by
    identity (kept beside its entry, so its id cannot be reused while the entry lives): an entry
    is only ever the answer for an equal configuration. The breakdown is shared, read, never changed."""
    key = (
        id(c.model),
        c.precision,
        c.batch_size,
        c.seq_len,
        c.gradient_checkpointing,
        c.finetune,
        c.lora_rank,
        c.lora_targets,
        c.attention,
        c.optimizer,
        c.sharding,
        c.gpu_count,
        c.tensor_parallel,
        c.global_batch,
        c.optimizer_impl,
        c.loop,
        c.mixed_precision,
        c.pipeline_parallel,
        STACK_EFFECTS[c.stack].vocab_parallel_loss,  # of the stack, only its loss changes memory
    )
    hit = _BREAKDOWN_CACHE.get(key)
    if hit is not None and hit[0] is c.model:
        return hit[1]
    mem = estimate_training(c)
    if len(_BREAKDOWN_CACHE) >= TRAINING_BREAKDOWN_CACHE_SIZE:
        _BREAKDOWN_CACHE.clear()
    _BREAKDOWN_CACHE[key] = (c.model, mem)
    return mem
