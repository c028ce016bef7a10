"""``GET /v1/measurement-plan`` against the real app and database: measuring the top cell
narrows the band it named and the cell leaves the top of the plan; stale cells; auth, bad
input, pagination, ETag.

Each test asks about a synthetic catalog GPU of its own (``make_gpu``: no published data, so its
answers are transferred with wide bands) and reads the plan filtered to it, so the session's
other stored answers and measurements do not disturb it."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from service.core.catalog.vocabulary import SUITE_VERSION
from tests.api.benchmark_fixtures import make_gpu, result, run_on
from tests.conftest import _key, auth

JOB_A = {
    "model": "gt-llama-350m",
    "precision": "amp_bf16",
    "batch_size": 4,
    "seq_len": 1024,
    "optimizer_impl": "fused",
}
JOB_B = {**JOB_A, "batch_size": 2}


@pytest.fixture()
def gpu(engine: Engine) -> dict[str, Any]:
    return make_gpu(engine)


def _ask(
    client: TestClient, key: str, gpu: dict[str, Any], job: dict[str, Any], limit: int = 3
) -> dict[str, Any]:
    body = {"workload": job, "constraints": {"allowed_gpus": [gpu["slug"]], "max_gpus": 1}, "limit": limit}
    r = client.post("/v1/recommend", json=body, headers=auth(key))
    assert r.status_code == 200, r.text
    doc: dict[str, Any] = r.json()
    assert [o["gpu"]["slug"] for o in doc["options"]] == [gpu["slug"]]
    return doc


def _plan(client: TestClient, key: str, **params: Any) -> dict[str, Any]:
    r = client.get("/v1/measurement-plan", params=params, headers=auth(key))
    assert r.status_code == 200, r.text
    assert r.headers["X-Data-Version"] == r.json()["data_version"]
    out: dict[str, Any] = r.json()
    return out


def _band_pct(t: dict[str, Any]) -> float:
    b = t["step_time_band"]
    return (b["high"] - b["low"]) / b["mid"] * 100  # type: ignore[no-any-return]


def _estimate(client: TestClient, gpu: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/estimate", json={**job, "gpu": gpu["slug"]})
    assert r.status_code == 200, r.text
    t: dict[str, Any] = r.json()["time"]
    return t


def _measure(
    client: TestClient, key: str, gpu: dict[str, Any], cell: dict[str, Any], step_s: float, **kw: Any
) -> None:
    """Three results of the cell from each of two hosts (evidence that counts), through the API."""
    batch_tokens = cell["parameters"]["batch_size"] * cell["parameters"]["seq_len"]
    for host in ("plan-a", "plan-b"):
        results = [
            result(
                "llm-train",
                cell["parameters"],
                {
                    "throughput": batch_tokens / (step_s * (1 + i / 100)),
                    "step_time_s": step_s * (1 + i / 100),
                },
            )
            for i in range(3)
        ]
        body = run_on(gpu, results, host=host, **kw)
        r = client.post("/v1/benchmark-runs", json=body, headers=auth(key))
        assert r.status_code == 201, r.text


def test_measuring_the_top_cell_narrows_the_band_it_named(
    client: TestClient, submit_key: str, gpu: dict[str, Any]
) -> None:
    a1 = _ask(client, submit_key, gpu, JOB_A, limit=1)
    _ask(client, submit_key, gpu, JOB_A, limit=2)  # the same job asked twice: its cell narrows two answers
    _ask(client, submit_key, gpu, JOB_B)
    before = _plan(client, submit_key, gpu=gpu["slug"])
    assert before["count"] == 2 and before["questions"] >= 3
    top, second = before["items"]
    assert (top["rank"], second["rank"]) == (1, 2)
    assert top["gpu"]["slug"] == gpu["slug"] and top["workload"] == "llm-train"
    assert top["parameters"]["batch_size"] == 4 and second["parameters"]["batch_size"] == 2
    assert top["reasons"] == ["narrows"] and top["answer_count"] == 2 and top["last_measured"] is None
    named = top["answers"][0]
    assert named["figure"] == "step_time_s" and named["provenance"] != "measured"
    assert named["band_now_pct"] > named["band_after_pct"] > 0
    assert top["narrowing_pct"] == pytest.approx(
        2 * (named["band_now_pct"] - named["band_after_pct"]), abs=0.05
    )
    assert a1["recommendation_id"] in {x["recommendation_id"] for x in top["answers"]}  # asked with this key
    assert "narrow 2 answers" in top["why"]

    now = _estimate(client, gpu, JOB_A)
    assert _band_pct(now) == pytest.approx(named["band_now_pct"], abs=0.01)  # the band the plan named

    _measure(client, submit_key, gpu, top, step_s=now["step_time_s"])

    after = _estimate(client, gpu, JOB_A)
    assert after["provenance"] == "measured"
    assert _band_pct(after) < _band_pct(now)
    assert _band_pct(after) == pytest.approx(named["band_after_pct"], abs=0.01)  # as the plan expected
    again = _plan(client, submit_key, gpu=gpu["slug"])
    assert [c["parameters_hash"] for c in again["items"]] == [second["parameters_hash"]]
    assert again["items"][0]["rank"] == 1


def test_another_keys_questions_count_but_their_ids_stay_hidden(
    client: TestClient, engine: Engine, submit_key: str, admin_key: str, gpu: dict[str, Any]
) -> None:
    asked = _ask(client, submit_key, gpu, JOB_B)
    other = _key(engine, "submit")
    (cell,) = _plan(client, other, gpu=gpu["slug"])["items"]
    assert cell["answer_count"] == 1 and cell["answers"][0]["recommendation_id"] is None
    (cell,) = _plan(client, admin_key, gpu=gpu["slug"])["items"]
    assert cell["answers"][0]["recommendation_id"] == asked["recommendation_id"]


def test_a_cell_last_measured_with_an_older_suite_is_stale_until_measured_again(
    client: TestClient, submit_key: str, gpu: dict[str, Any]
) -> None:
    cell = {"parameters": {**JOB_B, "batch_size": 1}}
    cell["parameters"].pop("optimizer_impl")
    old = "0.9.0"
    _measure(client, submit_key, gpu, cell, 0.05, suite_version=old, fp_over={"suite_version": old})
    (stale,) = _plan(client, submit_key, gpu=gpu["slug"])["items"]
    assert stale["reasons"] == ["stale"] and stale["answer_count"] == 0
    assert stale["last_measured"]["suite_version"] == old
    assert stale["stale"] == [f"last measured with suite {old}; the suite is {SUITE_VERSION} now"]
    assert stale["parameters"]["batch_size"] == 1
    _measure(client, submit_key, gpu, cell, 0.05)  # the current suite: no longer stale
    assert _plan(client, submit_key, gpu=gpu["slug"])["items"] == []


def test_pagination_filters_and_etag(client: TestClient, submit_key: str, gpu: dict[str, Any]) -> None:
    _ask(client, submit_key, gpu, JOB_A)
    _ask(client, submit_key, gpu, JOB_B)
    full = _plan(client, submit_key, gpu=gpu["slug"])
    first = _plan(client, submit_key, gpu=gpu["slug"], limit=1)
    assert first["count"] == 2 and first["next_cursor"] == "p1" and len(first["items"]) == 1
    second = _plan(client, submit_key, gpu=gpu["slug"], limit=1, cursor=first["next_cursor"])
    assert second["next_cursor"] is None
    assert [c["parameters_hash"] for c in first["items"] + second["items"]] == [
        c["parameters_hash"] for c in full["items"]
    ]
    assert second["items"][0]["rank"] == 2
    assert _plan(client, submit_key, gpu=gpu["slug"], workload="resnet50-train")["items"] == []
    r = client.get("/v1/measurement-plan", params={"gpu": gpu["slug"]}, headers=auth(submit_key))
    etag = r.headers["ETag"]
    again = client.get(
        "/v1/measurement-plan",
        params={"gpu": gpu["slug"]},
        headers={**auth(submit_key), "If-None-Match": etag},
    )
    assert again.status_code == 304 and again.headers["ETag"] == etag and not again.content
    _ask(
        client, submit_key, gpu, {**JOB_B, "batch_size": 1}
    )  # a new question changes the plan (not the data)
    changed = client.get(
        "/v1/measurement-plan",
        params={"gpu": gpu["slug"]},
        headers={**auth(submit_key), "If-None-Match": etag},
    )
    assert changed.status_code == 200 and changed.json()["count"] == 3 and changed.headers["ETag"] != etag


def test_an_unknown_gpu_is_a_404_naming_it(client: TestClient, submit_key: str) -> None:
    name = f"no-such-gpu-{uuid.uuid4().hex[:6]}"
    r = client.get("/v1/measurement-plan", params={"gpu": name}, headers=auth(submit_key))
    assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")
    assert name in r.json()["detail"]


def test_needs_the_submit_scope(client: TestClient, read_key: str) -> None:
    assert client.get("/v1/measurement-plan").status_code == 401
    r = client.get("/v1/measurement-plan", headers=auth(read_key))
    assert r.status_code == 403 and r.headers["content-type"].startswith("application/problem+json")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"since_days": 0}, "since_days"),
        ({"since_days": 366}, "since_days"),
        ({"limit": 0}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"cursor": "b12"}, "cursor"),
        ({"workload": "nope"}, "workload"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    client: TestClient, submit_key: str, params: dict[str, Any], field: str
) -> None:
    r = client.get("/v1/measurement-plan", params=params, headers=auth(submit_key))
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert ["query", field] in [e["loc"] for e in r.json()["errors"]]
