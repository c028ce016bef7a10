"""Price quality and price dates through the real app and database (issue 24): suspect rows are
listed with their reasons and never decide a cost ranking unless the request allows them;
prices whose real date is unknown say their age is a lower bound."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient


def _prices(client: TestClient, slug: str) -> list[dict[str, Any]]:
    r = client.get(f"/v1/gpus/{slug}/prices")
    assert r.status_code == 200, r.text
    return list(r.json()["items"])


def _ask(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_the_prices_route_flags_the_placeholder_provider_with_reasons(client: TestClient) -> None:
    items = _prices(client, "nvidia-h200-sxm")
    mithril = [p for p in items if p["provider"] == "mithril"]
    assert mithril, "the shipped snapshot lists Mithril's H200"
    for p in mithril:
        assert p["suspect"] is True
        codes = {r["code"] for r in p["suspect_reasons"]}
        assert "uniform_price_across_gpus" in codes
        assert any("nvidia-h100-sxm" in r["detail"] for r in p["suspect_reasons"])
    aws = [p for p in items if p["provider"] == "aws" and p["pricing_model"] == "on_demand"]
    assert aws and not any(p["suspect"] for p in aws)


def test_shipped_catalog_copies_say_their_age_is_a_lower_bound(client: TestClient) -> None:
    items = _prices(client, "nvidia-h100-sxm")
    copies = [p for p in items if "skypilot-catalog" in p["source"]]
    assert copies and all(p["date_basis"] == "retrieved" and p["age_is_lower_bound"] for p in copies)
    # a dated list price (the AWS capacity-block row of prices.json) has a real date
    dated = [p for p in items if p["pricing_model"] == "reserved" and p["provider"] == "aws"]
    assert dated and all(p["date_basis"] == "effective" and not p["age_is_lower_bound"] for p in dated)


CHEAPEST_H200 = {
    "workload": {"model": "llama3-8b", "mode": "fine-tuning", "batch_size": 4, "tokens": 5e8},
    "constraints": {"allowed_gpus": ["nvidia-h200-sxm", "nvidia-h100-sxm"], "max_gpus": 8},
    "objective": "cheapest",
}


def test_the_one_dollar_placeholder_never_decides_a_cost_ranking(client: TestClient) -> None:
    doc = _ask(client, CHEAPEST_H200)
    assert doc["options"]
    for o in doc["options"]:
        c = o["cost"]
        assert c is not None and c["provider"] != "mithril" and c["suspect"] is False, c
        # Mithril's 1.00 per GPU-hour would be below every real H100/H200 rate shipped
        assert c["per_hour"] / c["gpus_paid"] > 1.0
        assert c["price_age_is_lower_bound"] is True and "price_age_lower_bound" in c["notes"]


def test_allowing_suspect_prices_uses_them_and_says_so(client: TestClient) -> None:
    body = {**CHEAPEST_H200, "constraints": {**CHEAPEST_H200["constraints"], "allow_suspect_prices": True}}
    doc = _ask(client, body)
    top = doc["options"][0]["cost"]
    assert top["provider"] == "mithril" and top["suspect"] is True
    assert {r["code"] for r in top["suspect_reasons"]} >= {"uniform_price_across_gpus"}
    assert "suspect_price" in top["notes"]


def test_allow_suspect_prices_must_be_a_boolean(client: TestClient) -> None:
    body = {**CHEAPEST_H200, "constraints": {**CHEAPEST_H200["constraints"], "allow_suspect_prices": "yes"}}
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 422 and "allow_suspect_prices" in r.text


def _assumed_prices(doc: dict[str, Any]) -> dict[str, Any]:
    [a] = [a for a in doc["assumptions"] if a["code"] == "ASSUMED_PRICES"]
    return dict(a)


def test_the_answer_says_which_price_ages_are_lower_bounds(client: TestClient) -> None:
    """A catalog copy's date is when it was read: the answer's price assumption says "at least"
    and why. AWS's capacity-block price for the p5.48xlarge (prices.json, effective 2024-12-01)
    has a real date: its age is stated as is, and it is stale (older than the 30-day default)."""
    copy = _ask(client, CHEAPEST_H200)
    a = _assumed_prices(copy)
    c = copy["options"][0]["cost"]
    assert a["params"]["age_is_lower_bound"] is True and c["price_age_is_lower_bound"] is True
    assert "at least" in a["message"] and "real date is unknown" in a["message"]
    dated = _ask(
        client,
        {
            "workload": CHEAPEST_H200["workload"],
            "constraints": {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 8, "providers": ["aws"]},
            "cost": {"pricing_models": ["reserved"]},
            "objective": "cheapest",
        },
    )
    a = _assumed_prices(dated)
    c = dated["options"][0]["cost"]
    assert (c["instance_type"], c["price_age_is_lower_bound"], c["stale"]) == ("p5.48xlarge", False, True)
    assert a["params"]["age_is_lower_bound"] is False and a["params"]["stale"] is True
    assert a["params"]["age_days_at_least"] == c["price_age_days"] >= 733  # 2024-12-01 to 2026-12-04
    assert "at least" not in a["message"] and "stale" in a["message"]
    zh = client.post(
        "/v1/recommend",
        json={**CHEAPEST_H200},
        headers={"Accept-Language": "zh"},
    ).json()
    assert "至少" in _assumed_prices(zh)["message"]
