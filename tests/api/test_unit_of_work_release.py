"""A request's unit of work is closed before its answer, also when the request fails after the
unit of work was opened: a 422 of a body refused after the key was checked, a 404 raised by a
use case. Otherwise the session -- on SQLite a write transaction begun IMMEDIATE by the key
check -- outlived the request: its dependency cleanup did not run in the request, and the
session (a reference cycle with its transaction) kept the pooled connection, and on SQLite the
database's write lock, until the cyclic garbage collector happened to free it. Every other
writer waited for the lock meanwhile, and one whose 30 s busy timeout ran out was a 500
("database is locked").

Each case is observed from outside the app when its answer starts (no connection of the app's
pool checked out; on SQLite, the write lock free) and again after the client's event loop has
shut down. The cyclic garbage collector is off meanwhile, so that no collection hides a session
left open; the app has its own engine (and so its own pool) over the session's database."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine
from sqlalchemy.engine import make_url
from starlette.types import Message, Receive, Scope, Send

from service.api.app import create_app
from service.settings import Settings
from tests.conftest import auth


@pytest.fixture()
def own_app(settings: Settings, engine: Engine) -> Iterator[FastAPI]:  # engine: the database is migrated
    app = create_app(settings)
    yield app
    app.state.engine.dispose()


@pytest.fixture()
def no_cyclic_gc() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def released(engine: Engine) -> str | None:
    """None when no connection of ``engine`` is checked out and (SQLite) the write lock is free;
    else what is held."""
    if engine.pool.checkedout():  # type: ignore[attr-defined]
        return f"{engine.pool.checkedout()} connection(s) checked out"  # type: ignore[attr-defined]
    url = make_url(engine.url)
    if url.get_backend_name() == "sqlite":
        # a writer that does not wait: the write lock must be free
        conn = sqlite3.connect(url.database or "", timeout=0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        except sqlite3.OperationalError as e:  # database is locked
            return f"the write lock is held ({e})"
        finally:
            conn.close()
    return None


class AtAnswer:
    """The app, observed from outside: when a response starts, is the request's database work
    released? (Checked synchronously, before the event loop runs anything else.)"""

    def __init__(self, app: FastAPI) -> None:
        self.app, self.engine = app, app.state.engine
        self.seen: list[str | None] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def checking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                self.seen.append(released(self.engine))
            await send(message)

        await self.app(scope, receive, checking_send if scope["type"] == "http" else send)


CASES: list[tuple[str, str, str, str, Any, int]] = [
    # (id, key fixture, method, path, JSON body, status)
    ("write-422-after-key-check", "submit_key", "POST", "/v1/benchmark-runs", {"run_id": 1}, 422),
    ("write-404-from-use-case", "admin_key", "POST", "/v1/admin/alerts/2147483647/acknowledge", None, 404),
    (
        "read-404-from-use-case",
        "read_key",
        "GET",
        "/v1/recommendations/rec_000000000000000000000000",
        None,
        404,
    ),
    ("read-422-after-key-check", "admin_key", "GET", "/v1/admin/benchmark-runs?agent=2147483648", None, 422),
]


@pytest.mark.parametrize(
    ("key_fixture", "method", "path", "body", "status"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.usefixtures("no_cyclic_gc")
def test_a_failed_request_closes_its_unit_of_work_before_the_answer(
    own_app: FastAPI,
    request: pytest.FixtureRequest,
    key_fixture: str,
    method: str,
    path: str,
    body: Any,
    status: int,
) -> None:
    key: str = request.getfixturevalue(key_fixture)
    observed = AtAnswer(own_app)
    with TestClient(observed, raise_server_exceptions=False) as client:
        r = client.request(method, path, json=body, headers=auth(key))
        assert r.status_code == status, r.text
        assert observed.seen == [None], "at the answer: " + str(observed.seen)
    # and not later either: the client's event loop is gone, nothing else would release it
    assert released(own_app.state.engine) is None
