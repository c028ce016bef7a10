"""Run Alembic migrations programmatically, under a PostgreSQL advisory lock so replicas
starting together do not race (the lock is held for migrate + seed)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, text

ADVISORY_LOCK_KEY = 0x6770_7561  # "gpua"
REPO_ROOT = Path(__file__).resolve().parent.parent.parent


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config(str(REPO_ROOT / "alembic.ini"))
    cfg.set_main_option("script_location", str(REPO_ROOT / "migrations"))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@contextmanager
def advisory_lock(engine: Engine) -> Iterator[None]:
    """Session-level PostgreSQL advisory lock; a no-op on SQLite (one process owns the file)."""
    if engine.dialect.name != "postgresql":
        yield
        return
    with engine.connect() as conn:
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": ADVISORY_LOCK_KEY})
        conn.commit()
        try:
            yield
        finally:
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": ADVISORY_LOCK_KEY})
            conn.commit()


def upgrade(engine: Engine, revision: str = "head") -> None:
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), revision)


def migrate_and_seed(engine: Engine, seed: Callable[[], None] | None = None) -> None:
    with advisory_lock(engine):
        upgrade(engine)
        if seed is not None:
            seed()
