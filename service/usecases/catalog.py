"""Catalog use cases: seed/upsert the shipped catalog, resolve names, list/get/admin-edit GPUs,
prices and FX. Each write function commits its unit of work before returning."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from service.core.estimate import Notice
from service.core.specs import (
    AliasEntry,
    GpuSpec,
    Resolution,
    gpu_spec_from_doc,
    normalise_name,
    resolve_name,
)
from service.core.vocabulary import VocabularyError, normalise_pci_id
from service.db.models import FxRate, Gpu, GpuAlias, Price
from service.db.uow import UnitOfWork
from service.schemas.gpus import FxRateIn, GpuDocument, GpuOut, PriceIn, PriceOut
from service.usecases.errors import (
    Ambiguous,
    Conflict,
    FieldError,
    Invalid,
    NotFound,
    PreconditionFailed,
    PreconditionRequired,
)

# ---- documents ---------------------------------------------------------------------------


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``over`` into a copy of ``base``; nested dicts merge, anything else replaces
    (``None`` included: an override can set a figure back to unknown)."""
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _changed_paths(base: Mapping[str, Any], over: Mapping[str, Any], prefix: str = "") -> list[str]:
    paths: list[str] = []
    for k, v in over.items():
        p = f"{prefix}{k}"
        if isinstance(v, Mapping) and isinstance(base.get(k), Mapping):
            paths.extend(_changed_paths(base[k], v, p + "."))
        elif base.get(k) != v:
            paths.append(p)
    return sorted(paths)


def validation_errors(exc: ValidationError, prefix: Sequence[str | int] = ()) -> list[FieldError]:
    return [FieldError((*prefix, *e["loc"]), e["msg"], type=e["type"]) for e in exc.errors()]


def validate_document(doc: Mapping[str, Any], prefix: Sequence[str | int] = ()) -> GpuDocument:
    try:
        return GpuDocument.model_validate(doc)
    except ValidationError as exc:
        raise Invalid("the GPU document is invalid", fields=validation_errors(exc, prefix)) from None


def etag_for(gpu: Gpu) -> str:
    h = hashlib.sha256(json.dumps(gpu.spec, sort_keys=True).encode()).hexdigest()[:12]
    return f'"{gpu.revision}-{h}"'


def _materialise(gpu: Gpu, doc: GpuDocument) -> None:
    d = doc.model_dump(mode="json")
    gpu.spec = d
    gpu.vendor = doc.vendor
    gpu.name = doc.name
    gpu.architecture = doc.architecture
    gpu.form_factor = doc.form_factor
    gpu.memory_bytes = doc.memory.memory_bytes
    gpu.usable_memory_bytes = doc.memory.usable_memory_bytes
    gpu.bandwidth_gb_per_s = doc.memory.bandwidth_gb_per_s
    gpu.tdp_w = doc.power.tdp_w
    gpu.nvlink_topology = doc.interconnect.nvlink.topology
    gpu.compute_capability = doc.identity.compute_capability


def _sync_aliases(gpu: Gpu, doc: GpuDocument) -> None:
    """Aliases follow the effective document: names from it, the slug itself, the full name
    and each PCI device id (kind ``pci``)."""
    wanted: dict[tuple[str, str], tuple[str, bool]] = {}
    for a in doc.aliases:
        wanted[(normalise_name(a.name), a.kind)] = (a.name, a.default)
    wanted.setdefault((normalise_name(doc.slug), "slug"), (doc.slug, False))
    wanted.setdefault((normalise_name(doc.name), "name"), (doc.name, False))
    for pci in doc.identity.pci_device_ids:
        wanted[(pci, "pci")] = (pci, False)
    existing = {(a.alias_norm, a.kind): a for a in gpu.aliases}
    for key, old in existing.items():
        if key not in wanted:
            gpu.aliases.remove(old)
    for (norm, kind), (name, default) in wanted.items():
        row = existing.get((norm, kind))
        if row is None:
            gpu.aliases.append(GpuAlias(alias=name, alias_norm=norm, kind=kind, is_default=default))
        else:
            row.alias, row.is_default = name, default


