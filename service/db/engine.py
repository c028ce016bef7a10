"""Engine and session factories. SQLite gets foreign keys, WAL and a busy timeout; its read
transactions begin DEFERRED (they never wait for the write lock) and its write transactions
begin IMMEDIATE (the write lock up front: no upgrade deadlocks between writers). PostgreSQL
gets no pre-ping per checkout (a read request makes one round trip, the watermark read); a
connection found dead is invalidated by the pool and the request retried once
(``service.api.deps``)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str, *, sqlite_busy_timeout_ms: int = 30_000, echo: bool = False) -> Engine:
    u = make_url(url)
    kwargs: dict[str, Any] = {"echo": echo, "future": True}
    if u.get_backend_name() == "sqlite":
        if u.database and u.database != ":memory:":
            from pathlib import Path

            Path(u.database).parent.mkdir(parents=True, exist_ok=True)
        kwargs["connect_args"] = {"check_same_thread": False, "timeout": sqlite_busy_timeout_ms / 1000}
    else:
        kwargs["pool_pre_ping"] = False
        kwargs["pool_size"] = 10
        kwargs["max_overflow"] = 20
    if u.get_backend_name() == "postgresql" and u.get_driver_name() in ("psycopg2", ""):
        u = u.set(drivername="postgresql+psycopg")
    engine = create_engine(u, **kwargs)
    if u.get_backend_name() == "sqlite":

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy, not pysqlite, emit BEGIN so transactions are real.
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={int(sqlite_busy_timeout_ms)}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Any) -> None:
            # Writers take the write lock up front (IMMEDIATE: no upgrade deadlocks between
            # writers); readers begin DEFERRED and read the last committed snapshot (WAL), never
            # waiting for a writer.
            read_only = conn.get_execution_options().get(READ_OPTION, False)
            conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")

    return engine


READ_OPTION = "gpu_advisor_read_only"
"""Execution option marking a read-only transaction (SQLite: deferred BEGIN). Anything else --
migrations, seeding, write requests -- begins IMMEDIATE."""


def make_session_factory(engine: Engine, *, write: bool = True) -> sessionmaker[Session]:
    """Sessions for write transactions (the default: safe for any use) or, with
    ``write=False``, for read-only ones (SQLite: deferred, never blocked by a writer)."""
    bind = engine if write else engine.execution_options(**{READ_OPTION: True})
    return sessionmaker(bind=bind, expire_on_commit=False, autoflush=False)
