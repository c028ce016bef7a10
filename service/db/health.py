"""Can the database take a write? For ``/readyz``: a replica whose database cannot store
anything (a full or read-only disk, a standby server) is not ready, though it still answers
reads."""

from __future__ import annotations

import os
from pathlib import Path

from sqlalchemy import Engine


def write_problem(engine: Engine, *, min_free_bytes: int) -> str | None:
    """Why a write would fail now, or None. SQLite: the database's file system (read-only, or
    less than ``min_free_bytes`` free) and the file's permissions; PostgreSQL: a server in
    recovery (a standby) or read-only by default. (A PostgreSQL server's full disk shows only
    when a write fails: the API remembers that, ``service.api.admission.OutageMemory``.)"""
    url = engine.url
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:":
            return None
        return _sqlite_file_problem(Path(url.database), min_free_bytes)
    with engine.connect() as conn:
        standby, read_only = conn.exec_driver_sql(
            "SELECT pg_is_in_recovery(), current_setting('default_transaction_read_only')"
        ).one()
        conn.rollback()
    if standby:
        return "the database server is a standby (in recovery): it takes no writes"
    if read_only == "on":
        return "the database server is read-only (default_transaction_read_only = on)"
    return None


def _sqlite_file_problem(path: Path, min_free_bytes: int) -> str | None:
    st = os.statvfs(path.parent)
    if st.f_flag & os.ST_RDONLY:
        return f"the file system of {path.name} is read-only"
    free = st.f_bavail * st.f_frsize
    if free < min_free_bytes:
        return f"the disk of {path.name} has {free} bytes free (less than {min_free_bytes})"
    for p in (path, path.parent):
        if p.exists() and not os.access(p, os.W_OK):
            return f"{p} is not writable"
    return None
