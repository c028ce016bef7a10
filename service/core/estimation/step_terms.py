"""What the step-time model reads of a model, computed once per (model, shard, mode): kernel counts
and host costs per launched kernel, the shapes of each term, LoRA adapters, NF4 dequantisation and
the MoE expert loop, with the measurements each constant comes from."""

from __future__ import annotations

from typing import NamedTuple

from service.core.catalog.models import DecoderSpec, EncoderSpec
from service.core.estimation.efficiencies import Efficiencies

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


ATTN_SEQ0 = 1500.0
"""Sequence length (tokens) at which a causal fused-attention kernel reaches half its ceiling.
Measured on Hopper (``data/probes/h100-attention-kernels-2026-12-06.jsonl``, torch 2.11, whose
SDPA runs cuDNN's fused flash kernels on sm90 by default; bf16, 32 heads, 16,384 tokens a call,
forward + backward): 25 % of the dense peak at 1,024 tokens, 36 % at 2,048, 46 % at 4,096, 53 %
at 8,192 and 16,384 with head dim 128 (19-45 % with 64). ``s / (s + s0)`` fits them with s0 =
1,400 (128) and 1,650 (64), rms 3 % and 0.4 %; FlashAttention-2 forced: 1,150 and 1,250. Short
rows spend a larger share in the diagonal tiles the mask half-fills and in each tile's softmax
bookkeeping."""
ATTN_FWD_SEQ0 = 800.0
"""The same for the forward pass alone (prefill): the probe's forward-only default-dispatch
figures (39-66 % of the peak at 1,024-16,384 tokens, head dim 128; 24-47 % at 64) fit s0 = 650
and 1,000 (rms 3 %): the backward's longer per-tile work needs longer rows to amortise."""
ATTN_SEQ_REF = 2048.0
"""The sequence length the attention efficiency ``Efficiencies.attn`` is quoted at: the factor
below is 1 there, so the spec default keeps its meaning."""


FA2_ON_HOPPER = 0.62
"""FlashAttention-2 (the flash-attn package: ``attn_implementation="flash_attention_2"``, or a
stack that calls it) against the default SDPA kernel on Hopper, forward + backward. Measured on
the lent H100 (``data/probes/h100-attention-kernels-2026-12-06.jsonl``, torch 2.11, bf16, causal):
0.55-0.65 of the default's speed with head dim 128 and 0.62-0.72 with 64 at 1,024-16,384 tokens a
row, geometric mean 0.626 over the ten cells. FA2 issues Ampere's ``mma.sync``; the default on sm90
is cuDNN's fused flash kernels on ``wgmma`` (the profiler's ``sm90_flash_fprop/bprop_wgmma``).
On Ampere and Ada FA2 *is* SDPA's flash backend (factor 1); on Blackwell it was not measured and is
left at 1."""


def attention_kernel_factor(attention: str, compute_capability: str | None) -> float:
    """The attention kernel's speed against the default SDPA dispatch the efficiencies were
    fitted with: :data:`FA2_ON_HOPPER` for FlashAttention-2 on a Hopper part (compute 9.x), else
    1 (the math kernel is timed on its own path)."""
    if attention == "flash_attention_2" and (compute_capability or "").startswith("9."):
        return FA2_ON_HOPPER
    return 1.0


def attention_length_factor(seq_len: float, causal: float, seq0: float = ATTN_SEQ0) -> float:
    """Causal fused attention's efficiency at ``seq_len`` against :data:`ATTN_SEQ_REF`: forward
    and backward (:data:`ATTN_SEQ0`), or forward alone with ``seq0`` = :data:`ATTN_FWD_SEQ0`;
    bidirectional encoders keep 1 (not measured)."""
    if causal >= 1.0 or seq_len <= 0:
        return 1.0
    return (seq_len / (seq_len + seq0)) / (ATTN_SEQ_REF / (ATTN_SEQ_REF + seq0))


def _shape(e: Efficiencies, tokens: float, hidden: float) -> float:
    return tokens / (tokens + e.mm_tokens0) * hidden / (hidden + e.mm_hidden0)


def fused_attention_eff(
    e: Efficiencies, head_dim: float, tokens: float, seq_len: float, causal: float, seq0: float = ATTN_SEQ0
) -> float:
    """Fused (flash) attention's share of the 16-bit peak: the fitted efficiency at the head dim
    and the tokens of the call, scaled by the row length (:func:`attention_length_factor`; ``seq0``
    :data:`ATTN_FWD_SEQ0` for a forward pass alone). The training step, the eager prefill and
    encoder inference all time their attention with it."""
    length = attention_length_factor(seq_len, causal, seq0)
    return min(0.98, e.attn * head_dim / (head_dim + 32.0) * 1.5 * _shape(e, tokens, 1e9) * length)


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
    vocab: float  # the whole vocabulary (logits a gathered tensor-parallel LM head leaves a rank)
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
    moe_experts: int  # experts per MoE layer (0: dense)
    linears: int  # decoder linear matrices (experts each), all layers
    nf4_params: float  # parameters of those matrices (the NF4-quantised ones under QLoRA), per shard


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
        vocab=float(m.vocab_size),
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
        moe_experts=m.num_experts if isinstance(m, DecoderSpec) and m.is_moe else 0,
        linears=sum(k for _, _, k in m.linear_shapes().values()) * L if isinstance(m, DecoderSpec) else 0,
        nf4_params=_linear_params(m, tp) if isinstance(m, DecoderSpec) else 0.0,
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
"""One 4-bit dequantisation of a weight in eager 4-bit prefill (serving: bnb-nf4, AWQ, GPTQ): read
the packed 4-bit value and its block's scale, write the 16-bit weight the GEMM then reads. QLoRA
training uses bitsandbytes' measured path instead (:data:`NF4_PASS_BYTES_PER_PARAM`,
:func:`qlora_terms`)."""

