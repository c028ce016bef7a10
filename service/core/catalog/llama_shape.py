"""The Llama-layout shape builder the presets and the assumed shapes are written with; split out
of :mod:`service.core.catalog.models`."""

from __future__ import annotations

from service.core.catalog.decoder import DecoderSpec


def llama_spec(
    id: str,
    h: int,
    layers: int,
    heads: int,
    kv: int,
    ffn: int,
    vocab: int,
    *,
    hf_id: str | None,
    family: str,
    rope_theta: float,
    max_pos: int,
    eps: float = 1e-5,
    head_dim: int | None = None,
    tie: bool = False,
    experts: int = 1,
    top_k: int = 1,
    aliases: tuple[str, ...] = (),
    source: str = "",
    notes: str = "",
    attention_bias: bool = False,
    qkv_bias_only: bool = False,
    sliding_window: int | None = None,
) -> DecoderSpec:
    """A Llama-layout dense decoder from positional shape numbers, so a preset reads as one row
    (``h`` hidden, ``ffn`` SwiGLU width, ``kv`` KV heads); the source defaults to its config.json."""
    return DecoderSpec(
        id=id,
        hidden_size=h,
        num_layers=layers,
        num_heads=heads,
        num_kv_heads=kv,
        head_dim=head_dim or h // heads,
        intermediate_size=ffn,
        vocab_size=vocab,
        tie_word_embeddings=tie,
        attention_bias=attention_bias,
        mlp_bias=False,
        gated_mlp=True,
        num_experts=experts,
        experts_per_token=top_k,
        max_position_embeddings=max_pos,
        rope_theta=rope_theta,
        rms_norm_eps=eps,
        hf_id=hf_id,
        family=family,
        qkv_bias_only=qkv_bias_only,
        sliding_window=sliding_window,
        aliases=aliases,
        source=source or (f"https://huggingface.co/{hf_id}/blob/main/config.json" if hf_id else ""),
        notes=notes,
    )
