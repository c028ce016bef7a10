"""`gpu-advisor recommendations prune`: stored answers older than the retention go, newer stay,
and pruning moves no watermark."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.models import Recommendation
from service.db.uow import UnitOfWork
from service.settings import Settings
from tests.conftest import fresh_database_url


@pytest.fixture()
def db(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield from fresh_database_url(tmp_path, "recs")


def test_prune_deletes_only_answers_older_than_the_retention(db: str) -> None:
    from fastapi.testclient import TestClient

    from service.api.app import create_app

    settings = Settings(database_url=db, rate_limits_enabled=False, seed_measurements_dir=None)
    eng = make_engine(db)
    bootstrap(eng, settings)
    with TestClient(create_app(settings, engine=eng)) as c:
        ids = []
        for b in (1, 2, 3):
            r = c.post(
                "/v1/recommend",
                json={"workload": {"model": "llama3-8b", "batch_size": b}, "constraints": {"max_gpus": 1}},
            )
            assert r.status_code == 200, r.text
            ids.append(r.json()["recommendation_id"])
    old = dt.datetime.now(dt.UTC) - dt.timedelta(days=40)
    with make_session_factory(eng)() as s:
        s.execute(update(Recommendation).where(Recommendation.id.in_(ids[:2])).values(created_at=old))
        s.commit()
    with UnitOfWork(make_session_factory(eng)) as uow:
        before = uow.watermarks()
    out = subprocess.run(
        [sys.executable, "-m", "service.cli", "recommendations", "prune", "--days", "30"],
        env={"GPU_ADVISOR_DATABASE_URL": db, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "deleted 2 stored recommendations older than 30 days" in out.stdout
    with make_session_factory(eng)() as s:
        left = set(s.execute(select(Recommendation.id)).scalars())
        assert left == {ids[2]}
        assert s.execute(select(func.count()).select_from(Recommendation)).scalar_one() == 1
    with UnitOfWork(make_session_factory(eng)) as uow:
        assert uow.watermarks() == before
    eng.dispose()
