"""Catalog use cases: seed/upsert the shipped catalog, resolve names, list/get/admin-edit GPUs,
prices and FX.

Documents arrive validated and normalised (the API and the bootstrap check them against the
GPU document schema); where a use case computes a document itself -- the effective document
when an upsert meets an admin override, the merge of a PATCH -- the caller passes the
schema's validator in (:data:`DocumentValidator`). Every write use case commits once, when it
returns (:func:`~service.usecases.transaction.commits`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from service.core.access.cursor import decode_position, encode_position
from service.core.catalog.records import (
    SORT_KEYS,
    FxRate,
    GpuCandidate,
    GpuFilters,
    GpuRecord,
    GpuWarning,
    PriceEntry,
    PriceView,
    deep_merge,
    diff,
    resolve_ident,
    sort_records,
    view_price,
)
from service.core.catalog.specs import GpuSpec, Resolution, gpu_spec_from_doc
from service.db.uow import UnitOfWork
from service.usecases.errors import (
    Ambiguous,
    Conflict,
    FieldError,
    Invalid,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
)
from service.usecases.read_model import ReadModel
from service.usecases.transaction import commits

DocumentValidator = Callable[[Mapping[str, Any]], dict[str, Any]]
"""Checks a GPU document against the document schema and returns it normalised (defaults
filled, JSON types); raises :class:`~service.usecases.errors.Invalid` naming each field at
fault (paths inside the document)."""


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _require(uow: UnitOfWork, slug: str) -> GpuRecord:
    record = uow.catalog.gpu(slug)
    if record is None:
        raise NotFound(f"no GPU with slug {slug!r}")
    return record


# ---- seeding -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SeedReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    kept_override: int = 0
    prices_upserted: int = 0
    fx_upserted: int = 0
    errors: tuple[str, ...] = ()


def _recatalogued(
    record: GpuRecord,
    doc: Mapping[str, Any],
    catalog_version: str,
    validate: DocumentValidator,
    now: dt.datetime,
) -> tuple[GpuRecord, bool]:
    """A stored GPU with a new catalog document: its effective document recomputed under any
    admin override (a new revision only if it changed), and whether it changed."""
    try:
        effective = validate(deep_merge(doc, record.override_document or {}))
    except Invalid as exc:
        raise exc.at("catalog", record.slug, "effective") from None
    if effective != record.document:
        changed = replace(
            record,
            document=effective,
            revision=record.revision + 1,
            updated_at=now,
            catalog_document=doc,
            catalog_version=catalog_version,
        )
        return changed, True
    return replace(record, catalog_document=doc, catalog_version=catalog_version), False


@commits
def upsert_catalog(
    uow: UnitOfWork,
    documents: Iterable[Mapping[str, Any]],
    *,
    catalog_version: str,
    validate: DocumentValidator,
    prices: Iterable[tuple[str, PriceEntry]] = (),
    fx_rates: Iterable[FxRate] = (),
) -> SeedReport:
    """Upsert the shipped catalog: ``documents`` (validated, normalised), price rows as
    ``(gpu slug, entry)`` and FX rates.

    Writes only the catalog layer (never the override layer); the effective document is
    recomputed and checked with ``validate``, so a corrected figure reaches existing
    deployments unless an admin overrode that very field. A GPU whose catalog document and
    version are unchanged is not touched, and ``data_version`` moves only if something was
    created or changed."""
    records = uow.catalog.records(include_deleted=True)
    now = _now()
    created = updated = unchanged = kept_override = 0
    new: dict[str, GpuRecord] = {}  # inserted together after the loop
    for doc in documents:
        slug = str(doc["slug"])
        record = records.get(slug)
        if record is None:
            record = GpuRecord(
                slug=slug,
                document=doc,
                catalog_document=doc,
                override_document=None,
                origin="catalog",
                revision=1,
                catalog_version=catalog_version,
                updated_at=now,
            )
            new[slug] = records[slug] = record
            created += 1
            continue
        if record.catalog_document == doc and record.catalog_version == catalog_version:
            unchanged += 1
            continue
        if record.override_document:
            kept_override += 1
        record, changed = _recatalogued(record, doc, catalog_version, validate, now)
        updated += changed
        unchanged += not changed
        if slug in new:  # the same slug twice in one catalog: the later document wins
            new[slug] = record
        else:
            uow.catalog.save(record)
        records[slug] = record
    uow.catalog.add_all(new.values())
    errors: list[str] = []
    fx_upserted = 0
    prices_upserted, unknown = uow.catalog.upsert_prices(prices, origin="catalog")
    errors += [f"price for unknown GPU {slug}" for slug in unknown]
    for rate in fx_rates:
        if uow.catalog.upsert_fx_rate(rate):
            fx_upserted += 1
    if created or updated or prices_upserted or fx_upserted:
        uow.touch_catalog()
    return SeedReport(
        created=created,
        updated=updated,
        unchanged=unchanged,
        kept_override=kept_override,
        prices_upserted=prices_upserted,
        fx_upserted=fx_upserted,
        errors=tuple(errors),
    )


# ---- name resolution ---------------------------------------------------------------------


def resolve(uow: UnitOfWork, cache: ReadModel, ident: str) -> Resolution:
    """Resolve a slug, alias, GFD label or PCI device id to catalog slugs (none, one, or
    several when the name is ambiguous)."""
    return resolve_ident(ident, cache.snapshot(uow, calibrated=False).catalog.alias_index)


@dataclass(frozen=True, slots=True)
class GpuView:
    """A GPU found by name, with what finding it assumed (``assumed_variant``, ``mig_slice``,
    ``shared_gpu``)."""

    record: GpuRecord
    warnings: tuple[GpuWarning, ...] = ()

    @property
    def spec(self) -> GpuSpec:
        """The effective document as the core's :class:`GpuSpec`."""
        return gpu_spec_from_doc(self.record.document)

    @property
    def etag(self) -> str:
        return self.record.etag


