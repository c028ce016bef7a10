"""Per-layer memory terms of a decoder (saved activations, weight copies, transients), its
shapes per shard, and the optimizer's state and step temporaries (``memory`` describes them)."""

from __future__ import annotations

import math
from typing import NamedTuple

from service.core.catalog.models import DecoderSpec
from service.core.catalog.precision import Mode
from service.core.estimation.memory_config import (
    TrainConfig,
)

# --------------------------------------------------------------------------------------------
# Decoder training
# --------------------------------------------------------------------------------------------


class _Layer(NamedTuple):
    """One decoder layer's memory terms in bytes for the local micro-batch (a named tuple: built
    twice per estimate, and a tuple is several times cheaper to build than a frozen dataclass)."""

    saved: float  # activations autograd keeps from forward to backward
    weight_copies: float  # autocast bf16/fp16 weight copies saved for backward
    forward_transient: float  # largest extra buffer alive during this layer's forward
    backward_transient: float  # largest extra buffer alive during this layer's backward
    checkpoint: float  # what a checkpointed layer keeps (its input)


class _Dims(NamedTuple):
    """A decoder's shapes as the memory model uses them, per tensor-parallel shard: functions of
    the model and ``tp`` alone, so computed once per (model, tp) by :func:`_dims` rather than per
    estimate. Each is the exact expression the model used inline (``//`` where a width is split
    evenly, ``/`` where a total is), so the figures are bit-for-bit the same."""

    h: float  # hidden size (replicated)
    q: float  # q_dim // tp
    kv: float  # kv_dim // tp
    f: float  # intermediate_size // tp
    a: float  # num_heads // tp
    groups: float  # query heads per KV head
    act_experts: float  # experts_per_token
    layer_matmul: float  # one layer's matmul weights (every expert) / tp
    qkv_weights: float  # hidden x (q + 2 kv) weights of the whole layer
    w_mlp: float  # hidden x ffn / tp
    P: float  # total parameters / tp
    V: float  # vocabulary / tp
    emb: float  # embedding parameters / tp
    linear: float  # every layer's matmul weights / tp
    root: float  # FSDP root unit: embeddings, an untied LM head and the final norm / tp
    unit: float  # FSDP layer unit: one layer's parameters / tp


_DIMS_CACHE: dict[tuple[int, int], tuple[DecoderSpec, _Dims]] = {}


