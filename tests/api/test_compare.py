"""GET /v1/compare through the real app on the real (seeded) database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event

from service.api.app import create_app
from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.conftest import auth, fresh_database_url


def _spec(body: dict[str, Any], key: str) -> dict[str, Any]:
    return next(r for r in body["specs"] if r["key"] == key)


def _cap(body: dict[str, Any], key: str) -> dict[str, Any]:
    return next(r for r in body["capabilities"] if r["key"] == key)


def _cheapest_on_demand_per_gpu_hour(client: TestClient, ident: str) -> dict[str, float]:
    """Per provider, from the prices route (an independent path to the same rows)."""
    out: dict[str, float] = {}
    for p in client.get(f"/v1/gpus/{ident}/prices").json()["items"]:
        if p["pricing_model"] == "on_demand" and p["currency"] == "USD":
            v = float(p["amount"]) / p["gpus_per_instance"]
            out[p["provider"]] = min(v, out.get(p["provider"], v))
    return out


def test_l40_vs_l20_same_memory_and_bandwidth_higher_l40_tensor_peak_with_provenance(
    client: TestClient,
) -> None:
    r = client.get("/v1/compare", params={"gpus": "l40,l20"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert [g["slug"] for g in body["gpus"]] == ["nvidia-l40", "nvidia-l20"]
    assert [g["query"] for g in body["gpus"]] == ["l40", "l20"]
    for key in ("memory_gib", "usable_memory_gib", "bandwidth_gb_per_s"):
        row = _spec(body, key)
        assert row["values"][0]["value"] == row["values"][1]["value"] is not None
        assert row["values"][1]["ratio_to_first"] == 1.0 and row["differs"] is False
    assert _spec(body, "memory_gib")["values"][0]["value"] == 48.0
    bf16 = _spec(body, "bf16_tflops")
    l40, l20 = bf16["values"]
    assert l40["value"] > l20["value"] and bf16["differs"]
    assert l20["ratio_to_first"] == pytest.approx(l20["value"] / l40["value"], abs=1e-4)
    assert (l40["provenance"], l40["source_kind"]) == ("datasheet", "vendor-datasheet")
    assert (l20["provenance"], l20["source_kind"]) == ("datasheet", "vendor-brief")  # a brief, said so
    assert "L20" in l20["source_title"]
    usable = _spec(body, "usable_memory_gib")["values"][1]
    assert usable["provenance"] == "measured"
    assert _spec(body, "sm_count")["values"][1] == {  # the L20's SM count is unpublished: null, not guessed
        "value": None,
        "ratio_to_first": None,
        "provenance": "unsourced",
        "source_kind": None,
        "source_title": None,
        "source_url": None,
        "derivation": None,
        "marketed": None,
    }
    assert _cap(body, "supports_fp8")["values"] == ["yes", "yes"]
    assert _cap(body, "nvlink_topology")["values"] == ["none", "none"]
    assert _cap(body, "tdp_w")["values"] == [300, 275] and _cap(body, "tdp_w")["differs"]
    assert _cap(body, "market")["differs"]
    # prices: the L40 is rented (SkyPilot snapshot), the L20 is not and says so
    l40p, l20p = body["prices"]
    expected = _cheapest_on_demand_per_gpu_hour(client, "nvidia-l40")
    assert expected and {p["provider"]: p["per_gpu_hour"] for p in l40p["providers"]} == pytest.approx(
        expected
    )
    assert l40p["cheapest_per_gpu_hour"] == pytest.approx(min(expected.values()))
    assert all(
        p["pricing_model"] == "on_demand" and p["currency"] == "USD" and p["price_row_ids"]
        for p in l40p["providers"]
    )
    assert (l20p["providers"], l20p["cheapest_per_gpu_hour"], l20p["reason"]) == ([], None, "NO_PRICE")
    # neither GPU has measured results: the configurations measured elsewhere, both estimated
    # (the blog post's table: speed-ups and OOM marks), where the answer had no result lines
    assert any("none of these GPUs has a measurement here" in n for n in body["notes"])
    sources = [tuple(c["source"] for c in line["cells"]) for line in body["results"]]
    assert sources.count(("estimate", "estimate")) > 100 and set(sources) <= {
        ("estimate", "estimate"),
        ("none", "none"),
    }
    ooms = [tuple(c["oom"] for c in line["cells"]) for line in body["results"]]
    assert (True, True) in ooms and all(a == b for a, b in ooms)  # 48 GB both: the same OOM marks
    assert r.headers["etag"] and r.headers["x-data-version"] == body["data_version"]


def test_three_way_with_the_a100_prices_and_capability_differences(client: TestClient) -> None:
    r = client.get("/v1/compare?gpus=l40,l20,nvidia-a100-sxm4-80gb&currency=CNY")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["currency"] == "CNY"
    a100 = body["prices"][2]
    assert a100["reason"] is None and {"aws", "gcp", "lambda"} <= {p["provider"] for p in a100["providers"]}
    assert all(p["currency"] == "CNY" and p["fx_date"] for p in a100["providers"])
    assert _cap(body, "supports_fp8")["values"] == ["yes", "yes", "no"]
    assert _cap(body, "nvlink_topology")["values"] == ["none", "none", "switched"]
    assert _cap(body, "form_factor")["values"] == ["pcie", "pcie", "sxm"]
    bw = _spec(body, "bandwidth_gb_per_s")["values"]
    assert bw[2]["value"] == 2039.0 and bw[2]["ratio_to_first"] == pytest.approx(2039.0 / 864.0, abs=1e-4)
    usd = client.get("/v1/compare?gpus=l40,l20,nvidia-a100-sxm4-80gb").json()
    ratio = a100["cheapest_per_gpu_hour"] / usd["prices"][2]["cheapest_per_gpu_hour"]
    assert 6.5 < ratio < 8.0  # the dated USD/CNY parity, not 1


def test_measured_on_one_side_only_estimates_fill_the_gap_with_provenance(client: TestClient) -> None:
    r = client.get("/v1/compare", params={"gpus": "nvidia-h200-sxm,l40", "workload": "resnet50-train"})
    assert r.status_code == 200, r.text
    rows = r.json()["results"]
    assert rows and all(row["workload"] == "resnet50-train" for row in rows)
    for row in rows:
        h200, l40 = row["cells"]
        assert row["metric"] == "throughput" and row["unit"] == "images/s" and row["higher_is_better"]
        assert h200["source"] == "measurement" and h200["value"] > 0 and h200["count"] >= 1
        assert h200["low"] <= h200["value"] <= h200["high"] and h200["speedup_vs_first"] == 1.0
        assert l40["source"] == "estimate" and l40["provenance"] not in (None, "measured")
        assert l40["low"] <= l40["value"] <= l40["high"]
        assert l40["speedup_vs_first"] == pytest.approx(l40["value"] / h200["value"], abs=1e-4)
        assert row["common_stack"] is None  # one GPU measured: nothing to mix
    # the ResNet-50 table: throughput by batch size per precision, ordered by batch
    amp = [row["parameters"]["batch_size"] for row in rows if row["parameters"]["precision"] == "amp_bf16"]
    assert amp == sorted(amp) and len(amp) >= 3
    # an estimate of the same cell on its own route agrees with the compare cell
    row = next(
        x for x in rows if x["parameters"]["precision"] == "amp_bf16" and x["parameters"]["batch_size"] == 64
    )
    est = client.post(
        "/v1/estimate",
        json={
            "model": "resnet50",
            "gpu": "l40",
            "precision": "amp_bf16",
            "batch_size": 64,
            "mode": "training",
        },
    )
    assert est.status_code == 200, est.text
    assert est.json()["time"]["samples_per_s"] == pytest.approx(row["cells"][1]["value"], rel=1e-6)


def test_estimated_out_of_memory_is_marked(client: TestClient) -> None:
    rows = client.get("/v1/compare", params={"gpus": "nvidia-h200-sxm,l40", "workload": "llm-train"}).json()[
        "results"
    ]
    oom = [row for row in rows if row["cells"][1]["oom"]]
    assert oom, "some H200 LLM training cells do not fit in an L40's 45 GiB"
    for row in oom:
        cell = row["cells"][1]
        assert cell["value"] is None and cell["source"] == "estimate" and "not to fit" in cell["reason"]
        assert row["cells"][0]["source"] == "measurement"


def test_unknown_name_is_404_naming_it(client: TestClient) -> None:
    r = client.get("/v1/compare?gpus=l40,nvidia-l99x")
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/problem+json")
    assert "nvidia-l99x" in r.json()["detail"]


def test_gpu_count_bounds_are_422_naming_gpus(client: TestClient) -> None:
    nine = ",".join(["l40", "l20", "l4", "t4", "a10", "a40", "l40s", "h100-sxm", "nvidia-h200-sxm"])
    for q in (nine, "l40"):
        r = client.get(f"/v1/compare?gpus={q}")
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert ["query", "gpus"] in [e["loc"] for e in r.json()["errors"]]
    r = client.get("/v1/compare?gpus=l40,NVIDIA-L40")
    assert r.status_code == 422 and "same GPU" in r.json()["detail"]
    r = client.get("/v1/compare?gpus=l40,l20&workload=collective")
    assert r.status_code == 422 and ["query", "workload"] in [e["loc"] for e in r.json()["errors"]]


def test_ambiguous_name_is_300_with_candidates(client: TestClient) -> None:
    r = client.get("/v1/compare?gpus=l40,A100-80GB")
    assert r.status_code == 300
    assert len(r.json()["candidates"]) == 2
    r = client.get("/v1/compare?gpus=l40,A100-80GB&on_ambiguous=default")
    assert r.status_code == 200 and r.json()["gpus"][1]["warnings"][0]["code"] == "assumed_variant"


def test_read_path_makes_one_watermark_read_and_304s(client: TestClient, engine: Engine) -> None:
    url = "/v1/compare?gpus=nvidia-h200-sxm,l40,l20"
    first = client.get(url)
    assert first.status_code == 200
    statements: list[str] = []

    def count(_c: Any, _cur: Any, statement: str, *_a: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        again = client.get(url)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert again.status_code == 200 and again.json()["results"] == first.json()["results"]
    # nothing but the request's watermark read (made on a raw DBAPI connection, so it may not
    # pass through the engine's events at all)
    queries = [s for s in statements if s.strip().upper() not in ("BEGIN", "COMMIT", "ROLLBACK")]
    assert len(queries) <= 1 and all("watermarks" in q for q in queries), statements
    etag = again.headers["etag"]
    r = client.get(url, headers={"If-None-Match": etag})
    assert r.status_code == 304 and r.headers["etag"] == etag


@pytest.fixture()
def fresh_client(tmp_path: Path) -> Iterator[tuple[TestClient, str]]:
    for url in fresh_database_url(tmp_path, "compare"):
        settings = Settings(database_url=url, seed_measurements_dir=None, rate_limits_enabled=False)
        eng = make_engine(url)
        bootstrap(eng, settings)
        with UnitOfWork(make_session_factory(eng)) as uow:
            key = create_key(uow, name="ops", scope="admin").secret
        with TestClient(create_app(settings, engine=eng)) as c:
            yield c, key
        eng.dispose()


def test_an_admin_price_moves_the_etag_and_prices_the_l20(fresh_client: tuple[TestClient, str]) -> None:
    client, key = fresh_client
    url = "/v1/compare?gpus=l40,l20"
    r = client.get(url)
    assert r.json()["prices"][1]["reason"] == "NO_PRICE"
    etag = r.headers["etag"]
    price = {
        "provider": "example-cn-cloud",
        "region": "cn-north",
        "instance_type": "l20x8",
        "gpus_per_instance": 8,
        "pricing_model": "on_demand",
        "currency": "CNY",
        "amount": "70.00",
        "effective_date": "2026-11-01",
        "source": "test: an operator's price sheet",
    }
    assert client.post("/v1/gpus/nvidia-l20/prices", json=price, headers=auth(key)).status_code == 204
    r2 = client.get(url, headers={"If-None-Match": etag})
    assert r2.status_code == 200 and r2.headers["etag"] != etag
    l20 = r2.json()["prices"][1]
    assert l20["reason"] is None and [p["provider"] for p in l20["providers"]] == ["example-cn-cloud"]
    # 70 CNY per 8-GPU hour at the 2026-01-08 parity 7.0197 CNY/USD
    assert l20["cheapest_per_gpu_hour"] == pytest.approx(70 / 7.0197 / 8, rel=1e-3)


def test_gpus_nobody_measured_are_compared_on_the_configurations_measured_elsewhere(
    client: TestClient,
) -> None:
    """L40 against L20 for LLM training, neither measured here: the lines are the H200's
    measured configurations, every cell an estimate anchored on them (the L40 ahead on its
    tensor peak), OOM where 48 GB cannot hold the configuration, and a note saying so -- not an
    empty table."""
    r = client.get("/v1/compare?gpus=nvidia-l40,nvidia-l20&workload=llm-train")
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["results"]
    assert all(c["source"] == "estimate" for row in doc["results"] for c in row["cells"])
    timed = [row for row in doc["results"] if all(c["value"] for c in row["cells"])]
    assert timed and all(row["cells"][1]["speedup_vs_first"] <= 1.0001 for row in timed)
    assert any(row["cells"][1]["speedup_vs_first"] < 0.95 for row in timed)
    assert any(c["oom"] for row in doc["results"] for c in row["cells"])
    assert any(
        "none of these GPUs has a measurement here" in n and "nvidia-h200-sxm" in n for n in doc["notes"]
    )


def test_a_memory_published_only_as_marketed_says_so_instead_of_a_bare_gap(client: TestClient) -> None:
    """The H200's datasheet says '141 GB HBM3e' (the enabled part of 144 GB of stacks): no byte
    count is published, so the figure stays null -- with the datasheet's words beside it, and the
    usable memory (the fit figure) in the next row."""
    doc = client.get("/v1/compare", params={"gpus": "nvidia-h200-sxm,nvidia-h100-sxm"}).json()
    memory = next(r for r in doc["specs"] if r["key"] == "memory_gib")
    h200, h100 = memory["values"]
    assert h200["value"] is None and h200["marketed"] == "141 GB HBM3e"
    assert h100["value"] == 80.0 and h100["marketed"] is None
    usable = next(r for r in doc["specs"] if r["key"] == "usable_memory_gib")
    assert usable["values"][0]["value"] > 140
