"""Admin work on benchmark data: review (release / quarantine), retraction, runs by key,
alerts, and the committed-measurements loader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select

from service.bootstrap import EXTRA_SEEDERS
from service.db.engine import make_session_factory
from service.db.models import ApiKey, BenchmarkRun
from service.db.uow import UnitOfWork
from service.measurement_files import load_measurement_files, seed_measurements
from service.settings import Settings
from service.usecases.benchmarks import BUILTIN_AGENT_NAME
from tests.api.benchmark_fixtures import make_gpu, result, run_on
from tests.conftest import _key, auth


def _post(client: TestClient, key: str, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/benchmark-runs", json=body, headers=auth(key))
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


def _median(client: TestClient, slug: str) -> tuple[float | None, int]:
    cells = client.get(f"/v1/gpus/{slug}/measurements", params={"workload": "gemm"}).json()["cells"]
    if not cells:
        return None, 0
    m = cells[0]["metrics"].get("tflops")
    return (m["median"] if m else None), cells[0]["count"]


def test_release_and_quarantine_are_sticky_and_move_aggregates(
    client: TestClient, engine: Engine, submit_key: str, admin_key: str
) -> None:
    gpu = make_gpu(engine, bf16=400.0)
    out = _post(
        client,
        submit_key,
        run_on(
            gpu, [result("gemm", {"precision": "bf16"}, {"tflops": v}) for v in (300.0, 310.0, 320.0, 410.0)]
        ),
    )
    above = out["results"][3]["result_id"]
    assert out["results"][3]["quarantine_reason"] == "above_catalog_peak"
    assert _median(client, gpu["slug"]) == (310.0, 3)

    url = f"/v1/admin/benchmark-results/{above}"
    assert (
        client.post(url + "/release", json={"reason": "boost clock"}, headers=auth(submit_key)).status_code
        == 403
    )
    assert client.post(url + "/release", json={}, headers=auth(admin_key)).status_code == 422
    r = client.post(
        url + "/release",
        json={"reason": "datasheet peak is at base clock; verified"},
        headers=auth(admin_key),
    )
    assert r.status_code == 200, r.text
    res = r.json()["result"]
    assert res["quarantined"] is False and res["review"]["state"] == "released"
    assert "verified" in res["review"]["reason"]
    assert _median(client, gpu["slug"]) == (315.0, 4)

    ok_id = out["results"][0]["result_id"]
    r = client.post(
        f"/v1/admin/benchmark-results/{ok_id}/quarantine",
        json={"reason": "thermal throttling on that host"},
        headers=auth(admin_key),
    )
    assert r.status_code == 200
    assert r.json()["result"]["quarantine"] == {
        "reason": "admin",
        "detail": "thermal throttling on that host",
    }
    assert _median(client, gpu["slug"]) == (320.0, 3)
    # sticky: more data re-evaluates the cell but leaves admin decisions alone
    _post(client, submit_key, run_on(gpu, [result("gemm", {"precision": "bf16"}, {"tflops": 318.0})]))
    assert client.get(f"/v1/benchmark-results/{ok_id}").json()["quarantine"]["reason"] == "admin"
    assert client.get(f"/v1/benchmark-results/{above}").json()["quarantined"] is False
    # admin listing of quarantined results
    q = client.get(
        "/v1/admin/benchmark-results",
        params={"gpu": gpu["slug"], "quarantined": True},
        headers=auth(admin_key),
    ).json()
    assert [x["id"] for x in q["items"]] == [ok_id]
    assert (
        client.post(
            "/v1/admin/benchmark-results/999999999/release", json={"reason": "x"}, headers=auth(admin_key)
        ).status_code
        == 404
    )


def test_retract_and_restore_a_run(
    client: TestClient, engine: Engine, submit_key: str, admin_key: str
) -> None:
    gpu = make_gpu(engine)
    good = _post(
        client,
        submit_key,
        run_on(gpu, [result("gemm", {"precision": "bf16"}, {"tflops": v}) for v in (300.0, 302.0, 304.0)]),
    )
    bad_body = run_on(
        gpu,
        [result("gemm", {"precision": "bf16"}, {"tflops": v}) for v in (100.0, 101.0, 102.0, 103.0)],
        host="broken",
    )
    _post(client, submit_key, bad_body)
    # the good run's results are outliers against the broken host's majority: 4 usable left
    assert _median(client, gpu["slug"]) == (101.5, 4)
    assert any(
        client.get(f"/v1/benchmark-results/{o['result_id']}").json()["quarantined"] for o in good["results"]
    )

    url = f"/v1/admin/benchmark-runs/{bad_body['run_id']}"
    r = client.post(
        url + "/retract", json={"reason": "GPU was throttling (HW slowdown)"}, headers=auth(admin_key)
    )
    assert r.status_code == 200, r.text
    assert r.json()["run"]["state"] == "retracted" and r.json()["changed_results"] >= 1
    assert _median(client, gpu["slug"]) == (302.0, 3)  # aggregates follow, outlier flags cleared
    assert not any(
        client.get(f"/v1/benchmark-results/{o['result_id']}").json()["quarantined"] for o in good["results"]
    )
    # idempotent; visible as retracted; hidden from listings unless asked
    again = client.post(url + "/retract", json={"reason": "again"}, headers=auth(admin_key)).json()
    assert again["run"]["retract_reason"] == "GPU was throttling (HW slowdown)"
    d = client.get(f"/v1/benchmark-runs/{bad_body['run_id']}").json()
    assert d["state"] == "retracted" and d["retract_reason"].startswith("GPU was throttling")
    assert client.get("/v1/benchmark-results", params={"run_id": bad_body["run_id"]}).json()["count"] == 0
    assert (
        client.get(
            "/v1/benchmark-results", params={"run_id": bad_body["run_id"], "include_retracted": True}
        ).json()["count"]
        == 4
    )
    cov = next(r for r in client.get("/v1/coverage").json()["rows"] if r["gpu_slug"] == gpu["slug"])
    assert cov["workloads"]["gemm"]["results"] == 3

    assert client.post(url + "/restore", headers=auth(admin_key)).json()["run"]["state"] == "accepted"
    assert _median(client, gpu["slug"]) == (101.5, 4)
    assert (
        client.post(
            "/v1/admin/benchmark-runs/no-such-run-1/retract", json={"reason": "x"}, headers=auth(admin_key)
        ).status_code
        == 404
    )


def test_everything_a_key_submitted(client: TestClient, engine: Engine, admin_key: str) -> None:
    key = _key(engine, "submit")
    gpu = make_gpu(engine)
    a = _post(client, key, run_on(gpu, [result()]))
    b = _post(client, key, run_on(gpu, [result(), result()]))
    key_id = client.get(f"/v1/benchmark-runs/{a['run_id']}?include_results=false").json()["agent"]["key_id"]
    d = client.get("/v1/admin/benchmark-runs", params={"agent": key_id}, headers=auth(admin_key)).json()
    assert [x["run_id"] for x in d["items"]] == [b["run_id"], a["run_id"]]
    assert d["items"][0]["result_count"] == 2 and d["items"][0]["agent"]["key_id"] == key_id
    page = client.get(
        "/v1/admin/benchmark-runs", params={"agent": key_id, "limit": 1}, headers=auth(admin_key)
    ).json()
    assert page["count"] == 1 and page["next_cursor"]
    nxt = client.get(
        "/v1/admin/benchmark-runs",
        params={"agent": key_id, "limit": 1, "cursor": page["next_cursor"]},
        headers=auth(admin_key),
    ).json()
    assert [x["run_id"] for x in nxt["items"]] == [a["run_id"]] and nxt["next_cursor"] is None
    res = client.get("/v1/benchmark-results", params={"agent": key_id}).json()
    assert res["count"] == 3


def test_alerts_acknowledge_and_filter(
    client: TestClient, engine: Engine, submit_key: str, admin_key: str
) -> None:
    gpu = make_gpu(engine, bf16=100.0)
    body = run_on(gpu, [result("gemm", {"precision": "bf16"}, {"tflops": 150.0})])
    _post(client, submit_key, body)
    items = client.get(
        "/v1/admin/alerts",
        params={"kind": "above_catalog_peak", "acknowledged": False, "limit": 500},
        headers=auth(admin_key),
    ).json()["items"]
    alert = next(a for a in items if a["run_id"] == body["run_id"])
    assert alert["gpu_slug"] == gpu["slug"] and "150 TFLOP/s" in alert["message"]
    r = client.post(f"/v1/admin/alerts/{alert['id']}/acknowledge", headers=auth(admin_key))
    assert r.status_code == 200 and r.json()["acknowledged_at"]
    open_ids = [
        a["id"]
        for a in client.get(
            "/v1/admin/alerts", params={"acknowledged": False, "limit": 500}, headers=auth(admin_key)
        ).json()["items"]
    ]
    assert alert["id"] not in open_ids
    assert client.post("/v1/admin/alerts/999999/acknowledge", headers=auth(admin_key)).status_code == 404


def test_committed_measurements_load_idempotently_as_a_trusted_agent(
    client: TestClient, engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    assert seed_measurements in EXTRA_SEEDERS
    gpu = make_gpu(engine)
    runs = [
        run_on(
            gpu,
            [result(metrics={"throughput": v}) for v in (500.0, 505.0, 510.0)],
            run_id=f"h200-seed-{gpu['slug']}-1",
        ),
        run_on(gpu, [result(metrics={"throughput": 507.0})], run_id=f"h200-seed-{gpu['slug']}-2"),
    ]
    (tmp_path / "h200.json").write_text(json.dumps(runs))
    (tmp_path / "broken.json").write_text(json.dumps([{"run_id": "x"}, "nope"]))
    (tmp_path / "notes.txt").write_text("ignored")
    first = load_measurement_files(engine, settings, tmp_path)
    assert (first.files, first.stored, first.replayed, len(first.refused)) == (2, 2, 0, 2)
    second = load_measurement_files(engine, settings, tmp_path)
    assert (second.stored, second.replayed) == (0, 2)
    with UnitOfWork(make_session_factory(engine)) as uow:
        key = uow.session.scalars(select(ApiKey).where(ApiKey.name == BUILTIN_AGENT_NAME)).one()
        assert key.trusted is True
        owners = set(
            uow.session.scalars(
                select(BenchmarkRun.api_key_id).where(BenchmarkRun.run_id.in_([r["run_id"] for r in runs]))
            )
        )
        assert owners == {key.id}
    (c,) = client.get(f"/v1/gpus/{gpu['slug']}/measurements").json()["cells"]
    assert c["count"] == 4 and c["provenance"] == "measured" and c["provenance_code"] == "trusted_agent"
    # a settings object pointing at the directory drives the bootstrap hook the same way
    seed_measurements(engine, settings.model_copy(update={"seed_measurements_dir": tmp_path}))
    with UnitOfWork(make_session_factory(engine)) as uow:
        n = len(
            list(
                uow.session.scalars(
                    select(BenchmarkRun.id).where(BenchmarkRun.run_id.in_([r["run_id"] for r in runs]))
                )
            )
        )
    assert n == 2


@pytest.mark.parametrize("path", ["/v1/admin/alerts", "/v1/admin/pending-gpus", "/v1/admin/benchmark-runs"])
def test_admin_reads_need_an_admin_key(client: TestClient, submit_key: str, path: str) -> None:
    assert client.get(path).status_code == 401
    assert client.get(path, headers=auth(submit_key)).status_code == 403
