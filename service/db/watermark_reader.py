"""PostgreSQL watermark reads that do not stop the event loop.

A read request's one database round trip is the watermark read (docs/architecture.md,
"Watermarks and the read path"). Made on a blocking DBAPI connection from the event loop, the
loop sat idle for the whole round trip; on this project's 2-core benchmark machine that idle
time was a third of a catalog GET. This reader makes the read on one asyncio psycopg
connection per process, in autocommit, so the loop serves other requests meanwhile.

Concurrent requests share reads, without weakening read-after-write: a request is answered by
a read that *started after it asked* -- the one in flight when it asks may have begun before a
commit it must see, so it waits for the next one, which every request that asked during the
flight shares. A connection found broken is replaced and the read retried once; a second
failure reaches every waiter (the request then fails as a database error, as the blocking read
does). A read that failed fails the requests that asked during it too, and one the server did
not answer in time (a statement or a connection: frozen) is not retried, so no request waits
more than about one timeout.

SQLite keeps the blocking read: it is a local file read of microseconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from typing import Any

import psycopg
from sqlalchemy import Engine

from service.core.evidence.versions import Watermarks
from service.db.repositories.stacks import WATERMARKS_SQL


def conninfo_for(engine: Engine, *, connect_timeout_s: float | None = None) -> str | None:
    """libpq URI of a PostgreSQL engine (the SQLAlchemy driver name removed), with a connect
    timeout when given; None for other databases."""
    url = engine.url
    if url.get_backend_name() != "postgresql":
        return None
    if connect_timeout_s is not None:
        url = url.update_query_dict({"connect_timeout": str(max(2, math.ceil(connect_timeout_s)))})
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


class NoAnswer(psycopg.OperationalError):
    """The server did not answer in time (a database outage to the API: 503)."""


class AsyncWatermarkReader:
    """One per process and event loop: made in the app's lifespan, closed at its end."""

    def __init__(self, conninfo: str, *, timeout_s: float | None = None) -> None:
        self._conninfo = conninfo
        self._timeout_s = timeout_s
        """A read that gets no answer within this fails (a frozen server), without a retry."""
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._flight: asyncio.Future[Watermarks] | None = None
        self._next: asyncio.Future[Watermarks] | None = None
        self._closed = False
        self.reads = 0
        """Round trips made (a test checks that concurrent requests share them)."""

    async def read(self) -> Watermarks:
        """Watermarks from a read that started after this call."""
        if self._flight is None:
            self._flight = self._start()
            fut = self._flight
        else:
            if self._next is None:
                self._next = asyncio.get_running_loop().create_future()
            fut = self._next
        # shielded: a request cancelled while waiting does not cancel the read others share
        return await asyncio.shield(fut)

    def _start(self) -> asyncio.Future[Watermarks]:
        task = asyncio.ensure_future(self._query())
        task.add_done_callback(self._landed)
        return task

    def _landed(self, task: asyncio.Future[Watermarks]) -> None:
        """The read in flight is done: the requests that asked meanwhile get the next one."""
        if not task.cancelled():
            task.exception()  # retrieved here: waiters may all have gone
        waiting, self._next = self._next, None
        if waiting is None:
            self._flight = None
            return
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            # the read failed (after its one retry): those who asked meanwhile get that answer
            # (503) now, not after another read's full wait (a frozen server cost them two
            # timeouts: 11 s with the defaults)
            self._flight = None
            waiting.add_done_callback(lambda f: f.cancelled() or f.exception())
            waiting.set_exception(failure)
            return
        self._flight = nxt = self._start()

        def hand_over(done: asyncio.Future[Watermarks]) -> None:
            if waiting.done():
                return
            if done.cancelled():
                waiting.cancel()
            elif (exc := done.exception()) is not None:
                waiting.set_exception(exc)
            else:
                waiting.set_result(done.result())

        nxt.add_done_callback(hand_over)

    async def _query(self) -> Watermarks:
        for attempt in (0, 1):
            if self._closed:
                raise psycopg.InterfaceError("the watermark reader is closed (the app is shutting down)")
            try:
                row = await self._round_trip_in_time()
            except (NoAnswer, psycopg.errors.ConnectionTimeout):
                raise  # a frozen server: another try would only wait again
            except (psycopg.OperationalError, psycopg.InterfaceError):
                await self._drop()
                if attempt:
                    raise
                continue
            if row is None:
                raise LookupError("the watermarks row is missing: run gpu-advisor migrate")
            return Watermarks(int(row[0]), int(row[1]))
        raise AssertionError("unreachable")  # pragma: no cover

    async def _round_trip_in_time(self) -> Any:
        """The round trip, given up after ``timeout_s``: the connection is then abandoned to
        a background cancellation (psycopg's own cancel handling waits for the server, which
        is what has stopped answering) and the read fails as an outage."""
        task = asyncio.ensure_future(self._round_trip())
        try:
            return await asyncio.wait_for(asyncio.shield(task), self._timeout_s)
        except TimeoutError:
            conn, self._conn = self._conn, None
            task.cancel()
            task.add_done_callback(lambda t: _close_after(t, conn))
            raise NoAnswer(
                f"the database server did not answer the watermark read within {self._timeout_s:g} s"
            ) from None

    async def _round_trip(self) -> Any:
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        cur = await self._conn.execute(WATERMARKS_SQL, prepare=True)
        row = await cur.fetchone()
        self.reads += 1
        return row

    async def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None and not conn.closed:
            with contextlib.suppress(psycopg.Error):  # already broken
                await conn.close()

    async def aclose(self) -> None:
        self._closed = True
        await self._drop()


def _close_after(task: asyncio.Future[Any], conn: psycopg.AsyncConnection[Any] | None) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: nobody awaits an abandoned read
    if conn is not None and not conn.closed:
        closing = asyncio.ensure_future(conn.close())
        _CLOSING.add(closing)
        closing.add_done_callback(_CLOSING.discard)


_CLOSING: set[asyncio.Future[None]] = set()
"""Closes of abandoned connections in flight (a reference keeps each task alive until done)."""
