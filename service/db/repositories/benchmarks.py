"""Benchmark ingestion and the cells it touches: idempotency records, fingerprints, pending
GPUs, runs and results, the outlier test over a cell, quarantine state, admin alerts.
Returns :mod:`service.core.evidence.results` types; flushes, never commits. Reads live in
``benchmark_queries``, admin actions in ``benchmark_admin``.

Ingestion is the hot path and keeps its shape:

- result rows go in with ``COPY ... FROM STDIN`` on PostgreSQL, ids drawn from the table's
  sequence in one round trip, on the session's own connection (same transaction). A
  1,000-row multi-VALUES INSERT spends most of its time in the driver turning 24,000 named
  placeholders into PostgreSQL's ``$n`` form; COPY has no placeholders at all. SQLite: one
  multi-row INSERT ... RETURNING (``insertmanyvalues``);
- cells are serialised on PostgreSQL with transaction-scoped advisory locks (one per GPU and
  fingerprint) taken in sorted order, so two submissions into the same cell evaluate the MAD
  test over each other's committed results rather than over stale snapshots (SQLite
  serialises all writers already);
- on PostgreSQL the outlier test runs in SQL over each cell's window and returns only the
  flips; elsewhere (and for a dry run's virtual points) the rows come back and
  :func:`service.core.evidence.results.outlier_flips` decides. Both give the same flips (tested).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from sqlalchemy import (
    String,
    Table,
    and_,
    bindparam,
    case,
    insert,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from service.core.catalog.specs import gpu_spec_from_doc
from service.core.evidence.aggregate import MAD_TO_SIGMA, MIN_POINTS_FOR_OUTLIER_TEST
from service.core.evidence.quarantine import REVIEW_RELEASED, effective_state
from service.core.evidence.results import (
    AlertDraft,
    CatalogGpu,
    CellKey,
    Flip,
    Member,
    NewResult,
    NewRun,
    OutlierPolicy,
    PendingGpu,
    ResultOutcome,
    StoredAnswer,
    SubmissionAnswer,
    VirtualPoint,
    outlier_detail,
    outlier_flips,
)
from service.db.models import AdminAlert as AlertRow
from service.db.models import (
    ApiKey,
    BenchmarkFingerprint,
    BenchmarkResult,
    BenchmarkRun,
    Gpu,
    GpuAlias,
    IdempotencyRecord,
)
from service.db.models import PendingGpu as PendingGpuRow

ANSWER_SCOPE = "benchmark-runs"  # idempotency records of submissions: (scope, run_id)


class DuplicateRun(Exception):
    """The run id is already stored (a concurrent twin committed first). The transaction is
    unusable until rolled back."""


def utc(value: dt.datetime) -> dt.datetime:
    """SQLite returns naive datetimes; everything stored is UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def utc_or_none(value: dt.datetime | None) -> dt.datetime | None:
    return utc(value) if value is not None else None


# ---- rows -> core ------------------------------------------------------------------------------


def catalog_gpu(gpu: Gpu) -> CatalogGpu:
    return CatalogGpu(
        id=gpu.id,
        slug=gpu.slug,
        memory_bytes=gpu.memory_bytes,
        usable_memory_bytes=gpu.usable_memory_bytes,
        spec=gpu_spec_from_doc(gpu.spec),
    )


def pending_gpu(p: PendingGpuRow) -> PendingGpu:
    return PendingGpu(
        id=p.id,
        status=p.status,
        nvml_name=p.nvml_name,
        pci_device_id=p.pci_device_id,
        pci_vendor_id=p.pci_vendor_id,
        pci_subsystem_id=p.pci_subsystem_id,
        memory_total_bytes=p.memory_total_bytes,
        first_seen_at=utc(p.first_seen_at),
        last_seen_at=utc(p.last_seen_at),
        mapped_gpu_id=p.mapped_gpu_id,
        mapped_at=utc_or_none(p.mapped_at),
    )


# ---- the stored answer of a submission ------------------------------------------------------------