def _dims(m: DecoderSpec, tp: int) -> _Dims:
    """:class:`_Dims` of ``m`` split ``tp`` ways, memoised per (model, tp) like the parameter
    counts (keyed by identity, the spec kept alive beside its entry; bounded)."""
    hit = _DIMS_CACHE.get((id(m), tp))
    if hit is not None and hit[0] is m:
        return hit[1]
    cnt = m._c()
    d = _Dims(
        h=float(m.hidden_size),
        q=float(m.q_dim // tp),
        kv=float(m.kv_dim // tp),
        f=float(m.intermediate_size // tp),
        a=float(m.num_heads // tp),
        groups=float(m.num_heads // m.num_kv_heads),
        act_experts=float(m.experts_per_token),
        layer_matmul=float(cnt.per_layer - cnt.norms) / tp,
        qkv_weights=float(m.hidden_size * (m.q_dim + 2 * m.kv_dim)),
        w_mlp=float(m.hidden_size * m.intermediate_size) / tp,
        P=float(cnt.total) / tp,
        V=float(m.vocab_size) / tp,
        emb=float(cnt.embedding) / tp,
        linear=float(m.num_layers * (cnt.per_layer - cnt.norms)) / tp,
        root=float(
            cnt.embedding + (0 if m.tie_word_embeddings else m.vocab_size * m.hidden_size) + m.hidden_size
        )
        / tp,
        unit=float(cnt.per_layer) / tp,
    )
    if len(_DIMS_CACHE) > 4096:
        _DIMS_CACHE.clear()
    _DIMS_CACHE[(id(m), tp)] = (m, d)
    return d


def _adapter_input(autocast: bool, cb: float, T: float, width: float, shared_available: bool) -> float:
    """Bytes ``lora_A`` keeps for an input of ``width`` features (``T`` tokens, compute bytes
    ``cb``). PEFT holds adapters in fp32 and casts the input to fp32 (``4T*in`` under pure
    bf16); under autocast that fp32 input is cast back to a fresh bf16 copy (``2T*in``); in fp32
    the input tensor itself is shared when something else keeps it already."""
    if autocast:
        return cb * T * width
    if cb == 2:
        return 4.0 * T * width
    return 0.0 if shared_available else 4.0 * T * width


def _group_inputs(
    names: tuple[str, ...],
    width: float,
    tensor: float,
    lora: tuple[str, ...],
    autocast: bool,
    cb: float,
    T: float,
    lora_out_bytes: float,
) -> float:
    """Inputs kept by a group of frozen linears fed by one norm output (q/k/v or gate/up) under
    LoRA/QLoRA: a frozen linear keeps no input, each adapter's ``lora_A`` keeps its own
    (:func:`_adapter_input`) and its output. bitsandbytes 4-bit linears (QLoRA) keep no input
    either: since bitsandbytes 0.50 ``MatMul4Bit`` saves only the packed weight
    (``ctx.tensors = (None, B)``), the input gradient needs nothing else (H200, bitsandbytes
    0.50.2, Llama-2-7B QLoRA peaks: the older rule that it saves ``A`` over-predicted
    un-checkpointed steps by 7-17 %). Module-level, not a closure: it runs per estimate."""
    out = 0.0
    shared_kept = False
    for n in names:
        if n in lora:
            if not autocast and cb == 4 and not shared_kept:
                out += tensor
                shared_kept = True
            else:
                out += _adapter_input(autocast, cb, T, width, shared_kept)
            out += lora_out_bytes
    return out


def _norm(mode: Mode, T: float, h: float) -> tuple[float, float, float]:
    """One RMSNorm's tensors: (the fp32 input ``pow`` and ``mul`` save, the normalised value
    ``weight * y`` saves, the output the next linears read). autocast: ``4Th + 4Th`` and no
    output tensor of its own (autocast casts it per linear); fp32/tf32: one ``4Th`` output shared
    by the linears; pure bf16/fp16: the fp32 upcast input (``4Th``) and the bf16 normalised
    value (``2Th``)."""
    if mode.autocast:
        return 4.0 * T * h, 4.0 * T * h, 0.0
    if mode.residual == 4:
        return 4.0 * T * h, 4.0 * T * h, 4.0 * T * h
    return 4.0 * T * h, 2.0 * T * h, 2.0 * T * h


def _linear_inputs(
    names: tuple[str, ...],
    h: float,
    norm_out: float,
    full: bool,
    lora: tuple[str, ...],
    autocast: bool,
    cb: float,
    T: float,
    lora_out_bytes: float,
) -> float:
    """Inputs the linears fed by one norm output keep (q/k/v or gate/up). Full fine-tuning:
    autocast casts the fp32 norm output to bf16 once per call (only parameters are cached) and
    each linear saves its copy (``n * 2Th``); otherwise they share the norm output. LoRA/QLoRA:
    :func:`_group_inputs`."""
    if full:
        return len(names) * cb * T * h if autocast else norm_out
    return _group_inputs(names, h, norm_out, lora, autocast, cb, T, lora_out_bytes)


def _attention_core(
    c: TrainConfig, cb: float, autocast: bool, T: float, q: float, kv: float, a: float, groups: float
) -> tuple[float, float, float]:
    """Attention between the projections: (saved, forward transient, backward transient).

    SDPA (flash/cuDNN/efficient: no ``s^2`` term) saves compute-dtype ``q`` (``2Tq``), ``k`` and
    ``v`` (``2Tkv`` each), the output (``2Tq``, shared with ``o_proj``'s input) and an fp32
    log-sum-exp per head and token (``4Ta``). Eager attention saves ``q``, repeated ``k`` and
    ``v`` (``repeat_kv`` materialises ``q``-sized copies under GQA), the fp32 softmax output
    (``4*b*a*s^2``), its compute-dtype copy for the ``attn @ v`` matmul (autocast or
    ``.to(query.dtype)``), and the contiguous output; dropout is absent (``attention_dropout = 0``
    returns its input). In fp32/tf32 with grouped-query attention SDPA has no fused kernel
    (flash needs 16-bit, memory-efficient attention does not take ``enable_gqa``) and runs the
    math kernel, whose memory equals eager attention's -- measured on the H200 with torch 2.11."""
    b, s = c.batch_size, c.seq_len
    if c.attention == "eager" or (cb == 4 and groups > 1):
        s2 = float(b) * a * float(s) * float(s)
        kv_rep = q if groups > 1 else kv
        core = cb * T * q + 2 * cb * T * kv_rep + 4.0 * s2 + (cb * s2 if cb != 4 else 0.0) + cb * T * q
        forward = (2 * cb + 4.0 + 4.0) * s2 + 4.0 * b * float(s) * float(s)
        return core, forward, (cb + 4.0 + 4.0) * s2
    core = 2 * cb * T * q + 2 * cb * T * kv + 4.0 * T * a
    forward = 4.0 * T * (q + kv) if autocast else 0.0
    # flash backward: dq, dk, dv (k/v expanded to q heads under GQA) + fp32 dq accumulator
    return core, forward, cb * T * q * 3 + 4.0 * T * q


def _mlp_saved(
    m: DecoderSpec,
    cb: float,
    autocast: bool,
    T: float,
    f: float,
    h: float,
    act_experts: float,
    full: bool,
    lora: tuple[str, ...],
    lora_out_bytes: float,
) -> float:
    """SwiGLU MLP: gate output (SiLU input), SiLU output, up output (``3 * 2Tf``) and, under full
    fine-tuning, their product (the down projection's input); an adapter on ``down_proj`` keeps
    its own input. MoE: each token's hidden state goes through ``experts_per_token`` experts,
    plus the fp32 router logits."""
    mlp = cb * T * f * 3.0  # gate out (SiLU input), SiLU out, up out
    if full:
        mlp += cb * T * f  # product = down input
    if "down_proj" in lora:
        mlp += (
            _adapter_input(autocast, cb, T, f, full)
            if not (cb == 4 and not autocast)
            else (0.0 if full else cb * T * f)
        ) + lora_out_bytes
    if m.num_experts > 1:
        mlp = mlp * act_experts + 4.0 * T * m.num_experts + cb * T * h * act_experts
    return mlp


def _weight_copies(c: TrainConfig, mode: Mode, d: _Dims, layer0: bool, full: bool) -> float:
    """The bf16 copy of every matmul weight autocast saves for backward (every expert is cast:
    with many tokens every expert receives some); none under QLoRA, whose 4-bit weights are
    dequantised per call. Layer 0 under LoRA: frozen q/k/v see an input without grad and keep
    no copy."""
    if not mode.autocast or c.finetune == "qlora":
        return 0.0
    copies = mode.compute * d.layer_matmul
    if layer0 and not full:
        copies -= mode.compute * d.qkv_weights / c.tensor_parallel
    return copies


def _transients(
    mode: Mode, T: float, d: _Dims, moe: bool, full: bool, qlora: bool, core_fwd: float, core_bwd: float
) -> tuple[float, float]:
    """The largest extra buffers alive during one layer's forward and backward: attention's
    (:func:`_attention_core`) or the MLP's intermediates, whichever is larger; the MLP's backward
    adds the weight gradient under full fine-tuning and QLoRA's dequantised weight for the input
    gradient; the backward always holds two hidden-size gradients of the residual stream."""
    cb, f = mode.compute, d.f
    mlp_fwd = cb * T * f * (2.0 if not moe else 2.0 * d.act_experts)
    wgrad = (cb + mode.grad) * d.w_mlp if full else 0.0
    mlp_bwd = 3.0 * cb * T * f + wgrad
    if qlora:
        mlp_bwd += 2.0 * d.w_mlp
    return max(core_fwd, mlp_fwd), max(core_bwd, mlp_bwd) + 2.0 * cb * T * d.h


_QKV = ("q_proj", "k_proj", "v_proj")
_GATE_UP = ("gate_proj", "up_proj")


def _decoder_layer_saved(
    m: DecoderSpec, c: TrainConfig, layer0: bool = False, mode: Mode | None = None, d: _Dims | None = None
) -> _Layer:
    """One Llama decoder layer's memory terms, tensor by tensor (``T = b*s`` tokens, per
    tensor-parallel shard: ``q = heads*head_dim/tp``, ``kv = kv_heads*head_dim/tp``,
    ``f = ffn/tp``): saved = input norm + q/k/v inputs + attention + o_proj adapter +
    post-attention norm + gate/up inputs + MLP, each a named term below. Under LoRA/QLoRA
    (frozen base, adapters on ``lora_targets``) a frozen norm weight keeps only the norm input,
    and layer 0's input has no gradient (frozen embeddings), so its input norm keeps nothing.

    ``mode`` and ``d`` are ``c.mode`` and ``_dims(m, c.tensor_parallel)`` when the caller has them.
    """
    if mode is None:
        mode = c.mode
    if d is None:
        d = _dims(m, c.tensor_parallel)
    T = 1.0 * (c.batch_size * c.seq_len)  # float(b * s) without float's constructor call
    # one unpacking: a named tuple's fields read by name each cost a generic attribute lookup
    h, q, kv, f, a, groups, act_experts, *_ = d
    cb, autocast = mode.compute, mode.autocast
    full = c.finetune == "full"
    lora: tuple[str, ...] = () if full else c.lora_targets
    lora_out = (cb if autocast else 4.0) * T * c.lora_rank
    norm_x, norm_y, norm_out = _norm(mode, T, h)
    norm_kept = norm_x + (norm_y if full else 0.0)
    core, core_fwd, core_bwd = _attention_core(c, cb, autocast, T, q, kv, a, groups)
    # summed in the order autograd saves them (float addition is not associative)
    saved = (
        (0.0 if layer0 and not full else norm_kept)
        + _linear_inputs(_QKV, h, norm_out, full, lora, autocast, cb, T, lora_out)
        + core
        # the attention output is saved by SDPA already (shared in fp32)
        + (_adapter_input(autocast, cb, T, q, True) + lora_out if "o_proj" in lora else 0.0)
        + norm_kept
        + _linear_inputs(_GATE_UP, h, norm_out, full, lora, autocast, cb, T, lora_out)
        + _mlp_saved(m, cb, autocast, T, f, h, act_experts, full, lora, lora_out)
    )
    moe, qlora = m.num_experts > 1, c.finetune == "qlora"
    forward, backward = _transients(mode, T, d, moe, full, qlora, core_fwd, core_bwd)
    copies = _weight_copies(c, mode, d, layer0, full)
    # tuple.__new__ skips the named tuple's Python-level __new__
    return tuple.__new__(_Layer, (saved, copies, forward, backward, mode.residual * T * h))


def _layer0(
    m: DecoderSpec, c: TrainConfig, top: _Layer, mode: Mode | None = None, d: _Dims | None = None
) -> _Layer:
    """Layer 0 under LoRA/QLoRA, from a later layer: the frozen embeddings give its input no
    gradient, so its input norm keeps nothing, its frozen q/k/v keep neither input nor weight
    copy. Equals
    ``_decoder_layer_saved(m, c, layer0=True)``; computed as a difference for speed."""
    if mode is None:
        mode = c.mode
    tp = c.tensor_parallel
    T = 1.0 * (c.batch_size * c.seq_len)  # as float(...), cheaper
    h = 1.0 * m.hidden_size
    saved, copies, forward_transient, backward_transient, checkpoint = top
    saved -= 4.0 * T * h  # input RMSNorm's saved fp32 input
    if copies:
        copies -= mode.compute * (d if d is not None else _dims(m, tp)).qkv_weights / tp
    return tuple.__new__(_Layer, (saved, copies, forward_transient, backward_transient, checkpoint))


def _lora_params(m: DecoderSpec, c: TrainConfig) -> int:
    """Adapter parameters: ``r * (in + out)`` per target module per layer (experts each)."""
    shapes = m.linear_shapes()
    per_layer = sum(c.lora_rank * (shapes[t][0] + shapes[t][1]) * shapes[t][2] for t in c.lora_targets)
    return per_layer * m.num_layers


def _optimizer_bytes(
    c: TrainConfig,
    trainable: float,
    state_bytes: float,
    largest: float,
    shapes: list[tuple[int, int]] | None = None,
    forloop_elements: float | None = None,
) -> tuple[float, float]:
    """(persistent state bytes, transient bytes during ``step()``), per rank.

    ``trainable`` and ``largest`` are the rank's trainable elements and its largest trainable
    tensor; ``forloop_elements`` the largest ``previous + 2 x current`` tensor sizes in
    parameter registration order (default ``3 x largest``, an upper bound).

    AdamW (``torch/optim/adamw.py``, torch 2.x) keeps two states (``exp_avg``,
    ``exp_avg_sq``) in the parameter dtype. Its step temporaries depend on the implementation
    (:attr:`TrainConfig.optimizer_impl`):

    * ``fused`` (``_fused_adamw_``): one kernel per tensor list, nothing materialised;
    * ``foreach`` (``_multi_tensor_adam``, the default of ``torch.optim.AdamW(params)`` on CUDA):
      per parameter group and (device, dtype), ``exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)``
      materialises one state-dtype copy of the whole group; the bias corrections are Python
      floats, the division, ``+ eps`` and ``addcdiv`` work in place on that list. With one
      parameter group (``AdamW(model.parameters())``) that is one copy of every trainable
      parameter on the rank (an FSDP2 rank's DTensor shards, whose foreach ops run on the local
      shards);
    * ``forloop`` (``_single_tensor_adam``): per tensor, ``denom = (exp_avg_sq.sqrt() /
      bias_correction2_sqrt).add_(eps)`` holds the ``sqrt`` result and the quotient at once
      while the previous tensor's ``denom`` is still bound: ``previous + 2 x current``.

    SGD with momentum (no Nesterov): the momentum buffer is updated in place by every
    implementation, no temporaries. Adafactor (transformers, ``beta1=None``): factored second
    moment, row + column vectors in fp32 for matrices, a full fp32 vector otherwise; the update
    needs one fp32 temporary the size of the largest parameter. 8-bit AdamW (bitsandbytes): two
    uint8 states plus an fp32 absmax per block of 256, updated by its own fused kernel.
    """
    if c.optimizer == "adamw":
        state = 2.0 * trainable * state_bytes
        if c.optimizer_impl == "foreach":
            temp = trainable * state_bytes
        elif c.optimizer_impl == "forloop":
            temp = (forloop_elements if forloop_elements is not None else 3.0 * largest) * state_bytes
        else:
            temp = 0.0
    elif c.optimizer == "sgd":
        state = 1.0 * trainable * state_bytes
        temp = 0.0
    elif c.optimizer == "adamw_8bit":
        state = 2.0 * trainable * (1.0 + 4.0 / 256)
        temp = 0.0
    else:  # adafactor
        if shapes:
            state = 4.0 * sum(float(r + k) for r, k in shapes)
            state += 4.0 * max(0, trainable - sum(r * k for r, k in shapes))
        else:
            state = 4.0 * 2.0 * math.sqrt(float(trainable)) * 64
        temp = 4.0 * 2.0 * largest
    return state, temp


def _forloop_window(sizes: list[float]) -> float:
    """``max(previous + 2 x current)`` over tensors in registration order (elements)."""
    best = 0.0
    prev = 0.0
    for x in sizes:
        best = max(best, prev + 2.0 * x)
        prev = x
    return best


class _Trainables(NamedTuple):
    """What the optimizer sees of a decoder's trainable tensors, before sharding (elements)."""

    largest: float  # the largest trainable tensor
    window: float  # the for-loop window (:func:`_forloop_window`)
    adapters: int  # LoRA adapter parameters (:func:`_lora_params`; 0 for full training)
    targets: str  # the LoRA targets, sorted and comma-joined, as the notes name them
    notes: dict[int, str]  # the LoRA note by tensor_parallel (:func:`_lora_note`), filled as met


_ORDER_CACHE: dict[tuple[int, str, tuple[str, ...], int], tuple[DecoderSpec, _Trainables]] = {}


def _decoder_trainables(m: DecoderSpec, c: TrainConfig) -> _Trainables:
    """:class:`_Trainables` of ``m`` under ``c``'s fine-tuning method, LoRA targets and rank:
    functions of the model and those three alone, memoised per model (bounded)."""
    full = c.finetune == "full"
    key = (id(m), "full" if full else "lora", c.lora_targets, c.lora_rank)
    hit = _ORDER_CACHE.get(key)
    if hit is None or hit[0] is not m:
        if len(_ORDER_CACHE) > 4096:
            _ORDER_CACHE.clear()
        largest, window = _parameter_order(m, c)
        hit = _ORDER_CACHE[key] = (
            m,
            _Trainables(
                largest, window, 0 if full else _lora_params(m, c), ",".join(sorted(c.lora_targets)), {}
            ),
        )
    return hit[1]


def _lora_note(order: _Trainables, rank: int, tp: int, adapters: float) -> str:
    """The LoRA note for ``adapters = order.adapters / tp``, kept in ``order.notes``: a function
    of the model, targets, rank and ``tp`` alone (formatting ``,.0f`` costs more than a lookup)."""
    note = order.notes[tp] = (
        f"LoRA rank {rank} on {order.targets}: {adapters:,.0f} trainable parameters (fp32 adapters)"
    )
    return note


def _parameter_order(m: DecoderSpec, c: TrainConfig) -> tuple[float, float]:
    """(largest trainable tensor, for-loop window) in elements per rank, from the Hugging Face
    registration order: embeddings; per layer q, k, v, o, gate, up, down (experts each, router),
    two norms; final norm; LM head. LoRA: ``lora_A`` (``r x in``) then ``lora_B``
    (``out x r``) per targeted module."""
    shapes = m.linear_shapes()
    h = float(m.hidden_size)
    if c.finetune == "full":
        layer = [float(i * o) for i, o, k in shapes.values() for _ in range(k)] + [h, h]
        head = [h] + ([] if m.tie_word_embeddings else [float(m.vocab_size) * h])
        order = [float(m._c().embedding), *layer, *layer[:1], *head]
    else:
        layer = []
        for name, (i, o, k) in shapes.items():
            if name in c.lora_targets:
                layer += [float(c.lora_rank * i), float(c.lora_rank * o)] * k
        order = layer + layer[:2] if layer else [0.0]
    return max(order), _forloop_window(order)
