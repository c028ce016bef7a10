"""Sparse presets (issue 28): MLA, routed + shared experts, MTP -- parameter counts against the
totals their publishers state, the KV latent, and config.json parsing of each family."""

from __future__ import annotations

import copy

import pytest

from service.core.catalog.models import (
    DecoderSpec,
    UnsupportedArchitecture,
    from_hf_config,
    get_model,
)

# (preset, published total, published active, what "active" counts, source). Figures as the
# model cards state them (rounded there); tolerance 1 % of the total unless stated.
PUBLISHED = [
    # https://huggingface.co/deepseek-ai/DeepSeek-V3 README: "671B total parameters with 37B
    # activated for each token"; "685B ... 671B of the Main Model weights and 14B of the MTP".
    ("deepseek-v3", 671e9, 37e9),
    ("deepseek-r1", 671e9, 37e9),
    # https://huggingface.co/Qwen/Qwen3-30B-A3B: "30.5B in total and 3.3B activated",
    # "Number of Paramaters (Non-Embedding): 29.9B".
    ("qwen3-30b-a3b", 30.5e9, 3.3e9),
    # https://huggingface.co/Qwen/Qwen3-235B-A22B: "235B in total and 22B activated", non-embedding 234B.
    ("qwen3-235b-a22b", 235e9, 22e9),
    # https://huggingface.co/meta-llama/Llama-4-Maverick-17B-128E: "17B activated, 400B total".
    ("llama4-maverick", 400e9, 17e9),
]


@pytest.mark.parametrize(("pid", "total", "active"), PUBLISHED)
def test_sparse_totals_match_the_model_cards(pid: str, total: float, active: float) -> None:
    m = get_model(pid)
    assert isinstance(m, DecoderSpec)
    assert abs(m.total_params - total) / total < 0.01, m.total_params
    # the cards round the active count to the billion (DeepSeek-V3: 37.55B counted)
    assert abs(m.active_params - active) / active < 0.03, m.active_params
    assert sum(m.parameter_breakdown().values()) == m.total_params


def test_qwen3_non_embedding_counts() -> None:
    assert round(get_model("qwen3-30b-a3b").non_embedding_params / 1e8) == 299  # card: 29.9B
    assert round(get_model("qwen3-235b-a22b").non_embedding_params / 1e9) == 234  # card: 234B


def test_gpt_oss_matches_the_model_card_to_the_ten_million() -> None:
    """gpt-oss model card (OpenAI, arXiv 2508.10925, table 1): total 116.83B / 20.91B, active
    5.13B / 3.61B -- "active" there leaves out the embedding lookup (the unembedding counts)."""
    for pid, total, active in (("gpt-oss-120b", 116.83e9, 5.13e9), ("gpt-oss-20b", 20.91e9, 3.61e9)):
        m = get_model(pid)
        assert isinstance(m, DecoderSpec)
        assert abs(m.total_params - total) < 0.006e9, (pid, m.total_params)
        assert abs(m.active_params - m.embedding_params - active) < 0.006e9, (pid, m.active_params)


