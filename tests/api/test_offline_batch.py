"""An offline batch: ``tokens`` output tokens to generate, every request queued at once, through
the real app on the test database. The estimate fills each replica to what it admits and says
how long the tokens take; recommend sizes the replicas for a deadline and costs the run."""

from __future__ import annotations

import math
from typing import Any

from fastapi.testclient import TestClient

BATCH: dict[str, Any] = {
    "model": "llama3-8b",
    "mode": "inference",
    "engine": "vllm",
    "input_len": 1000,
    "output_len": 300,
    "tokens": 5e8,
}


def _estimate(client: TestClient, **extra: Any) -> dict[str, Any]:
    r = client.post("/v1/estimate", json={**BATCH, "gpu": "nvidia-h100-sxm", **extra})
    assert r.status_code == 200, r.text
    return r.json()


def _recommend(
    client: TestClient, constraints: dict[str, Any], objective: str = "cheapest"
) -> dict[str, Any]:
    body = {"workload": BATCH, "constraints": constraints, "objective": objective}
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def test_an_offline_estimate_fills_the_replica_and_times_the_tokens(client: TestClient) -> None:
    sv = _estimate(client)["serving"]
    # every request queued: the replica runs what its scheduler and KV cache admit, not one
    assert sv["concurrency_per_replica"] > 100
    assert any("offline batch" in n for n in sv["notes"])
    hours = sv["time_to_generate_h"]
    assert math.isclose(hours["mid"], 5e8 / sv["output_tokens_per_s"] / 3600.0, rel_tol=1e-9)
    assert hours["low"] < hours["mid"] < hours["high"]
    # two replicas share nothing: twice the rate, half the time
    two = _estimate(client, gpu_count=2)["serving"]
    assert math.isclose(two["output_tokens_per_s"], 2 * sv["output_tokens_per_s"], rel_tol=1e-9)
    assert math.isclose(two["time_to_generate_h"]["mid"], hours["mid"] / 2, rel_tol=1e-9)


def test_one_client_at_a_time_is_far_slower_than_the_batch(client: TestClient) -> None:
    batch = _estimate(client)["serving"]
    one = _estimate(client, concurrency=1)["serving"]  # a closed loop of one client, as asked
    assert one["concurrency_per_replica"] == 1
    assert one["time_to_generate_h"]["mid"] > 20 * batch["time_to_generate_h"]["mid"]


def test_tokens_are_refused_where_they_cannot_mean_a_batch(client: TestClient) -> None:
    r = client.post(
        "/v1/estimate", json={"model": "bert-base", "gpu": "L20", "mode": "inference", "tokens": 1e6}
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "tokens"], r.text
    r = client.post(
        "/v1/estimate",
        json={**BATCH, "gpu": "nvidia-h100-sxm", "speculative": "ngram", "gpu_count": 1},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "speculative"], r.text


def test_a_deadline_takes_the_fewest_replicas_that_meet_it(client: TestClient) -> None:
    rec = _recommend(client, {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 8, "deadline_hours": 10})
    o = rec["options"][0]
    hours = o["serving"]["time_to_generate"]
    assert hours["unit"] == "h" and hours["band"]["high"] <= 10
    assert any(r["code"] == "MEETS_DEADLINE" for r in o["reasons"])
    # one replica fewer misses it at the band's upper end (the same GPU, format and TP)
    st = o["strategy"]
    assert st["replicas"] >= 2  # one H100 takes about a day for these tokens
    est = _estimate(
        client,
        gpu_count=(st["replicas"] - 1) * st["tensor_parallel"],
        tensor_parallel=st["tensor_parallel"],
        quant_method=st["quant_method"],
    )
    assert est["serving"]["time_to_generate_h"]["high"] > 10
    # the run is the hours at the plan's hourly price
    cost = o["cost"]
    assert math.isclose(cost["run"]["mid"], cost["per_hour"] * hours["value"], rel_tol=1e-6)
    assert o["objective_unit"].endswith("(run)")


