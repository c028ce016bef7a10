"""GPUs, aliases, prices and FX rates.

Reads return core types (:mod:`service.core.catalog.records`, :class:`~service.core.catalog.specs.GpuSpec`);
documents handed out are copies, so nothing a caller does to them reaches the session. Writes
take core types, keep the materialised columns and the alias rows in step with the effective
document, and flush.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, selectinload

from service.core.catalog.records import (
    AliasName,
    FxRate,
    GpuFilters,
    GpuRecord,
    PriceEntry,
    PriceRow,
    aliases_of,
)
from service.core.catalog.specs import AliasEntry
from service.db.models import FxRate as FxRateRow
from service.db.models import Gpu, GpuAlias, Price


def _copy(doc: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return None if doc is None else copy.deepcopy(dict(doc))


def _record(row: Gpu) -> GpuRecord:
    return GpuRecord(
        slug=row.slug,
        document=copy.deepcopy(row.spec),
        catalog_document=_copy(row.catalog_spec),
        override_document=_copy(row.override_spec),
        origin=row.origin,
        revision=row.revision,
        catalog_version=row.catalog_version,
        updated_at=row.updated_at,
        deleted=row.deleted,
    )


def _materialise(row: Gpu, doc: Mapping[str, Any]) -> None:
    """The effective document and the columns filtered on in SQL, copied from it."""
    mem = doc.get("memory") or {}
    row.spec = copy.deepcopy(dict(doc))
    row.vendor = doc["vendor"]
    row.name = doc["name"]
    row.architecture = doc.get("architecture")
    row.form_factor = doc.get("form_factor")
    row.memory_bytes = mem.get("memory_bytes")
    row.usable_memory_bytes = mem.get("usable_memory_bytes")
    row.bandwidth_gb_per_s = mem.get("bandwidth_gb_per_s")
    row.tdp_w = (doc.get("power") or {}).get("tdp_w")
    row.nvlink_topology = ((doc.get("interconnect") or {}).get("nvlink") or {}).get("topology")
    row.compute_capability = (doc.get("identity") or {}).get("compute_capability")


def _sync_aliases(row: Gpu, names: Sequence[AliasName]) -> None:
    """Alias rows follow the effective document: add the new, update the kept, drop the rest."""
    wanted = {(a.norm, a.kind): a for a in names}
    existing = {(a.alias_norm, a.kind): a for a in row.aliases}
    for key, old in existing.items():
        if key not in wanted:
            row.aliases.remove(old)
    for key, a in wanted.items():
        alias = existing.get(key)
        if alias is None:
            row.aliases.append(
                GpuAlias(alias=a.name, alias_norm=a.norm, kind=a.kind, is_default=a.is_default)
            )
        else:
            alias.alias, alias.is_default = a.name, a.is_default


def _price_row(p: Price, slug: str) -> PriceRow:
    return PriceRow(
        id=p.id,
        gpu_slug=slug,
        provider=p.provider,
        region=p.region,
        instance_type=p.instance_type,
        gpus_per_instance=p.gpus_per_instance,
        pricing_model=p.pricing_model,
        currency=p.currency,
        amount=p.amount,
        effective_date=p.effective_date,
        source=p.source,
        is_estimate=p.is_estimate,
        origin=p.origin,
        date_basis=p.date_basis,
    )


class CatalogRepository:
    def __init__(self, session: Session) -> None:
        self._s = session

    # ---- GPUs: reads -------------------------------------------------------------------

    def _row(self, slug: str) -> Gpu | None:
        return self._s.scalars(select(Gpu).where(Gpu.slug == slug).options(selectinload(Gpu.aliases))).first()

    def gpu(self, slug: str, *, include_deleted: bool = False) -> GpuRecord | None:
        """The GPU with this slug (``None`` if unknown, or deleted unless asked for)."""
        row = self._s.scalars(select(Gpu).where(Gpu.slug == slug)).first()
        if row is None or (row.deleted and not include_deleted):
            return None
        return _record(row)

    def gpus(self, slugs: Iterable[str]) -> list[GpuRecord]:
        """The GPUs with these slugs, ordered by slug (unknown slugs are skipped)."""
        rows = self._s.scalars(select(Gpu).where(Gpu.slug.in_(list(slugs))).order_by(Gpu.slug))
        return [_record(g) for g in rows]

    def records(self, *, include_deleted: bool = False) -> dict[str, GpuRecord]:
        """Every GPU by slug."""
        q = select(Gpu)
        if not include_deleted:
            q = q.where(Gpu.deleted.is_(False))
        return {g.slug: _record(g) for g in self._s.scalars(q)}

    def list_gpus(self, filters: GpuFilters) -> list[GpuRecord]:
        """GPUs (not deleted) passing ``filters``: in SQL where a column exists, support flags
        on the effective document. Unordered."""
        q = select(Gpu).where(Gpu.deleted.is_(False))
        if filters.vendor:
            q = q.where(Gpu.vendor == filters.vendor.lower())
        if filters.architecture:
            # case-insensitive equality: the value is data, never a LIKE pattern ("%" matched all)
            q = q.where(func.lower(Gpu.architecture) == filters.architecture.lower())
        if filters.min_usable_memory_bytes is not None:
            q = q.where(Gpu.usable_memory_bytes >= filters.min_usable_memory_bytes)
        if filters.form_factor:
            q = q.where(Gpu.form_factor == filters.form_factor)
        if filters.nvlink_topology:
            q = q.where(Gpu.nvlink_topology == filters.nvlink_topology)
        return [
            _record(g)
            for g in self._s.scalars(q)
            if all((g.spec.get("supports") or {}).get(p) == "yes" for p in filters.supports)
        ]

    def alias_index(self) -> dict[str, list[AliasEntry]]:
        """Normalised alias -> the GPUs (not deleted) it names, one entry per GPU; an entry is
        the default if any of that GPU's rows for the alias is."""
        index: dict[str, list[AliasEntry]] = {}
        q = (
            select(GpuAlias.alias_norm, GpuAlias.is_default, Gpu.slug)
            .join(Gpu, Gpu.id == GpuAlias.gpu_id)
            .where(Gpu.deleted.is_(False))
        )
        for norm, default, slug in self._s.execute(q):
            entries = index.setdefault(norm, [])
            if not any(e.slug == slug for e in entries):
                entries.append(AliasEntry(slug=slug, is_default=default))
            elif default:
                entries[:] = [
                    AliasEntry(slug=slug, is_default=True) if e.slug == slug else e for e in entries
                ]
        return index

    # ---- GPUs: writes ------------------------------------------------------------------

    def add(self, record: GpuRecord) -> None:
        """Insert a new GPU (see :meth:`add_all`)."""
        self.add_all([record])

    def add_all(self, records: Iterable[GpuRecord]) -> None:
        """Insert new GPUs, in order, each created at its ``updated_at``, with its filter
        columns and alias rows from the effective document
        (:func:`~service.core.catalog.records.aliases_of`). Flushes once."""
        for record in records:
            row = Gpu(slug=record.slug, created_at=record.updated_at)
            _materialise(row, record.document)
            _sync_aliases(row, aliases_of(record.document))
            self._write_state(row, record)
            self._s.add(row)
        self._s.flush()

    def save(self, record: GpuRecord) -> None:
        """Store ``record`` over the GPU with its slug (``LookupError`` if there is none). When
        the effective document changes, the filter columns and alias rows follow it. Flushes."""
        row = self._row(record.slug)
        if row is None:
            raise LookupError(f"no GPU with slug {record.slug!r}")
        if row.spec != dict(record.document):
            _materialise(row, record.document)
            _sync_aliases(row, aliases_of(record.document))
        self._write_state(row, record)
        self._s.flush()

    @staticmethod
    def _write_state(row: Gpu, record: GpuRecord) -> None:
        row.catalog_spec = _copy(record.catalog_document)
        row.override_spec = _copy(record.override_document)
        row.origin = record.origin
        row.revision = record.revision
        row.catalog_version = record.catalog_version
        row.updated_at = record.updated_at
        row.deleted = record.deleted

    # ---- prices and FX -----------------------------------------------------------------

    def _gpu_id(self, slug: str) -> int | None:
        return self._s.scalar(select(Gpu.id).where(Gpu.slug == slug))

    def prices(self, slug: str | None = None) -> list[PriceRow]:
        """Price rows of one GPU (deleted or not), or of every GPU when ``slug`` is ``None``;
        by pricing model, provider, newest first (for all GPUs: grouped by GPU first)."""
        order = (Price.pricing_model, Price.provider, Price.effective_date.desc())
        if slug is not None:
            gid = self._gpu_id(slug)
            if gid is None:
                return []
            return [
                _price_row(p, slug)
                for p in self._s.scalars(select(Price).where(Price.gpu_id == gid).order_by(*order))
            ]
        q = select(Price, Gpu.slug).join(Gpu, Gpu.id == Price.gpu_id).order_by(Gpu.slug, *order)
        return [_price_row(p, s) for p, s in self._s.execute(q)]

    def upsert_price(self, slug: str, entry: PriceEntry, *, origin: str) -> bool:
        """Insert the row, or update amount and ``is_estimate`` of the row with the same key
        (GPU, provider, region, instance type, GPUs per instance, pricing model, currency,
        date, source). Returns whether anything changed. ``LookupError`` for an unknown slug.
        A row an admin wrote (or took over) is left alone unless ``origin`` is ``admin``."""
        gid = self._gpu_id(slug)
        if gid is None:
            raise LookupError(f"no GPU with slug {slug!r}")
        existing = self._s.scalars(
            select(Price).where(
                Price.gpu_id == gid,
                Price.provider == entry.provider,
                Price.region == entry.region,
                Price.instance_type == entry.instance_type,
                Price.gpus_per_instance == entry.gpus_per_instance,
                Price.pricing_model == entry.pricing_model,
                Price.currency == entry.currency,
                Price.effective_date == entry.effective_date,
                Price.source == entry.source,
            )
        ).first()
        if existing is not None:
            if existing.origin == "admin" and origin != "admin":
                return False  # an admin's row is never clobbered by a shipped or imported one
            if (
                existing.amount == entry.amount
                and existing.is_estimate == entry.is_estimate
                and existing.origin == origin
                and existing.date_basis == entry.date_basis
            ):
                return False
            existing.amount = entry.amount
            existing.is_estimate = entry.is_estimate
            existing.date_basis = entry.date_basis
            existing.origin = origin  # an admin who re-states a shipped row's key takes it over
        else:
            self._s.add(
                Price(
                    gpu_id=gid,
                    origin=origin,
                    provider=entry.provider,
                    region=entry.region,
                    instance_type=entry.instance_type,
                    gpus_per_instance=entry.gpus_per_instance,
                    pricing_model=entry.pricing_model,
                    currency=entry.currency,
                    amount=entry.amount,
                    effective_date=entry.effective_date,
                    source=entry.source,
                    is_estimate=entry.is_estimate,
                    date_basis=entry.date_basis,
                )
            )
        self._s.flush()
        return True

    def upsert_prices(self, rows: Iterable[tuple[str, PriceEntry]], *, origin: str) -> tuple[int, list[str]]:
        """Upsert many rows in one pass (the seed's ~700 rows, an operator's import): one read of
        the existing rows, then inserts and updates. A row whose key matches an ``admin`` row is
        left alone when ``origin`` is not ``admin`` (an admin's price is never clobbered by a
        shipped or imported one). Returns (rows inserted or changed, slugs the catalog lacks)."""
        ids: dict[str, int] = {slug: gid for slug, gid in self._s.execute(select(Gpu.slug, Gpu.id))}
        existing: dict[tuple[Any, ...], Price] = {}
        for p in self._s.scalars(select(Price)):
            existing[
                (
                    p.gpu_id,
                    p.provider,
                    p.region,
                    p.instance_type,
                    p.gpus_per_instance,
                    p.pricing_model,
                    p.currency,
                    p.effective_date,
                    p.source,
                )
            ] = p
        changed = 0
        unknown: list[str] = []
        new: list[Price] = []
        for slug, e in rows:
            gid = ids.get(slug)
            if gid is None:
                unknown.append(slug)
                continue
            key = (
                gid,
                e.provider,
                e.region,
                e.instance_type,
                e.gpus_per_instance,
                e.pricing_model,
                e.currency,
                e.effective_date,
                e.source,
            )
            row = existing.get(key)
            if row is None:
                row = Price(
                    gpu_id=gid,
                    origin=origin,
                    provider=e.provider,
                    region=e.region,
                    instance_type=e.instance_type,
                    gpus_per_instance=e.gpus_per_instance,
                    pricing_model=e.pricing_model,
                    currency=e.currency,
                    amount=e.amount,
                    effective_date=e.effective_date,
                    source=e.source,
                    is_estimate=e.is_estimate,
                    date_basis=e.date_basis,
                )
                existing[key] = row
                new.append(row)
                changed += 1
            elif row.origin == "admin" and origin != "admin":
                continue
            elif (row.amount, row.is_estimate, row.origin, row.date_basis) != (
                e.amount,
                e.is_estimate,
                origin,
                e.date_basis,
            ):
                row.amount, row.is_estimate, row.origin = e.amount, e.is_estimate, origin
                row.date_basis = e.date_basis
                changed += 1
        self._s.add_all(new)
        self._s.flush()
        return changed, unknown

    def fx_rates(self) -> list[FxRate]:
        """Every FX rate, newest first."""
        rows = self._s.scalars(select(FxRateRow).order_by(FxRateRow.effective_date.desc()))
        return [
            FxRate(base=r.base, quote=r.quote, rate=r.rate, effective_date=r.effective_date, source=r.source)
            for r in rows
        ]

    def upsert_fx_rate(self, rate: FxRate) -> bool:
        """Insert the rate, or update rate and source of the one for the same pair and date.
        Returns whether anything changed."""
        row = self._s.scalars(
            select(FxRateRow).where(
                FxRateRow.base == rate.base,
                FxRateRow.quote == rate.quote,
                FxRateRow.effective_date == rate.effective_date,
            )
        ).first()
        if row is not None:
            if row.rate == rate.rate and row.source == rate.source:
                return False
            row.rate, row.source = rate.rate, rate.source
        else:
            self._s.add(
                FxRateRow(
                    base=rate.base,
                    quote=rate.quote,
                    rate=rate.rate,
                    effective_date=rate.effective_date,
                    source=rate.source,
                )
            )
        self._s.flush()
        return True
