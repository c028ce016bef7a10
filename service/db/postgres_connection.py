"""The psycopg parts of the engine (:mod:`service.db.engine`): a connection whose every wait
is bounded, and the idle-socket check at checkout. Imported only for PostgreSQL engines, so a
process on SQLite never loads psycopg."""

from __future__ import annotations

import select
from typing import Any

import psycopg
from psycopg import errors as pg_errors

_WaitTimeout: type[Exception] = getattr(pg_errors, "_WaitTimeout", pg_errors.OperationalError)


class DeadlineConnection(psycopg.Connection[Any]):
    """A psycopg connection whose every wait for the server's answer ends after
    ``wait_limit_s``: the connection is then closed (its protocol state is unknown) and the
    statement fails with ``OperationalError`` -- a disconnect to SQLAlchemy, which drops it."""

    wait_limit_s: float | None = None

    def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
        limit = self.wait_limit_s
        if timeout is not None or limit is None:
            return super().wait(gen, interval, timeout)
        try:
            return super().wait(gen, interval, limit)
        except _WaitTimeout:
            self.close()
            raise psycopg.OperationalError(
                f"the database server did not answer within {limit:g} s (connection closed)"
            ) from None


def socket_closed_by_server(dbapi_conn: Any) -> bool:
    """An idle connection's socket has something to read only when the server sent something
    unasked: a termination notice or the end of the stream (a restart, an administrator)."""
    try:
        fd = dbapi_conn.pgconn.socket
    except (psycopg.OperationalError, AttributeError):
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLPRI)
    return bool(poller.poll(0))
