"""Bulk paths for benchmark results. Flushes and executes; never commits.

PostgreSQL: ids are drawn from the table's sequence in one round trip and the rows go in with
``COPY ... FROM STDIN`` on the session's own connection (same transaction). A 1,000-row
multi-VALUES INSERT spends most of its time in the driver turning 24,000 named placeholders
into PostgreSQL's ``$n`` form; COPY has no placeholders at all.
SQLite: one multi-row INSERT ... RETURNING (``insertmanyvalues``).
"""

from __future__ import annotations

import json
import operator
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


def insert_results(
    session: Session, rows: Sequence[dict[str, Any]], *, params_json: Sequence[str] | None = None
) -> list[int]:
    """Insert result rows (dicts keyed by :data:`RESULT_COLUMNS`); returns their ids in order.
    ``params_json``: the rows' parameters already serialised (saves the encoder on COPY)."""
    if not rows:
        return []
    if session.get_bind().dialect.name == "postgresql":
        return _copy_results(session, rows, params_json)
    table = RESULTS_TABLE
    return [int(i) for i in session.execute(insert(table).returning(table.c.id, sort_by_parameter_order=True), rows).scalars()]


def _metrics_json(metrics: dict[str, float]) -> str:
    """JSON of a metrics map without the encoder machinery: keys are vocabulary names (plain
    ASCII identifiers) and values finite floats, whose ``repr`` is valid JSON."""
    return "{" + ",".join(f'"{k}":{float(v)!r}' for k, v in metrics.items()) + "}"


_row_values = operator.itemgetter(*RESULT_COLUMNS)
_PARAMS_AT = RESULT_COLUMNS.index("params")
_METRICS_AT = RESULT_COLUMNS.index("metrics")


def _copy_results(session: Session, rows: Sequence[dict[str, Any]], params_json: Sequence[str] | None) -> list[int]:
    raw: Any = session.connection().connection.driver_connection
    with raw.cursor() as cur:
        cur.execute(
            "SELECT nextval(pg_get_serial_sequence('benchmark_results', 'id')) FROM generate_series(1, %s)",
            (len(rows),),
        )
        ids = sorted(int(r[0]) for r in cur.fetchall())
        cache: dict[str, str] = {}  # by parameters hash
        cols = ", ".join(("id", *RESULT_COLUMNS))
        with cur.copy(f"COPY benchmark_results ({cols}) FROM STDIN") as copy:
            for i, (rid, row) in enumerate(zip(ids, rows, strict=True)):
                values = list(_row_values(row))
                if params_json is not None:
                    pj = params_json[i]
                else:
                    pj = cache.get(row["params_hash"]) or cache.setdefault(
                        row["params_hash"], json.dumps(row["params"], separators=(",", ":"))
                    )
                values[_PARAMS_AT] = pj
                values[_METRICS_AT] = _metrics_json(row["metrics"])
                copy.write_row((rid, *values))
    return ids
