"""The GPU catalog as the core sees it: stored GPU records, price rows and FX rates, and the
pure rules over catalog documents.

A catalog GPU is stored in two layers (DESIGN "Catalog updates"): the *catalog document*
(written only by the shipped-catalog upsert) and the *override document* (written only by
admins). The *effective document* -- what every reader sees -- is the catalog document with
the override merged over it (:func:`deep_merge`); an admin edit is stored as the smallest
override that produces it (:func:`diff`), so an upsert that corrects a figure nobody overrode
still reaches the effective document.

Documents are plain JSON mappings that already passed the GPU document schema; treat those in
a :class:`GpuRecord` as read-only.
"""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from service.core.catalog.fingerprint import normalise_pci_id
from service.core.catalog.specs import (
    AliasEntry,
    Resolution,
    normalise_architecture,
    normalise_name,
    resolve_name,
)
from service.core.catalog.vocabulary import VocabularyError

# ---- documents ---------------------------------------------------------------------------


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``over`` into a copy of ``base``; nested mappings merge, anything else replaces
    (``None`` included: an override can set a figure back to unknown). Neither input is
    changed and the result shares no mutable value with them."""
    out = copy.deepcopy(dict(base))
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def diff(base: Mapping[str, Any], target: Mapping[str, Any]) -> dict[str, Any]:
    """Smallest override that turns ``base`` into ``target`` under :func:`deep_merge`: only
    the keys of ``target`` whose value differs (recursing into mappings on both sides)."""
    out: dict[str, Any] = {}
    for k, v in target.items():
        b = base.get(k)
        if isinstance(v, Mapping) and isinstance(b, Mapping):
            sub = diff(b, v)
            if sub:
                out[k] = sub
        elif b != v:
            out[k] = v
    return out


def changed_paths(base: Mapping[str, Any], over: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths (sorted) at which ``over`` changes ``base``: ``["power.tdp_w"]``."""
    paths: list[str] = []
    for k, v in over.items():
        p = f"{prefix}{k}"
        if isinstance(v, Mapping) and isinstance(base.get(k), Mapping):
            paths.extend(changed_paths(base[k], v, p + "."))
        elif base.get(k) != v:
            paths.append(p)
    return sorted(paths)


def compute_etag(revision: int, document: Mapping[str, Any]) -> str:
    """Strong ETag of a GPU: its revision and the first 12 hex digits of the SHA-256 of the
    effective document as canonical JSON (sorted keys), e.g. ``"3-1f2e3d4c5b6a"``."""
    h = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:12]
    return f'"{revision}-{h}"'


@dataclass(frozen=True, slots=True)
class AliasName:
    """A name under which a GPU is found: ``name`` as written, ``norm`` its lookup key
    (:func:`~service.core.catalog.specs.normalise_name`, or the PCI id itself for kind ``pci``)."""

    name: str
    norm: str
    kind: str
    is_default: bool = False


def bare_slug(slug: str, vendor: str) -> str:
    """The slug without its vendor prefix (``b200`` for ``nvidia-b200``): a name the GPU is
    found under, and the Slurm gres type placeholder artifacts and scheduling hints write."""
    prefix = f"{vendor}-"
    return slug[len(prefix) :] if vendor and slug.startswith(prefix) and len(slug) > len(prefix) else slug


def aliases_of(document: Mapping[str, Any]) -> tuple[AliasName, ...]:
    """The names a GPU document is found under, one per (key, kind): the document's aliases,
    then the slug itself (kind ``slug``), the full name (kind ``name``) and the slug without its
    vendor prefix (kind ``slug``) unless an alias already covers them, then each PCI device id
    (kind ``pci``)."""
    wanted: dict[tuple[str, str], tuple[str, bool]] = {}
    for a in document.get("aliases") or ():
        wanted[(normalise_name(a["name"]), a["kind"])] = (a["name"], bool(a.get("default", False)))
    slug, name = str(document["slug"]), str(document["name"])
    wanted.setdefault((normalise_name(slug), "slug"), (slug, False))
    wanted.setdefault((normalise_name(name), "name"), (name, False))
    bare = bare_slug(slug, str(document.get("vendor") or ""))
    if bare != slug:  # "a100-sxm4-80gb" for nvidia-a100-sxm4-80gb
        wanted.setdefault((normalise_name(bare), "slug"), (bare, False))
    for pci in (document.get("identity") or {}).get("pci_device_ids") or ():
        wanted[(pci, "pci")] = (pci, False)
    return tuple(
        AliasName(name=n, norm=norm, kind=kind, is_default=d) for (norm, kind), (n, d) in wanted.items()
    )


