"""An engine's memory setting through ``/v1/estimate`` (``memory_fraction``): the launch's own
setting decides what fits, checked on a published deployment that only runs with it."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.core.evidence.published import get_table

# SemiAnalysis InferenceX, DeepSeek-R1 FP8 under SGLang on 4 x B200, 8,192 in / 1,024 out: its
# launch script (benchmarks/dsr1_fp8_b200.sh) sets --mem-fraction-static 0.95 and an FP8 KV
# cache for TP 4; SGLang's own pick on four B200s (0.855) leaves the 168 GB of weights per GPU no pool.
DSR1_B200_TP4 = {
    "mode": "inference",
    "model": "deepseek-r1",
    "gpu": "nvidia-b200",
    "gpu_count": 4,
    "tensor_parallel": 4,
    "engine": "sglang",
    "quant_method": "fp8",
    "input_len": 8192,
    "output_len": 1024,
}


def _published(concurrency: int) -> float:
    """InferenceX's output tokens/s per GPU for that deployment at ``concurrency`` clients."""
    (row,) = [
        r
        for r in get_table("inferencex-3a600f1").rows
        if r.slug == "nvidia-b200"
        and r.system.startswith("sglang")
        and r.model == "deepseek-r1"
        and r.precision == "fp8"
        and r.tp == 4
        and (r.input_len, r.output_len, r.concurrency) == (8192, 1024, concurrency)
    ]
    return row.value


def _estimate(client: TestClient, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/estimate", json={**DSR1_B200_TP4, **body})
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_sglang_default_leaves_no_pool_and_says_which_setting_makes_room(client: TestClient) -> None:
    """The refusal names the smallest setting that holds one request (8,192 + 512 tokens of a
    16-bit MLA latent beside 168 GB of weights: 0.886), and that setting does."""
    out = _estimate(client, concurrency=24, batch_size=24)
    assert out["serving"] is None
    (why,) = [w["message"] for w in out["warnings"] if w["code"] == "no_serving_as_given"]
    assert "86% of the" in why and "memory_fraction 0.886 or more holds one" in why
    assert _estimate(client, concurrency=1, batch_size=1, memory_fraction=0.886)["serving"] is not None
    assert _estimate(client, concurrency=1, batch_size=1, memory_fraction=0.884)["serving"] is None


def test_the_launch_setting_runs_the_published_deployment(client: TestClient) -> None:
    """With the script's settings the 24 clients run at once (the pool holds about 42 such
    requests, the published runs held 32), and the modelled rate per GPU falls between the
    published 16- and 32-client rows."""
    out = _estimate(client, concurrency=24, batch_size=24, memory_fraction=0.95, kv_cache_dtype="fp8")
    s = out["serving"]
    assert s["concurrency_per_replica"] == 24
    assert 32 <= s["max_concurrency_per_replica"] <= 48
    assert any("sglang memory setting 0.95 (as stated)" in n for n in s["notes"])
    per_gpu = s["output_tokens_per_s"] / 4
    assert 0.9 * _published(16) < per_gpu < 1.1 * _published(32)


def test_a_larger_setting_admits_more_sequences(client: TestClient) -> None:
    """vLLM's gpu_memory_utilization, Llama-3.1-70B in 16-bit on two H100s: 0.9 (its default)
    and 0.95 stated -- the extra 5 % of 80 GB is all KV cache."""
    body = {
        "mode": "inference",
        "model": "llama3.1-70b",
        "gpu": "nvidia-h100-sxm",
        "gpu_count": 2,
        "tensor_parallel": 2,
        "engine": "vllm",
        "input_len": 1024,
        "output_len": 256,
        "concurrency": 64,
        "batch_size": 64,
    }
    caps = []
    for fraction in (None, 0.9, 0.95):
        r = client.post("/v1/estimate", json={**body, **({"memory_fraction": fraction} if fraction else {})})
        assert r.status_code == 200, r.text
        caps.append(r.json()["serving"]["max_concurrency_per_replica"])
    assert caps[0] == caps[1] < caps[2]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"memory_fraction": 0}, "greater than 0"),
        ({"memory_fraction": 1.5}, "less than or equal to 1"),
        ({"memory_fraction": "most"}, "valid number"),
        (
            {"engine": "hf-transformers", "memory_fraction": 0.9, "batch_size": 1},
            "a static batch takes what its sequences need",
        ),
    ],
)
def test_a_bad_setting_is_a_422_naming_it(client: TestClient, change: dict[str, Any], message: str) -> None:
    r = client.post("/v1/estimate", json={**DSR1_B200_TP4, **change})
    assert r.status_code == 422, r.text
    problem = r.json()
    assert r.headers["content-type"].startswith("application/problem+json")
    assert problem["errors"][0]["loc"][-1] == "memory_fraction"
    assert message in problem["errors"][0]["msg"]


def test_the_recommender_sizes_the_deployment_at_the_stated_setting(client: TestClient) -> None:
    """The cheapest B200 deployment of that workload at 24 clients: eight GPUs at SGLang's own
    pick (four leave no KV pool), four at the launch script's 0.95 with an FP8 KV cache."""
    workload = {
        key: DSR1_B200_TP4[key]
        for key in ("mode", "model", "engine", "quant_method", "input_len", "output_len")
    }
    plans = []
    for extra in ({}, {"memory_fraction": 0.95, "kv_cache_dtype": "fp8"}):
        r = client.post(
            "/v1/recommend",
            json={
                "workload": {**workload, "concurrency": 24, **extra},
                "constraints": {"allowed_gpus": ["B200"], "max_gpus": 8},
                "objective": "cheapest",
            },
        )
        assert r.status_code == 200, r.text
        best = r.json()["options"][0]
        plans.append(
            (best["gpu"]["slug"], best["strategy"]["gpu_count"], best["strategy"]["tensor_parallel"])
        )
    assert plans == [("nvidia-b200", 8, 8), ("nvidia-b200", 4, 4)]