def _effective(gpu: Gpu) -> dict[str, Any]:
    return deep_merge(gpu.catalog_spec or {}, gpu.override_spec or {})


# ---- seeding -----------------------------------------------------------------------------


@dataclass
class SeedReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    kept_override: int = 0
    prices_upserted: int = 0
    fx_upserted: int = 0
    errors: list[str] = field(default_factory=list)


def upsert_catalog(
    uow: UnitOfWork,
    docs: Iterable[Mapping[str, Any]],
    *,
    catalog_version: str,
    prices: Iterable[Mapping[str, Any]] = (),
    fx_rates: Iterable[Mapping[str, Any]] = (),
) -> SeedReport:
    """Upsert the shipped catalog. Writes only ``catalog_spec`` (never the override layer);
    the effective document is recomputed, so a corrected figure reaches existing deployments
    unless an admin overrode that very field."""
    s = uow.session
    report = SeedReport()
    rows = {g.slug: g for g in s.scalars(select(Gpu).options(selectinload(Gpu.aliases)))}
    now = dt.datetime.now(dt.UTC)
    for raw in docs:
        doc = validate_document(raw, prefix=("catalog", str(raw.get("slug"))))
        d = doc.model_dump(mode="json")
        gpu = rows.get(doc.slug)
        if gpu is None:
            gpu = Gpu(slug=doc.slug, catalog_spec=d, origin="catalog", revision=1, created_at=now, updated_at=now)
            _materialise(gpu, doc)
            _sync_aliases(gpu, doc)
            gpu.catalog_version = catalog_version
            s.add(gpu)
            rows[doc.slug] = gpu
            report.created += 1
            continue
        if gpu.catalog_spec == d and gpu.catalog_version == catalog_version:
            report.unchanged += 1
            continue
        gpu.catalog_spec = d
        gpu.catalog_version = catalog_version
        if gpu.override_spec:
            report.kept_override += 1
        eff = validate_document(_effective(gpu), prefix=("catalog", doc.slug, "effective"))
        if eff.model_dump(mode="json") != gpu.spec:
            _materialise(gpu, eff)
            _sync_aliases(gpu, eff)
            gpu.revision += 1
            gpu.updated_at = now
            report.updated += 1
        else:
            report.unchanged += 1
    s.flush()
    for p in prices:
        slug = str(p["gpu_slug"])
        gpu = rows.get(slug)
        if gpu is None:
            report.errors.append(f"price for unknown GPU {slug}")
            continue
        body = PriceIn.model_validate({k: v for k, v in p.items() if k != "gpu_slug"})
        if _upsert_price(uow, gpu, body, origin="catalog"):
            report.prices_upserted += 1
    for f in fx_rates:
        if _upsert_fx(uow, FxRateIn.model_validate(f)):
            report.fx_upserted += 1
    if report.created or report.updated or report.prices_upserted or report.fx_upserted:
        uow.mark_write()
    uow.commit()
    return report


def _upsert_price(uow: UnitOfWork, gpu: Gpu, body: PriceIn, *, origin: str) -> bool:
    s = uow.session
    existing = s.scalars(
        select(Price).where(
            Price.gpu_id == gpu.id,
            Price.provider == body.provider,
            Price.region == body.region,
            Price.instance_type == body.instance_type,
            Price.gpus_per_instance == body.gpus_per_instance,
            Price.pricing_model == body.pricing_model,
            Price.currency == body.currency,
            Price.effective_date == body.effective_date,
            Price.source == body.source,
        )
    ).first()
    if existing is not None:
        if existing.amount == body.amount and existing.is_estimate == body.is_estimate:
            return False
        existing.amount = body.amount
        existing.is_estimate = body.is_estimate
        return True
    s.add(Price(gpu_id=gpu.id, origin=origin, **body.model_dump()))
    return True


def _upsert_fx(uow: UnitOfWork, body: FxRateIn) -> bool:
    s = uow.session
    row = s.scalars(
        select(FxRate).where(
            FxRate.base == body.base, FxRate.quote == body.quote, FxRate.effective_date == body.effective_date
        )
    ).first()
    if row is not None:
        if row.rate == body.rate and row.source == body.source:
            return False
        row.rate, row.source = body.rate, body.source
        return True
    s.add(FxRate(**body.model_dump()))
    return True


