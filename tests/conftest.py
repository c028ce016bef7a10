"""Test fixtures: a real database built by the real migrations, the real app over HTTP.

SQLite by default; PostgreSQL when GPU_ADVISOR_TEST_DATABASE_URL is set (CI runs both).

Every test that asks for the database (``database_url``, ``settings``, ``engine``, ``app``,
``client``, the keys) gets its own: a copy of one template database that each test process
(each ``pytest -n`` worker) bootstraps once -- migrations, catalog, shipped measurements, the
three standing keys. SQLite copies the file; PostgreSQL runs ``CREATE DATABASE ... TEMPLATE``.
So no test sees another's writes, and order or parallel runs cannot change a result. The app
of each test starts from the template's read model (``ReadModel.adopt``): its snapshot and
calibration fits are the copy's at the same watermarks, so no test pays for a fit it did not
cause (docs/architecture.md, "Tests").
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
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
from service.usecases.read_model import ReadModel

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
        _drop_database(admin, dbname)
        admin.dispose()


STANDING_KEYS = ("admin", "submit", "read")
"""The keys every database copy carries (the ``admin_key``, ``submit_key``, ``read_key``
fixtures): made once in the template, so valid in each test's own copy and in no other."""


@dataclass(frozen=True)
class Template:
    """The bootstrapped database of this test process, its standing keys and its warmed read
    model. Never written after it is built: only copies of it are handed out (PostgreSQL's
    template refuses connections)."""

    url: str
    keys: Mapping[str, str]
    read_model: ReadModel
    admin: Engine | None  # PostgreSQL: the AUTOCOMMIT engine that copies and drops databases

    def copy(self, tmp_path: Path, name: str = "db") -> Iterator[str]:
        """Yield the URL of a fresh copy of the template, removed afterwards."""
        if self.admin is None:
            path = tmp_path / f"{name}-{uuid.uuid4().hex[:8]}.sqlite"
            shutil.copyfile(make_url(self.url).database or "", path)
            try:
                yield f"sqlite:///{path}"
            finally:
                for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
                    leftover.unlink(missing_ok=True)
            return
        template = make_url(self.url).database
        dbname = f"gpua_test_{name}_{uuid.uuid4().hex[:10]}"
        with self.admin.connect() as c:
            c.execute(text(f'CREATE DATABASE "{dbname}" TEMPLATE "{template}"'))
        try:
            yield make_url(self.url).set(database=dbname).render_as_string(hide_password=False)
        finally:
            _drop_database(self.admin, dbname)


def _drop_database(admin: Engine, dbname: str) -> None:
    with admin.connect() as c:
        c.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d AND pid <> pg_backend_pid()"
            ),
            {"d": dbname},
        )
        c.execute(text(f'DROP DATABASE IF EXISTS "{dbname}"'))


def _test_settings(database_url: str) -> Settings:
    """The settings of each test's app. Rate limits are off: every test talks to its app from
    one address ("testclient"); tests/api/test_limits.py and tests/db/test_replicas.py build
    apps and servers with limits on."""
    return Settings(database_url=database_url, rate_limits_enabled=False, warm_read_model=False)


def _build_template(url: str) -> tuple[dict[str, str], ReadModel]:
    """Bootstrap ``url``, add the standing keys, fit the read model on it."""
    settings = _test_settings(url)
    engine = make_engine(url)
    try:
        bootstrap(engine, settings)
        keys = {scope: _key(engine, scope) for scope in STANDING_KEYS}
        read_model = ReadModel(
            min_points=settings.measurements_min_points, window=settings.measurement_window, background=False
        )
        with UnitOfWork(make_session_factory(engine, write=False)) as uow:
            read_model.warm(uow)
    finally:
        engine.dispose()
    return keys, read_model


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Template]:
    base = os.environ.get(PG_ENV)
    if not base:
        path = tmp_path_factory.mktemp("template") / "template.sqlite"
        url = f"sqlite:///{path}"
        keys, read_model = _build_template(url)
        with contextlib.closing(sqlite3.connect(path)) as c:  # everything in the one file
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert not Path(f"{path}-wal").exists(), "a connection to the template is still open"
        yield Template(url, keys, read_model, admin=None)
        return
    admin = create_engine(_pg_admin_url(base), isolation_level="AUTOCOMMIT")
    dbname = f"gpua_test_template_{uuid.uuid4().hex[:10]}"
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{dbname}"'))
    try:
        url = make_url(_pg_admin_url(base)).set(database=dbname).render_as_string(hide_password=False)
        keys, read_model = _build_template(url)
        with admin.connect() as c:
            c.execute(text(f'ALTER DATABASE "{dbname}" WITH ALLOW_CONNECTIONS false'))
        yield Template(url, keys, read_model, admin=admin)
    finally:
        with admin.connect() as c:
            c.execute(text(f'ALTER DATABASE "{dbname}" WITH ALLOW_CONNECTIONS true'))
        _drop_database(admin, dbname)
        admin.dispose()


@pytest.fixture()
def database_url(template: Template, tmp_path: Path) -> Iterator[str]:
    """This test's own database: a copy of the template."""
    yield from template.copy(tmp_path)


@pytest.fixture()
def settings(database_url: str) -> Settings:
    return _test_settings(database_url)


@pytest.fixture()
def engine(settings: Settings) -> Iterator[Engine]:
    eng = make_engine(settings.database_url)
    yield eng
    eng.dispose()


@pytest.fixture()
def app(settings: Settings, engine: Engine, template: Template):  # type: ignore[no-untyped-def]
    """This test's app on its own database, starting from the template's read model."""
    application = create_app(settings, engine=engine)
    application.state.read_model.adopt(template.read_model)
    return application


@pytest.fixture()
def client(app) -> Iterator[TestClient]:  # type: ignore[no-untyped-def]
    with TestClient(app, raise_server_exceptions=False) as c:
        yield c


def _key(engine: Engine, scope: str, trusted: bool = False) -> str:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return create_key(
            uow, name=f"test-{scope}-{uuid.uuid4().hex[:6]}", scope=scope, trusted=trusted
        ).secret


@pytest.fixture()
def admin_key(template: Template, database_url: str) -> str:
    return template.keys["admin"]


@pytest.fixture()
def submit_key(template: Template, database_url: str) -> str:
    return template.keys["submit"]


@pytest.fixture()
def read_key(template: Template, database_url: str) -> str:
    return template.keys["read"]


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
