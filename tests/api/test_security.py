"""Security properties SECURITY.md cites that no other test pins down: the agent is the key
(never the body), bookkeeping fields cannot be assigned, injection-shaped input is data, keys
are stored only as hashes. Real app, real database."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select, text

from service.db.engine import make_session_factory
from service.db.models import ApiKey, BenchmarkRun
from service.db.uow import UnitOfWork
from tests.api.benchmark_fixtures import make_gpu, result, run_on
from tests.conftest import _key, auth


@pytest.fixture()
def gpu(engine: Engine) -> dict[str, Any]:
    return make_gpu(engine)


def test_the_agent_is_the_key_never_the_body(client: TestClient, engine: Engine, gpu: dict[str, Any]) -> None:
    key = _key(engine, "submit")
    for field, value in (("agent", {"key_id": 1}), ("api_key_id", 1), ("trusted", True)):
        body = run_on(gpu, [result()])
        body[field] = value
        r = client.post("/v1/benchmark-runs", json=body, headers=auth(key))
        assert r.status_code == 422 and ["body", field] in [e["loc"] for e in r.json()["errors"]], r.text
    body = run_on(gpu, [result()])
    assert client.post("/v1/benchmark-runs", json=body, headers=auth(key)).status_code == 201
    with UnitOfWork(make_session_factory(engine)) as uow:
        stored = uow.session.scalar(
            select(BenchmarkRun.api_key_id).where(BenchmarkRun.run_id == body["run_id"])
        )
        expected = uow.session.scalar(select(ApiKey.id).where(ApiKey.prefix == key.split("_")[1]))
    assert stored == expected
    shown = client.get(f"/v1/benchmark-runs/{body['run_id']}?include_results=false").json()["agent"]
    assert shown["key_id"] == expected and "secret" not in str(shown) and key not in str(shown)


def test_bookkeeping_fields_cannot_be_assigned(client: TestClient, admin_key: str) -> None:
    r = client.get("/v1/gpus/nvidia-l4")
    etag = r.headers["ETag"]
    for patch in (
        {"revision": 99},
        {"origin": "catalog"},
        {"overridden_fields": []},
        {"memory": {"surprise": 1}},
    ):
        r = client.patch("/v1/gpus/nvidia-l4", json=patch, headers={**auth(admin_key), "If-Match": etag})
        assert r.status_code == 422, (patch, r.text)
    assert client.get("/v1/gpus/nvidia-l4").headers["ETag"] == etag  # nothing changed
    r = client.post("/v1/estimate", json={"model": "llama3-8b", "gpu": "nvidia-l4", "data_version": 1})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "data_version"]


INJECTIONS = ("' OR '1'='1", "x'; DROP TABLE benchmark_runs; --", "%", "_", "\\", '") OR 1=1 --')


def test_injection_shaped_input_is_data(
    client: TestClient, engine: Engine, submit_key: str, gpu: dict[str, Any]
) -> None:
    run = run_on(gpu, [result()], host="injection-host")
    assert client.post("/v1/benchmark-runs", json=run, headers=auth(submit_key)).status_code == 201
    for bad in INJECTIONS:
        for params in (
            {"host": bad},
            {"fp.driver_version": bad},
            {"run_id": bad},
            {"workload": "resnet50-train", "param.batch_size": bad},
        ):
            r = client.get("/v1/benchmark-results", params=params)
            assert r.status_code in (200, 422), (params, r.text)
            if r.status_code == 200:
                assert r.json()["count"] == 0, (params, r.json()["items"][:1])  # no wildcard, no tautology
        assert client.get("/v1/gpus/" + bad.replace("/", "")).status_code in (404, 422)
        assert client.get("/v1/gpus", params={"architecture": bad}).json()["count"] == 0
    with UnitOfWork(make_session_factory(engine)) as uow:
        assert uow.session.execute(text("SELECT count(*) FROM benchmark_runs")).scalar_one() > 0
    assert client.get("/v1/benchmark-results", params={"host": "injection-host"}).json()["count"] == 1


def test_keys_are_stored_as_hashes_only(engine: Engine) -> None:
    key = _key(engine, "read")
    with UnitOfWork(make_session_factory(engine)) as uow:
        row = uow.session.scalars(select(ApiKey).where(ApiKey.prefix == key.split("_")[1])).one()
        cells = [
            str(v) for v in uow.session.execute(select(ApiKey.__table__).where(ApiKey.id == row.id)).one()
        ]
    assert row.secret_hash == hashlib.sha256(key.encode()).hexdigest()
    assert not any(key in c or key.split("_", 2)[2] in c for c in cells)


def test_an_unexpected_error_is_a_bare_500(tmp_path: Any) -> None:
    """A database that was never migrated: the failure is a generic problem, with no SQL,
    driver message or traceback in it (the request id is there to find the log line)."""
    from service.api.app import create_app
    from service.settings import Settings

    app = create_app(
        Settings(database_url=f"sqlite:///{tmp_path}/never-migrated.db", rate_limits_enabled=False)
    )
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/v1/gpus", headers={"X-Request-ID": "find-the-log-line"})
    assert r.headers["X-Request-ID"] == "find-the-log-line"
    assert r.status_code == 500 and r.headers["content-type"] == "application/problem+json"
    assert r.json() == {
        "type": "https://gpu-advisor.dev/problems/internal-error",
        "title": "Internal server error",
        "status": 500,
        "detail": "an unexpected error occurred",
        "instance": "/v1/gpus",
    }
    for leak in ("sqlite", "SELECT", "Traceback", "no such table"):
        assert leak not in r.text


def test_reads_need_a_read_key_when_configured(
    settings: Any, engine: Engine, read_key: str, submit_key: str
) -> None:
    """``read_requires_key``: a GET without a key is 401, with an unknown key 401, with a read
    (or higher) key 200; the estimate, a read-only POST, follows the same rule."""
    from service.api.app import create_app

    app = create_app(settings.model_copy(update={"read_requires_key": True}), engine=engine)
    with TestClient(app, raise_server_exceptions=False) as c:
        r = c.get("/v1/gpus/nvidia-h200-sxm")
        assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
        assert c.get("/v1/gpus/nvidia-h200-sxm", headers=auth("gpua_nope_nope")).status_code == 401
        for key in (read_key, submit_key):
            assert c.get("/v1/gpus/nvidia-h200-sxm", headers=auth(key)).status_code == 200
        body = {
            "model": "llama3-8b",
            "gpu": "nvidia-h200-sxm",
            "precision": "bf16",
            "batch_size": 1,
            "seq_len": 1024,
        }
        assert c.post("/v1/estimate", json=body).status_code == 401
        assert c.post("/v1/estimate", json=body, headers=auth(read_key)).status_code == 200
