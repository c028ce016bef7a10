"""Engine and session factories. SQLite gets foreign keys, WAL and a busy timeout; its read
transactions begin DEFERRED (they never wait for the write lock) and its write transactions
begin IMMEDIATE (the write lock up front: no upgrade deadlocks between writers).

Every wait for the database is bounded when the engine is made with :class:`EngineLimits`
(the API's engine; CLI commands and migrations run without them, as long as they need):

- **connect**: libpq ``connect_timeout`` -- a server that is down, or frozen before it answers
  the start-up packet, fails the connection within seconds;
- **statement**: PostgreSQL's ``statement_timeout`` on the server, and on the client every wait
  for the server's answer (a statement, a commit, a rollback) ends a little after it -- a
  *frozen* server (stopped process, lost network) cannot enforce its own timeout, so the client
  closes the connection and the request fails (503) instead of hanging;
- **pool checkout**: ``pool_timeout``; the pool is sized to the request threads, so a request
  waits for a connection only when connections are stuck (a frozen server);
- SQLite: the busy timeout (another process holding the write lock).

A pooled PostgreSQL connection the server closed while it sat idle (a restart) has unread data
or an end of file on its socket; the pool checks the socket at checkout (a ``poll`` without a
round trip) and replaces such a connection, so the first request after the database comes back
succeeds. No pre-ping round trip is made per checkout (a read request makes one round trip, the
watermark read).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from service.settings import Settings


class JsonText(str):
    """A value already serialised as JSON, stored as it is in a JSON column (the recommend route
    serialises its answer once, for the wire and for the row: ~0.6 ms of a 30 kB answer)."""


def json_dumps(value: Any) -> str:
    """The engines' JSON serialiser: :class:`JsonText` as it is, anything else as before."""
    return str.__str__(value) if isinstance(value, JsonText) else json.dumps(value)


CLIENT_GRACE_S = 2.0
"""The client gives up on the server this long after the server's own statement timeout."""


@dataclass(frozen=True, slots=True)
class EngineLimits:
    """Bounds on every wait for the database (``Settings.engine_limits()``)."""

    connect_timeout_s: float = 3.0
    statement_timeout_s: float = 5.0
    pool_timeout_s: float = 3.0
    pool_size: int = 10
    max_overflow: int = 30
    sqlite_busy_timeout_ms: int = 5_000

    @classmethod
    def of(cls, settings: Settings) -> EngineLimits:
        return cls(
            connect_timeout_s=settings.db_connect_timeout_s,
            statement_timeout_s=settings.db_statement_timeout_s,
            pool_timeout_s=settings.db_pool_timeout_s,
            pool_size=settings.db_pool_size,
            max_overflow=settings.db_max_overflow,
            sqlite_busy_timeout_ms=settings.sqlite_busy_timeout_ms,
        )

    @property
    def client_wait_s(self) -> float:
        return self.statement_timeout_s + CLIENT_GRACE_S


IMMUTABLE = "gpu_advisor_immutable"
"""Connection-record flag: a SQLite connection opened immutable on a read-only disk."""


def make_engine(
    url: str,
    *,
    sqlite_busy_timeout_ms: int = 30_000,
    echo: bool = False,
    limits: EngineLimits | None = None,
) -> Engine:
    u = make_url(url)
    kwargs: dict[str, Any] = {"echo": echo, "future": True, "json_serializer": json_dumps}
    busy_ms = limits.sqlite_busy_timeout_ms if limits is not None else sqlite_busy_timeout_ms
    if u.get_backend_name() == "sqlite":
        if u.database and u.database != ":memory:" and not Path(u.database).parent.is_dir():
            Path(u.database).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": busy_ms / 1000}
    else:
        kwargs["pool_pre_ping"] = False
        kwargs["pool_size"] = 10
        kwargs["max_overflow"] = 20
    if limits is not None and not (u.get_backend_name() == "sqlite" and u.database in (None, "", ":memory:")):
        kwargs["pool_size"] = limits.pool_size
        kwargs["max_overflow"] = limits.max_overflow
        kwargs["pool_timeout"] = limits.pool_timeout_s
    if u.get_backend_name() == "postgresql" and u.get_driver_name() in ("psycopg2", ""):
        u = u.set(drivername="postgresql+psycopg")
    if u.get_backend_name() == "postgresql" and limits is not None:
        kwargs["connect_args"] = {
            "connect_timeout": max(2, math.ceil(limits.connect_timeout_s)),  # libpq: whole seconds, >= 2
            "options": f"-c statement_timeout={int(limits.statement_timeout_s * 1000)}",
        }
    engine = create_engine(u, **kwargs)
    if u.get_backend_name() == "sqlite":
        _sqlite_events(engine, busy_ms)
    elif u.get_backend_name() == "postgresql" and u.get_driver_name() == "psycopg":
        _postgres_events(engine, limits)
    return engine