# ---- name resolution ---------------------------------------------------------------------


class AliasIndexCache:
    """Alias index (normalised alias -> entries), rebuilt when ``data_version`` moves: one
    cheap query per request keeps replicas from serving stale names."""

    def __init__(self) -> None:
        self._version: int | None = None
        self._index: dict[str, list[AliasEntry]] = {}

    def get(self, uow: UnitOfWork) -> dict[str, list[AliasEntry]]:
        v = uow.data_version()
        if v != self._version:
            index: dict[str, list[AliasEntry]] = {}
            q = (
                select(GpuAlias.alias_norm, GpuAlias.is_default, Gpu.slug)
                .join(Gpu, Gpu.id == GpuAlias.gpu_id)
                .where(Gpu.deleted.is_(False))
            )
            for norm, default, slug in uow.session.execute(q):
                entries = index.setdefault(norm, [])
                if not any(e.slug == slug for e in entries):
                    entries.append(AliasEntry(slug=slug, is_default=default))
                elif default:
                    entries[:] = [AliasEntry(slug=slug, is_default=True) if e.slug == slug else e for e in entries]
            self._index, self._version = index, v
        return self._index


def resolve(uow: UnitOfWork, cache: AliasIndexCache, ident: str) -> Resolution:
    """Resolve a slug, alias, GFD label or PCI device id."""
    index = cache.get(uow)
    pci = _as_pci(ident)
    if pci is not None and pci in index:
        slugs = tuple(sorted({e.slug for e in index[pci]}))
        return Resolution(query=ident, slugs=slugs)
    return resolve_name(ident, index)


def _as_pci(ident: str) -> str | None:
    s = ident.strip().lower()
    if not (s.startswith("0x") or ":" in s or s.startswith("pci-")):
        return None
    try:
        return normalise_pci_id(s.removeprefix("pci-"))
    except VocabularyError:
        return None


@dataclass(frozen=True)
class GpuView:
    out: GpuOut
    etag: str
    warnings: list[dict[str, Any]]


def _to_out(gpu: Gpu) -> GpuOut:
    overridden = _changed_paths(gpu.catalog_spec or {}, gpu.override_spec or {}) if gpu.catalog_spec else []
    return GpuOut.model_validate(
        {
            **gpu.spec,
            "origin": gpu.origin,
            "overridden_fields": overridden,
            "revision": gpu.revision,
            "catalog_version": gpu.catalog_version,
            "updated_at": gpu.updated_at,
            "links": {
                "self": f"/v1/gpus/{gpu.slug}",
                "prices": f"/v1/gpus/{gpu.slug}/prices",
                "measurements": f"/v1/gpus/{gpu.slug}/measurements",
            },
        }
    )


def get_gpu(uow: UnitOfWork, cache: AliasIndexCache, ident: str, *, use_default: bool = False) -> GpuView:
    res = resolve(uow, cache, ident)
    warnings: list[dict[str, Any]] = []
    if not res.slugs:
        hint = f"; did you mean {', '.join(res.close_matches)}?" if res.close_matches else ""
        raise NotFound(f"no GPU is known as {ident!r}{hint}", close_matches=list(res.close_matches))
    slug = res.resolved
    if slug is None:
        if use_default and res.default_slug:
            slug = res.default_slug
            warnings.append(
                {
                    "code": "assumed_variant",
                    "message": f"{ident!r} names {len(res.slugs)} GPUs; assumed {slug}",
                    "data": {"candidates": list(res.slugs), "assumed": slug},
                }
            )
        else:
            rows = uow.session.scalars(select(Gpu).where(Gpu.slug.in_(res.slugs)).order_by(Gpu.slug)).all()
            raise Ambiguous(
                f"{ident!r} names {len(rows)} GPUs; pick one",
                candidates=[
                    {"slug": g.slug, "name": g.name, "url": f"/v1/gpus/{g.slug}", "default": g.slug == res.default_slug}
                    for g in rows
                ],
                default=res.default_slug,
                query=ident,
            )
    if res.mig_profile:
        warnings.append(
            {
                "code": "mig_slice",
                "message": f"{ident!r} is a MIG slice ({res.mig_profile}); figures are for the whole GPU",
                "data": {"mig_profile": res.mig_profile},
            }
        )
    if res.shared:
        warnings.append(
            {
                "code": "shared_gpu",
                "message": f"{ident!r} is a time-shared GPU; throughput is split between tenants",
                "data": {},
            }
        )
    gpu = _load(uow, slug)
    return GpuView(out=_to_out(gpu), etag=etag_for(gpu), warnings=warnings)


