"""Decoder-only transformers (:class:`DecoderSpec`) and their exact parameter counts.

The layout is Hugging Face ``LlamaForCausalLM`` and its relatives (Mistral, Mixtral,
Qwen2/Qwen3, GPT-3-style with learned positions and LayerNorm), widened to the sparse models
deployed in 2026: multi-head latent attention (DeepSeek-V2/V3, ``DeepseekV3Attention``), routed
plus shared experts with top-k routing and leading dense layers (DeepSeek-V3, Qwen3-MoE,
Llama-4's interleaved MoE layers), biased experts and attention sinks (GPT-OSS), and
multi-token-prediction (MTP) modules. Counts match ``sum(p.numel() for p in
model.parameters())`` of the Hugging Face implementation (tied embeddings counted once).

Counting rules for one layer (``h`` hidden size, ``a`` heads, ``k`` KV heads, ``d`` head_dim,
``f`` dense FFN size, ``fe`` expert FFN size, ``E`` routed and ``S`` shared experts):

* attention (grouped-query): ``q: h*a*d``, ``k: h*k*d``, ``v: h*k*d``, ``o: a*d*h`` (+ biases:
  Llama's ``attention_bias`` puts a bias on all four projections; Qwen2 biases q/k/v only,
  which is ``qkv_bias_only=True``); GPT-OSS adds one learned sink logit per head;
* attention (MLA, rank ``r_q`` for queries, ``r_kv`` for the KV latent, RoPE width ``d_r``,
  value width ``d_v``, ``d = d_nope + d_r``): ``q_a: h*r_q`` + norm ``r_q``, ``q_b: r_q*a*d``
  (``q: h*a*d`` without ``r_q``), ``kv_a: h*(r_kv + d_r)`` + norm ``r_kv``,
  ``kv_b: r_kv*a*(d_nope + d_v)``, ``o: a*d_v*h``;
* MLP: gated (SwiGLU) ``3*h*f`` (gate, up, down) or plain ``2*h*f`` (+ biases); an MoE layer
  holds ``E + S`` experts of width ``fe`` and a router ``h*E`` (+ ``E`` for a router bias or
  DeepSeek-V3's ``e_score_correction_bias``). Layers before ``first_k_dense_replace``, and with
  ``moe_layer_step > 1`` those whose index + 1 is not a multiple of it, are dense (width ``f``);
* norms: two per layer (``h`` for RMSNorm, ``2h`` for LayerNorm), one final norm;
* embeddings ``V*h`` (+ learned positions ``P*h``), LM head ``V*h`` unless tied.

Worked check (Llama-2-7B): per layer ``4*4096^2 + 3*4096*11008 + 2*4096 = 202,383,360``;
``32`` layers + embeddings + LM head + final norm = ``6,738,415,616``, the figure Hugging Face
reports. Exact counts for every preset are asserted in ``tests/core/test_models.py``; the sparse
presets are checked against their model cards' totals in ``tests/core/test_models_sparse.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

__all__ = ["CHECKPOINT_FORMATS", "DecoderSpec", "UnsupportedArchitecture", "checkpoint_format"]


class UnsupportedArchitecture(ValueError):
    """A configuration whose architecture the estimator cannot count correctly.

    Refused rather than approximated: a wrong parameter count silently corrupts every
    memory and time figure derived from it. ``architecture`` names what was refused.
    """

    def __init__(self, architecture: str, reason: str) -> None:
        super().__init__(f"unsupported architecture {architecture!r}: {reason}")
        self.architecture = architecture
        self.reason = reason


@dataclass(frozen=True, slots=True)
class DecoderSpec:
    """A decoder-only transformer (Llama family layout unless stated otherwise).

    ``head_dim`` is explicit (Hugging Face configs may set it independently of
    ``hidden_size / num_heads``; with MLA it is the query/key width ``qk_nope + qk_rope``).
    ``num_experts == 1`` means a dense MLP; otherwise MoE layers hold ``num_experts`` routed
    experts (top-``experts_per_token``) plus ``num_shared_experts`` every token passes through.
    """

    id: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool
    attention_bias: bool
    mlp_bias: bool
    gated_mlp: bool
    num_experts: int
    experts_per_token: int
    max_position_embeddings: int
    rope_theta: float
    rms_norm_eps: float
    hf_id: str | None
    family: str
    qkv_bias_only: bool = False
    """With ``attention_bias``: bias on q/k/v but not o (Qwen2); Llama biases all four."""
    qk_norm: bool = False
    """Per-head RMSNorm on queries and keys (Qwen3): ``2*head_dim`` parameters per layer."""
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    position_embedding: Literal["rope", "learned"] = "rope"
    activation: str = "silu"
    sliding_window: int | None = None
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    # ---- sparse models (defaults: a dense GQA model) ------------------------------------
    moe_intermediate_size: int = 0
    """Width of one expert's FFN when it differs from the dense layers' (0: ``intermediate_size``)."""
    num_shared_experts: int = 0
    """Experts of an MoE layer every token passes through (DeepSeek-V3: 1, Llama-4: 1)."""
    first_k_dense_replace: int = 0
    """Leading layers with a dense MLP of width ``intermediate_size`` (DeepSeek-V3: 3)."""
    moe_layer_step: int = 1
    """Every ``moe_layer_step``-th layer is MoE (Llama-4 Maverick: 2); the others are dense."""
    router_bias: bool = False
    """A per-expert bias on the router (GPT-OSS; DeepSeek-V3's ``e_score_correction_bias``)."""
    attention_sinks: bool = False
    """One learned sink logit per head and layer (GPT-OSS)."""
    checkpoint_format: str = "none"
    """The weight format the published checkpoint ships in (``quantization_config.quant_method``
    of its config.json: DeepSeek-V3 ``fp8``, gpt-oss ``mxfp4``): what an engine loads unless a
    workload asks for another."""
    kv_lora_rank: int = 0
    """Multi-head latent attention: width of the compressed KV latent (0: grouped-query attention)."""
    q_lora_rank: int = 0
    """MLA: rank of the query down-projection (0: a full-rank query projection)."""
    qk_rope_head_dim: int = 0
    """MLA: the decoupled RoPE part of each query/key head, cached once per token (shared by heads)."""
    v_head_dim: int = 0
    """MLA: width of each value head (0: ``head_dim``)."""
    mtp_layers: int = 0
    """Multi-token-prediction modules shipped with the checkpoint (``num_nextn_predict_layers``);
    Hugging Face does not build them, engines load them for MTP speculative decoding."""
    kind: Literal["decoder"] = field(default="decoder", init=False)

    def __post_init__(self) -> None:
        for name in (
            "hidden_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "head_dim",
            "intermediate_size",
            "vocab_size",
            "num_experts",
            "experts_per_token",
            "moe_layer_step",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{self.id}: {name} must be >= 1")
        for name in ("moe_intermediate_size", "num_shared_experts", "first_k_dense_replace", "mtp_layers"):
            if getattr(self, name) < 0:
                raise ValueError(f"{self.id}: {name} must be >= 0")
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"{self.id}: num_heads must be a multiple of num_kv_heads")
        if self.experts_per_token > self.num_experts:
            raise ValueError(f"{self.id}: experts_per_token > num_experts")
        if self.kv_lora_rank and not 0 < self.qk_rope_head_dim < self.head_dim:
            raise ValueError(f"{self.id}: MLA needs 0 < qk_rope_head_dim < head_dim")

    # ---- derived shapes ----------------------------------------------------------------

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention: K and V are cached as one shared latent per token."""
        return self.kv_lora_rank > 0

    @property
    def q_dim(self) -> int:
        """Width of the query projection output, ``num_heads * head_dim``."""
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width each token writes per layer for K (and again for V): ``num_kv_heads * head_dim``;
        with MLA the one latent cached in their place, ``kv_lora_rank + qk_rope_head_dim``."""
        if self.is_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.num_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 1

    @property
    def is_sparse_layout(self) -> bool:
        """A layout beyond dense / Mixtral (MLA, shared or narrow experts, dense layers among
        MoE ones, biased routers, sinks): the training-memory model does not cover it."""
        return bool(
            self.is_mla
            or self.num_shared_experts
            or self.moe_intermediate_size
            or self.first_k_dense_replace
            or self.moe_layer_step > 1
            or self.router_bias
            or self.attention_sinks
        )

    @property
    def expert_intermediate_size(self) -> int:
        """FFN width of one expert (``moe_intermediate_size``, else ``intermediate_size``)."""
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def moe_layers(self) -> int:
        """Layers with an MoE MLP (0 for a dense model)."""
        return self._c().moe_layers

    @property
    def ffn_active_width(self) -> float:
        """FFN width one token passes through, mean over layers: ``intermediate_size`` in a dense
        layer, ``(top-k + shared) * expert width`` in an MoE layer (elementwise traffic)."""
        c = self._c()
        moe = (
            c.moe_layers * (self.experts_per_token + self.num_shared_experts) * self.expert_intermediate_size
        )
        return float((self.num_layers - c.moe_layers) * self.intermediate_size + moe) / self.num_layers

    @property
    def ffn_peak_width(self) -> int:
        """The widest FFN activation one token has in any layer (the prefill working set)."""
        moe = (self.experts_per_token + self.num_shared_experts) * self.expert_intermediate_size
        dense = self.intermediate_size if self.num_layers > self._c().moe_layers else 0
        return max(dense, moe if self.is_moe else 0) or self.intermediate_size

    def attention_flops_per_ctx_token(self, phase: Literal["prefill", "decode"] = "decode") -> float:
        """Attention FLOPs per query token, per context token and layer: ``QK^T`` and ``PV``,
        ``4 * heads * head_dim`` for grouped-query attention. MLA prefills with K and V expanded
        from the latent (``2 * heads * (d_nope + d_rope) + 2 * heads * d_v``) and decodes with the
        up-projections absorbed, attending over the latent itself (``2 * heads * (r_kv + d_rope)
        + 2 * heads * r_kv``), as DeepSeek's, vLLM's and SGLang's MLA kernels do."""
        if not self.is_mla:
            return 4.0 * self.q_dim
        a, dv = self.num_heads, self.v_head_dim or self.head_dim
        if phase == "prefill":
            return 2.0 * a * self.head_dim + 2.0 * a * dv
        return 2.0 * a * self.kv_dim + 2.0 * a * self.kv_lora_rank

    def tp_splits_heads(self, tensor_parallel: int) -> bool:
        """Whether a tensor-parallel group of this size shards the attention as vLLM and SGLang do:
        the KV heads split over the ranks, or, with more ranks than KV heads, each replicated on
        ``tensor_parallel / num_kv_heads`` ranks while the query heads still split."""
        tp, kv = tensor_parallel, self.num_kv_heads
        return kv % tp == 0 or (tp % kv == 0 and self.num_heads % tp == 0)

    def kv_shards(self, tensor_parallel: int) -> int:
        """Over how many GPUs of a tensor-parallel group the KV cache is split: the KV heads
        are, at most one head per rank (with more ranks than KV heads each head is kept on
        ``tensor_parallel / num_kv_heads`` ranks, as vLLM and SGLang replicate them); an MLA
        latent is one head every rank keeps whole (1), as their MLA backends do."""
        if self.is_mla:
            return 1
        return min(tensor_parallel, self.num_kv_heads)

    def linear_shapes(self) -> Mapping[str, tuple[int, int, int]]:
        """Per-layer linear modules as ``name -> (in_features, out_features, copies)``.

        ``copies`` is the number of experts for MoE expert weights (routed + shared, as in an
        MoE layer), 1 otherwise. The names are the Hugging Face module names LoRA targets
        (``q_proj``, ``gate_proj``...). The mapping is shared (memoised); do not mutate it.
        """
        return self._c().shapes

    # ---- parameter counts (elements) ---------------------------------------------------
    # Computed once per spec (see _decoder_counts) and memoised: estimates read them often.
    # "Per layer" figures are means over the layers where dense and MoE layers differ.

    def _c(self) -> _Counts:
        hit = _COUNT_CACHE.get(id(self))
        if hit is not None and hit[0] is self:
            return hit[1]
        counts = _decoder_counts(self)
        if len(_COUNT_CACHE) > 4096:
            _COUNT_CACHE.clear()
        _COUNT_CACHE[id(self)] = (self, counts)
        return counts

    @property
    def attention_params_per_layer(self) -> int:
        """q, k, v, o projections (MLA: its down/up projections and latent norms) plus their
        biases, q/k norms and sinks."""
        return self._c().attention

    @property
    def expert_params(self) -> int:
        """One expert's (or the dense MLP's) parameters: gate/up/down weights + biases."""
        return self._c().expert

    @property
    def routed_expert_params(self) -> int:
        """All routed experts of all MoE layers (the weights a decode step reads only in part)."""
        return self._c().moe_layers * self.num_experts * self._c().expert if self.is_moe else 0

    @property
    def router_params_per_layer(self) -> int:
        return self._c().router_total // self.num_layers

    @property
    def mlp_params_per_layer(self) -> int:
        """All experts (total) plus the router."""
        return self._c().mlp_total // self.num_layers

    @property
    def mlp_active_params_per_layer(self) -> int:
        """The experts one token passes through, plus the router."""
        return self._c().mlp_active_total // self.num_layers

    @property
    def norm_params_per_layer(self) -> int:
        return self._c().norms

    @property
    def params_per_layer(self) -> int:
        return self._c().per_layer

    @property
    def active_params_per_layer(self) -> int:
        return self._c().active_per_layer

    @property
    def embedding_params(self) -> int:
        """Token embeddings plus learned position embeddings (GPT-3 layout)."""
        return self._c().embedding

    @property
    def lm_head_params(self) -> int:
        """Untied output projection ``V*h`` (0 when tied to the embeddings)."""
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    @property
    def final_norm_params(self) -> int:
        return self.hidden_size * (2 if self.norm == "layernorm" else 1)

    @property
    def total_params(self) -> int:
        """Every parameter tensor counted once (what ``model.num_parameters()`` reports); MTP
        modules are not part of it (:attr:`mtp_params`)."""
        return self._c().total

    @property
    def active_params(self) -> int:
        """Parameters one token touches in the forward pass (MoE: top-k + shared experts)."""
        return self._c().active

    @property
    def mtp_params(self) -> int:
        """The MTP modules as DeepSeek-V3's checkpoint ships them (each an MoE decoder layer,
        two input norms, a ``2h -> h`` projection, an output norm, and its own embedding and
        head copies: 14B for DeepSeek-V3, its model card says)."""
        c = self._c()
        if not self.mtp_layers:
            return 0
        h = self.hidden_size
        layer = c.attention + (c.moe_mlp if self.is_moe else c.dense_mlp) + c.norms
        one = layer + 3 * h + 2 * h * h + 2 * self.vocab_size * h
        return self.mtp_layers * one

    @property
    def non_embedding_params(self) -> int:
        """Total minus token/position embeddings and an untied LM head."""
        return self.total_params - self.embedding_params - self.lm_head_params

    @property
    def matmul_params_per_token(self) -> int:
        """Weights multiplied per token in the forward pass: active layer linears + LM head.

        The LM head multiplies ``V*h`` whether or not it is tied; embedding lookups and norms
        do no matmul. This is the ``N`` in the ``2N`` FLOPs-per-token rule.
        """
        return self._c().matmul_per_token

    def kv_cache_bytes_per_token(self, bytes_per_element: float = 2.0) -> float:
        """KV cache per token over all layers: ``2 (K and V) * layers * kv_heads * head_dim *
        bytes``; with MLA one latent ``layers * (kv_lora_rank + qk_rope_head_dim) * bytes``
        (DeepSeek-V3 in bf16: 70,272 bytes, against 4,194,304 for its 128 heads uncompressed)."""
        if self.is_mla:
            return float(self.num_layers * self.kv_dim) * bytes_per_element
        return 2.0 * self.num_layers * self.kv_dim * bytes_per_element

    def parameter_breakdown(self) -> dict[str, int]:
        """Totals by component (elements); sums to :attr:`total_params`."""
        c = self._c()
        return {
            "embedding": self.embedding_params,
            "attention": self.num_layers * c.attention,
            "mlp": c.mlp_total - c.router_total,
            "router": c.router_total,
            "norms": self.num_layers * c.norms + self.final_norm_params,
            "lm_head": self.lm_head_params,
        }

    def per_layer_breakdown(self) -> dict[str, int]:
        """One layer's parameters by component (elements; means where layers differ)."""
        return {
            "attention": self.attention_params_per_layer,
            "mlp": self.mlp_params_per_layer - self.router_params_per_layer,
            "router": self.router_params_per_layer,
            "norms": self.norm_params_per_layer,
            "total": self.params_per_layer,
            "active": self.active_params_per_layer,
        }

    def describe(self) -> str:
        """One line: the shape in words."""
        moe = ""
        if self.is_moe:
            shared = f" + {self.num_shared_experts} shared" if self.num_shared_experts else ""
            moe = (
                f", {self.num_experts} experts{shared} top-{self.experts_per_token} of FFN "
                f"{self.expert_intermediate_size} in {self.moe_layers} layers"
            )
        attn = (
            f"MLA (latent {self.kv_lora_rank} + RoPE {self.qk_rope_head_dim})"
            if self.is_mla
            else f"({self.num_kv_heads} KV)"
        )
        return (
            f"{self.num_layers} layers, hidden {self.hidden_size}, {self.num_heads} heads "
            f"{attn} of {self.head_dim}, FFN {self.intermediate_size}"
            f"{' SwiGLU' if self.gated_mlp else ''}{moe}, vocab {self.vocab_size}"
            f"{', tied embeddings' if self.tie_word_embeddings else ''}"
            f"{f', {self.mtp_layers} MTP module(s)' if self.mtp_layers else ''}"
        )


class _Counts(NamedTuple):
    attention: int
    expert: int
    dense_mlp: int
    moe_mlp: int
    norms: int
    moe_layers: int
    router_total: int
    mlp_total: int
    mlp_active_total: int
    layers_total: int
    layers_active: int
    per_layer: int
    active_per_layer: int
    embedding: int
    total: int
    active: int
    matmul_per_token: int
    shapes: Mapping[str, tuple[int, int, int]]


_COUNT_CACHE: dict[int, tuple[DecoderSpec, _Counts]] = {}


def _attention_counts(m: DecoderSpec) -> tuple[int, dict[str, tuple[int, int, int]]]:
    """One layer's attention parameters and its linear modules (module docstring: rules)."""
    h, a = m.hidden_size, m.num_heads
    if m.is_mla:
        rq, rkv, rope = m.q_lora_rank, m.kv_lora_rank, m.qk_rope_head_dim
        nope, dv = m.head_dim - rope, m.v_head_dim or m.head_dim
        shapes: dict[str, tuple[int, int, int]] = {}
        if rq:
            shapes |= {"q_a_proj": (h, rq, 1), "q_b_proj": (rq, a * m.head_dim, 1)}
        else:
            shapes["q_proj"] = (h, a * m.head_dim, 1)
        shapes |= {
            "kv_a_proj_with_mqa": (h, rkv + rope, 1),
            "kv_b_proj": (rkv, a * (nope + dv), 1),
            "o_proj": (a * dv, h, 1),
        }
        attention = sum(i * o for i, o, _ in shapes.values()) + rq + rkv  # + the latent norms
        if m.attention_bias:  # DeepseekV3Attention: biases on q_a (or q), kv_a and o
            attention += (rq or a * m.head_dim) + rkv + rope + h
    else:
        q, kv = a * m.head_dim, m.num_kv_heads * m.head_dim
        shapes = {"q_proj": (h, q, 1), "k_proj": (h, kv, 1), "v_proj": (h, kv, 1), "o_proj": (q, h, 1)}
        attention = h * q + 2 * h * kv + q * h
        if m.attention_bias:
            attention += q + 2 * kv
            if not m.qkv_bias_only:
                attention += h
        if m.qk_norm:
            attention += 2 * m.head_dim
    if m.attention_sinks:
        attention += a
    return attention, shapes


def _decoder_counts(m: DecoderSpec) -> _Counts:
    """Parameter counts of a decoder (module docstring: counting rules)."""
    h, f, fe, L = m.hidden_size, m.intermediate_size, m.expert_intermediate_size, m.num_layers
    attention, shapes = _attention_counts(m)
    mats = 3 if m.gated_mlp else 2

    def mlp(width: int) -> int:
        return mats * h * width + (((mats - 1) * width + h) if m.mlp_bias else 0)

    dense_mlp, expert = mlp(f), mlp(fe)
    e, s = m.num_experts, m.num_shared_experts
    moe_layers = (
        sum(1 for i in range(m.first_k_dense_replace, L) if (i + 1) % m.moe_layer_step == 0) if e > 1 else 0
    )
    router = h * e + (e if m.router_bias else 0) if e > 1 else 0
    moe_mlp = (e + s) * expert + router
    moe_active = (m.experts_per_token + s) * expert + router
    dense_layers = L - moe_layers
    norm_one = h * (2 if m.norm == "layernorm" else 1)
    norms = 2 * norm_one
    mlp_total = dense_layers * dense_mlp + moe_layers * moe_mlp
    mlp_active_total = dense_layers * dense_mlp + moe_layers * moe_active
    layers_total = L * (attention + norms) + mlp_total
    layers_active = L * (attention + norms) + mlp_active_total
    embedding = m.vocab_size * h + (m.max_position_embeddings * h if m.position_embedding == "learned" else 0)
    lm_head = 0 if m.tie_word_embeddings else m.vocab_size * h
    total = embedding + layers_total + norm_one + lm_head
    active = embedding + layers_active + norm_one + lm_head
    matmul = layers_active - L * norms + m.vocab_size * h
    width, copies = (fe, e + s) if e > 1 else (f, 1)
    if m.gated_mlp:
        shapes["gate_proj"] = (h, width, copies)
    shapes["up_proj"] = (h, width, copies)
    shapes["down_proj"] = (width, h, copies)
    if e > 1:
        shapes["router"] = (h, e, 1)
    return _Counts(
        attention,
        expert,
        dense_mlp,
        moe_mlp,
        norms,
        moe_layers,
        moe_layers * router,
        mlp_total,
        mlp_active_total,
        layers_total,
        layers_active,
        layers_total // L,
        layers_active // L,
        embedding,
        total,
        active,
        matmul,
        shapes,
    )


CHECKPOINT_FORMATS: dict[str, str] = {"fp8": "fp8", "mxfp4": "mxfp4", "awq": "awq", "gptq": "gptq"}
"""``quantization_config.quant_method`` values (Hugging Face) and the weight format each is, for the
schemes :func:`checkpoint_format` does not read further; any other scheme is read as 16-bit weights
(``none``), the estimate's default."""


def checkpoint_format(cfg: Mapping[str, Any]) -> str:
    """The weight format a config.json's checkpoint ships in: :data:`CHECKPOINT_FORMATS`, 4-bit
    AWQ/GPTQ only (another bit width is none of the estimator's formats), bitsandbytes' 4/8-bit,
    NVIDIA ModelOpt's FP8/NVFP4 and llm-compressor's (compressed-tensors) FP8, NVFP4 and 4-bit
    integer weights."""
    q = cfg.get("quantization_config")
    if not isinstance(q, Mapping) or not q.get("quant_method"):
        return "none"
    method = str(q.get("quant_method")).lower()
    if method in ("awq", "gptq") and q.get("bits", 4) != 4:
        return "none"
    if method == "bitsandbytes":
        return "bnb-nf4" if q.get("load_in_4bit") else "bnb-int8" if q.get("load_in_8bit") else "none"
    if method == "modelopt":
        algo = str(q.get("quant_algo") or "").upper()
        return "nvfp4" if algo == "NVFP4" else "fp8" if algo == "FP8" else "none"
    if method == "compressed-tensors":
        return _compressed_tensors(q)
    return CHECKPOINT_FORMATS.get(method, "none")


def _compressed_tensors(q: Mapping[str, Any]) -> str:
    """llm-compressor's schemes, read from the first config group's weights (and the format)."""
    if "nvfp4" in str(q.get("format") or ""):
        return "nvfp4"
    groups = q.get("config_groups")
    first = next(iter(groups.values()), None) if isinstance(groups, Mapping) and groups else None
    w = first.get("weights") if isinstance(first, Mapping) else None
    if not isinstance(w, Mapping):
        return "none"
    bits, kind = w.get("num_bits"), str(w.get("type") or "")
    if bits == 8 and kind == "float":
        return "fp8"
    if bits == 4 and kind == "int":
        return "gptq"  # W4A16 integer groups: the same bytes and kernels (Marlin) as GPTQ
    if bits == 4 and kind == "float":
        return "nvfp4"
    return "none"
