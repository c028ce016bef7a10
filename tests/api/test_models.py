from __future__ import annotations

from fastapi.testclient import TestClient


def test_list_and_get_by_hf_id_and_short_name(client: TestClient) -> None:
    items = client.get("/v1/models").json()["items"]
    ids = {m["id"] for m in items}
    assert {"llama2-7b", "llama3.1-405b", "mixtral-8x7b", "qwen2.5-72b", "bert-large", "resnet50"} <= ids
    a = client.get("/v1/models/meta-llama/Llama-3.1-8B").json()
    b = client.get("/v1/models/LLAMA3.1-8B").json()
    assert a["id"] == b["id"]
    assert a["total_params"] == 8_030_261_248
    assert sum(a["parameter_breakdown"].values()) == a["total_params"]
    mix = client.get("/v1/models/mixtral-8x7b").json()
    assert mix["total_params"] == 46_702_792_704 and mix["active_params"] < mix["total_params"] / 3


def test_unknown_model_404_with_close_matches(client: TestClient) -> None:
    r = client.get("/v1/models/llama3-8bb")
    assert r.status_code == 404
    assert "llama3-8b" in r.json()["close_matches"]


def test_parse_hf_config_and_refuse_an_incomplete_mla_config(client: TestClient) -> None:
    cfg = {
        "architectures": ["MistralForCausalLM"],
        "model_type": "mistral",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "vocab_size": 32000,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "max_position_embeddings": 32768,
        "tie_word_embeddings": False,
    }
    r = client.post("/v1/models/parse", json=cfg)
    assert r.status_code == 200, r.text
    assert r.json()["total_params"] == 7_241_732_096
    mla = {
        "model_type": "deepseek_v3",
        "architectures": ["DeepseekV3ForCausalLM"],
        "hidden_size": 7168,
        "kv_lora_rank": 512,
    }
    r = client.post("/v1/models/parse", json=mla)
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["errors"][0]["loc"] == ["body", "hf_config"]


def test_parse_published_deepseek_v3_config_and_list_sparse_presets(client: TestClient) -> None:
    from service.core.catalog.sparse_models import _DEEPSEEK_V3

    body = {
        **_DEEPSEEK_V3,
        "architectures": ["DeepseekV3ForCausalLM"],
        "quantization_config": {"quant_method": "fp8"},
    }
    r = client.post("/v1/models/parse", json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["total_params"] == client.get("/v1/models/deepseek-ai/DeepSeek-V3").json()["total_params"]
    assert 670e9 < got["total_params"] < 672e9
    assert got["kv_cache_bytes_per_token_bf16"] == 70_272  # 61 layers x (512 + 64) x 2 bytes
    ids = {m["id"] for m in client.get("/v1/models").json()["items"]}
    assert {"deepseek-v3", "qwen3-235b-a22b", "llama4-maverick", "gpt-oss-120b"} <= ids
    refused = client.post("/v1/models/parse", json={**body, "model_type": "qwen3_moe"})
    assert refused.status_code == 422 and "kv_lora_rank" in refused.text