@dataclass(frozen=True)
class ResolvedGpu:
    """A name resolved to one GPU's spec, with what the resolution assumed."""

    spec: GpuSpec
    warnings: tuple[Notice, ...]


def resolve_gpu(uow: UnitOfWork, cache: AliasIndexCache, ident: str, *, use_default: bool = False) -> ResolvedGpu:
    """Resolve a slug, alias, GFD label or PCI id to the GPU's effective spec (``NotFound`` /
    ``Ambiguous`` as :func:`get_gpu`)."""
    view = get_gpu(uow, cache, ident, use_default=use_default)
    gpu = _load(uow, view.out.slug)
    return ResolvedGpu(spec=gpu_spec_from_doc(gpu.spec),
                       warnings=tuple(Notice(w["code"], w["message"]) for w in view.warnings))


def _load(uow: UnitOfWork, slug: str, *, include_deleted: bool = False) -> Gpu:
    gpu = uow.session.scalars(select(Gpu).where(Gpu.slug == slug).options(selectinload(Gpu.aliases))).first()
    if gpu is None or (gpu.deleted and not include_deleted):
        raise NotFound(f"no GPU with slug {slug!r}")
    return gpu


# ---- listing -----------------------------------------------------------------------------

SORT_KEYS: dict[str, str] = {
    "slug": "slug",
    "usable_memory_bytes": "usable_memory_bytes",
    "bandwidth_gb_per_s": "bandwidth_gb_per_s",
    "tdp_w": "tdp_w",
    "bf16_tflops": "peaks.bf16_tflops",
    "fp32_tflops": "peaks.fp32_tflops",
    "fp8_tflops": "peaks.fp8_tflops",
    "launch_year": "launch_year",
}


@dataclass(frozen=True)
class GpuFilters:
    vendor: str | None = None
    architecture: str | None = None
    min_usable_memory_bytes: int | None = None
    supports: tuple[str, ...] = ()
    form_factor: str | None = None
    nvlink_topology: str | None = None


def _sort_value(doc: Mapping[str, Any], key: str) -> Any:
    path = SORT_KEYS[key]
    cur: Any = doc
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    if cur is None and key != "slug":
        section = {"usable_memory_bytes": "memory", "bandwidth_gb_per_s": "memory", "tdp_w": "power"}.get(key)
        if section:
            cur = (doc.get(section) or {}).get(key)
    return cur


def encode_cursor(payload: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, loc: str = "cursor") -> dict[str, Any]:
    try:
        pad = "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(cursor + pad))
        if not isinstance(data, dict):
            raise ValueError
        return data
    except (ValueError, json.JSONDecodeError):
        raise Invalid(
            "the cursor is not valid", fields=[FieldError((loc,), "not a cursor this API issued")]
        ) from None