def test_fastest_without_a_deadline_uses_the_gpus_allowed_and_says_hours(client: TestClient) -> None:
    rec = _recommend(client, {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 4}, objective="fastest")
    o = rec["options"][0]
    assert o["strategy"]["gpu_count"] == 4
    assert o["objective_unit"] == "h"
    assert math.isclose(o["objective_value"], o["serving"]["time_to_generate"]["value"], rel_tol=1e-9)


def test_a_deadline_no_gpu_meets_shows_the_fastest_miss(client: TestClient) -> None:
    rec = _recommend(
        client, {"allowed_gpus": ["nvidia-l4", "nvidia-l40s"], "max_gpus": 2, "deadline_hours": 1}
    )
    codes = {e["gpu"]["slug"]: e["code"] for e in rec["excluded"]}
    assert codes["nvidia-l4"] == codes["nvidia-l40s"] == "MISSES_DEADLINE"
    warn = next(w for w in rec["warnings"] if w["code"] == "NO_PLAN_MEETS_DEADLINE")
    shown = rec["options"][0]
    assert warn["params"]["gpu_count"] == shown["strategy"]["gpu_count"]
    assert shown["serving"]["time_to_generate"]["band"]["high"] > 1


def test_a_deadline_still_needs_a_batch(client: TestClient) -> None:
    body = {
        "workload": {**BATCH, "requests_per_s": 2},
        "constraints": {"deadline_hours": 3},
    }
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "constraints", "deadline_hours"]


def test_a_full_replicas_memory_is_stated_at_what_fits_never_over_the_card(client: TestClient) -> None:
    """DeepSeek-R1 FP8, 1e9 tokens of 1,000 / 3,000 within 48 h: a full expert-parallel replica
    holds thousands of sequences; the memory stated (and FITS) was 180.2 GiB on a 179.1 GiB B200.
    The engine admits what its KV pool holds: the stated memory never exceeds the card."""
    body = {
        "workload": {
            "model": "deepseek-r1",
            "mode": "inference",
            "engine": "sglang",
            "quant_method": "fp8",
            "input_len": 1000,
            "output_len": 3000,
            "tokens": 1e9,
        },
        "constraints": {
            "allowed_gpus": ["nvidia-h200-sxm", "nvidia-b200"],
            "max_gpus": 32,
            "deadline_hours": 48,
        },
        "objective": "cheapest",
    }
    doc = client.post("/v1/recommend", json=body).json()
    assert doc["options"]
    for o in doc["options"]:
        fits = next(r for r in o["reasons"] if r["code"] == "FITS")["params"]
        assert fits["needed_gib"] <= fits["usable_gib"] and fits["headroom_gib"] >= 0, o["gpu"]["slug"]
        assert o["memory"]["needed_bytes"] <= o["memory"]["usable_bytes"]


def test_a_per_run_budget_bounds_an_offline_batch(client: TestClient) -> None:
    """2e8 tokens of Qwen2.5-72B within 48 h under 100 USD for the run: the batch is costed per
    run, so the budget is a constraint on it (it was a 422, "applies to training"); every option
    keeps it at its band's upper end, and one at a rate still refuses it."""
    body = {
        "workload": {
            "model": "qwen2.5-72b",
            "mode": "inference",
            "engine": "vllm",
            "input_len": 1500,
            "output_len": 500,
            "tokens": 2e8,
        },
        "constraints": {
            "max_gpus": 8,
            "deadline_hours": 48,
            "allow_quantization": True,
            "budget": {"per_run": 100},
        },
        "objective": "fastest",
    }
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["options"]
    for o in doc["options"]:
        assert o["cost"]["run"]["high"] <= 100.0, o["gpu"]["slug"]
    at_rate = {
        **body,
        "workload": {**body["workload"], "tokens": None, "requests_per_s": 2},
        "constraints": {**body["constraints"], "deadline_hours": None},
    }
    refused = client.post("/v1/recommend", json=at_rate)
    assert refused.status_code == 422 and "per_run" in str(refused.json()["errors"][0]["loc"])
