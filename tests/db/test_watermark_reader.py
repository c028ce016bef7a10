"""The asynchronous PostgreSQL watermark read (``service.db.watermark_reader``): it sees every
commit made before it was asked for, concurrent requests share round trips, a dropped
connection is replaced, and the app uses it only for routes that read the snapshot. On SQLite
the app keeps the blocking read (checked too)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, text

from service.api.app import create_app
from service.core.evidence.versions import Watermarks
from service.db.engine import make_session_factory
from service.db.uow import UnitOfWork
from service.db.watermark_reader import AsyncWatermarkReader, conninfo_for
from service.settings import Settings
from tests.conftest import is_postgres

pg_only = pytest.mark.skipif(not is_postgres(), reason="the asynchronous read is PostgreSQL's")


def _bump_catalog(engine: Engine) -> Watermarks:
    """A committed catalog change (the watermark moves; nothing else is written)."""
    with UnitOfWork(make_session_factory(engine)) as uow:
        uow.touch_catalog()
        moved = uow.commit()
    assert moved is not None
    return moved


@pytest.fixture()
def conninfo(engine: Engine) -> str:
    info = conninfo_for(engine)
    assert info is not None
    return info


def _with_reader(conninfo: str, scenario: Callable[[AsyncWatermarkReader], Awaitable[None]]) -> None:
    """Run ``scenario`` on a fresh reader in an event loop of its own; close the reader after."""

    async def run() -> None:
        reader = AsyncWatermarkReader(conninfo)
        try:
            await scenario(reader)
        finally:
            await reader.aclose()

    asyncio.run(run())


@pg_only
def test_a_read_sees_every_commit_made_before_it_was_asked_for(engine: Engine, conninfo: str) -> None:
    async def scenario(reader: AsyncWatermarkReader) -> None:
        first = await reader.read()
        # a read in flight when the commit lands may predate it: the read asked for after the
        # commit must still see it
        in_flight = asyncio.ensure_future(reader.read())
        await asyncio.sleep(0)
        moved = await asyncio.to_thread(_bump_catalog, engine)
        after = await reader.read()
        await in_flight
        assert after.catalog >= moved.catalog > first.catalog

    _with_reader(conninfo, scenario)


@pg_only
def test_concurrent_requests_share_round_trips(conninfo: str) -> None:
    async def scenario(reader: AsyncWatermarkReader) -> None:
        before = await reader.read()
        reads_before = reader.reads
        answers = await asyncio.gather(*(reader.read() for _ in range(50)))
        # one read in flight and one shared by everyone who asked meanwhile
        assert reader.reads - reads_before <= 2
        assert all(a == before for a in answers)

    _with_reader(conninfo, scenario)


@pg_only
def test_a_dropped_connection_is_replaced_and_the_read_retried(engine: Engine, conninfo: str) -> None:
    async def scenario(reader: AsyncWatermarkReader) -> None:
        await reader.read()
        conn = reader._conn
        assert conn is not None
        pid = conn.info.backend_pid

        def kill() -> None:
            with engine.connect() as admin:
                admin.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
                admin.commit()

        await asyncio.to_thread(kill)
        again = await reader.read()
        assert again.catalog >= 0
        assert reader._conn is not None and reader._conn.info.backend_pid != pid

    _with_reader(conninfo, scenario)


@pg_only
def test_a_read_that_cannot_reach_the_server_fails_every_waiter(conninfo: str) -> None:
    bad = (
        conninfo.replace("127.0.0.1:5432", "127.0.0.1:1")
        if "127.0.0.1:5432" in conninfo
        else conninfo + "?port=1"
    )

    async def scenario(reader: AsyncWatermarkReader) -> None:
        results = await asyncio.gather(*(reader.read() for _ in range(3)), return_exceptions=True)
        assert all(isinstance(r, Exception) for r in results), results

    _with_reader(bad, scenario)


def test_a_server_that_never_answers_costs_a_waiter_one_timeout_not_two() -> None:
    """A frozen server (it accepts the connection, then says nothing): the read in flight fails
    after ``timeout_s``, and so do the requests that asked while it was in flight -- before,
    they waited for a second read and its own full timeout (11 s measured with the defaults)."""
    import socket
    import time

    from service.db.watermark_reader import NoAnswer

    silent = socket.create_server(("127.0.0.1", 0))
    timeout_s = 0.5

    async def scenario() -> list[tuple[object, float]]:
        reader = AsyncWatermarkReader(
            f"postgresql://x@127.0.0.1:{silent.getsockname()[1]}/x?connect_timeout=30", timeout_s=timeout_s
        )
        t0 = time.monotonic()

        async def timed_read(after_s: float) -> tuple[object, float]:
            await asyncio.sleep(after_s)
            try:
                return await reader.read(), time.monotonic() - t0
            except Exception as exc:
                return exc, time.monotonic() - t0

        try:
            return await asyncio.gather(timed_read(0), timed_read(0.2), timed_read(0.3))
        finally:
            await reader.aclose()

    try:
        answers = asyncio.run(scenario())
    finally:
        silent.close()
    assert all(isinstance(a, NoAnswer) for a, _ in answers), answers
    assert max(t for _, t in answers) < timeout_s + 0.3, answers


def test_the_app_reads_watermarks_asynchronously_only_where_the_snapshot_is_read(
    settings: Settings, engine: Engine
) -> None:
    app = create_app(settings, engine=engine)
    with TestClient(app) as c:
        reader = app.state.watermark_reader
        if not is_postgres():
            assert reader is None  # SQLite: the blocking read of a local file
            assert c.get("/v1/gpus/nvidia-h200-sxm").status_code == 200
            return
        assert isinstance(reader, AsyncWatermarkReader)
        n = reader.reads
        r = c.get("/v1/gpus/nvidia-h200-sxm")
        assert r.status_code == 200 and reader.reads == n + 1
        moved = _bump_catalog(engine)
        r = c.get("/v1/gpus/nvidia-h200-sxm")
        assert r.headers["x-data-version"].startswith(f"c{moved.catalog}."), r.headers
        n = reader.reads
        assert c.get("/v1/models").status_code == 200  # reads no snapshot: no watermark read
        assert reader.reads == n
    assert app.state.watermark_reader is None  # closed with the lifespan