def resolve_gpu(uow: UnitOfWork, aliases: ReadModel, ident: str, *, use_default: bool = False) -> GpuView:
    """Find one GPU by slug, alias, GFD label (``-SHARED`` and MIG suffixes peeled off, with a
    warning each) or PCI device id.

    An unknown name raises :class:`NotFound` with ``close_matches``. A name of several GPUs
    raises :class:`Ambiguous` with the candidates, unless ``use_default`` and the name has a
    stated default: then that one, with an ``assumed_variant`` warning."""
    res = resolve(uow, aliases, ident)
    warnings: list[GpuWarning] = []
    if not res.slugs:
        hint = f"; did you mean {', '.join(res.close_matches)}?" if res.close_matches else ""
        raise NotFound(f"no GPU is known as {ident!r}{hint}", close_matches=list(res.close_matches))
    slug = res.resolved
    if slug is None:
        if use_default and res.default_slug:
            slug = res.default_slug
            warnings.append(
                GpuWarning(
                    "assumed_variant",
                    f"{ident!r} names {len(res.slugs)} GPUs; assumed {slug}",
                    {"candidates": list(res.slugs), "assumed": slug},
                )
            )
        else:
            records = aliases.snapshot(uow, calibrated=False).catalog.records
            found = [records[x] for x in sorted(res.slugs) if x in records]
            raise Ambiguous(
                f"{ident!r} names {len(found)} GPUs; pick one",
                candidates=[GpuCandidate(r.slug, r.name, r.slug == res.default_slug) for r in found],
                default=res.default_slug,
                query=ident,
            )
    if res.mig_profile:
        warnings.append(
            GpuWarning(
                "mig_slice",
                f"{ident!r} is a MIG slice ({res.mig_profile}); figures are for the whole GPU",
                {"mig_profile": res.mig_profile},
            )
        )
    if res.shared:
        warnings.append(
            GpuWarning(
                "shared_gpu", f"{ident!r} is a time-shared GPU; throughput is split between tenants", {}
            )
        )
    record = aliases.snapshot(uow, calibrated=False).catalog.records.get(slug)
    if record is None:  # pragma: no cover - the alias index and the records are one snapshot
        raise NotFound(f"no GPU with slug {slug!r}")
    return GpuView(record=record, warnings=tuple(warnings))


# ---- listing -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuPage:
    items: tuple[GpuRecord, ...]
    next_cursor: str | None


def list_gpus(
    uow: UnitOfWork, read: ReadModel, filters: GpuFilters, *, sort: str, limit: int, cursor: str | None
) -> GpuPage:
    """One page of the catalog, sorted by ``sort`` (a :data:`SORT_KEYS` key, ``-`` prefix for
    descending; unknown values last, slug breaks ties). The cursor holds the sort order, the
    last slug served and the position, so a page stays put when a GPU before it disappears."""
    desc = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in SORT_KEYS:
        raise Invalid(
            f"unknown sort key {key!r}",
            fields=[
                FieldError(("sort",), f"one of {', '.join(sorted(SORT_KEYS))}, optionally prefixed by '-'")
            ],
        )
    live = read.snapshot(uow, calibrated=False).catalog.records.values()
    records = sort_records([r for r in live if filters.admits(r.document)], key, descending=desc)
    start = 0
    if cursor:
        pos, after = decode_position(cursor, catalog=True)
        slugs = [r.slug for r in records]
        start = slugs.index(after) + 1 if after in slugs else pos
    page = records[start : start + limit]
    nxt = encode_position(start + limit, page[-1].slug) if start + limit < len(records) and page else None
    return GpuPage(items=tuple(page), next_cursor=nxt)


# ---- admin writes ------------------------------------------------------------------------