def test_llama4_scout_text_model_is_the_card_total_less_the_vision_encoder() -> None:
    """Card: "17B activated, 109B total" for the multimodal model; the text model counted here is
    107.8B -- the rest is the vision encoder and projector, stated in the preset's notes."""
    m = get_model("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    assert m.id == "llama4-scout" and isinstance(m, DecoderSpec)
    assert 107.5e9 < m.total_params < 109e9
    assert abs(m.active_params - 17e9) / 17e9 < 0.02
    assert "vision encoder not counted" in m.notes


def test_deepseek_v3_layout_mla_latent_and_mtp() -> None:
    m = get_model("deepseek-ai/DeepSeek-V3")
    assert isinstance(m, DecoderSpec)
    assert m.is_mla and m.moe_layers == 58 and m.num_shared_experts == 1
    # latent 512 + decoupled RoPE key 64, once per token and layer: 61 * 576 * 2 bytes
    assert m.kv_cache_bytes_per_token(2.0) == 61 * 576 * 2 == 70_272
    assert m.kv_shards(8) == 1  # the latent is replicated over tensor-parallel ranks
    # card: 685B with the 14B MTP module
    assert abs(m.total_params + m.mtp_params - 685e9) / 685e9 < 0.005
    assert 13e9 < m.mtp_params < 14.5e9
    # the first three layers are dense (18432 wide), the others 256 routed + 1 shared of 2048
    dense = 3 * 7168 * 18432
    expert = 3 * 7168 * 2048
    assert m.routed_expert_params == 58 * 256 * expert
    assert m.parameter_breakdown()["mlp"] == 3 * dense + 58 * 257 * expert


def test_gqa_kv_is_unchanged_and_split_over_tp() -> None:
    m = get_model("qwen3-235b-a22b")
    assert isinstance(m, DecoderSpec)
    assert m.kv_cache_bytes_per_token(2.0) == 2 * 94 * 4 * 128 * 2
    assert m.kv_shards(4) == 4


def _published(pid: str) -> dict[str, object]:
    from service.core.catalog.sparse_models import _SPECS

    return copy.deepcopy(next(cfg for p, _, cfg, _, _ in _SPECS if p == pid))


def test_from_hf_config_reads_each_family_like_its_preset() -> None:
    for pid in ("deepseek-v3", "qwen3-30b-a3b", "llama4-maverick", "gpt-oss-120b"):
        m = from_hf_config(_published(pid))
        assert isinstance(m, DecoderSpec)
        assert m.total_params == get_model(pid).total_params, pid
        assert m.active_params == get_model(pid).active_params, pid


def test_llama4_wrapper_is_read_from_text_config() -> None:
    inner = _published("llama4-scout")
    inner.pop("model_type")
    wrapped = {
        "model_type": "llama4",
        "architectures": ["Llama4ForConditionalGeneration"],
        "text_config": inner,
    }
    assert from_hf_config(wrapped).total_params == get_model("llama4-scout").total_params
    with pytest.raises(UnsupportedArchitecture, match="text_config"):
        from_hf_config({"model_type": "llama4", "hidden_size": 5120})


def test_deepseek_v2_lite_without_query_compression() -> None:
    """DeepSeek-V2-Lite (q_lora_rank null): 15.7B total, 2.4B activated (its model card,
    https://huggingface.co/deepseek-ai/DeepSeek-V2-Lite; activated without the embedding lookup,
    as gpt-oss counts it: 2.45B here, 2.66B with it)."""
    cfg = {
        "model_type": "deepseek_v2",
        "hidden_size": 2048,
        "intermediate_size": 10944,
        "moe_intermediate_size": 1408,
        "num_hidden_layers": 27,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "n_routed_experts": 64,
        "n_shared_experts": 2,
        "num_experts_per_tok": 6,
        "first_k_dense_replace": 1,
        "q_lora_rank": None,
        "kv_lora_rank": 512,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "v_head_dim": 128,
        "vocab_size": 102400,
        "tie_word_embeddings": False,
    }
    m = from_hf_config(cfg)
    assert isinstance(m, DecoderSpec) and m.q_lora_rank == 0 and "q_proj" in m.linear_shapes()
    assert abs(m.total_params - 15.7e9) / 15.7e9 < 0.01
    assert abs(m.active_params - m.embedding_params - 2.4e9) / 2.4e9 < 0.03


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"qk_rope_head_dim": None}, "qk_rope_head_dim"),
        ({"moe_layer_freq": 2}, "moe_layer_freq"),
        ({"hidden_act": "gelu"}, "hidden_act"),
    ],
)
def test_deepseek_configs_refused_with_the_key(change: dict[str, object], match: str) -> None:
    cfg = {**_published("deepseek-v3"), **change}
    with pytest.raises(UnsupportedArchitecture, match=match):
        from_hf_config(cfg)


def test_mla_keys_on_another_family_refused() -> None:
    cfg = {**_published("qwen3-30b-a3b"), "kv_lora_rank": 512}
    with pytest.raises(UnsupportedArchitecture, match="kv_lora_rank"):
        from_hf_config(cfg)
