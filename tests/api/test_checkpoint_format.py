"""A model is served in the format its checkpoint ships in unless the workload names another,
through the real app on the test database: DeepSeek-V3/R1 are published in FP8 and gpt-oss in
MXFP4, so answering them as 16-bit copies (twice to four times the bytes) sent teams to twice the
GPUs; a GPU that cannot run the checkpoint's format gets it dequantised, and says so."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

GB = 1e9


def _estimate(client: TestClient, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/estimate", json={"mode": "inference", "engine": "vllm", **body})
    assert r.status_code == 200, r.text
    return r.json()


def test_gpt_oss_is_served_in_its_mxfp4_checkpoint_unless_asked_for_16_bit(client: TestClient) -> None:
    own = _estimate(client, model="gpt-oss-120b", gpu="nvidia-h100-sxm", input_len=2048, output_len=512)
    assert own["configuration"]["quant_method"] == "mxfp4"
    assert own["memory"]["fits"] is True
    assert own["memory"]["components"]["weights"] < 70 * GB  # 114.7B experts at 4.25 bit + 16-bit rest
    bf16 = _estimate(
        client,
        model="gpt-oss-120b",
        gpu="nvidia-h100-sxm",
        quant_method="none",
        input_len=2048,
        output_len=512,
    )
    assert bf16["configuration"]["quant_method"] == "none"
    assert bf16["memory"]["components"]["weights"] > 3 * own["memory"]["components"]["weights"]
    assert "checkpoint_dequantised" not in [w["code"] for w in own["warnings"] + bf16["warnings"]]


def test_a_gpu_without_the_checkpoints_kernels_loads_it_dequantised_and_says_so(client: TestClient) -> None:
    """The MI210 (CDNA 2) runs no MXFP4 kernel (:mod:`service.core.estimation.fp4`): the checkpoint
    is estimated as 16-bit weights with a warning; asked for explicitly, MXFP4 there is a 422. The
    MI300X (CDNA 3) serves it weight-only, as vLLM's gpt-oss release did (it was dequantised to
    16-bit there: 233.7 GB for gpt-oss-120b, two GPUs where one holds the 63.8 GB)."""
    j = _estimate(client, model="gpt-oss-20b", gpu="amd-mi210", input_len=1024, output_len=256)
    assert j["configuration"]["quant_method"] == "none"
    (w,) = [w for w in j["warnings"] if w["code"] == "checkpoint_dequantised"]
    assert "mxfp4" in w["message"] and "amd-mi210" in w["message"]
    r = client.post(
        "/v1/estimate",
        json={
            "mode": "inference",
            "engine": "vllm",
            "model": "gpt-oss-20b",
            "gpu": "amd-mi210",
            "quant_method": "mxfp4",
        },
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][-1] == "quant_method", r.text
    mi300x = _estimate(client, model="gpt-oss-120b", gpu="amd-mi300x", input_len=1024, output_len=256)
    assert mi300x["configuration"]["quant_method"] == "mxfp4" and mi300x["memory"]["fits"]
    assert mi300x["memory"]["components"]["weights"] < 70 * GB


def test_deepseek_v3_on_eight_h200_is_an_fp8_plan_not_no_option(client: TestClient) -> None:
    """671B parameters in FP8 are ~84 GB per H200 at TP8 (SGLang's stock recipe); in bf16 they
    are ~168 GB and nothing fits, which is what the recommender answered."""
    body = {
        "workload": {
            "model": "deepseek-ai/DeepSeek-V3",
            "mode": "inference",
            "engine": "sglang",
            "input_len": 2048,
            "output_len": 512,
            "concurrency": 32,
        },
        "constraints": {"allowed_gpus": ["nvidia-h200-sxm"], "max_gpus": 8},
        "objective": "fastest",
    }
    doc = client.post("/v1/recommend", json=body).json()
    (o,) = doc["options"]
    assert o["strategy"]["quant_method"] == "fp8" and o["strategy"]["gpu_count"] == 8
    fits = next(r for r in o["reasons"] if r["code"] == "FITS")["params"]
    assert 80 < fits["weights_gb"] < 90
    body["workload"]["quant_method"] = "none"
    bf16 = client.post("/v1/recommend", json=body).json()
    (h200,) = [e for e in bf16["excluded"] if e["gpu"]["slug"] == "nvidia-h200-sxm"]
    assert not bf16["options"] and h200["code"] == "MEMORY_INSUFFICIENT"


def test_a_config_json_with_a_quantization_config_is_served_in_that_format(client: TestClient) -> None:
    """An AWQ checkpoint given as its config.json is served as AWQ (4-bit weights), as vLLM loads it."""
    cfg = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128},
    }
    j = _estimate(client, hf_config=cfg, gpu="nvidia-l4", input_len=1024, output_len=256)
    assert j["configuration"]["quant_method"] == "awq"
    assert j["memory"]["components"]["weights"] < 6 * GB
