"""Bulk paths for benchmark results. Flushes and executes; never commits.

PostgreSQL: ids are drawn from the table's sequence in one round trip and the rows go in with
``COPY ... FROM STDIN`` on the session's own connection (same transaction). A 1,000-row
multi-VALUES INSERT spends most of its time in the driver turning 24,000 named placeholders
into PostgreSQL's ``$n`` form; COPY has no placeholders at all.
SQLite: one multi-row INSERT ... RETURNING (``insertmanyvalues``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session

from service.db.models import BenchmarkResult

RESULTS_TABLE = cast(Table, BenchmarkResult.__table__)
RESULT_COLUMNS: tuple[str, ...] = (
    "run_pk",
    "position",
    "gpu_id",
    "fingerprint_hash",
    "workload",
    "params",
    "params_hash",
    "status",
    "metrics",
    "main_value",
    "step_time_s",
    "peak_allocated_bytes",
    "peak_reserved_bytes",
    "nvml_used_bytes",
    "repeats",
    "error",
    "measured_at",
    "check_reason",
    "check_detail",
    "outlier_detail",
    "quarantined",
    "quarantine_reason",
    "quarantine_detail",
    "retracted",
)
_JSON_COLUMNS = frozenset({"params", "metrics"})


def insert_results(session: Session, rows: Sequence[dict[str, Any]]) -> list[int]:
    """Insert result rows (dicts keyed by :data:`RESULT_COLUMNS`); returns their ids in order."""
    if not rows:
        return []
    if session.get_bind().dialect.name == "postgresql":
        return _copy_results(session, rows)
    table = RESULTS_TABLE
    return [int(i) for i in session.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True), rows).scalars()]


def _copy_results(session: Session, rows: Sequence[dict[str, Any]]) -> list[int]:
    raw: Any = session.connection().connection.driver_connection
    with raw.cursor() as cur:
        cur.execute(
            "SELECT nextval(pg_get_serial_sequence('benchmark_results', 'id')) FROM generate_series(1, %s)",
            (len(rows),),
        )
        ids = sorted(int(r[0]) for r in cur.fetchall())
        json_cache: dict[int, str] = {}  # canonical parameter dicts are shared between rows

        def js(col: str, value: Any) -> str:
            if col == "params":
                key = id(value)
                hit = json_cache.get(key)
                if hit is None:
                    hit = json_cache[key] = json.dumps(value, separators=(",", ":"))
                return hit
            return json.dumps(value, separators=(",", ":"))

        cols = ", ".join(("id", *RESULT_COLUMNS))
        with cur.copy(f"COPY benchmark_results ({cols}) FROM STDIN") as copy:
            for rid, row in zip(ids, rows, strict=True):
                copy.write_row(
                    (rid, *(js(c, row[c]) if c in _JSON_COLUMNS else row[c] for c in RESULT_COLUMNS))
                )
    return ids