DEQUANT_RATE = 0.59
"""Asymptotic rate of an NF4 dequantisation kernel relative to the bandwidth elementwise kernels
reach: measured on the H200 (issue-25 probe, a Triton kernel of bitsandbytes' format, since
bitsandbytes is not installed there): 1.65 TB/s on 58.7M-parameter matrices against a 4.21 TB/s
copy; smaller matrices reach less (0.89 TB/s at 16.8M), modelled as a size ``n0`` of
:data:`DEQUANT_HALF_PARAMS` added to each matrix (a fixed cost per kernel)."""

DEQUANT_HALF_PARAMS = 30.3e6
"""Matrix size (parameters) at which the dequantisation kernel runs at half its asymptotic rate
(fitted on the two measured sizes: 0.89 TB/s at 16.8M, 1.65 TB/s at 58.7M)."""


NF4_PASS_BYTES_PER_PARAM = 0.5 + 1.0 / 64.0 + 4.0 * 4.0 / 64.0 + 2.0
"""HBM bytes per weight of one bitsandbytes NF4 dequantisation (``dequantize_4bit``, double
quantisation, blocks of 64, bitsandbytes 0.50): read the packed nibble (0.5) and the 8-bit absmax
(1/64); the absmax dequantisation writes it as fp32 (4/64), the offset add reads and writes it
(8/64), the NF4 kernel reads it (4/64); write the 16-bit weight (2). The GEMM then reads that
buffer where LoRA's reads the bf16 weight: no extra GEMM traffic. On the H200 at 8k tokens a
step's two passes cost less than this (QLoRA 677 ms vs LoRA 675 ms for Llama-2-7B; the model
says +10 ms): the freshly written buffer is partly read back from L2. Kept at the full traffic
(no per-GPU L2 figure in the catalog)."""

QLORA_HOST_UNITS_FWD = 5.5
"""Host time bitsandbytes adds per NF4 linear in forward (and in a checkpointed recompute), in
units of ``Efficiencies.dispatch_s`` (one backward kernel's host time; 29 us on the probe host):
``Linear4bit.forward`` -> ``matmul_4bit`` -> the Python ``MatMul4Bit`` autograd function, the
heuristic of which GEMM path to take, the absmax dequantisation, the offset add, the buffer
allocation and the NF4 kernel, all issued from Python. H200 probe
(``data/probes/h200-qlora-2026-12-04.jsonl``, bitsandbytes 0.50.2): median +161 us over a bf16
``F.linear`` across 6 shapes x 512-8192 tokens (82-268 us); Llama-2-7B b1 x 2048 forward issued
in 104 ms against 61 ms for LoRA (+192 us per linear)."""

QLORA_HOST_UNITS_BWD = 1.9
"""Host time bitsandbytes adds per NF4 linear in backward (``MatMul4Bit.backward`` in Python:
dequantise again, then the input-gradient GEMM), in the same units: Llama-2-7B b1 x 2048 backward
issued in 105 ms against 94 ms for LoRA (+49 us per linear, H200 probe). An isolated linear's
``backward()`` shows +400 us, mostly the autograd engine's hand-off for a one-node graph, which a
full step pays once."""


def qlora_terms(
    sh: _StepShape, bw: float, dispatch_s: float, checkpointed: bool
) -> tuple[float, float, float, float]:
    """QLoRA's cost beside LoRA's (bitsandbytes' path, what users run): every frozen NF4 linear
    is dequantised to a 16-bit buffer before each of its GEMMs -- forward, the input-gradient GEMM
    in backward and, checkpointed, the recompute -- each pass its traffic
    (:data:`NF4_PASS_BYTES_PER_PARAM` at ``bw``, the elementwise bandwidth) and its Python
    launches (:data:`QLORA_HOST_UNITS_FWD` / :data:`QLORA_HOST_UNITS_BWD`). Returns (GPU forward,
    GPU backward, host forward, host backward) seconds per micro-step."""
    t_pass = sh.nf4_params * NF4_PASS_BYTES_PER_PARAM / bw
    host_fwd = sh.linears * QLORA_HOST_UNITS_FWD * dispatch_s
    host_bwd = sh.linears * QLORA_HOST_UNITS_BWD * dispatch_s
    if checkpointed:
        return t_pass, 2.0 * t_pass, host_fwd, host_bwd + host_fwd
    return t_pass, t_pass, host_fwd, host_bwd


def _linear_params(m: DecoderSpec, tp: int) -> float:
    """Parameters of every decoder linear matrix (experts each), all layers, per shard."""
    return float(sum(k * i * o for i, o, k in m.linear_shapes().values())) * m.num_layers / tp


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
