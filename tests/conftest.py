"""Test fixtures: a real database built by the real migrations, the real app over HTTP.

SQLite by default; PostgreSQL when GPU_ADVISOR_TEST_DATABASE_URL is set (CI runs both). On
PostgreSQL each test session creates its own database and drops it at the end.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.engine import make_url

from service.api.app import create_app
from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key

PG_ENV = "GPU_ADVISOR_TEST_DATABASE_URL"
# apps built from default settings in tests (and servers they start) do not warm up at start-up:
# each would spend seconds of CPU fitting calibrations in a background thread; the warm-up has
# its own test (tests/db/test_read_path.py)
os.environ.setdefault("GPU_ADVISOR_WARM_READ_MODEL", "false")


def is_postgres() -> bool:
    return bool(os.environ.get(PG_ENV))


def _pg_admin_url(url: str) -> str:
    u = make_url(url)
    if u.drivername in ("postgresql", "postgres"):
        u = u.set(drivername="postgresql+psycopg")
    return u.render_as_string(hide_password=False)


def fresh_database_url(tmp_path: Path, name: str = "db") -> Iterator[str]:
    """Yield the URL of a brand-new empty database, dropped afterwards."""
    base = os.environ.get(PG_ENV)
    if not base:
        yield f"sqlite:///{tmp_path / (name + '.sqlite')}"
        return
    admin = create_engine(_pg_admin_url(base), isolation_level="AUTOCOMMIT")
    dbname = f"gpua_test_{name}_{uuid.uuid4().hex[:10]}"
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{dbname}"'))
    try:
        yield make_url(_pg_admin_url(base)).set(database=dbname).render_as_string(hide_password=False)
    finally:
        with admin.connect() as c:
            c.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d AND pid <> pg_backend_pid()"
                ),
                {"d": dbname},
            )
            c.execute(text(f'DROP DATABASE IF EXISTS "{dbname}"'))
        admin.dispose()


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from fresh_database_url(tmp_path_factory.mktemp("db"), "session")


@pytest.fixture(scope="session")
def settings(database_url: str) -> Settings:
    """The shared app's settings. Rate limits are off here: every test of the session talks
    to one app from one address ("testclient"), so shared buckets would make tests depend on
    each other's request counts. tests/api/test_limits.py and tests/db/test_replicas.py build
    apps and servers with limits on."""
    return Settings(database_url=database_url, rate_limits_enabled=False, warm_read_model=False)


@pytest.fixture(scope="session")
def engine(settings: Settings) -> Iterator[Engine]:
    eng = make_engine(settings.database_url)
    bootstrap(eng, settings)
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def app(settings: Settings, engine: Engine):  # type: ignore[no-untyped-def]
    return create_app(settings, engine=engine)


@pytest.fixture()
def client(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def _key(engine: Engine, scope: str, trusted: bool = False) -> str:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return create_key(
            uow, name=f"test-{scope}-{uuid.uuid4().hex[:6]}", scope=scope, trusted=trusted
        ).secret


@pytest.fixture(scope="session")
def admin_key(engine: Engine) -> str:
    return _key(engine, "admin")


@pytest.fixture(scope="session")
def submit_key(engine: Engine) -> str:
    return _key(engine, "submit")


@pytest.fixture(scope="session")
def read_key(engine: Engine) -> str:
    return _key(engine, "read")


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
