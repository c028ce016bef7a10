"""Parameter counts against the figures Hugging Face / torchvision report, lookup, config import."""

from __future__ import annotations

import pytest

from service.core.catalog.models import (
    PRESETS,
    CnnSpec,
    DecoderSpec,
    EncoderSpec,
    ModelNotFound,
    UnsupportedArchitecture,
    from_hf_config,
    from_parameter_count,
    get_model,
    list_models,
)

# sum(p.numel() for p in model.parameters()) of the Hugging Face / torchvision implementation.
EXACT = {
    "llama2-7b": 6_738_415_616,
    "llama2-13b": 13_015_864_320,
    "llama2-70b": 68_976_648_192,
    "llama3-8b": 8_030_261_248,
    "llama3.1-8b": 8_030_261_248,
    "llama3-70b": 70_553_706_496,
    "llama3.1-405b": 405_853_388_800,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "qwen2.5-7b": 7_615_616_512,
    "qwen2.5-72b": 72_706_203_648,
    "tinyllama-1.1b": 1_100_048_384,
    "bert-base": 109_514_298,  # BertForMaskedLM (no pooler); BertModel with pooler is 109,482,240
    "bert-large": 335_174_458,
    "resnet50": 25_557_032,
}


@pytest.mark.parametrize(("name", "count"), sorted(EXACT.items()))
def test_exact_parameter_counts(name: str, count: int) -> None:
    assert get_model(name).total_params == count


def test_mixtral_active_parameters() -> None:
    m = get_model("mixtral-8x7b")
    assert isinstance(m, DecoderSpec)
    assert m.active_params == 12_879_925_248  # ~12.9B: 2 of 8 experts per token
    assert m.num_experts == 8 and m.experts_per_token == 2


def test_mixtral_8x22b_matches_the_announced_sizes() -> None:
    """Mistral AI's announcement (mistral.ai/news/mixtral-8x22b): 141B parameters, 39B active."""
    m = get_model("mistralai/Mixtral-8x22B-Instruct-v0.1")
    assert isinstance(m, DecoderSpec) and m.id == "mixtral-8x22b"
    assert m.total_params == pytest.approx(141e9, rel=0.005)
    assert m.active_params == pytest.approx(39e9, rel=0.01)


def test_breakdown_sums_to_total() -> None:
    for m in list_models():
        assert sum(m.parameter_breakdown().values()) == m.total_params, m.id


def test_llama2_7b_per_layer_breakdown() -> None:
    m = get_model("llama2-7b")
    assert isinstance(m, DecoderSpec)
    layer = m.per_layer_breakdown()
    assert layer["attention"] == 4 * 4096 * 4096
    assert layer["mlp"] == 3 * 4096 * 11008
    assert layer["norms"] == 2 * 4096
    assert layer["total"] == 202_383_360
    assert m.embedding_params == m.lm_head_params == 32000 * 4096


def test_gqa_kv_cache_bytes_per_token() -> None:
    m = get_model("llama3-8b")
    assert isinstance(m, DecoderSpec)
    # 2 (K,V) * 32 layers * 8 KV heads * 128 * 2 bytes = 131,072 B/token
    assert m.kv_cache_bytes_per_token(2) == 131_072
    m2 = get_model("llama2-7b")
    assert isinstance(m2, DecoderSpec)
    assert m2.kv_cache_bytes_per_token(2) == 524_288


def test_ground_truth_presets_shapes() -> None:
    expected = {
        "gt-llama-110m": (768, 12, 12, 12, 2048, 32000, 10000.0),
        "gt-llama-350m": (1024, 24, 16, 16, 2816, 32000, 10000.0),
        "gt-llama-1b-v32k": (2048, 16, 32, 8, 8192, 32000, 10000.0),
        "gt-llama-1b-v128k": (2048, 16, 32, 8, 8192, 128256, 500000.0),
        "gt-llama-3b": (3072, 28, 24, 8, 8192, 128256, 500000.0),
        "tinyllama-1.1b": (2048, 22, 32, 4, 5632, 32000, 10000.0),
    }
    for name, (h, layers, heads, kv, ffn, vocab, theta) in expected.items():
        m = PRESETS[name]
        assert isinstance(m, DecoderSpec)
        assert (m.hidden_size, m.num_layers, m.num_heads, m.num_kv_heads) == (h, layers, heads, kv)
        assert (m.intermediate_size, m.vocab_size, m.rope_theta) == (ffn, vocab, theta)
        assert m.gated_mlp and not m.attention_bias and not m.mlp_bias and not m.tie_word_embeddings
        assert m.rms_norm_eps == 1e-5 and m.max_position_embeddings >= 4096
    # Llama-3.2-1B with untied embeddings: 1,235,814,400 tied + 128256*2048 head
    assert PRESETS["gt-llama-1b-v128k"].total_params == 1_235_814_400 + 128256 * 2048


