"""BERT-style encoders (:class:`EncoderSpec`), counted as Hugging Face ``BertForMaskedLM``;
split out of :mod:`service.core.catalog.models`, which re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True, slots=True)
class EncoderSpec:
    """A BERT-style post-LN encoder, counted as Hugging Face ``BertForMaskedLM``.

    Parameters: word/position/token-type embeddings + LayerNorm; per layer q/k/v/o with
    biases, two LayerNorms, a GELU MLP ``h -> f -> h`` with biases; MLM head = dense ``h*h``
    + bias, LayerNorm, and a vocabulary bias (the decoder weight is tied to the word
    embeddings). No pooler (``BertForMaskedLM`` builds ``BertModel(add_pooling_layer=False)``).
    """

    id: str
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    hf_id: str | None
    family: str
    aliases: tuple[str, ...] = ()
    source: str = ""
    notes: str = ""
    kind: Literal["encoder"] = field(default="encoder", init=False)

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def embedding_params(self) -> int:
        h = self.hidden_size
        return (self.vocab_size + self.max_position_embeddings + self.type_vocab_size) * h + 2 * h

    @property
    def params_per_layer(self) -> int:
        h, f = self.hidden_size, self.intermediate_size
        attention = 4 * (h * h + h)
        mlp = h * f + f + f * h + h
        return attention + mlp + 4 * h

    @property
    def head_params(self) -> int:
        """MLM head: transform dense + LayerNorm + decoder bias (weight tied)."""
        h = self.hidden_size
        return h * h + h + 2 * h + self.vocab_size

    @property
    def total_params(self) -> int:
        return self.embedding_params + self.num_layers * self.params_per_layer + self.head_params

    @property
    def active_params(self) -> int:
        return self.total_params

    @property
    def matmul_params_per_token(self) -> int:
        """Weights multiplied per token: layer linears + MLM transform + tied decoder."""
        h, f = self.hidden_size, self.intermediate_size
        return self.num_layers * (4 * h * h + 2 * h * f) + h * h + self.vocab_size * h

    def parameter_breakdown(self) -> dict[str, int]:
        return {
            "embedding": self.embedding_params,
            "layers": self.num_layers * self.params_per_layer,
            "mlm_head": self.head_params,
        }

    def describe(self) -> str:
        return (
            f"BERT encoder: {self.num_layers} layers, hidden {self.hidden_size}, "
            f"{self.num_heads} heads, FFN {self.intermediate_size}, vocab {self.vocab_size}"
        )
