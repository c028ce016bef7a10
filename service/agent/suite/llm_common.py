"""Building a Llama-style ``LlamaForCausalLM`` from a model preset's architecture, on device.

The architecture dict is :class:`service.core.catalog.models.DecoderSpec` as resolved by the runner
(``dataclasses.asdict``). Only Llama-layout decoders are built (gated SiLU MLP, RMSNorm, RoPE,
dense, no QK-norm); anything else is skipped rather than approximated. Weights are
initialised on the device by transformers' own init (no download).
"""

from __future__ import annotations

from typing import Any

from service.agent.suite.common import Context, Skip, importable

SMOKE_ARCH = {
    "hidden_size": 64,
    "num_layers": 2,
    "num_heads": 4,
    "num_kv_heads": 2,
    "head_dim": 16,
    "intermediate_size": 128,
    "vocab_size": 512,
}


def llama_config(ctx: Context, arch: dict[str, Any], *, attention: str, max_len: int) -> Any:
    LlamaConfig = importable("transformers").LlamaConfig

    if arch.get("kind", "decoder") != "decoder":
        raise Skip(f"model {arch.get('id')} is not a decoder-only transformer")
    unsupported = []
    if arch.get("num_experts", 1) != 1:
        unsupported.append("mixture of experts")
    if not arch.get("gated_mlp", True):
        unsupported.append("non-gated MLP")
    if arch.get("norm", "rmsnorm") != "rmsnorm" or arch.get("position_embedding", "rope") != "rope":
        unsupported.append("non-Llama norm/positions")
    if arch.get("qk_norm") or arch.get("qkv_bias_only") or arch.get("sliding_window"):
        unsupported.append("QK-norm / qkv-only bias / sliding window")
    if unsupported:
        raise Skip(f"model {arch.get('id')} cannot be built as LlamaForCausalLM: {', '.join(unsupported)}")
    a = dict(arch)
    if ctx.smoke:
        a.update(SMOKE_ARCH)
    return LlamaConfig(
        vocab_size=a["vocab_size"],
        hidden_size=a["hidden_size"],
        intermediate_size=a["intermediate_size"],
        num_hidden_layers=a["num_layers"],
        num_attention_heads=a["num_heads"],
        num_key_value_heads=a["num_kv_heads"],
        head_dim=a["head_dim"],
        max_position_embeddings=max(int(a.get("max_position_embeddings") or 0), max_len),
        rms_norm_eps=a.get("rms_norm_eps", 1e-5),
        rope_theta=a.get("rope_theta", 10000.0),
        tie_word_embeddings=bool(a.get("tie_word_embeddings", False)),
        attention_bias=bool(a.get("attention_bias", False)),
        mlp_bias=bool(a.get("mlp_bias", False)),
        attn_implementation=attention,
        use_cache=False,
    )


def build_model(ctx: Context, config: Any, dtype: Any) -> Any:
    import torch

    LlamaForCausalLM = importable("transformers").LlamaForCausalLM

    with torch.device(ctx.device):
        return LlamaForCausalLM._from_config(config, dtype=dtype)