def test_gpt3_175b() -> None:
    m = get_model("gpt3-175b")
    assert isinstance(m, DecoderSpec)
    assert 174e9 < m.total_params < 175.5e9
    assert m.lm_head_params == 0  # tied


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("meta-llama/Llama-3.1-8B", "llama3.1-8b"),
        ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama3.1-8b"),
        ("Llama-3.1-8B-Instruct", "llama3.1-8b"),
        ("llama3-70b", "llama3-70b"),
        ("Llama-3-70B", "llama3-70b"),
        ("LLAMA 2 7B", "llama2-7b"),
        ("meta-llama/Llama-2-7b-hf", "llama2-7b"),
        ("Llama-2-13b-chat-hf", "llama2-13b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("Qwen/Qwen2.5-72B-Instruct", "qwen2.5-72b"),
        ("qwen2.5_14b", "qwen2.5-14b"),
        ("bert-large-uncased", "bert-large"),
        ("ResNet-50", "resnet50"),
        ("GT-Llama-1B-v128k", "gt-llama-1b-v128k"),
    ],
)
def test_lookup(name: str, expected: str) -> None:
    assert get_model(name).id == expected


def test_miss_offers_close_matches() -> None:
    with pytest.raises(ModelNotFound) as exc:
        get_model("llama-3-7b")
    assert exc.value.name == "llama-3-7b"
    assert "llama3-8b" in exc.value.close_matches or "llama3-70b" in exc.value.close_matches
    with pytest.raises(ModelNotFound) as exc2:
        get_model("zzzz")
    assert exc2.value.close_matches == []


LLAMA3_8B_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "attention_bias": False,
    "attention_dropout": 0.0,
    "bos_token_id": 128000,
    "eos_token_id": 128001,
    "hidden_act": "silu",
    "hidden_size": 4096,
    "initializer_range": 0.02,
    "intermediate_size": 14336,
    "max_position_embeddings": 8192,
    "model_type": "llama",
    "num_attention_heads": 32,
    "num_hidden_layers": 32,
    "num_key_value_heads": 8,
    "pretraining_tp": 1,
    "rms_norm_eps": 1e-05,
    "rope_scaling": None,
    "rope_theta": 500000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "transformers_version": "4.40.0.dev0",
    "use_cache": True,
    "vocab_size": 128256,
}


def test_from_hf_config_llama3() -> None:
    m = from_hf_config(LLAMA3_8B_CONFIG)
    assert isinstance(m, DecoderSpec)
    assert m.total_params == 8_030_261_248
    assert m.head_dim == 128 and m.rope_theta == 500000.0


def test_from_hf_config_mixtral_and_qwen2() -> None:
    mixtral = {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "num_experts_per_tok": 2,
        "vocab_size": 32000,
        "rope_theta": 1e6,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
        "sliding_window": None,
    }
    m = from_hf_config(mixtral)
    assert m.total_params == 46_702_792_704 and m.active_params == 12_879_925_248
    qwen = {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_attention_heads": 28,
        "num_hidden_layers": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "rope_theta": 1e6,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "max_position_embeddings": 131072,
        "tie_word_embeddings": False,
        "use_sliding_window": False,
        "sliding_window": 131072,
    }
    q = from_hf_config(qwen)
    assert q.total_params == 7_615_616_512
    assert isinstance(q, DecoderSpec) and q.sliding_window is None


def test_from_hf_config_explicit_head_dim_and_tied() -> None:
    cfg = dict(LLAMA3_8B_CONFIG, head_dim=64, tie_word_embeddings=True, num_hidden_layers=2)
    m = from_hf_config(cfg)
    assert isinstance(m, DecoderSpec)
    assert m.head_dim == 64 and m.q_dim == 2048
    attn = 4096 * 2048 + 2 * 4096 * 512 + 2048 * 4096
    assert m.attention_params_per_layer == attn
    assert m.lm_head_params == 0


def test_from_hf_config_bert() -> None:
    cfg = {
        "architectures": ["BertForMaskedLM"],
        "model_type": "bert",
        "hidden_size": 1024,
        "num_hidden_layers": 24,
        "num_attention_heads": 16,
        "intermediate_size": 4096,
        "vocab_size": 30522,
        "max_position_embeddings": 512,
        "type_vocab_size": 2,
    }
    m = from_hf_config(cfg)
    assert isinstance(m, EncoderSpec) and m.total_params == 335_174_458


@pytest.mark.parametrize(
    "cfg",
    [
        {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "kv_lora_rank": 512},
        {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "q_lora_rank": 1536},
        {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 4096},
        {"model_type": "llama", "hidden_size": 4096},  # missing fields
    ],
)
def test_unsupported_architectures(cfg: dict[str, object]) -> None:
    with pytest.raises(UnsupportedArchitecture):
        from_hf_config(cfg)


def test_from_parameter_count_states_shape() -> None:
    spec, text = from_parameter_count(7)
    assert abs(spec.total_params - 7e9) / 7e9 < 0.1
    assert "assumed" in text and str(spec.num_layers) in text
    big, _ = from_parameter_count(70)
    assert abs(big.total_params - 70e9) / 70e9 < 0.1
    with pytest.raises(ValueError):
        from_parameter_count(-1)


def test_resnet50_flops() -> None:
    m = get_model("resnet50")
    assert isinstance(m, CnnSpec)
    # torchvision: 4.09 GMACs per 224x224 image
    assert 4.0e9 < m.forward_flops_per_image / 2 < 4.2e9


def test_specs_are_frozen() -> None:
    m = get_model("llama2-7b")
    assert isinstance(m, DecoderSpec)
    with pytest.raises(AttributeError):
        m.hidden_size = 1  # type: ignore[misc]
