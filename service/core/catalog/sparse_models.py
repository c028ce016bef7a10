"""Sparse decoders as deployed in 2026: DeepSeek-V3/R1 (MLA, 256 routed + 1 shared expert,
MTP), Qwen3-MoE, Llama-4 (shared expert, interleaved MoE layers) and GPT-OSS (biased experts,
attention sinks) -- read from the ``config.json`` Hugging Face publishes for them.

Each preset *is* its published config: the keys below are copied from the ``config.json`` at
the ``source`` address (text model only for Llama-4, whose vision encoder -- about 0.9B
parameters of the 109B/400B the model cards state -- is not counted) and built by the same
:func:`sparse_from_hf_config` a user's config goes through, so a parsing error shows in the
preset tests (``tests/core/test_models_sparse.py``, which check the counts against the model
cards' published totals).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from service.core.catalog.decoder import DecoderSpec, UnsupportedArchitecture, checkpoint_format

__all__ = ["SPARSE_HF_TYPES", "SPARSE_PRESETS", "sparse_from_hf_config"]

SPARSE_HF_TYPES: tuple[str, ...] = (
    "deepseek_v2",
    "deepseek_v3",
    "qwen3_moe",
    "llama4",
    "llama4_text",
    "gpt_oss",
)
"""``model_type`` values of the sparse families :func:`sparse_from_hf_config` builds."""


def _int(cfg: Mapping[str, Any], key: str, arch: str, default: int | None = None) -> int:
    value = cfg.get(key, default)
    if value is None and default is not None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UnsupportedArchitecture(arch, f"config.json needs {key} as a whole number")
    return value


def _common(cfg: Mapping[str, Any], arch: str, id: str | None, mtype: str) -> dict[str, Any]:
    act = str(cfg.get("hidden_act", "silu"))
    if act not in {"silu", "swish"}:
        raise UnsupportedArchitecture(arch, f"hidden_act {act!r}: only SwiGLU MLPs are modelled")
    h = _int(cfg, "hidden_size", arch)
    heads = _int(cfg, "num_attention_heads", arch)
    rope_theta = cfg.get("rope_theta")
    if rope_theta is None and isinstance(cfg.get("rope_parameters"), Mapping):
        rope_theta = cfg["rope_parameters"].get("rope_theta")
    return {
        "id": id or str(cfg.get("_name_or_path") or f"custom-{mtype}"),
        "hidden_size": h,
        "num_layers": _int(cfg, "num_hidden_layers", arch),
        "num_heads": heads,
        "vocab_size": _int(cfg, "vocab_size", arch),
        "tie_word_embeddings": bool(cfg.get("tie_word_embeddings", False)),
        "max_position_embeddings": _int(cfg, "max_position_embeddings", arch, 4096),
        "rope_theta": float(rope_theta if rope_theta is not None else 10000.0),
        "rms_norm_eps": float(cfg.get("rms_norm_eps", 1e-6)),
        "hf_id": None,
        "family": mtype,
        "gated_mlp": True,
        "source": "config.json",
        "checkpoint_format": checkpoint_format(cfg),
    }


def _deepseek(cfg: Mapping[str, Any], arch: str, base: dict[str, Any], mtype: str) -> DecoderSpec:
    """``DeepseekV2/V3ForCausalLM``: MLA attention; MoE from layer ``first_k_dense_replace``."""
    if _int(cfg, "moe_layer_freq", arch, 1) != 1:
        raise UnsupportedArchitecture(arch, "moe_layer_freq other than 1 is not modelled")
    rope, nope = _int(cfg, "qk_rope_head_dim", arch), _int(cfg, "qk_nope_head_dim", arch)
    routed = cfg.get("n_routed_experts")
    experts = _int(cfg, "n_routed_experts", arch) if routed is not None else 1
    return DecoderSpec(
        **base,
        num_kv_heads=base["num_heads"],
        head_dim=nope + rope,
        intermediate_size=_int(cfg, "intermediate_size", arch),
        attention_bias=bool(cfg.get("attention_bias", False)),
        mlp_bias=False,
        num_experts=max(experts, 1),
        experts_per_token=_int(cfg, "num_experts_per_tok", arch) if experts > 1 else 1,
        moe_intermediate_size=_int(cfg, "moe_intermediate_size", arch) if experts > 1 else 0,
        num_shared_experts=_int(cfg, "n_shared_experts", arch, 0) if experts > 1 else 0,
        first_k_dense_replace=_int(cfg, "first_k_dense_replace", arch, 0),
        router_bias=mtype == "deepseek_v3" and experts > 1,  # e_score_correction_bias
        kv_lora_rank=_int(cfg, "kv_lora_rank", arch),
        q_lora_rank=_int(cfg, "q_lora_rank", arch, 0),
        qk_rope_head_dim=rope,
        v_head_dim=_int(cfg, "v_head_dim", arch),
        mtp_layers=_int(cfg, "num_nextn_predict_layers", arch, 0),
    )


def _qwen3_moe(cfg: Mapping[str, Any], arch: str, base: dict[str, Any]) -> DecoderSpec:
    """``Qwen3MoeForCausalLM``: q/k norms; every ``decoder_sparse_step``-th layer MoE."""
    if cfg.get("mlp_only_layers"):
        raise UnsupportedArchitecture(arch, "mlp_only_layers (dense layers by index) are not modelled")
    heads = base["num_heads"]
    return DecoderSpec(
        **base,
        num_kv_heads=_int(cfg, "num_key_value_heads", arch, heads),
        head_dim=_int(cfg, "head_dim", arch, base["hidden_size"] // heads),
        intermediate_size=_int(cfg, "intermediate_size", arch),
        attention_bias=bool(cfg.get("attention_bias", False)),
        mlp_bias=False,
        num_experts=max(_int(cfg, "num_experts", arch), 1),
        experts_per_token=_int(cfg, "num_experts_per_tok", arch),
        moe_intermediate_size=_int(cfg, "moe_intermediate_size", arch),
        moe_layer_step=_int(cfg, "decoder_sparse_step", arch, 1) or 1,
        qk_norm=True,
    )


def _llama4(cfg: Mapping[str, Any], arch: str, base: dict[str, Any]) -> DecoderSpec:
    """``Llama4ForCausalLM`` (text): routed experts + one shared expert of width
    ``intermediate_size`` in every ``interleave_moe_layer_step``-th layer; dense layers of width
    ``intermediate_size_mlp``; ``use_qk_norm`` is a weightless L2 norm."""
    L = base["num_layers"]
    step = _int(cfg, "interleave_moe_layer_step", arch, 1) or 1
    listed = cfg.get("moe_layers")
    if listed is not None and list(listed) != list(range(step - 1, L, step)):
        raise UnsupportedArchitecture(arch, "moe_layers other than every interleave_moe_layer_step-th layer")
    heads = base["num_heads"]
    return DecoderSpec(
        **base,
        num_kv_heads=_int(cfg, "num_key_value_heads", arch, heads),
        head_dim=_int(cfg, "head_dim", arch, base["hidden_size"] // heads),
        intermediate_size=_int(cfg, "intermediate_size_mlp", arch),
        attention_bias=bool(cfg.get("attention_bias", False)),
        mlp_bias=False,
        num_experts=max(_int(cfg, "num_local_experts", arch), 1),
        experts_per_token=_int(cfg, "num_experts_per_tok", arch, 1),
        moe_intermediate_size=_int(cfg, "intermediate_size", arch),
        num_shared_experts=1,
        moe_layer_step=step,
    )


def _gpt_oss(cfg: Mapping[str, Any], arch: str, base: dict[str, Any]) -> DecoderSpec:
    """``GptOssForCausalLM``: biased attention with per-head sinks, biased experts and router.
    Half the layers attend over a 128-token window; the KV cache is counted for every layer at
    full length (an upper bound, stated in ``notes``)."""
    heads = base["num_heads"]
    return DecoderSpec(
        **{**base, "notes": "KV cache counted on every layer; the sliding-window half keeps 128 tokens"},
        num_kv_heads=_int(cfg, "num_key_value_heads", arch, heads),
        head_dim=_int(cfg, "head_dim", arch, base["hidden_size"] // heads),
        intermediate_size=_int(cfg, "intermediate_size", arch),
        attention_bias=bool(cfg.get("attention_bias", True)),
        mlp_bias=True,
        num_experts=max(_int(cfg, "num_local_experts", arch), 1),
        experts_per_token=_int(cfg, "num_experts_per_tok", arch, _int(cfg, "experts_per_token", arch, 1)),
        router_bias=True,
        attention_sinks=True,
    )


def sparse_from_hf_config(cfg: Mapping[str, Any], arch: str, id: str | None = None) -> DecoderSpec:
    """Build a sparse decoder from its published ``config.json`` (``model_type`` in
    :data:`SPARSE_HF_TYPES`); ``llama4`` wrappers are read from their ``text_config``."""
    mtype = str(cfg.get("model_type", ""))
    if mtype == "llama4":
        inner = cfg.get("text_config")
        if not isinstance(inner, Mapping):
            raise UnsupportedArchitecture(arch, "a llama4 config.json needs its text_config")
        cfg = inner
    base = _common(cfg, arch, id, mtype)
    try:
        if mtype in {"deepseek_v2", "deepseek_v3"}:
            return _deepseek(cfg, arch, base, mtype)
        if mtype == "qwen3_moe":
            return _qwen3_moe(cfg, arch, base)
        if mtype in {"llama4", "llama4_text"}:
            return _llama4(cfg, arch, base)
        if mtype == "gpt_oss":
            return _gpt_oss(cfg, arch, base)
    except ValueError as exc:  # DecoderSpec's own shape checks
        if isinstance(exc, UnsupportedArchitecture):
            raise
        raise UnsupportedArchitecture(arch, str(exc)) from exc
    raise UnsupportedArchitecture(arch, f"model_type {mtype!r} is not a sparse family")


# --------------------------------------------------------------------------------------------
# Presets: keys copied from each repository's published config.json (source=).
# --------------------------------------------------------------------------------------------

_DEEPSEEK_V3: dict[str, Any] = {
    "model_type": "deepseek_v3",
    "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "moe_intermediate_size": 2048,
    "num_hidden_layers": 61,
    "num_attention_heads": 128,
    "num_key_value_heads": 128,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_experts_per_tok": 8,
    "first_k_dense_replace": 3,
    "moe_layer_freq": 1,
    "q_lora_rank": 1536,
    "kv_lora_rank": 512,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "v_head_dim": 128,
    "num_nextn_predict_layers": 1,
    "vocab_size": 129280,
    "max_position_embeddings": 163840,
    "rope_theta": 10000,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
}
_QWEN3_MOE_COMMON: dict[str, Any] = {
    "model_type": "qwen3_moe",
    "head_dim": 128,
    "num_key_value_heads": 4,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "rope_theta": 1000000.0,
    "rms_norm_eps": 1e-06,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
}
_LLAMA4_COMMON: dict[str, Any] = {
    "model_type": "llama4_text",
    "hidden_size": 5120,
    "num_hidden_layers": 48,
    "num_attention_heads": 40,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 8192,
    "intermediate_size_mlp": 16384,
    "num_experts_per_tok": 1,
    "vocab_size": 202048,
    "rope_theta": 500000.0,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
}
_GPT_OSS_COMMON: dict[str, Any] = {
    "model_type": "gpt_oss",
    "quantization_config": {"quant_method": "mxfp4"},  # the MoE experts; the rest bf16
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "num_experts_per_tok": 4,
    "attention_bias": True,
    "vocab_size": 201088,
    "max_position_embeddings": 131072,
    "rope_theta": 150000,
    "rms_norm_eps": 1e-05,
    "sliding_window": 128,
    "tie_word_embeddings": False,
    "hidden_act": "silu",
}

_HF = "https://huggingface.co/{}/blob/main/config.json"
_SPECS: tuple[tuple[str, str, dict[str, Any], tuple[str, ...], str], ...] = (
    (
        "deepseek-v3",
        "deepseek-ai/DeepSeek-V3",
        _DEEPSEEK_V3,
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3-Base", "deepseek-v3-671b"),
        "checkpoint in FP8 (e4m3, 128x128 blocks); 671B main model + 14B MTP module (model card)",
    ),
    (
        "deepseek-r1",
        "deepseek-ai/DeepSeek-R1",
        _DEEPSEEK_V3,
        ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1-671b"),
        "DeepSeek-V3 architecture (same config.json shape); FP8 checkpoint",
    ),
    (
        "qwen3-30b-a3b",
        "Qwen/Qwen3-30B-A3B",
        {
            **_QWEN3_MOE_COMMON,
            "hidden_size": 2048,
            "intermediate_size": 6144,
            "moe_intermediate_size": 768,
            "num_hidden_layers": 48,
            "num_attention_heads": 32,
        },
        ("Qwen/Qwen3-30B-A3B-Base", "Qwen/Qwen3-30B-A3B-Instruct-2507"),
        "",
    ),
    (
        "qwen3-235b-a22b",
        "Qwen/Qwen3-235B-A22B",
        {
            **_QWEN3_MOE_COMMON,
            "hidden_size": 4096,
            "intermediate_size": 12288,
            "moe_intermediate_size": 1536,
            "num_hidden_layers": 94,
            "num_attention_heads": 64,
        },
        ("Qwen/Qwen3-235B-A22B-Instruct-2507",),
        "",
    ),
    (
        "llama4-scout",
        "meta-llama/Llama-4-Scout-17B-16E",
        {
            **_LLAMA4_COMMON,
            "num_local_experts": 16,
            "interleave_moe_layer_step": 1,
            "max_position_embeddings": 10485760,
        },
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "llama-4-scout"),
        "text model of Llama4ForConditionalGeneration (text_config); vision encoder not counted",
    ),
    (
        "llama4-maverick",
        "meta-llama/Llama-4-Maverick-17B-128E",
        {
            **_LLAMA4_COMMON,
            "num_local_experts": 128,
            "interleave_moe_layer_step": 2,
            "max_position_embeddings": 1048576,
        },
        ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "llama-4-maverick"),
        "text model of Llama4ForConditionalGeneration (text_config); vision encoder not counted",
    ),
    (
        "gpt-oss-20b",
        "openai/gpt-oss-20b",
        {**_GPT_OSS_COMMON, "num_hidden_layers": 24, "num_local_experts": 32},
        (),
        "MoE weights published in MXFP4 (the rest bf16)",
    ),
    (
        "gpt-oss-120b",
        "openai/gpt-oss-120b",
        {**_GPT_OSS_COMMON, "num_hidden_layers": 36, "num_local_experts": 128},
        (),
        "MoE weights published in MXFP4 (the rest bf16)",
    ),
)


def _preset(pid: str, hf_id: str, cfg: dict[str, Any], aliases: tuple[str, ...], note: str) -> DecoderSpec:
    spec = sparse_from_hf_config(cfg, hf_id, pid)
    notes = "; ".join(n for n in (note, spec.notes) if n)
    family = {
        "deepseek_v3": "deepseek-v3",
        "qwen3_moe": "qwen3-moe",
        "llama4_text": "llama4",
        "gpt_oss": "gpt-oss",
    }
    return replace(
        spec,
        hf_id=hf_id,
        family=family[cfg["model_type"]],
        aliases=aliases,
        source=_HF.format(hf_id),
        notes=notes,
    )


SPARSE_PRESETS: tuple[DecoderSpec, ...] = tuple(_preset(*s) for s in _SPECS)
"""The sparse presets, in the order the catalog lists them."""
