"""Owned inventory is costed by TCO (amortised purchase + electricity at the facility's PUE),
never by a rental price: with the catalog's purchase price, the pool's own, or -- when none is
known -- on electricity only, saying the capital cost is unknown (not silently excluded)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

HOURS_PER_YEAR = 365.25 * 24

LORA_8B = {
    "model": "llama3-8b",
    "mode": "fine-tuning",
    "finetune": "lora",
    "batch_size": 2,
    "seq_len": 2048,
    "tokens": 1e8,
}


def _ask(client: TestClient, pool: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body = {
        "workload": LORA_8B,
        "constraints": {"inventory": [{"gpu": "L40", "gpus_per_node": 4, "nodes": 2, **pool}]},
        "objective": "cheapest",
        **extra,
    }
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_owned_l40s_without_a_purchase_price_are_costed_on_electricity_only(client: TestClient) -> None:
    """The catalog has no L40 purchase price: "cheapest" used to answer no option at all. Now
    the plan is costed on its electricity -- TDP x GPUs x (1 + host share) x PUE x $/kWh -- and
    says the capital cost is unknown."""
    d = _ask(client, {})
    assert d["options"], d["excluded"]
    o = d["options"][0]
    assert o["gpu"]["slug"] == "nvidia-l40"
    t = o["cost"]["tco"]
    a = t["assumptions"]
    n = o["strategy"]["gpu_count"]
    assert o["cost"]["provider"] is None and o["cost"]["instance_type"] is None  # never a rental
    assert t["available"] and t["capex"] == 0 and t["capex_per_hour"] == 0
    assert "capex_unknown" in t["notes"]
    kw = 300.0 * n * (1 + a["host_power_fraction"]) * a["pue"] / 1000.0  # L40 TDP 300 W
    assert abs(t["energy_per_hour"] - kw * a["electricity_usd_per_kwh"]) < 1e-9
    assert t["per_hour"] == t["energy_per_hour"]
    said = [r for r in o["reasons"] if r["code"] == "CAPEX_UNKNOWN"]
    assert len(said) == 1 and "capital cost is unknown" in said[0]["message"]
    assert said[0]["params"]["gpu_count"] == n
    assert not [e for e in d["excluded"] if e["gpu"]["slug"] == "nvidia-l40"]


def test_a_pools_own_purchase_price_is_amortised(client: TestClient) -> None:
    """$8,000 a card amortised over the assumed years of use at the assumed utilisation, on top
    of the same electricity: dearer per hour than electricity alone, no longer 'unknown'."""
    bare = _ask(client, {})["options"][0]
    d = _ask(client, {"purchase_price_per_gpu": 8000})
    o = d["options"][0]
    t, a = o["cost"]["tco"], o["cost"]["tco"]["assumptions"]
    assert t["capex"] == 8000 * t["gpus_paid"] and t["gpus_paid"] == o["strategy"]["gpu_count"]
    expect = t["capex"] / (a["amortisation_years"] * HOURS_PER_YEAR) / a["utilisation"]
    assert abs(t["capex_per_hour"] - expect) < 1e-9
    assert abs(t["per_hour"] - (t["capex_per_hour"] + t["energy_per_hour"])) < 1e-9
    assert "capex_from_pool" in t["notes"] and "capex_unknown" not in t["notes"]
    assert not [r for r in o["reasons"] if r["code"] == "CAPEX_UNKNOWN"]
    if o["strategy"]["gpu_count"] == bare["strategy"]["gpu_count"]:
        assert t["per_hour"] > bare["cost"]["tco"]["per_hour"]
    zh = client.post(
        "/v1/recommend",
        json={
            "workload": LORA_8B,
            "constraints": {"inventory": [{"gpu": "L40", "gpus_per_node": 4, "nodes": 2}]},
            "objective": "cheapest",
        },
        headers={"Accept-Language": "zh-CN"},
    ).json()
    msg = next(r["message"] for r in zh["options"][0]["reasons"] if r["code"] == "CAPEX_UNKNOWN")
    assert "资本成本未知" in msg


def test_a_purchase_budget_needs_a_known_capital_cost(client: TestClient) -> None:
    """Electricity only is not a purchase price: a purchase budget cannot be checked against
    it (NO_PURCHASE_PRICE, as before); with the pool's price it is checked (OVER_BUDGET)."""
    body = {
        "workload": LORA_8B,
        "objective": "cheapest",
        "constraints": {
            "inventory": [{"gpu": "L40", "gpus_per_node": 4, "nodes": 2}],
            "budget": {"purchase": 1000},
        },
    }
    d = client.post("/v1/recommend", json=body).json()
    assert not d["options"]
    assert [e["code"] for e in d["excluded"] if e["gpu"]["slug"] == "nvidia-l40"] == ["NO_PURCHASE_PRICE"]
    body["constraints"]["inventory"][0]["purchase_price_per_gpu"] = 8000  # type: ignore[index]
    d = client.post("/v1/recommend", json=body).json()
    ex = [e for e in d["excluded"] if e["gpu"]["slug"] == "nvidia-l40"]
    assert [e["code"] for e in ex] == ["OVER_BUDGET"] and ex[0]["params"]["cost"] >= 8000


