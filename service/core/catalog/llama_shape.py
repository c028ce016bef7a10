"""The Llama-layout shape builder the presets and the assumed shapes are written with; split out
of :mod:`service.core.catalog.models`."""

from __future__ import annotations

import math

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


# "N billion parameters"

GQA_FROM_BILLION = 30.0
"""Parameter counts (billions) from which an assumed shape has grouped-query attention."""


def _assumed(n_billion: float, h: int, layers: int, gqa: bool) -> DecoderSpec:
    """One candidate shape of :func:`from_parameter_count`."""
    hd = 128 if h >= 1024 else 64
    heads = h // hd
    return llama_spec(
        f"assumed-{n_billion:g}b",
        h,
        layers,
        heads,
        8 if gqa else heads,
        -(-(8 * h // 3) // 256) * 256,
        32000,
        hf_id=None,
        family="assumed",
        rope_theta=10000.0,
        max_pos=4096,
        source="assumed shape",
    )


def from_parameter_count(n_billion: float) -> tuple[DecoderSpec, str]:
    """A Llama-style dense shape with about ``n_billion * 1e9`` parameters, and a sentence
    stating the assumed shape.

    Assumptions (the Llama 2 7B/13B recipe): 32k vocabulary, untied embeddings, multi-head
    attention with head_dim 128 (64 below hidden 1024), depth ``hidden / 128`` (at least 4; with
    GQA also 8 layers either side, the hidden size stepping coarser),
    SwiGLU FFN ``8/3 * hidden`` rounded up to a multiple of 256, hidden a multiple of 256.
    From :data:`GQA_FROM_BILLION` up, grouped-query attention with 8 KV heads (hidden a multiple
    of 1024), as every open model of that size since Llama 2 70B has (Llama 3, Qwen2.5, Mixtral):
    multi-head attention there held 8-9x the KV cache of any real 70B.
    The hidden size whose total is closest to the request is chosen.
    """
    if not (n_billion > 0 and math.isfinite(n_billion)):
        raise ValueError("parameter count must be a positive number of billions")
    target = n_billion * 1e9
    best: DecoderSpec | None = None
    gqa = n_billion >= GQA_FROM_BILLION
    for h in range(1024 if gqa else 256, 65536 + 1, 1024 if gqa else 256):  # GQA: heads a multiple of 8
        depth = max(4, h // 128)
        for layers in (
            (max(4, depth - 8), depth, depth + 8) if gqa else (depth,)
        ):  # GQA: 1024-steps are coarse
            spec = _assumed(n_billion, h, layers, gqa)
            if best is None or abs(spec.total_params - target) < abs(best.total_params - target):
                best = spec
        if spec.total_params > target * 2:
            break
    assert best is not None
    text = (
        f"assumed a Llama-style dense shape for {n_billion:g}B parameters: {best.describe()} "
        f"({best.total_params / 1e9:.2f}B parameters)"
    )
    return best, text
