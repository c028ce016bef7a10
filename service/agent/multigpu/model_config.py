"""Llama-style model shapes for the llm-train scaling runs, as Hugging Face ``LlamaConfig``.

Shapes come from the estimation core's presets (``service.core.catalog.models.get_model``) so that
the measured cell and the estimate describe the same architecture. The suite's own tiny
preset (``mg-tiny-llama``, for CPU smoke tests) is defined here and nowhere else. An id the
core does not know is an error: the suite never guesses a shape for a named model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LlamaShape:
    """The fields of a decoder spec that a Llama model needs (see core/catalog/models.py DecoderSpec)."""

    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tie_word_embeddings: bool = False
    attention_bias: bool = False
    mlp_bias: bool = False
    rms_norm_eps: float = 1e-5
    rope_theta: float = 500000.0
    max_position_embeddings: int = 8192

    def parameter_count(self) -> int:
        """Exact parameter count of the HF LlamaForCausalLM built from this shape."""
        h, kv = self.hidden_size, self.num_kv_heads * self.head_dim
        q = self.num_heads * self.head_dim
        attn = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            attn += q + 2 * kv + h
        mlp = 3 * h * self.intermediate_size
        if self.mlp_bias:
            mlp += 2 * self.intermediate_size + h
        per_layer = attn + mlp + 2 * h  # two RMSNorm weights
        embed = self.vocab_size * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.num_layers * per_layer + embed + head + h  # final norm

    def flops_per_token(self, seq_len: int) -> float:
        """Model FLOPs per trained token (forward + backward), PaLM appendix B convention.

        ``6 * N`` for the matmul weights (every parameter except the input embedding, which is
        a lookup) plus ``12 * L * H * Q * T`` for attention scores and values (non-causal
        count, as PaLM and most MFU reports use). Checkpointing does not change model FLOPs.
        """
        n = self.parameter_count() - self.vocab_size * self.hidden_size
        if self.tie_word_embeddings:
            n += self.vocab_size * self.hidden_size  # the LM head still multiplies
        attn = 12 * self.num_layers * self.num_heads * self.head_dim * seq_len
        return float(6 * n + attn)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__}


#: Presets owned by this suite (tests and smoke runs only).
SUITE_PRESETS: dict[str, LlamaShape] = {
    "mg-tiny-llama": LlamaShape(
        hidden_size=64,
        num_layers=2,
        num_heads=4,
        num_kv_heads=2,
        head_dim=16,
        intermediate_size=128,
        vocab_size=512,
        max_position_embeddings=512,
    ),
}


class UnknownModelError(LookupError):
    """Neither a suite preset nor a preset of the estimation core."""


class UnsupportedModelError(ValueError):
    """A known model that is not a plain Llama-layout decoder (MoE, QK-norm, ...)."""


def _from_core(model_id: str) -> LlamaShape | None:
    try:
        from service.core.catalog import models as core_models
    except ImportError:
        return None
    get_model = getattr(core_models, "get_model", None)
    if get_model is None:
        return None
    try:
        spec = get_model(model_id)
    except LookupError:  # core.catalog.models.ModelNotFound
        return None
    if spec is None:
        return None
    spec = getattr(spec, "spec", spec)  # a preset wrapper or the DecoderSpec itself

    def field(*names: str, default: Any = None) -> Any:
        for n in names:
            v = getattr(spec, n, None)
            if v is not None:
                return v
        return default

    if field("kind", default="decoder") != "decoder":
        raise UnsupportedModelError(f"{model_id} is not a decoder-only transformer")
    unsupported = []
    if field("num_experts", default=1) not in (0, 1):
        unsupported.append("mixture of experts")
    if not field("gated_mlp", default=True):
        unsupported.append("non-gated MLP")
    if field("norm", default="rmsnorm") != "rmsnorm" or field("position_embedding", default="rope") != "rope":
        unsupported.append("non-Llama norm/positions")
    if field("qk_norm", default=False) or field("qkv_bias_only", default=False) or field("sliding_window"):
        unsupported.append("QK-norm / qkv-only bias / sliding window")
    if unsupported:
        raise UnsupportedModelError(
            f"{model_id} cannot be built as LlamaForCausalLM: {', '.join(unsupported)}"
        )
    hidden = int(field("hidden_size"))
    heads = int(field("num_heads", "num_attention_heads"))
    return LlamaShape(
        hidden_size=hidden,
        num_layers=int(field("num_layers", "num_hidden_layers")),
        num_heads=heads,
        num_kv_heads=int(field("num_kv_heads", "num_key_value_heads", default=heads)),
        head_dim=int(field("head_dim", default=hidden // heads)),
        intermediate_size=int(field("intermediate_size", "ffn_hidden_size")),
        vocab_size=int(field("vocab_size")),
        tie_word_embeddings=bool(field("tie_word_embeddings", "tied_embeddings", default=False)),
        attention_bias=bool(field("attention_bias", "qkv_bias", default=False)),
        mlp_bias=bool(field("mlp_bias", default=False)),
        rms_norm_eps=float(field("rms_norm_eps", "norm_eps", default=1e-5)),
        rope_theta=float(field("rope_theta", default=500000.0)),
        max_position_embeddings=int(field("max_position_embeddings", "max_seq_len", default=8192)),
    )


def resolve_shape(model_id: str) -> LlamaShape:
    """The shape of ``model_id``: a suite preset, else the estimation core's preset."""
    key = model_id.strip().lower()
    if key in SUITE_PRESETS:
        return SUITE_PRESETS[key]
    shape = _from_core(key)
    if shape is None:
        raise UnknownModelError(
            f"unknown model {model_id!r}: not a suite preset ({', '.join(SUITE_PRESETS)}) "
            "and not known to service.core.catalog.models.get_model"
        )
    return shape


def llama_config(shape: LlamaShape, *, seq_len: int, attention: str = "sdpa") -> Any:
    """A ``transformers.LlamaConfig`` for ``shape`` (positions extended to ``seq_len``)."""
    from transformers import LlamaConfig

    kwargs: dict[str, Any] = dict(
        hidden_size=shape.hidden_size,
        num_hidden_layers=shape.num_layers,
        num_attention_heads=shape.num_heads,
        num_key_value_heads=shape.num_kv_heads,
        head_dim=shape.head_dim,
        intermediate_size=shape.intermediate_size,
        vocab_size=shape.vocab_size,
        tie_word_embeddings=shape.tie_word_embeddings,
        attention_bias=shape.attention_bias,
        mlp_bias=shape.mlp_bias,
        rms_norm_eps=shape.rms_norm_eps,
        rope_theta=shape.rope_theta,
        max_position_embeddings=max(shape.max_position_embeddings, seq_len),
        attn_implementation=attention,
        use_cache=False,
    )
    return LlamaConfig(**kwargs)