def _enable_wal(cur: Any, busy_ms: int) -> None:
    """Switch the file to WAL. While another connection switches a new file, SQLite answers
    "database is locked" at once, without its busy handler (three processes starting on one new
    file raced here): retry with a short back-off for up to the busy timeout."""
    deadline_s = time.monotonic() + busy_ms / 1000
    delay_s = 0.005
    while True:
        try:
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline_s:
                raise
            time.sleep(delay_s)
            delay_s = min(delay_s * 2, 0.1)


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _sqlite_events(engine: Engine, busy_ms: int) -> None:
    database = engine.url.database
    path = Path(database) if database and database != ":memory:" else None

    if path is not None:

        @event.listens_for(engine, "do_connect")
        def _read_only_disk(_dialect: Any, record: Any, _cargs: Any, cparams: Any) -> Any:
            # A WAL database on a read-only file system cannot even be read through a normal
            # connection (its -shm file cannot be made): open it immutable -- reads and
            # recommendations keep working, writes fail as read-only (503).
            if not _read_only_fs(path):
                return None
            record.info[IMMUTABLE] = True
            opts = {k: v for k, v in cparams.items() if k != "uri"}
            return sqlite3.connect(f"file:{quote(str(path.resolve()))}?immutable=1", uri=True, **opts)

        @event.listens_for(engine, "checkout")
        def _writable_again(_dbapi_conn: Any, record: Any, _proxy: Any) -> None:
            if record.info.get(IMMUTABLE) and not _read_only_fs(path):
                raise DisconnectionError("the database's disk is writable again; reconnecting")

    @event.listens_for(engine, "connect")
    def _sqlite_pragmas(dbapi_conn: Any, record: Any) -> None:
        # Let SQLAlchemy, not pysqlite, emit BEGIN so transactions are real.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={int(busy_ms)}")
        if not record.info.get(IMMUTABLE):
            _enable_wal(cur, busy_ms)
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    @event.listens_for(engine, "begin")
    def _sqlite_begin(conn: Any) -> None:
        # Writers take the write lock up front (IMMEDIATE: no upgrade deadlocks between
        # writers); readers begin DEFERRED and read the last committed snapshot (WAL), never
        # waiting for a writer.
        read_only = conn.get_execution_options().get(READ_OPTION, False)
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


def _postgres_events(engine: Engine, limits: EngineLimits | None) -> None:
    # psycopg only here: a SQLite process (the CLI on its default database) never imports it
    from service.db.postgres_connection import DeadlineConnection, socket_closed_by_server

    if limits is not None:
        wait_s = limits.client_wait_s

        @event.listens_for(engine, "do_connect")
        def _deadline_connection(_dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
            conn = DeadlineConnection.connect(*cargs, **cparams)
            conn.wait_limit_s = wait_s
            return conn

    @event.listens_for(engine, "checkout")
    def _closed_by_server(dbapi_conn: Any, _record: Any, _proxy: Any) -> None:
        if socket_closed_by_server(dbapi_conn):
            raise DisconnectionError("the server closed this pooled connection; reconnecting")


READ_OPTION = "gpu_advisor_read_only"
"""Execution option marking a read-only transaction (SQLite: deferred BEGIN). Anything else --
migrations, seeding, write requests -- begins IMMEDIATE."""


def make_session_factory(engine: Engine, *, write: bool = True) -> sessionmaker[Session]:
    """Sessions for write transactions (the default: safe for any use) or, with
    ``write=False``, for read-only ones (SQLite: deferred, never blocked by a writer)."""
    bind = engine if write else engine.execution_options(**{READ_OPTION: True})
    return sessionmaker(bind=bind, expire_on_commit=False, autoflush=False)