def list_gpus(
    uow: UnitOfWork, filters: GpuFilters, *, sort: str, limit: int, cursor: str | None
) -> tuple[list[GpuOut], str | None]:
    """Filter in SQL where a column exists; support flags and sorting on the effective
    document (the catalog is small: tens of rows). Keyset cursor over (sort value, slug)."""
    desc = sort.startswith("-")
    key = sort.lstrip("-")
    if key not in SORT_KEYS:
        raise Invalid(
            f"unknown sort key {key!r}",
            fields=[FieldError(("sort",), f"one of {', '.join(sorted(SORT_KEYS))}, optionally prefixed by '-'")],
        )
    q = select(Gpu).where(Gpu.deleted.is_(False))
    if filters.vendor:
        q = q.where(Gpu.vendor == filters.vendor.lower())
    if filters.architecture:
        # case-insensitive equality: the value is data, never a LIKE pattern ("%" matched all)
        literal = filters.architecture.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        q = q.where(Gpu.architecture.ilike(literal, escape="\\"))
    if filters.min_usable_memory_bytes is not None:
        q = q.where(Gpu.usable_memory_bytes >= filters.min_usable_memory_bytes)
    if filters.form_factor:
        q = q.where(Gpu.form_factor == filters.form_factor)
    if filters.nvlink_topology:
        q = q.where(Gpu.nvlink_topology == filters.nvlink_topology)
    rows = list(uow.session.scalars(q))
    rows = [g for g in rows if all((g.spec.get("supports") or {}).get(p) == "yes" for p in filters.supports)]

    def k(g: Gpu) -> tuple[int, Any, str]:
        v = _sort_value(g.spec, key)
        # nulls last in both directions
        if v is None:
            return (1, 0, g.slug)
        return (0, (-v if desc and not isinstance(v, str) else v), g.slug)

    rows.sort(key=k)
    if desc and key == "slug":
        rows.reverse()
    start = 0
    if cursor:
        c = decode_cursor(cursor)
        if c.get("sort") != sort:
            raise Invalid(
                "the cursor belongs to another sort order",
                fields=[FieldError(("cursor",), "restart the listing without a cursor")],
            )
        after = c.get("after")
        slugs = [g.slug for g in rows]
        start = slugs.index(after) + 1 if after in slugs else int(c.get("pos", 0))
    page = rows[start : start + limit]
    nxt = (
        encode_cursor({"sort": sort, "after": page[-1].slug, "pos": start + limit})
        if start + limit < len(rows) and page
        else None
    )
    return [_to_out(g) for g in page], nxt


# ---- admin writes ------------------------------------------------------------------------


def _check_if_match(gpu: Gpu, if_match: str | None) -> None:
    if if_match is None:
        raise PreconditionRequired(
            "send If-Match with the ETag from GET /v1/gpus/{slug} so concurrent edits are not lost",
            fields=[FieldError(("If-Match",), "required", location="header")],
        )
    tags = [t.strip() for t in if_match.split(",")]
    if "*" not in tags and etag_for(gpu) not in tags:
        raise PreconditionFailed(
            "the GPU changed since you read it; GET it again and retry",
            current_etag=etag_for(gpu),
        )


def create_gpu(uow: UnitOfWork, body: Mapping[str, Any]) -> GpuView:
    doc = validate_document(body)
    existing = uow.session.scalars(select(Gpu).where(Gpu.slug == doc.slug)).first()
    if existing is not None and not existing.deleted:
        raise Conflict(f"a GPU with slug {doc.slug!r} exists; PATCH it instead", slug=doc.slug)
    now = dt.datetime.now(dt.UTC)
    d = doc.model_dump(mode="json")
    if existing is not None:  # re-create over a deleted one: the admin layer takes over
        gpu = existing
        gpu.deleted = False
        gpu.override_spec = d if gpu.catalog_spec is None else _diff(gpu.catalog_spec, d)
        gpu.revision += 1
        gpu.updated_at = now
    else:
        gpu = Gpu(slug=doc.slug, override_spec=d, origin="admin", revision=1, created_at=now, updated_at=now)
        uow.session.add(gpu)
    _materialise(gpu, doc)
    _sync_aliases(gpu, doc)
    uow.mark_write()
    uow.session.flush()
    uow.commit()
    return GpuView(out=_to_out(gpu), etag=etag_for(gpu), warnings=[])


def _diff(base: Mapping[str, Any], target: Mapping[str, Any]) -> dict[str, Any]:
    """Smallest override that turns ``base`` into ``target`` under :func:`deep_merge`."""
    out: dict[str, Any] = {}
    for k, v in target.items():
        b = base.get(k)
        if isinstance(v, Mapping) and isinstance(b, Mapping):
            sub = _diff(b, v)
            if sub:
                out[k] = sub
        elif b != v:
            out[k] = v
    return out


