"""The event-loop rule (``service.api.offload``): while the first calibration fit after a cold
start runs, the loop keeps answering -- ``/healthz`` and a catalog GET in < 50 ms -- and the
request that needs the calibrations waits for them without blocking anything.

The fit is the real one; it is only held at its start until the test has measured, so that
"while it runs" is certain rather than a race with a fast machine."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from service.api.app import create_app
from service.settings import Settings
from service.usecases import read_model

LIMIT_S = 0.050


def _median_s(client: TestClient, path: str, n: int = 5) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.get(path)
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, (path, r.text)
    return statistics.median(times)


def test_healthz_and_catalog_answer_while_the_first_fit_runs(
    settings: Settings, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    started, release = threading.Event(), threading.Event()
    real_fit = read_model.fit_calibrations

    def held_fit(*args: Any, **kwargs: Any) -> Any:
        started.set()
        release.wait(timeout=60)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(read_model, "fit_calibrations", held_fit)
    app = create_app(
        settings.model_copy(update={"warm_read_model": False}), engine=engine
    )  # a cold read model
    answers: dict[str, Any] = {}
    with TestClient(app, raise_server_exceptions=False) as client:

        def ask_estimate() -> None:
            body = {"model": "llama3-8b", "gpu": "nvidia-h100-sxm", "mode": "inference"}
            answers["estimate"] = client.post("/v1/estimate", json=body)

        asker = threading.Thread(target=ask_estimate)
        asker.start()
        try:
            assert started.wait(timeout=60), "the estimate did not start the first fit"
            assert not app.state.read_model.warmed
            healthz_s = _median_s(client, "/healthz")
            catalog_s = _median_s(client, "/v1/gpus/nvidia-h200")
            list_s = _median_s(client, "/v1/gpus?limit=5")
            assert asker.is_alive() and "estimate" not in answers  # still waiting for the fit
        finally:
            release.set()
            asker.join(timeout=120)
        assert healthz_s < LIMIT_S, f"/healthz took {healthz_s * 1e3:.1f} ms during the first fit"
        assert catalog_s < LIMIT_S, f"a catalog GET took {catalog_s * 1e3:.1f} ms during the first fit"
        assert list_s < LIMIT_S, f"the GPU list took {list_s * 1e3:.1f} ms during the first fit"
        r = answers["estimate"]
        assert r.status_code == 200, r.text
        assert app.state.read_model.warmed
        assert r.json()["calibration_watermark"] is not None
