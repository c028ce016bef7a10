"""Database failures a client can do nothing about but wait: which they are, and for how long.

A request that fails because the database is down, frozen, busy, out of disk or read-only is
not a bug in the request or the service: it is answered ``503`` (or ``507`` for a full disk)
with ``Retry-After`` (``service.api.problems``), never a bare ``500``. :func:`outage_of` is the
one place that tells those failures apart from programming errors (a ``ProgrammingError``,
an ``IntegrityError`` the code did not expect: still ``500``), on both databases:

- SQLite by its primary result code (``sqlite3.Error.sqlite_errorcode``): ``SQLITE_BUSY`` /
  ``SQLITE_LOCKED`` (another process holds the write lock past the busy timeout), ``SQLITE_FULL``,
  ``SQLITE_READONLY``, ``SQLITE_IOERR`` / ``SQLITE_CANTOPEN`` (the disk or the file is gone);
- PostgreSQL by SQLSTATE class (08 connection, 53 resources, 57 operator intervention and
  statement timeouts, 58 system, 25006 read-only transaction, 40 serialisation) and, for errors
  without one, by kind: a refused or timed-out connection, a connection closed under the
  statement (psycopg ``OperationalError`` / ``InterfaceError``);
- SQLAlchemy's pool: no connection free within the checkout timeout.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Literal

import psycopg
from sqlalchemy import exc as sa_exc

OutageKind = Literal["unavailable", "busy", "storage_full", "read_only"]

RETRY_AFTER_S: dict[OutageKind, int] = {
    "busy": 1,  # a lock, a full pool or write queue: gone in a moment
    "unavailable": 5,  # the server restarts, the network comes back
    "read_only": 30,  # an operator remounts the disk, a standby is promoted
    "storage_full": 60,  # an operator frees disk space
}
"""``Retry-After`` per kind, in seconds (clients such as the agent honour it)."""


@dataclass(frozen=True, slots=True)
class Outage:
    """Why the database could not do what a request needed, and when to try again."""

    kind: OutageKind
    detail: str

    @property
    def retry_after_s(self) -> int:
        return RETRY_AFTER_S[self.kind]

    @property
    def blocks_writes_only(self) -> bool:
        """A full or read-only disk: reads still work, writes cannot."""
        return self.kind in ("storage_full", "read_only")


class OutageError(Exception):
    """Raised where the service itself refuses to wait any longer (a full write queue)."""

    def __init__(self, outage: Outage) -> None:
        super().__init__(outage.detail)
        self.outage = outage


# SQLite primary result codes (https://www.sqlite.org/rescode.html)
_SQLITE: dict[int, tuple[OutageKind, str]] = {
    5: ("busy", "the database is locked by another writer (busy timeout reached)"),  # SQLITE_BUSY
    6: ("busy", "a table is locked"),  # SQLITE_LOCKED
    8: ("read_only", "the database file or its disk is read-only"),  # SQLITE_READONLY
    10: ("unavailable", "disk I/O error on the database file"),  # SQLITE_IOERR
    13: ("storage_full", "the database's disk is full"),  # SQLITE_FULL
    14: ("unavailable", "the database file cannot be opened"),  # SQLITE_CANTOPEN
}

# PostgreSQL SQLSTATEs and classes (https://www.postgresql.org/docs/current/errcodes-appendix.html)
_PG_CODES: dict[str, tuple[OutageKind, str]] = {
    "53100": ("storage_full", "the database server's disk is full"),  # disk_full
    "25006": ("read_only", "the database is read-only (a standby, or default_transaction_read_only)"),
    "57014": ("busy", "a statement ran past the statement timeout"),  # query_canceled
    "55P03": ("busy", "a lock was not available in time"),  # lock_not_available
    "40001": ("busy", "a concurrent transaction conflicted (serialisation failure)"),
    "40P01": ("busy", "a deadlock was broken"),
}
_PG_CLASSES: dict[str, tuple[OutageKind, str]] = {
    "08": ("unavailable", "the connection to the database failed"),
    "53": ("busy", "the database server is out of resources (connections or memory)"),
    "57": ("unavailable", "the database server is shutting down or restarting"),
    "58": ("unavailable", "the database server had a system error"),
}


def outage_of(exc: BaseException) -> Outage | None:
    """The outage ``exc`` reports, or None for any other error (a bug: a 500)."""
    if isinstance(exc, OutageError):
        return exc.outage
    if isinstance(exc, sa_exc.TimeoutError):  # QueuePool: no connection within pool_timeout
        return Outage("busy", "no database connection became free in time")
    if isinstance(exc, sa_exc.DBAPIError):
        return outage_of(exc.orig) if exc.orig is not None else None
    if isinstance(exc, sqlite3.Error):
        return _sqlite(exc)
    if isinstance(exc, psycopg.Error):
        return _postgres(exc)
    return None


def _sqlite(exc: sqlite3.Error) -> Outage | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:
        return None
    found = _SQLITE.get(int(code) & 0xFF)
    return Outage(*found) if found else None


def _postgres(exc: psycopg.Error) -> Outage | None:
    state = exc.sqlstate
    if state:
        found = _PG_CODES.get(state) or _PG_CLASSES.get(state[:2])
        return Outage(*found) if found else None
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        # no SQLSTATE: the server never answered (refused, timed out, closed under us)
        return Outage("unavailable", "the database server did not answer")
    return None
