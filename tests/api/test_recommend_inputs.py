"""``POST /v1/recommend`` refuses constraints that cannot mean what they say, naming the field
(problem+json), through the real app on the test database; and an exclusion names the figure
that is missing."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

TRAIN: dict[str, Any] = {"model": "llama3-8b", "mode": "fine-tuning", "tokens": 1e9}


def _problem(client: TestClient, constraints: dict[str, Any], field: str) -> dict[str, Any]:
    r = client.post(
        "/v1/recommend", json={"workload": TRAIN, "constraints": constraints, "objective": "cheapest"}
    )
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    doc = r.json()
    assert any(".".join(str(x) for x in e["loc"]).endswith(field) for e in doc["errors"]), doc
    return doc


def test_an_unknown_provider_is_refused_with_the_known_ones(client: TestClient) -> None:
    doc = _problem(client, {"providers": ["nosuchcloud"]}, "constraints.providers")
    assert "nosuchcloud" in str(doc) and "aws" in str(doc)


def test_provider_ids_are_case_insensitive(client: TestClient) -> None:
    body = {"workload": TRAIN, "constraints": {"providers": ["AWS"]}, "objective": "cheapest"}
    upper = client.post("/v1/recommend", json=body)
    assert upper.status_code == 200, upper.text
    body["constraints"] = {"providers": ["aws"]}
    lower = client.post("/v1/recommend", json=body).json()
    assert [o["cost"]["provider"] for o in upper.json()["options"]] == [
        o["cost"]["provider"] for o in lower["options"]
    ]
    assert {o["cost"]["provider"] for o in lower["options"]} == {"aws"}


def test_empty_lists_that_would_allow_nothing_are_refused(client: TestClient) -> None:
    _problem(client, {"providers": []}, "providers")
    _problem(client, {"allowed_gpus": []}, "allowed_gpus")


def test_a_gpu_without_a_time_figure_is_excluded_naming_the_figure(client: TestClient) -> None:
    r = client.post(
        "/v1/recommend",
        json={"workload": TRAIN, "constraints": {"allowed_gpus": ["intel-gaudi3"]}, "objective": "fastest"},
    )
    assert r.status_code == 200, r.text
    ex = next(e for e in r.json()["excluded"] if e["gpu"]["slug"] == "intel-gaudi3")
    assert ex["code"] == "NO_TIME_ESTIMATE"
    assert "a time" not in ex["message"] and "peak" in ex["message"]


def test_a_rate_and_a_concurrency_together_are_refused(client: TestClient) -> None:
    """An open loop (requests_per_s) and a closed loop (concurrency) contradict each other: the
    latency came from the rate and the memory from the concurrency."""
    serve = {
        "model": "llama3-8b",
        "mode": "inference",
        "engine": "vllm",
        "requests_per_s": 5,
        "concurrency": 8,
    }
    r = client.post("/v1/estimate", json={**serve, "gpu": "nvidia-h100-sxm"})
    assert r.status_code == 422, r.text
    assert any(e["loc"][-1] == "concurrency" for e in r.json()["errors"])
    r = client.post("/v1/recommend", json={"workload": serve})
    assert r.status_code == 422, r.text
    assert any(e["loc"][-2:] == ["workload", "concurrency"] for e in r.json()["errors"])


def test_a_gpu_both_allowed_and_excluded_is_refused(client: TestClient) -> None:
    doc = _problem(
        client, {"allowed_gpus": ["H100-SXM", "L40S"], "excluded_gpus": ["nvidia-l40s"]}, "excluded_gpus"
    )
    assert "nvidia-l40s" in str(doc)


def test_a_sequence_beyond_the_models_context_is_warned_about(client: TestClient) -> None:
    """Llama-3-8B holds 8,192 positions: 16,000 + 1,000 tokens are a length vLLM refuses as
    --max-model-len, so the answer says so (the estimate did; the recommendation did not)."""
    body: dict[str, Any] = {
        "workload": {
            "model": "llama3-8b",
            "mode": "inference",
            "engine": "vllm",
            "input_len": 16000,
            "output_len": 1000,
            "requests_per_s": 1,
        },
        "constraints": {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 8},
        "objective": "cheapest",
    }
    doc = client.post("/v1/recommend", json=body).json()
    (w,) = [w for w in doc["warnings"] if w["code"] == "BEYOND_CONTEXT"]
    assert w["params"] == {"model": "llama3-8b", "tokens": 17000, "limit": 8192}
    assert "max_position_embeddings" in w["message"]
    body["workload"]["input_len"] = 7000
    within = client.post("/v1/recommend", json=body).json()
    assert not [w for w in within["warnings"] if w["code"] == "BEYOND_CONTEXT"]
