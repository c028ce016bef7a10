"""A serving engine the GPU cannot run, or a format the engine cannot run there, is refused by
``/v1/estimate`` (422 naming the field) and excluded by ``/v1/recommend`` with the reason --
one rule for both (``service.core.estimation.engine_support``), through the real app."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

SERVE: dict[str, Any] = {
    "model": "llama3-8b",
    "mode": "inference",
    "input_len": 1024,
    "output_len": 256,
    "requests_per_s": 2,
}


def _refused(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/estimate", json={**SERVE, **body})
    assert r.status_code == 422, r.text
    return r.json()


def test_tensorrt_llm_is_refused_on_an_amd_gpu(client: TestClient) -> None:
    doc = _refused(client, {"engine": "tensorrt-llm", "gpu": "amd-mi300x"})
    assert doc["errors"][0]["loc"] == ["body", "engine"] and "NVIDIA GPUs only" in doc["detail"]
    ok = client.post("/v1/estimate", json={**SERVE, "engine": "vllm", "gpu": "amd-mi300x"})
    assert ok.status_code == 200, ok.text


def test_tensorrt_llm_fp8_is_refused_without_fp8_tensor_cores(client: TestClient) -> None:
    doc = _refused(client, {"engine": "tensorrt-llm", "gpu": "nvidia-a100-sxm4-80gb", "quant_method": "fp8"})
    assert doc["errors"][0]["loc"] == ["body", "quant_method"]
    doc = _refused(
        client, {"engine": "tensorrt-llm", "gpu": "nvidia-a100-sxm4-80gb", "kv_cache_dtype": "fp8"}
    )
    assert doc["errors"][0]["loc"] == ["body", "kv_cache_dtype"]
    # vLLM's weight-only FP8 does run on Ampere; Hopper has FP8 tensor cores for TensorRT-LLM
    for engine, gpu in (("vllm", "nvidia-a100-sxm4-80gb"), ("tensorrt-llm", "nvidia-h100-sxm")):
        r = client.post("/v1/estimate", json={**SERVE, "engine": engine, "gpu": gpu, "quant_method": "fp8"})
        assert r.status_code == 200, r.text


def _excluded(doc: dict[str, Any], slug: str) -> dict[str, Any]:
    return next(e for e in doc["excluded"] if e["gpu"]["slug"] == slug)


def test_recommend_excludes_what_the_engine_cannot_run(client: TestClient) -> None:
    gpus = ["nvidia-a100-sxm4-80gb", "nvidia-h100-sxm", "amd-mi300x"]
    body = {
        "workload": {**SERVE, "engine": "tensorrt-llm", "quant_method": "fp8"},
        "constraints": {"allowed_gpus": gpus},
        "objective": "cheapest",
    }
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert [o["gpu"]["slug"] for o in doc["options"]] == ["nvidia-h100-sxm"]
    a100 = _excluded(doc, "nvidia-a100-sxm4-80gb")
    assert a100["code"] == "PRECISION_UNSUPPORTED" and a100["params"]["precision"] == "fp8 with tensorrt-llm"
    mi300x = _excluded(doc, "amd-mi300x")
    assert mi300x["code"] == "ENGINE_UNSUPPORTED" and mi300x["params"]["vendor"] == "amd"
    assert "does not run on" in mi300x["message"]


def test_recommend_does_not_rank_fp4_weights_on_hopper(client: TestClient) -> None:
    body = {
        "workload": {**SERVE, "engine": "vllm", "quant_method": "nvfp4"},
        "constraints": {"allowed_gpus": ["nvidia-h100-sxm", "nvidia-b200"]},
    }
    doc = client.post("/v1/recommend", json=body).json()
    assert [o["gpu"]["slug"] for o in doc["options"]] == ["nvidia-b200"]
    assert _excluded(doc, "nvidia-h100-sxm")["code"] == "PRECISION_UNSUPPORTED"