def patch_gpu(uow: UnitOfWork, slug: str, patch: Mapping[str, Any], if_match: str | None) -> GpuView:
    gpu = _load(uow, slug)
    _check_if_match(gpu, if_match)
    if "slug" in patch and patch["slug"] != slug:
        raise Invalid("the slug cannot change", fields=[FieldError(("slug",), "immutable")])
    candidate = deep_merge(gpu.spec, patch)
    doc = validate_document(candidate)
    d = doc.model_dump(mode="json")
    gpu.override_spec = _diff(gpu.catalog_spec, d) if gpu.catalog_spec is not None else d
    _materialise(gpu, doc)
    _sync_aliases(gpu, doc)
    gpu.revision += 1
    gpu.updated_at = dt.datetime.now(dt.UTC)
    uow.mark_write()
    uow.commit()
    return GpuView(out=_to_out(gpu), etag=etag_for(gpu), warnings=[])


def delete_gpu(uow: UnitOfWork, slug: str, if_match: str | None) -> None:
    """Soft delete in the override layer: catalog upserts never bring it back."""
    gpu = _load(uow, slug)
    _check_if_match(gpu, if_match)
    gpu.deleted = True
    gpu.revision += 1
    gpu.updated_at = dt.datetime.now(dt.UTC)
    uow.mark_write()
    uow.commit()


# ---- prices ------------------------------------------------------------------------------


def _fx_table(uow: UnitOfWork) -> list[FxRate]:
    return list(uow.session.scalars(select(FxRate).order_by(FxRate.effective_date.desc())))


def _convert(amount: Decimal, frm: str, to: str, rates: Sequence[FxRate], on: dt.date) -> tuple[Decimal, dt.date] | None:
    """Convert with the newest rate on or before ``on`` (else the oldest after it)."""
    best: FxRate | None = None
    inverse = False
    for r in rates:
        pair = (r.base, r.quote)
        if pair not in ((frm, to), (to, frm)):
            continue
        if r.effective_date <= on:
            best, inverse = r, pair == (to, frm)
            break
        best, inverse = r, pair == (to, frm)
    if best is None:
        return None
    value = amount / best.rate if inverse else amount * best.rate
    return value.quantize(Decimal("0.0001")), best.effective_date


def list_prices(uow: UnitOfWork, cache: AliasIndexCache, ident: str, *, today: dt.date, stale_days: int) -> tuple[str, list[PriceOut]]:
    view = get_gpu(uow, cache, ident)
    gpu = _load(uow, view.out.slug)
    rows = uow.session.scalars(
        select(Price).where(Price.gpu_id == gpu.id).order_by(Price.pricing_model, Price.provider, Price.effective_date.desc())
    ).all()
    rates = _fx_table(uow)
    out: list[PriceOut] = []
    for p in rows:
        other = "CNY" if p.currency == "USD" else "USD"
        conv = _convert(p.amount, p.currency, other, rates, p.effective_date)
        age = (today - p.effective_date).days
        out.append(
            PriceOut(
                id=p.id,
                gpu_slug=gpu.slug,
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
                per_gpu_hour=None
                if p.pricing_model == "purchase"
                else (p.amount / p.gpus_per_instance).quantize(Decimal("0.0001")),
                age_days=age,
                stale=age > stale_days,
                converted={other: conv[0]} if conv else {},
                fx_date=conv[1] if conv else None,
            )
        )
    return gpu.slug, out


def add_price(uow: UnitOfWork, slug: str, body: PriceIn) -> None:
    gpu = _load(uow, slug)
    if _upsert_price(uow, gpu, body, origin="admin"):
        uow.mark_write()
    uow.commit()


def add_fx_rate(uow: UnitOfWork, body: FxRateIn) -> None:
    if body.base == body.quote:
        raise Invalid("base and quote must differ", fields=[FieldError(("quote",), "same as base")])
    if _upsert_fx(uow, body):
        uow.mark_write()
    uow.commit()
