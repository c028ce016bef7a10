"""Reading benchmark data: runs, result listings with filters and cursors, the latest-measured
view (k, thin, fingerprints never mixed, provenance), workloads, coverage."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from service.core.catalog.vocabulary import WORKLOADS, suite_definition_hash
from tests.api.benchmark_fixtures import fingerprint, make_gpu, result, run_on
from tests.conftest import _key, auth


def _post(client: TestClient, key: str, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/benchmark-runs", json=body, headers=auth(key))
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


@pytest.fixture()
def gpu(engine: Engine) -> dict[str, Any]:
    return make_gpu(engine)


def test_run_detail(client: TestClient, submit_key: str, gpu: dict[str, Any]) -> None:
    body = run_on(
        gpu,
        [result(), result(status="oom", error="CUDA out of memory"), result(status="error", error="boom")],
        notes="nightly",
    )
    _post(client, submit_key, body)
    r = client.get(f"/v1/benchmark-runs/{body['run_id']}")
    assert r.status_code == 200
    d = r.json()
    assert (
        d["state"] == "accepted"
        and d["gpu"]["slug"] == gpu["slug"]
        and d["gpu"]["resolved_by"] == "pci_memory"
    )
    assert d["status_counts"] == {"ok": 1, "oom": 1, "error": 1}
    assert d["fingerprint"]["torch_version"] == "2.5.1" and d["notes"] == "nightly"
    assert d["agent"]["key_id"] and d["agent"]["trusted"] is False
    assert [x["status"] for x in d["results"]] == ["ok", "oom", "error"]
    assert d["results"][0]["metrics"]["throughput"] == {"value": 2500.0, "unit": "images/s"}
    assert d["results"][0]["parameters"] == {"precision": "amp_bf16", "batch_size": 64, "channels_last": True}
    assert (
        client.get(f"/v1/benchmark-runs/{body['run_id']}", params={"include_results": False}).json()[
            "results"
        ]
        is None
    )
    assert client.get("/v1/benchmark-runs/no-such-run-123").status_code == 404
    assert client.get("/v1/benchmark-results/999999999").status_code == 404


def test_result_filters_and_cursor(
    client: TestClient, engine: Engine, submit_key: str, gpu: dict[str, Any]
) -> None:
    torch = f"2.6.0+{uuid.uuid4().hex[:6]}"
    rows = [
        result(params={"precision": "amp_bf16", "batch_size": bs}, metrics={"throughput": 1000.0 + bs})
        for bs in (8, 16, 32)
        for _ in range(5)
    ]
    body = run_on(gpu, rows, host="filter-host", fp_over={"torch_version": torch})
    _post(client, submit_key, body)
    other = run_on(gpu, [result("gemm", {"precision": "bf16"}, {"tflops": 100.0})], host="filter-host-2")
    _post(client, submit_key, other)

    def ids(**params: Any) -> list[int]:
        r = client.get("/v1/benchmark-results", params={"gpu": gpu["slug"], "limit": 100, **params})
        assert r.status_code == 200, r.text
        return [x["id"] for x in r.json()["items"]]

    assert len(ids()) == 16
    assert len(ids(workload="resnet50-train")) == 15
    # parameter filters are canonicalised: 8 and 8.0 are one cell
    assert len(ids(workload="resnet50-train", **{"param.batch_size": "8"})) == 5
    assert len(ids(workload="resnet50-train", **{"param.batch_size": "8.0"})) == 5
    assert (
        len(ids(workload="resnet50-train", **{"param.batch_size": "8", "param.precision": "AMP_BF16"})) == 5
    )
    assert len(ids(workload="resnet50-train", **{"param.channels_last": "true"})) == 15
    assert len(ids(workload="resnet50-train", **{"param.channels_last": "false"})) == 0
    assert len(ids(workload="gemm", **{"param.n": "8192"})) == 1
    # fingerprint fields: stack fields through the fingerprint table, host identity on the run
    assert len(ids(**{"fp.torch_version": torch})) == 15
    assert len(ids(**{"fp.torch_version": torch, "fp.tf32_matmul": "false"})) == 15
    assert len(ids(**{"fp.torch_version": torch, "fp.tf32_matmul": "true"})) == 0
    assert len(ids(**{"fp.power_limit_w": "700.0"})) == 16
    assert len(ids(**{"fp.host_id": "mid-filter-host-2"})) == 1
    assert len(ids(host="filter-host")) == 15
    assert len(ids(run_id=other["run_id"])) == 1
    assert len(ids(status="ok", quarantined=False)) == 16
    assert len(ids(since="2000-01-01T00:00:00Z")) == 16
    assert len(ids(since="2100-01-01T00:00:00Z")) == 0
    agent = client.get(f"/v1/benchmark-runs/{body['run_id']}?include_results=false").json()["agent"]["key_id"]
    assert len(ids(agent=agent)) == 16

    # cursor pagination: newest first, no duplicates, no gaps
    seen: list[int] = []
    cursor = None
    pages = 0
    while True:
        params: dict[str, Any] = {"gpu": gpu["slug"], "limit": 6}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/v1/benchmark-results", params=params).json()
        seen += [x["id"] for x in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert pages == 3 and len(seen) == 16 and seen == sorted(seen, reverse=True)


@pytest.mark.parametrize(
    ("params", "loc"),
    [
        ({"param.batch_size": "8"}, ["query", "param.batch_size"]),
        ({"workload": "resnet50-train", "param.bogus": "1"}, ["query", "param.bogus"]),
        ({"workload": "resnet50-train", "param.batch_size": "eight"}, ["query", "param.batch_size"]),
        ({"fp.flux_capacitor": "1"}, ["query", "fp.flux_capacitor"]),
        ({"workload": "resnet-9000"}, ["query", "workload"]),
        ({"cursor": "not-a-cursor"}, ["query", "cursor"]),
    ],
)
def test_bad_filters_are_422_with_loc(client: TestClient, params: dict[str, str], loc: list[str]) -> None:
    r = client.get("/v1/benchmark-results", params=params)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == loc


def test_latest_measured_picks_newest_fingerprint_with_k_points(
    client: TestClient, engine: Engine, submit_key: str, gpu: dict[str, Any]
) -> None:
    old = {"torch_version": "2.4.0"}
    new = {"torch_version": "2.6.0"}
    _post(
        client,
        submit_key,
        run_on(
            gpu,
            [result(metrics={"throughput": v}) for v in (100.0, 110.0, 120.0, 130.0, 140.0)],
            fp_over=old,
            started_at="2026-01-01T00:00:00Z",
        ),
    )
    _post(
        client,
        submit_key,
        run_on(
            gpu,
            [result(metrics={"throughput": v}) for v in (200.0, 210.0)],
            fp_over=new,
            started_at="2026-02-01T00:00:00Z",
        ),
    )

    def cell() -> dict[str, Any]:
        m = client.get(f"/v1/gpus/{gpu['slug']}/measurements", params={"workload": "resnet50-train"}).json()
        assert m["min_points"] == 3
        (c,) = m["cells"]
        return c

    c = cell()  # the new stack has only 2 points: the old one (5 >= k) is the latest with k
    assert c["fingerprint"]["torch_version"] == "2.4.0" and c["thin"] is False and c["count"] == 5
    assert c["metrics"]["throughput"]["median"] == 120.0
    assert c["metrics"]["throughput"]["p10"] == pytest.approx(104.0)
    assert c["metrics"]["throughput"]["p90"] == pytest.approx(136.0)
    assert [o["usable_count"] for o in c["other_fingerprints"]] == [2]
    assert c["newest_measured_at"].startswith("2026-01-01")

    _post(
        client,
        submit_key,
        run_on(gpu, [result(metrics={"throughput": 220.0})], fp_over=new, started_at="2026-03-01T00:00:00Z"),
    )
    c = cell()  # now the new stack has k points and is the newest
    assert c["fingerprint"]["torch_version"] == "2.6.0" and c["count"] == 3 and c["thin"] is False
    assert c["metrics"]["throughput"]["median"] == 210.0  # never mixed with the old stack
    # k can be raised per request: nobody reaches 6 -> the best-populated, flagged thin
    m = client.get(
        f"/v1/gpus/{gpu['slug']}/measurements", params={"workload": "resnet50-train", "min_points": 6}
    ).json()
    assert m["cells"][0]["thin"] is True and m["cells"][0]["fingerprint"]["torch_version"] == "2.4.0"


def test_provenance_needs_two_hosts_or_a_trusted_agent(
    client: TestClient, engine: Engine, submit_key: str
) -> None:
    gpu = make_gpu(engine)
    url = f"/v1/gpus/{gpu['slug']}/measurements"
    _post(
        client,
        submit_key,
        run_on(gpu, [result(metrics={"throughput": v}) for v in (10.0, 11.0, 12.0)], host="a"),
    )
    c = client.get(url).json()["cells"][0]
    assert (c["provenance"], c["provenance_code"], c["host_count"]) == (None, "single_untrusted_host", 1)
    assert "second host" in c["provenance_reason"]
    _post(
        client,
        submit_key,
        run_on(
            gpu, [result(metrics={"throughput": 11.5})], host="b", fp=fingerprint(gpu["pci"], host_id="mid-a")
        ),
    )
    c = client.get(url).json()["cells"][0]
    assert (c["provenance"], c["provenance_code"], c["host_count"]) == ("measured", "multiple_hosts", 2)

    gpu2 = make_gpu(engine)
    trusted = _key(engine, "submit", trusted=True)
    _post(client, trusted, run_on(gpu2, [result(metrics={"throughput": 10.0})]))
    c = client.get(f"/v1/gpus/{gpu2['slug']}/measurements").json()["cells"][0]
    assert (c["provenance"], c["provenance_code"], c["trusted_agent"], c["thin"]) == (
        "measured",
        "trusted_agent",
        True,
        True,
    )


def test_integer_gemm_cells_name_tops_as_their_main_metric(
    client: TestClient, submit_key: str, gpu: dict[str, Any]
) -> None:
    _post(client, submit_key, run_on(gpu, [result("gemm", {"precision": "int8"}, {"tops": 600.0})]))
    (c,) = client.get(f"/v1/gpus/{gpu['slug']}/measurements", params={"workload": "gemm"}).json()["cells"]
    assert c["main_metric"] == "tops" and c["metrics"]["tops"]["unit"] == "TOP/s"


def test_oom_cells_say_it_does_not_fit(client: TestClient, submit_key: str, gpu: dict[str, Any]) -> None:
    params = {"precision": "fp32", "batch_size": 4096}
    _post(
        client,
        submit_key,
        run_on(gpu, [result(params=params, status="oom", error="OOM", peak_reserved_bytes=2**30)] * 2),
    )
    (c,) = client.get(
        f"/v1/gpus/{gpu['slug']}/measurements",
        params={"workload": "resnet50-train", "param.batch_size": 4096},
    ).json()["cells"]
    assert c["count"] == 0 and c["oom_count"] == 2 and c["status_counts"]["oom"] == 2
    assert c["metrics"] == {} and c["provenance_code"] == "no_usable_results" and c["thin"] is True


def test_measurements_of_unknown_or_ambiguous_gpu(client: TestClient) -> None:
    assert client.get("/v1/gpus/no-such-gpu-xyz/measurements").status_code == 404
    r = client.get("/v1/gpus/A100-80GB/measurements")
    assert r.status_code == 300 and len(r.json()["candidates"]) == 2


def test_workloads_vocabulary(client: TestClient) -> None:
    d = client.get("/v1/workloads").json()
    assert d["suite_definition_hash"] == suite_definition_hash()
    names = [w["name"] for w in d["items"]]
    assert names == sorted(WORKLOADS)
    gemm = next(w for w in d["items"] if w["name"] == "gemm")
    assert gemm["definition_hash"] == WORKLOADS["gemm"].definition_hash
    assert {m["name"]: m["unit"] for m in gemm["metrics"]}["tflops"] == "TFLOP/s"
    assert "amp_bf16" in d["precisions"] and "host_id" in d["fingerprint_required"]
    assert client.get("/v1/workloads/llm-train").json()["main_metric"] == "throughput"
    assert client.get("/v1/workloads/nope").status_code == 404


def test_coverage_matrix(client: TestClient, submit_key: str, engine: Engine) -> None:
    gpu = make_gpu(engine)
    _post(
        client,
        submit_key,
        run_on(gpu, [result(), result(params={"precision": "fp32", "batch_size": 8}), result(status="oom")]),
    )
    _post(
        client,
        submit_key,
        run_on(gpu, [result("gemm", {"precision": "bf16"}, {"tflops": 100.0})], host="other"),
    )
    d = client.get("/v1/coverage").json()
    row = next(r for r in d["rows"] if r["gpu_slug"] == gpu["slug"])
    rn = row["workloads"]["resnet50-train"]
    assert (rn["results"], rn["usable"], rn["oom"], rn["configurations"], rn["hosts"]) == (3, 2, 1, 2, 1)
    assert rn["newest_measured_at"] is not None
    assert row["workloads"]["gemm"]["results"] == 1
    assert row["workloads"]["collective"]["results"] == 0
    assert [gpu["slug"], "collective"] in d["empty_cells"]
    assert [gpu["slug"], "gemm"] not in d["empty_cells"]
    assert d["workloads"] == sorted(WORKLOADS) and isinstance(d["data_version"], str)