def _check_if_match(record: GpuRecord, if_match: str | None) -> None:
    if if_match is None:
        raise PreconditionRequired(
            "send If-Match with the ETag from GET /v1/gpus/{slug} so concurrent edits are not lost",
            fields=[FieldError(("If-Match",), "required", location="header")],
        )
    tags = [t.strip() for t in if_match.split(",")]
    if "*" in tags:
        raise PreconditionRequired(
            "If-Match: * is not accepted: send the ETag of the version you read (GET /v1/gpus/{slug})",
            fields=[FieldError(("If-Match",), "an entity tag, not *", location="header")],
        )
    if record.etag not in tags:
        raise PreconditionFailed(
            "the GPU changed since you read it; GET it again and retry",
            current_etag=record.etag,
        )


@commits
def create_gpu(uow: UnitOfWork, document: Mapping[str, Any]) -> GpuRecord:
    """Add a GPU from a validated, normalised document, kept in the override layer. Over a
    deleted GPU of the same slug the admin layer takes over (the smallest override on top of
    its catalog layer); over a live one: :class:`Conflict`."""
    slug = str(document["slug"])
    existing = uow.catalog.gpu(slug, include_deleted=True)
    if existing is not None and not existing.deleted:
        raise Conflict(f"a GPU with slug {slug!r} exists; PATCH it instead", slug=slug)
    now = _now()
    if existing is not None:
        record = replace(
            existing,
            deleted=False,
            document=document,
            override_document=document
            if existing.catalog_document is None
            else diff(existing.catalog_document, document),
            revision=existing.revision + 1,
            updated_at=now,
        )
        uow.catalog.save(record)
    else:
        record = GpuRecord(
            slug=slug,
            document=document,
            catalog_document=None,
            override_document=document,
            origin="admin",
            revision=1,
            catalog_version=None,
            updated_at=now,
        )
        uow.catalog.add(record)
    uow.touch_catalog()
    return record


@commits
def patch_gpu(
    uow: UnitOfWork, slug: str, patch: Mapping[str, Any], if_match: str | None, *, validate: DocumentValidator
) -> GpuRecord:
    """Apply a JSON merge patch to the effective document (``If-Match`` required); the result,
    checked with ``validate``, is stored as the smallest override over the catalog layer."""
    record = _require(uow, slug)
    _check_if_match(record, if_match)
    if "slug" in patch and patch["slug"] != slug:
        raise Invalid(
            "the slug cannot change", fields=[FieldError(("slug",), "immutable", type="immutable_slug")]
        )
    document = validate(deep_merge(record.document, patch))
    record = replace(
        record,
        document=document,
        override_document=diff(record.catalog_document, document)
        if record.catalog_document is not None
        else document,
        revision=record.revision + 1,
        updated_at=_now(),
    )
    uow.catalog.save(record)
    uow.touch_catalog()
    return record


@commits
def delete_gpu(uow: UnitOfWork, slug: str, if_match: str | None) -> None:
    """Soft delete in the override layer: catalog upserts never bring it back."""
    record = _require(uow, slug)
    _check_if_match(record, if_match)
    uow.catalog.save(replace(record, deleted=True, revision=record.revision + 1, updated_at=_now()))
    uow.touch_catalog()


# ---- prices ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PriceListing:
    gpu_slug: str
    items: tuple[PriceView, ...]


def list_prices(
    uow: UnitOfWork, aliases: ReadModel, ident: str, *, today: dt.date, stale_days: int
) -> PriceListing:
    """The reference prices of the GPU ``ident`` names, each with per-GPU-hour, age, the
    amount in the other currency (:func:`~service.core.catalog.records.view_price`) and, when
    a price-quality check flags it, why it is suspect (:mod:`service.core.pricing.quality`)."""
    slug = resolve_gpu(uow, aliases, ident).record.slug
    catalog = aliases.snapshot(uow, calibrated=False).catalog
    rates = catalog.fx_rates
    rows = catalog.prices.get(slug, ())
    suspect = catalog.price_book(today).suspect_rows
    return PriceListing(
        gpu_slug=slug,
        items=tuple(
            view_price(p, rates, today=today, stale_days=stale_days, suspect=suspect.get(p.id, ()))
            for p in rows
        ),
    )


@commits
def add_price(uow: UnitOfWork, slug: str, entry: PriceEntry) -> None:
    """Add or update a reference price row of a GPU (idempotent by the row's key)."""
    _require(uow, slug)
    if uow.catalog.upsert_price(slug, entry, origin="admin"):
        uow.touch_catalog()


@commits
def add_fx_rate(uow: UnitOfWork, rate: FxRate) -> None:
    """Add or update a dated FX rate."""
    if rate.base == rate.quote:
        raise Invalid(
            "base and quote must differ",
            fields=[FieldError(("quote",), "same as base", type="same_currency")],
        )
    if uow.catalog.upsert_fx_rate(rate):
        uow.touch_catalog()