def test_a_bad_pool_purchase_price_is_422_naming_the_field(client: TestClient) -> None:
    for bad in (0, -5, "8000", 1e12):
        body = {
            "workload": LORA_8B,
            "constraints": {"inventory": [{"gpu": "L40", "gpus_per_node": 4, "purchase_price_per_gpu": bad}]},
        }
        r = client.post("/v1/recommend", json=body)
        assert r.status_code == 422, (bad, r.text)
        locs = [e["loc"] for e in r.json()["errors"]]
        assert ["body", "constraints", "inventory", 0, "purchase_price_per_gpu"] in locs, (bad, locs)


def test_owned_serving_states_the_per_million_costs_it_ranks_on(client: TestClient) -> None:
    """Serving on owned H100s ranked by cost per million tokens: the cost block states that figure
    and its input/output split (they were null while the ranking used them), in the TCO's currency."""
    body = {
        "workload": {
            "model": "llama3-8b",
            "mode": "inference",
            "engine": "vllm",
            "input_len": 1024,
            "output_len": 256,
            "requests_per_s": 5,
        },
        "constraints": {
            "inventory": [
                {"gpu": "nvidia-h100-sxm", "gpus_per_node": 8, "nodes": 1, "purchase_price_per_gpu": 25000}
            ]
        },
        "objective": "cost_per_million_tokens",
    }
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    o = r.json()["options"][0]
    cost = o["cost"]
    assert cost["provider"] is None and cost["tco"]["available"] is True
    assert cost["per_million_tokens"] == o["objective_value"] > 0
    assert cost["per_million_input"] > 0 and cost["per_million_output"] > cost["per_million_input"]
    assert o["objective_unit"] == f"{cost['currency']} per million output tokens"


def test_a_per_run_budget_bounds_owned_gpus_too(client: TestClient) -> None:
    """GPUs on hand are costed by what owning them costs; a per-run budget bounds that as it
    bounds a rental (7.47 USD of A100 time was ranked best under a 1 USD budget, cost.run null) --
    for an offline batch (no engine named: continuous batching assumed) and for LoRA training."""
    pool = {"gpu": "A100 80GB", "gpus_per_node": 8, "nodes": 1, "purchase_price_per_gpu": 15000}
    batch = {"model": "llama3-8b", "mode": "inference", "tokens": 1e8, "input_len": 1000, "output_len": 300}
    for workload in (batch, LORA_8B):
        loose = {"workload": workload, "constraints": {"inventory": [pool]}, "objective": "cheapest"}
        free = client.post("/v1/recommend", json=loose).json()["options"][0]
        run = free["cost"]["run"]
        assert run is not None and run["high"] > 1.0, free["cost"]
        tight = {**loose, "constraints": {"inventory": [pool], "budget": {"per_run": 1}}}
        doc = client.post("/v1/recommend", json=tight).json()
        assert not doc["options"], workload
        (a100,) = [e for e in doc["excluded"] if e["gpu"]["slug"] == "nvidia-a100-sxm4-80gb"]
        assert a100["code"] == "OVER_BUDGET" and a100["params"]["what"] == "per_run"
        kept = {**loose, "constraints": {"inventory": [pool], "budget": {"per_run": run["high"] * 2}}}
        assert client.post("/v1/recommend", json=kept).json()["options"]


def test_the_frontier_states_an_owned_plans_cost_in_its_currency(client: TestClient) -> None:
    """Owned GPUs costed in CNY: the option said ``CNY (run)`` while the frontier's point of the
    same plan, at the same value, said ``USD/run`` (its unit read only a rental quote's currency)."""
    body = {
        "workload": LORA_8B,
        "constraints": {
            "inventory": [{"gpu": "L40", "gpus_per_node": 4, "nodes": 2, "purchase_price_per_gpu": 60000}],
            "budget": {"currency": "CNY"},
        },
        "objective": "cheapest",
    }
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    d = r.json()
    o = d["options"][0]
    assert o["cost"]["currency"] == "CNY" and o["objective_unit"] == "CNY (run)"
    assert d["frontier"] and all(f["cost_unit"] == "CNY/run" for f in d["frontier"]), d["frontier"]
