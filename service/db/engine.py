"""Engine and session factory. SQLite gets foreign keys, WAL and a busy timeout."""

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
        kwargs["pool_pre_ping"] = True
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
            # IMMEDIATE takes the write lock up front: no upgrade deadlocks between writers.
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False, autoflush=False)