def compact_answer(answer: SubmissionAnswer) -> dict[str, Any]:
    """The stored form of an answer: per-result outcomes as id and status lists plus the
    quarantined few (a 10,000-result answer stays small)."""
    results = answer.results
    return {
        "run_id": answer.run_id,
        "state": answer.state,
        "gpu_slug": answer.gpu_slug,
        "fingerprint_hash": answer.fingerprint_hash,
        "result_count": answer.result_count,
        "quarantined_count": answer.quarantined_count,
        "warnings": list(answer.warnings),
        "resolved_by": answer.resolved_by,
        "pending_gpu_id": answer.pending_gpu_id,
        "dry_run": answer.dry_run,
        "outcomes": {
            "ids": [o.result_id for o in results],
            "statuses": [o.status for o in results],
            "quarantined": {
                str(o.index): [o.quarantine_reason, o.quarantine_detail] for o in results if o.quarantined
            },
        },
    }


def expand_answer(stored: Mapping[str, Any]) -> SubmissionAnswer:
    oc = stored["outcomes"]
    q = oc["quarantined"]
    results = tuple(
        ResultOutcome(
            index=i,
            result_id=rid,
            status=status,
            quarantined=str(i) in q,
            quarantine_reason=q[str(i)][0] if str(i) in q else None,
            quarantine_detail=q[str(i)][1] if str(i) in q else None,
        )
        for i, (rid, status) in enumerate(zip(oc["ids"], oc["statuses"], strict=True))
    )
    return SubmissionAnswer(
        run_id=stored["run_id"],
        state=stored["state"],
        gpu_slug=stored["gpu_slug"],
        fingerprint_hash=stored["fingerprint_hash"],
        result_count=stored["result_count"],
        quarantined_count=stored["quarantined_count"],
        results=results,
        warnings=tuple(stored.get("warnings", [])),
        resolved_by=stored.get("resolved_by"),
        pending_gpu_id=stored.get("pending_gpu_id"),
        dry_run=stored.get("dry_run", False),
    )


# ---- bulk result rows -------------------------------------------------------------------------------

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
    return [
        int(i)
        for i in session.execute(
            insert(table).returning(table.c.id, sort_by_parameter_order=True), rows
        ).scalars()
    ]


def _metrics_json(metrics: Mapping[str, float]) -> str:
    """JSON of a metrics map without the encoder machinery: keys are vocabulary names (plain
    ASCII identifiers) and values finite floats, whose ``repr`` is valid JSON."""
    return "{" + ",".join(f'"{k}":{float(v)!r}' for k, v in metrics.items()) + "}"


_row_values = operator.itemgetter(*RESULT_COLUMNS)
_PARAMS_AT = RESULT_COLUMNS.index("params")
_METRICS_AT = RESULT_COLUMNS.index("metrics")


def _copy_results(
    session: Session, rows: Sequence[dict[str, Any]], params_json: Sequence[str] | None
) -> list[int]:
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


# ---- the outlier test in SQL ----------------------------------------------------------------------

