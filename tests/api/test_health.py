from fastapi.testclient import TestClient


def test_healthz_and_readyz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    r = client.get("/readyz")
    assert r.status_code == 200 and r.json()["database"] == "ok"


def test_body_limit_413_problem(app) -> None:  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient as TC

    with TC(app) as c:
        big = b"x" * (app.state.settings.max_body_bytes + 1)
        r = c.post("/v1/gpus", content=big, headers={"content-type": "application/json"})
        assert r.status_code == 413
        assert r.headers["content-type"] == "application/problem+json"


def test_metrics_counts_requests_by_route(client, admin_key) -> None:  # type: ignore[no-untyped-def]
    from tests.conftest import auth

    client.get("/v1/gpus/nvidia-l4")
    text = client.get("/metrics", headers=auth(admin_key)).text
    assert 'gpu_advisor_http_requests_total{method="GET",route="/v1/gpus/{ident}",status="200"}' in text
    assert "gpu_advisor_watermark" in text


def test_readyz_503_when_database_is_unreachable(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from fastapi.testclient import TestClient as TC

    from service.api.app import create_app
    from service.settings import Settings

    app = create_app(Settings(database_url=f"sqlite:///{tmp_path}/never-migrated.db"))
    with TC(app) as c:
        r = c.get("/readyz")
        assert r.status_code == 503
        assert r.headers["content-type"] == "application/problem+json"