# ---- records -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GpuRecord:
    """A stored catalog GPU. ``document`` is the effective document; ``catalog_document`` and
    ``override_document`` are the layers it is merged from (``None`` where a layer is empty:
    an admin-created GPU has no catalog layer). ``origin`` is ``catalog`` or ``admin``;
    ``revision`` grows by one on every change of the effective document or of ``deleted``."""

    slug: str
    document: Mapping[str, Any]
    catalog_document: Mapping[str, Any] | None
    override_document: Mapping[str, Any] | None
    origin: str
    revision: int
    catalog_version: str | None
    updated_at: dt.datetime
    deleted: bool = False
    etag: str = field(default="", compare=False)
    """Strong ETag (:func:`compute_etag`), derived on construction: the read path serves it on
    every GPU answer and keys its serialised documents by it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "etag", compute_etag(self.revision, self.document))

    @property
    def name(self) -> str:
        return str(self.document["name"])

    @property
    def overridden_fields(self) -> list[str]:
        """Dotted paths an admin override changed relative to the shipped catalog (none for
        a GPU without a catalog layer)."""
        if not self.catalog_document:
            return []
        return changed_paths(self.catalog_document, self.override_document or {})


@dataclass(frozen=True, slots=True)
class GpuCandidate:
    """One GPU an ambiguous name may mean; ``default`` marks the stated default."""

    slug: str
    name: str
    default: bool = False


@dataclass(frozen=True, slots=True)
class GpuWarning:
    """What resolving a name assumed (``assumed_variant``, ``mig_slice``, ``shared_gpu``)."""

    code: str
    message: str
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GpuFilters:
    """Listing filters; ``supports`` flags must each be ``yes``. ``architecture`` matches
    case-insensitively."""

    vendor: str | None = None
    architecture: str | None = None
    min_usable_memory_bytes: int | None = None
    supports: tuple[str, ...] = ()
    form_factor: str | None = None
    nvlink_topology: str | None = None

    def admits(self, document: Mapping[str, Any]) -> bool:
        """Whether a GPU's effective document passes every filter. The architecture matches as
        the family key and its variants (``ada`` = ``Ada Lovelace``, ``cdna3`` = ``CDNA 3``,
        ``blackwell`` takes Blackwell Ultra); a memory floor reads
        the usable memory, or the physical memory where the usable figure is unsourced (what an
        estimate then assumes, with a warning) -- a 256 GB MI325X is not below 100 GiB."""
        d = document
        if self.vendor and d.get("vendor") != self.vendor.lower():
            return False
        family = normalise_architecture(str(d.get("architecture") or ""))
        if self.architecture and not family.startswith(normalise_architecture(self.architecture)):
            return False  # a family takes its variants: blackwell takes Blackwell Ultra
        if self.min_usable_memory_bytes is not None:
            mem = d.get("memory") or {}
            usable = mem.get("usable_memory_bytes") or mem.get("memory_bytes")
            if usable is None or usable < self.min_usable_memory_bytes:
                return False
        if self.form_factor and d.get("form_factor") != self.form_factor:
            return False
        if self.nvlink_topology:
            topo = ((d.get("interconnect") or {}).get("nvlink") or {}).get("topology") or "none"
            if topo != self.nvlink_topology:
                return False
        return all((d.get("supports") or {}).get(p) == "yes" for p in self.supports)


# ---- names -------------------------------------------------------------------------------


def as_pci_id(ident: str) -> str | None:
    """``0x2335``, ``10de:2335``, ``0x233510DE`` or ``pci-0x2335`` -> ``0x2335``; anything that
    does not look like a PCI id -> ``None``."""
    s = ident.strip().lower()
    if not (s.startswith("0x") or ":" in s or s.startswith("pci-")):
        return None
    try:
        return normalise_pci_id(s.removeprefix("pci-"))
    except VocabularyError:
        return None


def resolve_ident(ident: str, index: Mapping[str, Sequence[AliasEntry]]) -> Resolution:
    """Resolve a slug, alias, GFD label or PCI device id against an alias index (normalised
    alias -> entries). A PCI id found in the index resolves to the GPUs carrying it; anything
    else goes through :func:`~service.core.catalog.specs.resolve_name`."""
    pci = as_pci_id(ident)
    if pci is not None and pci in index:
        return Resolution(query=ident, slugs=tuple(sorted({e.slug for e in index[pci]})))
    return resolve_name(ident, index)


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
"""Listing sort keys -> their path in the effective document (memory and power figures are
looked up in their section)."""

_SORT_SECTION = {"usable_memory_bytes": "memory", "bandwidth_gb_per_s": "memory", "tdp_w": "power"}


def sort_value(document: Mapping[str, Any], key: str) -> Any:
    """The value a listing sorts ``document`` by for sort key ``key`` (``None`` if unknown)."""
    cur: Any = document
    for part in SORT_KEYS[key].split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    if cur is None and key != "slug":
        section = _SORT_SECTION.get(key)
        if section:
            cur = (document.get(section) or {}).get(key)
    return cur


def sort_records(records: Sequence[GpuRecord], key: str, *, descending: bool) -> list[GpuRecord]:
    """Sort by ``sort_value`` then slug; unknown values last in both directions."""

    def k(r: GpuRecord) -> tuple[int, Any, str]:
        v = sort_value(r.document, key)
        if v is None:
            return (1, 0, r.slug)
        return (0, (-v if descending and not isinstance(v, str) else v), r.slug)

    out = sorted(records, key=k)
    if descending and key == "slug":
        out.reverse()
    return out


# ---- prices and FX -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PriceEntry:
    """A reference price as written (DESIGN "Prices"): ``amount`` per instance-hour for the
    rental models, per unit (a card, or a node for SXM/OAM parts) for ``purchase``."""

    provider: str
    region: str
    instance_type: str
    gpus_per_instance: int
    pricing_model: str
    currency: str
    amount: Decimal
    effective_date: dt.date
    source: str
    is_estimate: bool = True
    date_basis: str = "effective"


DATE_BASES: tuple[str, ...] = ("effective", "retrieved")
"""How a price row's ``effective_date`` was known: ``effective``, the date the price was set or
quoted (a dated list, a catalog commit's date); ``retrieved``, only the date the copy was read,
so the price is at least that old and its age is a lower bound."""


@dataclass(frozen=True, slots=True)
class PriceRow:
    """A stored price row of one GPU; ``origin`` is ``catalog`` or ``admin``."""

    id: int
    gpu_slug: str
    provider: str
    region: str
    instance_type: str
    gpus_per_instance: int
    pricing_model: str
    currency: str
    amount: Decimal
    effective_date: dt.date
    source: str
    is_estimate: bool
    origin: str
    date_basis: str = "effective"


@dataclass(frozen=True, slots=True)
class FxRate:
    """1 ``base`` = ``rate`` ``quote`` on ``effective_date``."""

    base: str
    quote: str
    rate: Decimal
    effective_date: dt.date
    source: str


@dataclass(frozen=True, slots=True)
class PriceSuspicion:
    """Why one price row is suspect: a machine ``code`` and a sentence with the figures
    (the checks are :mod:`service.core.pricing.quality`)."""

    code: str
    detail: str


@dataclass(frozen=True, slots=True)
class PriceView:
    """A price row with what readers derive from it: the per-GPU-hour amount (rental models
    only), age and staleness on a given day, and the amount in the other currency."""

    row: PriceRow
    per_gpu_hour: Decimal | None
    age_days: int
    stale: bool
    converted: Mapping[str, Decimal]
    fx_date: dt.date | None
    suspect: tuple[PriceSuspicion, ...] = ()  # why the row is not trusted (pricing.quality)


def convert(
    amount: Decimal, frm: str, to: str, rates: Sequence[FxRate], on: dt.date
) -> tuple[Decimal, dt.date] | None:
    """Convert ``amount`` from ``frm`` to ``to`` with the newest rate on or before ``on`` (else
    the oldest after it); a rate for the inverse pair is inverted. ``rates`` are ordered newest
    first. Returns the amount (to 4 decimal places) and the rate's date, or ``None``."""
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


def view_price(
    row: PriceRow,
    rates: Sequence[FxRate],
    *,
    today: dt.date,
    stale_days: int,
    suspect: tuple[PriceSuspicion, ...] = (),
) -> PriceView:
    """Derive :class:`PriceView` for ``row`` on ``today``: USD converts to CNY and anything
    else to USD, at the rate of the row's effective date (:func:`convert`)."""
    other = "CNY" if row.currency == "USD" else "USD"
    conv = convert(row.amount, row.currency, other, rates, row.effective_date)
    age = (today - row.effective_date).days
    return PriceView(
        row=row,
        per_gpu_hour=None
        if row.pricing_model == "purchase"
        else (row.amount / row.gpus_per_instance).quantize(Decimal("0.0001")),
        age_days=age,
        stale=age > stale_days,
        converted={other: conv[0]} if conv else {},
        fx_date=conv[1] if conv else None,
        suspect=suspect,
    )