_PG_OUTLIER_TEST = text(
    """
WITH pts AS (
    SELECT r.id, r.workload, r.params_hash, r.main_value AS v, r.outlier_detail IS NOT NULL AS flagged,
           (r.main_value IS NOT NULL AND NOT r.retracted
            AND (r.review_state = 'released' OR (r.review_state IS NULL AND r.check_reason IS NULL))) AS base
    FROM unnest(:hashes) AS h(ph)
    CROSS JOIN LATERAL (
        SELECT id, workload, params_hash, main_value, outlier_detail, retracted, review_state, check_reason
        FROM benchmark_results
        WHERE gpu_id = :gpu AND fingerprint_hash = :fp AND params_hash = h.ph AND status = 'ok'
          AND (outlier_detail IS NOT NULL
               OR (main_value IS NOT NULL AND NOT retracted
                   AND (review_state = 'released' OR (review_state IS NULL AND check_reason IS NULL))))
        ORDER BY id DESC
        LIMIT :window
    ) AS r
),
cells AS MATERIALIZED (
    SELECT params_hash, min(workload) AS workload,
           array_agg(id) AS ids, array_agg(v) AS vs, array_agg(base) AS bases, array_agg(flagged) AS flags,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY v) FILTER (WHERE base) AS m,
           count(*) FILTER (WHERE base) AS n
    FROM pts GROUP BY params_hash
),
stats AS MATERIALIZED (
    -- the scale divided by k, and the test |v - m| > t * scale as |v - m| / (t k) > scale / k:
    -- no product of a stored value can overflow a double (issue 26: a released 1e308 did)
    SELECT c.*,
           greatest((SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(u.v - c.m))
                     FROM unnest(c.vs, c.bases) AS u(v, b) WHERE u.b),
                    (:floor / :k) * abs(c.m)) AS scale_k
    FROM cells c
)
SELECT x.id, s.workload, x.v, s.m, s.n, s.scale_k, x.outlier
FROM stats s
CROSS JOIN LATERAL (
    SELECT y.id, y.v, y.f,
           coalesce(y.b AND s.n >= :min_n
                    AND CASE WHEN s.scale_k > 0 THEN abs(y.v - s.m) / (:t * :k) > s.scale_k ELSE y.v <> s.m END,
                    false) AS outlier
    FROM unnest(s.ids, s.vs, s.bases, s.flags) AS y(id, v, b, f)
) x
WHERE x.outlier <> x.f
"""
).bindparams(bindparam("hashes", type_=pg_dialect.ARRAY(String())))


def _baseline_expr() -> Any:
    """SQL twin of :func:`service.core.evidence.quarantine.in_outlier_baseline` (status filtered apart)."""
    R = BenchmarkResult
    return and_(
        R.main_value.is_not(None),
        R.retracted.is_(False),
        or_(R.review_state == REVIEW_RELEASED, and_(R.review_state.is_(None), R.check_reason.is_(None))),
    )


def _lock_key(gpu_id: int, fingerprint_hash: str) -> int:
    h = hashlib.blake2b(f"cells|{gpu_id}|{fingerprint_hash}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big", signed=True)


