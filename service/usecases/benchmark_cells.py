"""Shared machinery for benchmark results: GPU resolution for submissions, the outlier test
over a (GPU, fingerprint, parameters) cell, quarantine state updates and admin alerts.

Cells are serialised on PostgreSQL with transaction-scoped advisory locks (one per GPU and
fingerprint) taken in sorted order, so two submissions into the same cell evaluate the MAD test
over each other's committed results rather than over stale snapshots. (SQLite serialises all
writers already.)
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import String, Table, and_, bindparam, case, or_, select, text, update
from sqlalchemy.dialects import postgresql as pg_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect

from service.core.aggregate import MAD_TO_SIGMA, MIN_POINTS_FOR_OUTLIER_TEST, center_and_scale, outlier_score
from service.core.quarantine import REVIEW_RELEASED, STATISTICAL_OUTLIER, QuarantineState, effective_state
from service.core.specs import GpuSpec, gpu_spec_from_doc, normalise_name
from service.core.vocabulary import WORKLOADS
from service.db.models import AdminAlert, BenchmarkResult, Gpu, GpuAlias, PendingGpu
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.catalog import AliasIndexCache, resolve

# Memory within this fraction of a catalog figure counts as a match. NVML reports the usable
# figure exactly with default ECC and ~the physical figure with ECC off (L40S: 46,068 vs
# 49,140 MiB, 6% apart), so both are compared.
MEMORY_MATCH_TOLERANCE = 0.02

CellKey = tuple[int, str, str, str]  # (gpu_id, fingerprint_hash, workload, params_hash)


def utc(value: dt.datetime) -> dt.datetime:
    """SQLite returns naive datetimes; everything stored is UTC."""
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


# ---- GPU resolution -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuMatch:
    gpu_id: int
    slug: str
    spec: GpuSpec
    resolved_by: str


def _memory_distance(mem: int, gpu: Gpu) -> float | None:
    refs = [r for r in (gpu.usable_memory_bytes, gpu.memory_bytes) if r]
    if not refs:
        return None
    return min(abs(mem - r) / r for r in refs)


def _pick_by_memory(cands: Sequence[Gpu], mem: int) -> Gpu | None:
    """One candidate whose usable (or physical) memory matches NVML's total; a lone candidate
    with no memory figure is accepted; ties or no match -> None."""
    if len(cands) == 1:
        d = _memory_distance(mem, cands[0])
        return cands[0] if d is None or d <= MEMORY_MATCH_TOLERANCE else None
    scored = [(d, g) for g in cands if (d := _memory_distance(mem, g)) is not None and d <= MEMORY_MATCH_TOLERANCE]
    if not scored:
        return None
    scored.sort(key=lambda x: (x[0], x[1].slug))
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None
    return scored[0][1]


def _match(gpu: Gpu, how: str) -> GpuMatch:
    return GpuMatch(gpu_id=gpu.id, slug=gpu.slug, spec=gpu_spec_from_doc(gpu.spec), resolved_by=how)


def find_mapped_pending(uow: UnitOfWork, pci: str, name: str, mem: int) -> PendingGpu | None:
    return uow.session.scalars(
        select(PendingGpu).where(
            PendingGpu.pci_device_id == pci,
            PendingGpu.nvml_name == name,
            PendingGpu.memory_total_bytes == mem,
        )
    ).first()


def resolve_gpu(
    uow: UnitOfWork, cache: AliasIndexCache, *, pci: str, name: str, mem: int
) -> tuple[GpuMatch | None, PendingGpu | None]:
    """Catalog GPU for an NVML identity: an admin's mapping of this exact identity, else PCI
    device id + memory, else the NVML name through the alias index (memory picks among an
    ambiguous name's variants). Returns (match, pending row if this identity is queued)."""
    s = uow.session
    pending = find_mapped_pending(uow, pci, name, mem)
    if pending is not None and pending.status == "mapped" and pending.mapped_gpu_id is not None:
        gpu = s.get(Gpu, pending.mapped_gpu_id)
        if gpu is not None and not gpu.deleted:
            return _match(gpu, "admin_mapping"), pending
    by_pci = list(
        s.scalars(
            select(Gpu)
            .join(GpuAlias, GpuAlias.gpu_id == Gpu.id)
            .where(GpuAlias.kind == "pci", GpuAlias.alias_norm == pci, Gpu.deleted.is_(False))
            .order_by(Gpu.slug)
        ).unique()
    )
    picked = _pick_by_memory(by_pci, mem) if by_pci else None
    if picked is not None:
        return _match(picked, "pci_memory"), pending
    res = resolve(uow, cache, name) if name.strip() else None
    if res is not None and res.slugs:
        rows = list(s.scalars(select(Gpu).where(Gpu.slug.in_(res.slugs), Gpu.deleted.is_(False)).order_by(Gpu.slug)))
        if len(rows) == 1:
            return _match(rows[0], "name"), pending
        picked = _pick_by_memory(rows, mem)
        if picked is not None:
            return _match(picked, "name_memory"), pending
    return None, pending


def pending_candidates(uow: UnitOfWork, cache: AliasIndexCache, p: PendingGpu) -> list[str]:
    """Catalog GPUs an admin might map a pending device to: same PCI id, or a close name."""
    slugs = set(
        uow.session.scalars(
            select(Gpu.slug)
            .join(GpuAlias, GpuAlias.gpu_id == Gpu.id)
            .where(GpuAlias.kind == "pci", GpuAlias.alias_norm == p.pci_device_id, Gpu.deleted.is_(False))
        )
    )
    res = resolve(uow, cache, p.nvml_name) if normalise_name(p.nvml_name) else None
    if res is not None:
        slugs.update(res.slugs or res.close_matches)
    return sorted(slugs)


# ---- inserts that tolerate a concurrent twin ------------------------------------------------------


def insert_ignore(
    uow: UnitOfWork, table: Table, values: Mapping[str, Any], index_elements: Sequence[str]
) -> Any | None:
    """INSERT ... ON CONFLICT DO NOTHING RETURNING pk (PostgreSQL and SQLite): the new row's
    primary key, or None when the row was already there."""
    dialect = uow.session.get_bind().dialect.name
    if dialect == "postgresql":
        stmt: Any = pg_dialect.insert(table).values(**values).on_conflict_do_nothing(index_elements=list(index_elements))
    elif dialect == "sqlite":
        stmt = sqlite_dialect.insert(table).values(**values).on_conflict_do_nothing(index_elements=list(index_elements))
    else:  # pragma: no cover - only the two supported back ends
        raise NotImplementedError(dialect)
    pk = next(iter(table.primary_key.columns))
    return uow.session.execute(stmt.returning(pk)).scalar_one_or_none()


# ---- cell locks and the outlier test -------------------------------------------------------------


def _lock_key(gpu_id: int, fingerprint_hash: str) -> int:
    h = hashlib.blake2b(f"cells|{gpu_id}|{fingerprint_hash}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big", signed=True)


def lock_cells(uow: UnitOfWork, cells: Iterable[CellKey]) -> None:
    """Transaction-scoped advisory locks on PostgreSQL, one per (GPU, fingerprint) -- the runs
    of one stack touch the same cells anyway, and one lock is cheaper than a thousand -- taken
    in sorted order (no deadlock between two writers); a no-op on SQLite, whose writers are
    serialised by BEGIN IMMEDIATE."""
    keys = sorted({_lock_key(c[0], c[1]) for c in cells})
    if not keys or uow.session.get_bind().dialect.name != "postgresql":
        return
    uow.session.execute(
        text("SELECT count(pg_advisory_xact_lock(k)) FROM (SELECT unnest(CAST(:keys AS BIGINT[])) AS k ORDER BY k) AS s"),
        {"keys": keys},
    )


_MAIN_METRIC = {name: (w.main_metric, (m.unit if (m := w.metric(w.main_metric)) else "")) for name, w in WORKLOADS.items()}
_MAIN_METRIC["gemm"] = ("rate", "TFLOP/s (TOP/s for integer precisions)")


@dataclass(slots=True)
class VirtualPoint:
    """A result not stored (dry run) taking part in a cell's outlier test."""

    cell: CellKey
    value: float | None
    in_baseline: bool
    tag: Any


@dataclass(slots=True)
class Flip:
    """A result whose outlier flag changed, with its new effective quarantine state."""

    id: int | None
    tag: Any
    outlier_detail: str | None
    quarantined: bool = False
    quarantine_reason: str | None = None
    quarantine_detail: str | None = None


def _baseline_expr() -> Any:
    """SQL twin of :func:`service.core.quarantine.in_outlier_baseline` (status filtered apart)."""
    R = BenchmarkResult
    return and_(
        R.main_value.is_not(None),
        R.retracted.is_(False),
        or_(R.review_state == REVIEW_RELEASED, and_(R.review_state.is_(None), R.check_reason.is_(None))),
    )


def run_outlier_test(
    uow: UnitOfWork,
    cells: Iterable[CellKey],
    settings: Settings,
    *,
    virtual: Sequence[VirtualPoint] = (),
    in_database: bool | None = None,
) -> list[Flip]:
    """The MAD test over each cell's baseline (ok, not retracted, not quarantined for another
    reason, main metric present) -- its ``settings.outlier_window`` most recent results --,
    stored rows plus ``virtual`` ones. Returns the flips: stored
    rows whose flag must change, and virtual rows that are outliers. Reads only the columns
    the test needs; the detail text records the figures at the time of flagging. On
    PostgreSQL (no virtual rows) the database computes it and returns only the flips."""
    R = BenchmarkResult
    base = _baseline_expr()
    groups: dict[tuple[int, str], set[tuple[str, str]]] = {}
    for g, fp, wl, ph in cells:
        groups.setdefault((g, fp), set()).add((wl, ph))
    if in_database is None:
        in_database = not virtual and uow.session.get_bind().dialect.name == "postgresql"
    if in_database:
        return _outlier_test_in_postgres(uow, groups, settings)
    # cell -> [(id, value, in_baseline, flagged, tag)]
    members: dict[CellKey, list[tuple[int | None, float | None, bool, bool, Any]]] = {}
    for (g, fp), pairs in groups.items():
        q = select(R.id, R.workload, R.params_hash, R.main_value, case((base, True), else_=False), R.outlier_detail.is_not(None)).where(
            R.gpu_id == g,
            R.fingerprint_hash == fp,
            R.workload.in_(sorted({wl for wl, _ in pairs})),
            R.params_hash.in_(sorted({ph for _, ph in pairs})),
            R.status == "ok",
            or_(base, R.outlier_detail.is_not(None)),
        )
        for rid, wl, ph, value, in_base, flagged in uow.session.connection().execute(q).all():  # Core, one fetch
            if (wl, ph) in pairs:
                members.setdefault((g, fp, wl, ph), []).append((rid, value, bool(in_base), bool(flagged), None))
    window = settings.outlier_window
    for rows in members.values():  # the cell's most recent results, newest first
        rows.sort(key=lambda r: -(r[0] or 0))
        del rows[window:]
    for v in virtual:  # a dry run's rows are the newest of all
        rows = members.setdefault(v.cell, [])
        rows.insert(0, (None, v.value, v.in_baseline, False, v.tag))
        del rows[window:]
    flips: list[Flip] = []
    threshold = settings.outlier_mad_threshold
    for cell, rows in members.items():
        values = [r[1] for r in rows if r[2] and r[1] is not None]
        n = len(values)
        if n < MIN_POINTS_FOR_OUTLIER_TEST:
            flips.extend(Flip(id=rid, tag=tag, outlier_detail=None) for rid, _, _, flagged, tag in rows if flagged)
            continue
        center, scale = center_and_scale(values, settings.outlier_floor_fraction)
        # |x - m| > threshold * scale, inlined: this loop runs over every stored point of the cell
        limit = threshold * scale
        name, unit = _MAIN_METRIC[cell[2]]
        for rid, value, in_base, flagged, tag in rows:
            outlier = in_base and value is not None and (abs(value - center) > limit if scale > 0 else value != center)
            if outlier != flagged:
                score = outlier_score(value, center, scale) if value is not None else 0.0
                detail = (
                    f"{name} {value:g} {unit} is {score:.1f} scaled MADs from the median {center:g} {unit} "
                    f"of its cell ({n} results; threshold {threshold:g}, scale {scale:.3g})"
                    if outlier
                    else None
                )
                flips.append(Flip(id=rid, tag=tag, outlier_detail=detail))
    return flips


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
    SELECT c.*,
           greatest(:k * (SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY abs(u.v - c.m))
                          FROM unnest(c.vs, c.bases) AS u(v, b) WHERE u.b),
                    :floor * abs(c.m)) AS scale
    FROM cells c
)
SELECT x.id, s.workload, x.v, s.m, s.n, s.scale, x.outlier
FROM stats s
CROSS JOIN LATERAL (
    SELECT y.id, y.v, y.f,
           coalesce(y.b AND s.n >= :min_n
                    AND CASE WHEN s.scale > 0 THEN abs(y.v - s.m) > :t * s.scale ELSE y.v <> s.m END,
                    false) AS outlier
    FROM unnest(s.ids, s.vs, s.bases, s.flags) AS y(id, v, b, f)
) x
WHERE x.outlier <> x.f
"""
).bindparams(bindparam("hashes", type_=pg_dialect.ARRAY(String())))


def _outlier_test_in_postgres(
    uow: UnitOfWork, groups: Mapping[tuple[int, str], set[tuple[str, str]]], settings: Settings
) -> list[Flip]:
    """The same test as the Python path, computed by PostgreSQL: per cell (the parameters hash
    covers the workload, so it names a cell within GPU and fingerprint) the newest
    ``outlier_window`` rows by index, the median with ``percentile_cont(0.5)`` (the type-7
    median), the MAD over the cell's own array, then a verdict per member; only the flips
    come back."""
    flips: list[Flip] = []
    t = settings.outlier_mad_threshold
    conn = uow.session.connection()
    for (g, fp), pairs in groups.items():
        rows = conn.execute(
            _PG_OUTLIER_TEST,
            {
                "gpu": g,
                "fp": fp,
                "hashes": sorted({ph for _, ph in pairs}),
                "window": settings.outlier_window,
                "k": MAD_TO_SIGMA,
                "floor": settings.outlier_floor_fraction,
                "min_n": MIN_POINTS_FOR_OUTLIER_TEST,
                "t": t,
            },
        ).all()
        for rid, wl, value, center, n, scale, outlier in rows:
            detail = None
            if outlier:
                name, unit = _MAIN_METRIC[wl]
                score = outlier_score(value, center, scale)
                detail = (
                    f"{name} {value:g} {unit} is {score:.1f} scaled MADs from the median {center:g} {unit} "
                    f"of its cell ({n} results; threshold {t:g}, scale {scale:.3g})"
                )
            flips.append(Flip(id=int(rid), tag=None, outlier_detail=detail))
    return flips


def state_of(r: BenchmarkResult) -> QuarantineState:
    return effective_state(
        check_reason=r.check_reason,
        check_detail=r.check_detail,
        outlier_detail=r.outlier_detail,
        review_state=r.review_state,
        review_reason=r.review_reason,
    )


def set_state(r: BenchmarkResult) -> bool:
    """Materialise the effective quarantine state on an ORM row; True if it changed."""
    st = state_of(r)
    old = (r.quarantined, r.quarantine_reason, r.quarantine_detail)
    r.quarantined, r.quarantine_reason, r.quarantine_detail = st.quarantined, st.reason, st.detail
    return old != (st.quarantined, st.reason, st.detail)


def write_flips(uow: UnitOfWork, flips: Sequence[Flip]) -> None:
    """Apply stored rows' new outlier flags and effective states (one bulk UPDATE)."""
    stored = {f.id: f for f in flips if f.id is not None}
    if not stored:
        return
    R = BenchmarkResult
    q = select(R.id, R.check_reason, R.check_detail, R.review_state, R.review_reason).where(R.id.in_(list(stored)))
    for rid, cr, cd, rs, rr in uow.session.execute(q):
        f = stored[rid]
        st = effective_state(
            check_reason=cr, check_detail=cd, outlier_detail=f.outlier_detail, review_state=rs, review_reason=rr
        )
        f.quarantined, f.quarantine_reason, f.quarantine_detail = st.quarantined, st.reason, st.detail
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
    uow.session.execute(
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


def reevaluate(uow: UnitOfWork, cells: Iterable[CellKey], settings: Settings) -> list[Flip]:
    """Lock, test and persist the given cells; returns the flips."""
    cell_set = set(cells)
    if not cell_set:
        return []
    lock_cells(uow, cell_set)
    flips = run_outlier_test(uow, cell_set, settings)
    write_flips(uow, flips)
    return flips


def cells_of(uow: UnitOfWork, *conditions: Any) -> set[CellKey]:
    q = (
        select(
            BenchmarkResult.gpu_id, BenchmarkResult.fingerprint_hash, BenchmarkResult.workload, BenchmarkResult.params_hash
        )
        .where(BenchmarkResult.gpu_id.is_not(None), *conditions)
        .distinct()
    )
    return {(int(g), fp, wl, ph) for g, fp, wl, ph in uow.session.execute(q) if g is not None}


# ---- alerts ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class AlertDraft:
    kind: str
    message: str
    gpu_id: int | None = None
    run_pk: int | None = None
    pending_gpu_id: int | None = None
    result_ids: list[int] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def add_alerts(uow: UnitOfWork, drafts: Iterable[AlertDraft], now: dt.datetime) -> int:
    rows = [
        AdminAlert(
            kind=d.kind,
            message=d.message[:2000],
            gpu_id=d.gpu_id,
            run_pk=d.run_pk,
            pending_gpu_id=d.pending_gpu_id,
            result_count=len(d.result_ids) or int(d.data.get("result_count", 0)),
            data={**d.data, "result_ids": d.result_ids[:50]},
            created_at=now,
        )
        for d in drafts
    ]
    uow.session.add_all(rows)
    return len(rows)


def outlier_alert(flips: Sequence[Flip], *, gpu_id: int, slug: str, run_pk: int | None, context: str) -> AlertDraft | None:
    """One alert for stored results that a re-evaluation newly quarantined as outliers."""
    newly = [f for f in flips if f.id is not None and f.quarantine_reason == STATISTICAL_OUTLIER]
    if not newly:
        return None
    return AlertDraft(
        kind=STATISTICAL_OUTLIER,
        message=f"{len(newly)} stored result(s) on {slug} became statistical outliers {context}",
        gpu_id=gpu_id,
        run_pk=run_pk,
        result_ids=[f.id for f in newly if f.id is not None],
        data={"example": newly[0].quarantine_detail},
    )
