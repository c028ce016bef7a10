"""`gpu-advisor keys` end to end: create prints the secret last, it authenticates, revoke
makes it 401."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.bootstrap import bootstrap
from service.db.engine import make_engine
from service.settings import Settings
from tests.conftest import fresh_database_url


@pytest.fixture()
def db(tmp_path: Path):  # type: ignore[no-untyped-def]
    yield from fresh_database_url(tmp_path, "keys")


def _cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        env={"GPU_ADVISOR_DATABASE_URL": url, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_keys_create_use_revoke(db: str) -> None:
    out = _cli(db, "keys", "create", "--scope", "admin", "--name", "ops")
    assert out.returncode == 0, out.stderr
    secret = out.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"gpa_[0-9a-f]{8}_[A-Za-z0-9_-]{20,}", secret)
    assert secret not in _cli(db, "keys", "list").stdout
    settings = Settings(database_url=db)
    engine = make_engine(db)
    bootstrap(engine, settings)
    with TestClient(create_app(settings, engine=engine)) as c:
        r = c.post(
            "/v1/fx-rates",
            json={
                "base": "USD",
                "quote": "CNY",
                "rate": "7.0",
                "effective_date": "2026-12-01",
                "source": "test",
            },
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert r.status_code == 204, r.text
        key_id = _cli(db, "keys", "list").stdout.split()[0]
        assert _cli(db, "keys", "revoke", key_id).returncode == 0
        r = c.post(
            "/v1/fx-rates",
            json={
                "base": "USD",
                "quote": "CNY",
                "rate": "7.1",
                "effective_date": "2026-12-02",
                "source": "test",
            },
            headers={"Authorization": f"Bearer {secret}"},
        )
        assert r.status_code == 401
        assert r.headers["content-type"].startswith("application/problem+json")
    bad = _cli(db, "keys", "create", "--scope", "root", "--name", "x")
    assert bad.returncode == 2 and "scope" in bad.stderr
    engine.dispose()
