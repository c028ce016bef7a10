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
