"""Each test's own database (tests/conftest.py, docs/architecture.md "Tests"): copies of the
template that do not see each other's writes, carry the standing keys, and apps that adopt the
template's read model answering exactly as an app that loaded and fitted on its own."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine

from service.api.app import create_app
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.read_model import ReadModel
from tests.api.benchmark_fixtures import make_gpu
from tests.conftest import Template, auth

ESTIMATE = {"model": "llama3-8b", "gpu": "nvidia-h100-sxm", "mode": "inference"}


def _slugs(engine: Engine) -> set[str]:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return set(uow.catalog.records())


def test_a_write_to_one_copy_is_not_in_another(template: Template, tmp_path: Path) -> None:
    for first in template.copy(tmp_path, "first"):
        for second in template.copy(tmp_path, "second"):
            a, b = make_engine(first), make_engine(second)
            try:
                before = _slugs(b)
                added = make_gpu(a)["slug"]
                assert added in _slugs(a)
                assert _slugs(b) == before and added not in before
            finally:
                a.dispose()
                b.dispose()


def test_the_standing_keys_work_in_this_tests_copy(client: TestClient, admin_key: str) -> None:
    r = client.get("/v1/benchmark-results?limit=1", headers=auth(admin_key))
    assert r.status_code == 200, r.text


def test_an_adopted_read_model_answers_as_a_cold_one_and_follows_writes(
    app: FastAPI, settings: Settings, engine: Engine
) -> None:
    """The adopted app does no load and no fit; its estimate is the cold app's (same
    calibrations, same watermarks; only the clock differs); after a catalog write it reloads like any app."""
    cold = create_app(settings, engine=engine)
    with TestClient(app, raise_server_exceptions=False) as warm_c, TestClient(cold) as cold_c:
        adopted: ReadModel = warm_c.app.state.read_model  # type: ignore[attr-defined]
        warm, fresh = warm_c.post("/v1/estimate", json=ESTIMATE), cold_c.post("/v1/estimate", json=ESTIMATE)
        assert warm.status_code == fresh.status_code == 200, (warm.text, fresh.text)
        answer, expected = warm.json(), fresh.json()
        answer.pop("as_of"), expected.pop("as_of")  # the clock
        assert answer == expected
        assert answer["calibration_watermark"] is not None
        assert (adopted.stats.catalog_loads, adopted.stats.full_measurement_loads) == (0, 0)
        assert cold.state.read_model.stats.full_fits == 1
        slug = make_gpu(engine)["slug"]
        assert warm_c.get(f"/v1/gpus/{slug}").status_code == 200
        assert adopted.stats.catalog_loads == 1


def test_adopt_refuses_a_model_without_fits_or_with_other_settings(template: Template) -> None:
    with pytest.raises(ValueError, match="fits are done"):
        ReadModel(background=False).adopt(ReadModel(background=False))
    other = template.read_model
    with pytest.raises(ValueError, match="min_points"):
        ReadModel(min_points=other.min_points + 1, window=other.window).adopt(other)