class BenchmarkRepository:
    def __init__(self, session: Session) -> None:
        self._s = session

    @property
    def _dialect(self) -> str:
        return self._s.get_bind().dialect.name

    # ---- inserts that tolerate a concurrent twin -------------------------------------------------

    def _insert_ignore(
        self, table: Table, values: Mapping[str, Any], index_elements: Sequence[str]
    ) -> Any | None:
        """INSERT ... ON CONFLICT DO NOTHING RETURNING pk (PostgreSQL and SQLite): the new row's
        primary key, or None when the row was already there."""
        dialect = self._dialect
        if dialect == "postgresql":
            stmt: Any = (
                pg_dialect.insert(table)
                .values(**values)
                .on_conflict_do_nothing(index_elements=list(index_elements))
            )
        elif dialect == "sqlite":
            stmt = (
                sqlite_dialect.insert(table)
                .values(**values)
                .on_conflict_do_nothing(index_elements=list(index_elements))
            )
        else:  # pragma: no cover - only the two supported back ends
            raise NotImplementedError(dialect)
        pk = next(iter(table.primary_key.columns))
        return self._s.execute(stmt.returning(pk)).scalar_one_or_none()

    # ---- idempotency ------------------------------------------------------------------------------

    def find_answer(self, run_id: str) -> StoredAnswer | None:
        rec = self._s.scalars(
            select(IdempotencyRecord).where(
                IdempotencyRecord.scope == ANSWER_SCOPE, IdempotencyRecord.key == run_id
            )
        ).first()
        if rec is None:
            return None
        return StoredAnswer(
            request_hash=rec.request_hash, answer=expand_answer(rec.response_body), api_key_id=rec.api_key_id
        )

    def save_answer(
        self, answer: SubmissionAnswer, *, api_key_id: int | None, request_hash: str, created_at: dt.datetime
    ) -> None:
        """Store the answer to a new run for replays (status 201: stored)."""
        self._s.add(
            IdempotencyRecord(
                scope=ANSWER_SCOPE,
                key=answer.run_id,
                api_key_id=api_key_id,
                request_hash=request_hash,
                status_code=201,
                response_body=compact_answer(answer),
                created_at=created_at,
            )
        )
        try:
            self._s.flush()
        except IntegrityError as exc:
            raise DuplicateRun(answer.run_id) from exc

    # ---- catalog GPUs as ingestion sees them -----------------------------------------------------

    def live_gpu(self, gpu_id: int) -> CatalogGpu | None:
        gpu = self._s.get(Gpu, gpu_id)
        return catalog_gpu(gpu) if gpu is not None and not gpu.deleted else None

    def live_gpu_by_slug(self, slug: str) -> CatalogGpu | None:
        gpu = self._s.scalars(select(Gpu).where(Gpu.slug == slug, Gpu.deleted.is_(False))).first()
        return catalog_gpu(gpu) if gpu is not None else None

    def live_gpus_by_slugs(self, slugs: Iterable[str]) -> list[CatalogGpu]:
        """Ordered by slug."""
        q = select(Gpu).where(Gpu.slug.in_(list(slugs)), Gpu.deleted.is_(False)).order_by(Gpu.slug)
        return [catalog_gpu(g) for g in self._s.scalars(q)]

    def live_gpus_with_pci(self, pci: str) -> list[CatalogGpu]:
        """Catalog GPUs carrying this PCI device id, ordered by slug."""
        q = (
            select(Gpu)
            .join(GpuAlias, GpuAlias.gpu_id == Gpu.id)
            .where(GpuAlias.kind == "pci", GpuAlias.alias_norm == pci, Gpu.deleted.is_(False))
            .order_by(Gpu.slug)
        )
        return [catalog_gpu(g) for g in self._s.scalars(q).unique()]

    def slugs_with_pci(self, pci: str) -> set[str]:
        return set(
            self._s.scalars(
                select(Gpu.slug)
                .join(GpuAlias, GpuAlias.gpu_id == Gpu.id)
                .where(GpuAlias.kind == "pci", GpuAlias.alias_norm == pci, Gpu.deleted.is_(False))
            )
        )

    # ---- pending GPUs -------------------------------------------------------------------------------

    def find_pending(self, pci: str, name: str, mem: int) -> PendingGpu | None:
        p = self._s.scalars(
            select(PendingGpuRow).where(
                PendingGpuRow.pci_device_id == pci,
                PendingGpuRow.nvml_name == name,
                PendingGpuRow.memory_total_bytes == mem,
            )
        ).first()
        return pending_gpu(p) if p is not None else None

    def add_pending(
        self,
        *,
        pci: str,
        name: str,
        mem: int,
        pci_vendor_id: str | None,
        pci_subsystem_id: str | None,
        seen_at: dt.datetime,
    ) -> tuple[PendingGpu, bool]:
        """Queue an unknown identity (a concurrent twin may have queued it first): the entry,
        and whether this call created it."""
        new_id = self._insert_ignore(
            cast(Table, PendingGpuRow.__table__),
            {
                "pci_device_id": pci,
                "nvml_name": name,
                "memory_total_bytes": mem,
                "pci_vendor_id": pci_vendor_id,
                "pci_subsystem_id": pci_subsystem_id,
                "status": "pending",
                "first_seen_at": seen_at,
                "last_seen_at": seen_at,
            },
            ["pci_device_id", "nvml_name", "memory_total_bytes"],
        )
        p = self._s.scalars(
            select(PendingGpuRow).where(
                PendingGpuRow.pci_device_id == pci,
                PendingGpuRow.nvml_name == name,
                PendingGpuRow.memory_total_bytes == mem,
            )
        ).one()
        return pending_gpu(p), new_id is not None

    def touch_pending(self, pending_id: int, seen_at: dt.datetime, *, requeue: bool) -> None:
        """Another run from a queued identity; ``requeue``: it was mapped to a GPU that has
        been deleted since, so it goes back to the queue."""
        values: dict[str, Any] = {"last_seen_at": seen_at}
        if requeue:
            values.update(status="pending", mapped_gpu_id=None)
        self._s.execute(update(PendingGpuRow).where(PendingGpuRow.id == pending_id).values(**values))

    # ---- fingerprints, runs, results -------------------------------------------------------------------

    def ensure_fingerprint(
        self, fingerprint_hash: str, fields: Mapping[str, Any], first_seen_at: dt.datetime
    ) -> None:
        self._insert_ignore(
            cast(Table, BenchmarkFingerprint.__table__),
            {"hash": fingerprint_hash, "fields": dict(fields), "first_seen_at": first_seen_at},
            ["hash"],
        )

    def add_run(self, run: NewRun) -> int:
        """Insert a run; its primary key. A duplicate run id fails here
        (:class:`DuplicateRun`), before any result is written."""
        row = BenchmarkRun(
            run_id=run.run_id,
            api_key_id=run.api_key_id,
            host=run.host,
            gpu_id=run.gpu_id,
            pending_gpu_id=run.pending_gpu_id,
            resolved_by=run.resolved_by,
            gpu_identity=dict(run.gpu_identity),
            gpu_count=run.gpu_count,
            suite_version=run.suite_version,
            fingerprint=dict(run.fingerprint),
            fingerprint_hash=run.fingerprint_hash,
            request_hash=run.request_hash,
            result_count=run.result_count,
            started_at=run.started_at,
            finished_at=run.finished_at,
            notes=run.notes,
            received_at=run.received_at,
        )
        self._s.add(row)
        try:
            self._s.flush()
        except IntegrityError as exc:
            raise DuplicateRun(run.run_id) from exc
        return row.id

    def add_results(
        self, run_pk: int, gpu_id: int | None, fingerprint_hash: str, results: Sequence[NewResult]
    ) -> list[int]:
        """Insert a run's results in one bulk statement (COPY on PostgreSQL); their ids in order."""
        rows = [
            {
                "run_pk": run_pk,
                "position": r.position,
                "gpu_id": gpu_id,
                "fingerprint_hash": fingerprint_hash,
                "workload": r.workload,
                "params": r.params,
                "params_hash": r.params_hash,
                "status": r.status,
                "metrics": r.metrics,
                "main_value": r.main_value,
                "step_time_s": r.step_time_s,
                "peak_allocated_bytes": r.memory["peak_allocated_bytes"],
                "peak_reserved_bytes": r.memory["peak_reserved_bytes"],
                "nvml_used_bytes": r.memory["nvml_used_bytes"],
                "repeats": r.repeats,
                "error": r.error,
                "measured_at": r.measured_at,
                "check_reason": r.check_reason,
                "check_detail": r.check_detail,
                "outlier_detail": None,
                "quarantined": r.check_reason is not None,
                "quarantine_reason": r.check_reason,
                "quarantine_detail": r.check_detail,
                "retracted": False,
            }
            for r in results
        ]
        return insert_results(self._s, rows, params_json=[r.params_json for r in results])

    # ---- cells: locks, the outlier test, quarantine state ------------------------------------------

    def lock_cells(self, cells: Iterable[CellKey]) -> None:
        """Transaction-scoped advisory locks on PostgreSQL, one per (GPU, fingerprint) -- the runs
        of one stack touch the same cells anyway, and one lock is cheaper than a thousand -- taken
        in sorted order (no deadlock between two writers); a no-op on SQLite, whose writers are
        serialised by BEGIN IMMEDIATE."""
        keys = sorted({_lock_key(c[0], c[1]) for c in cells})
        if not keys or self._dialect != "postgresql":
            return
        self._s.execute(
            text(
                "SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT unnest(CAST(:keys AS BIGINT[])) AS k ORDER BY k) AS s"
            ),
            {"keys": keys},
        )

    def outlier_test(
        self,
        cells: Iterable[CellKey],
        policy: OutlierPolicy,
        *,
        virtual: Sequence[VirtualPoint] = (),
        in_database: bool | None = None,
    ) -> list[Flip]:
        """The MAD test over each cell's baseline (ok, not retracted, not quarantined for another
        reason, main metric present) -- its ``policy.window`` most recent results --, stored
        rows plus ``virtual`` ones. Returns the flips: stored rows whose flag must change, and
        virtual rows that are outliers. Reads only the columns the test needs; the detail text
        records the figures at the time of flagging. On PostgreSQL (no virtual rows) the
        database computes it and returns only the flips."""
        R = BenchmarkResult
        base = _baseline_expr()
        groups: dict[tuple[int, str], set[tuple[str, str]]] = {}
        for g, fp, wl, ph in cells:
            groups.setdefault((g, fp), set()).add((wl, ph))
        if in_database is None:
            in_database = not virtual and self._dialect == "postgresql"
        if in_database:
            return self._outlier_test_in_postgres(groups, policy)
        members: dict[CellKey, list[Member]] = {}
        for (g, fp), pairs in groups.items():
            q = select(
                R.id,
                R.workload,
                R.params_hash,
                R.main_value,
                case((base, True), else_=False),
                R.outlier_detail.is_not(None),
            ).where(
                R.gpu_id == g,
                R.fingerprint_hash == fp,
                R.workload.in_(sorted({wl for wl, _ in pairs})),
                R.params_hash.in_(sorted({ph for _, ph in pairs})),
                R.status == "ok",
                or_(base, R.outlier_detail.is_not(None)),
            )
            for rid, wl, ph, value, in_base, flagged in (
                self._s.connection().execute(q).all()
            ):  # Core, one fetch
                if (wl, ph) in pairs:
                    members.setdefault((g, fp, wl, ph), []).append(
                        (rid, value, bool(in_base), bool(flagged), None)
                    )
        return outlier_flips(members, policy, virtual)

    def _outlier_test_in_postgres(
        self, groups: Mapping[tuple[int, str], set[tuple[str, str]]], policy: OutlierPolicy
    ) -> list[Flip]:
        """The same test as :func:`service.core.evidence.results.outlier_flips`, computed by
        PostgreSQL: per cell (the parameters hash covers the workload, so it names a cell within
        GPU and fingerprint) the newest ``window`` rows by index, the median with
        ``percentile_cont(0.5)`` (the type-7 median), the MAD over the cell's own array, then a
        verdict per member; only the flips come back."""
        flips: list[Flip] = []
        t = policy.mad_threshold
        conn = self._s.connection()
        for (g, fp), pairs in groups.items():
            rows = conn.execute(
                _PG_OUTLIER_TEST,
                {
                    "gpu": g,
                    "fp": fp,
                    "hashes": sorted({ph for _, ph in pairs}),
                    "window": policy.window,
                    "k": MAD_TO_SIGMA,
                    "floor": policy.floor_fraction,
                    "min_n": MIN_POINTS_FOR_OUTLIER_TEST,
                    "t": t,
                },
            ).all()
            for rid, wl, value, center, n, scale_k, outlier in rows:
                scale = MAD_TO_SIGMA * scale_k  # a Python float: inf past the range, never an error
                detail = outlier_detail(wl, value, center, n, scale, t) if outlier else None
                flips.append(Flip(id=int(rid), tag=None, outlier_detail=detail))
        return flips

    def write_flips(self, flips: Sequence[Flip]) -> list[Flip]:
        """Apply stored rows' new outlier flags and effective states (one bulk UPDATE); the
        flips with their effective states filled in, in order."""
        stored = {f.id: f for f in flips if f.id is not None}
        if not stored:
            return list(flips)
        R = BenchmarkResult
        q = select(R.id, R.check_reason, R.check_detail, R.review_state, R.review_reason).where(
            R.id.in_(list(stored))
        )
        for rid, cr, cd, rs, rr in self._s.execute(q):
            f = stored[rid]
            st = effective_state(
                check_reason=cr,
                check_detail=cd,
                outlier_detail=f.outlier_detail,
                review_state=rs,
                review_reason=rr,
            )
            stored[rid] = Flip(
                id=f.id,
                tag=f.tag,
                outlier_detail=f.outlier_detail,
                quarantined=st.quarantined,
                quarantine_reason=st.reason,
                quarantine_detail=st.detail,
            )
        table = cast(Table, R.__table__)
        stmt = (
            update(table)
            .where(table.c.id == bindparam("b_id"))
            .values(
                outlier_detail=bindparam("b_outlier"),
                quarantined=bindparam("b_q"),
                quarantine_reason=bindparam("b_reason"),
                quarantine_detail=bindparam("b_detail"),
            )
        )
        self._s.execute(
            stmt,
            [
                {
                    "b_id": f.id,
                    "b_outlier": f.outlier_detail,
                    "b_q": f.quarantined,
                    "b_reason": f.quarantine_reason,
                    "b_detail": f.quarantine_detail,
                }
                for f in stored.values()
            ],
        )
        return [stored[f.id] if f.id is not None else f for f in flips]

    def reevaluate(self, cells: Iterable[CellKey], policy: OutlierPolicy) -> list[Flip]:
        """Lock, test and persist the given cells; returns the flips with their new states."""
        cell_set = set(cells)
        if not cell_set:
            return []
        self.lock_cells(cell_set)
        return self.write_flips(self.outlier_test(cell_set, policy))

    def _cells_where(self, *conditions: Any) -> set[CellKey]:
        q = (
            select(
                BenchmarkResult.gpu_id,
                BenchmarkResult.fingerprint_hash,
                BenchmarkResult.workload,
                BenchmarkResult.params_hash,
            )
            .where(BenchmarkResult.gpu_id.is_not(None), *conditions)
            .distinct()
        )
        return {(int(g), fp, wl, ph) for g, fp, wl, ph in self._s.execute(q) if g is not None}

    def cells_of_runs(self, run_pks: Sequence[int]) -> set[CellKey]:
        """The cells the results of these runs are in (catalog GPUs only)."""
        return self._cells_where(BenchmarkResult.run_pk.in_(list(run_pks))) if run_pks else set()

    def cells_of_run(self, run_pk: int) -> set[CellKey]:
        return self._cells_where(BenchmarkResult.run_pk == run_pk)

    # ---- alerts ---------------------------------------------------------------------------------------

    def add_alerts(self, drafts: Iterable[AlertDraft], created_at: dt.datetime) -> int:
        rows = [
            AlertRow(
                kind=d.kind,
                message=d.message[:2000],
                gpu_id=d.gpu_id,
                run_pk=d.run_pk,
                pending_gpu_id=d.pending_gpu_id,
                result_count=len(d.result_ids) or int(d.data.get("result_count", 0)),
                data={**d.data, "result_ids": list(d.result_ids[:50])},
                created_at=created_at,
            )
            for d in drafts
        ]
        self._s.add_all(rows)
        self._s.flush()
        return len(rows)

    # ---- the built-in agent ---------------------------------------------------------------------------

    def key_by_name(self, name: str) -> tuple[int, str, str] | None:
        """(id, name, scope) of the first API key with this name."""
        row = self._s.scalars(select(ApiKey).where(ApiKey.name == name)).first()
        return (row.id, row.name, row.scope) if row is not None else None

    def add_trusted_key(self, *, name: str, prefix: str, secret_hash: str, scope: str) -> int:
        row = ApiKey(name=name, prefix=prefix, secret_hash=secret_hash, scope=scope, trusted=True)
        self._s.add(row)
        self._s.flush()
        return row.id
