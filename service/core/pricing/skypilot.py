"""SkyPilot instance catalogs (``vms.csv``) -> dated, sourced cloud price records. Pure.

SkyPilot keeps one ``vms.csv`` per cloud (``skypilot-org/skypilot-catalog``,
``catalogs/v8/<cloud>/vms.csv``). The columns this module reads, by header name (the column
order differs between clouds, and extra columns such as ``Arch`` or ``Generation`` are ignored):

``InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Price, Region`` (required),
``SpotPrice, GpuInfo, AvailabilityZone`` (optional).

The pipeline is three plain functions, each deterministic (sorted output):

1. :func:`parse_vms_csv` reads the text into :class:`VmRow` (one per CSV row that prices a whole
   number of accelerators), with row-level :class:`RowError` (line number + column) for anything
   malformed. Callers must not import a file whose result has errors: nothing half-imported.
2. :func:`collapse_zones` folds the per-zone rows of a region into one :class:`Offer` per
   (instance type, accelerator, count, region).
3. :func:`map_offers` maps accelerator names to catalog slugs through alias indexes (never
   guessing: unknown, ambiguous and contradicted names are reported, not mapped), and
   :func:`price_records` turns the mapped offers into :class:`PriceRecord` rows shaped like the
   service's price table (amount per instance-hour, USD, effective date, source).

Rules (each one is a decision, documented in ``docs/prices.md``):

* **Non-GPU rows** (empty ``AcceleratorName``) are skipped silently and counted.
* **Fractional accelerators** (``AcceleratorCount`` not a whole number, e.g. Azure's 1/6 A10
  partitions, or AWS ``GpuPartitionSize`` shares) are skipped with reason ``fractional-gpu``: a
  share of a GPU has neither the memory nor the speed of the catalog device, and the price table
  counts whole GPUs per instance.
* **Prices** are US dollars per instance-hour. An empty ``Price`` means "no on-demand price"
  (AWS lists capacity-block-only shapes that way); an empty ``SpotPrice`` means "no spot offer".
  ``0.0`` means the same as empty: SkyPilot writes it where it has no price (GCP's A4 host
  rows), and a zero is never read as "free". A row with neither price is skipped
  (``no-price``). Non-numeric, NaN, infinite or negative figures are errors. Amounts are kept as decimal strings, rounded half-even to 6 places (the
  service stores ``Numeric(18, 6)``).
* **Zones**: AWS, GCP and RunPod list one row per availability zone (or data centre). A region's
  on-demand and spot price is the lowest over its zones -- the price SkyPilot's optimiser quotes
  for a region (``sky/catalog/common.py``, cheapest zone) -- and the offer keeps the zone count.
* **GPU-only rows** (empty ``InstanceType`` with an accelerator, GCP's way of pricing attachable
  GPUs) are joined with their host VM where the host is fixed by the accelerator and count
  (SkyPilot's own table, ``sky/catalog/gcp_catalog.py`` ``_ACC_INSTANCE_TYPE_DICTS``, copied in
  :data:`GCP_HOST_RULES`): instance price = host VM price + GPU price in the same zone, spot
  likewise (only when both have one). GPUs that attach to general-purpose VMs of any size (T4,
  V100, P100, P4 on N1) have no fixed shape and are skipped (``accelerator-without-fixed-host``): pricing
  the GPU alone would understate the instance, and choosing a host is a guess.
* **Exact duplicate rows** (GCP lists a few twice) are collapsed and counted.
* **Names**: see :func:`map_offers`.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Literal

from service.core.catalog.specs import AliasEntry, normalise_name, resolve_name
from service.core.pricing.skypilot_parse import (
    AMOUNT_QUANTUM as AMOUNT_QUANTUM,
)
from service.core.pricing.skypilot_parse import (
    CURRENCY as CURRENCY,
)
from service.core.pricing.skypilot_parse import (
    GCP_HOST_RULES as GCP_HOST_RULES,
)
from service.core.pricing.skypilot_parse import (
    MEMORY_TOLERANCE as MEMORY_TOLERANCE,
)
from service.core.pricing.skypilot_parse import (
    MIN_PLAUSIBLE_GPU_MIB as MIN_PLAUSIBLE_GPU_MIB,
)
from service.core.pricing.skypilot_parse import (
    OPTIONAL_COLUMNS as OPTIONAL_COLUMNS,
)
from service.core.pricing.skypilot_parse import (  # step 1, re-exported
    REQUIRED_COLUMNS as REQUIRED_COLUMNS,
)
from service.core.pricing.skypilot_parse import (
    ParseResult as ParseResult,
)
from service.core.pricing.skypilot_parse import (
    PricingModel as PricingModel,
)
from service.core.pricing.skypilot_parse import (
    RowError as RowError,
)
from service.core.pricing.skypilot_parse import (
    SkippedRow as SkippedRow,
)
from service.core.pricing.skypilot_parse import (
    SkipReason as SkipReason,
)
from service.core.pricing.skypilot_parse import (
    VmRow as VmRow,
)
from service.core.pricing.skypilot_parse import (
    _HostRow as _HostRow,
)
from service.core.pricing.skypilot_parse import (
    _join_hosts as _join_hosts,
)
from service.core.pricing.skypilot_parse import (
    _optional_float as _optional_float,
)
from service.core.pricing.skypilot_parse import (
    _optional_price as _optional_price,
)
from service.core.pricing.skypilot_parse import (
    parse_gpu_info as parse_gpu_info,
)
from service.core.pricing.skypilot_parse import (
    parse_vms_csv as parse_vms_csv,
)
from service.core.pricing.skypilot_parse import (
    render_vms_csv as render_vms_csv,
)

# ---- zones -> regions ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Offer:
    """One instance shape in one region: the cheapest zone's on-demand and spot price."""

    instance_type: str
    accelerator_name: str
    gpus_per_instance: int
    region: str
    vcpus: float | None
    memory_gib: float | None
    on_demand: Decimal | None
    spot: Decimal | None
    zones: int
    gpu_memory_mib: int | None
    gpu_info_name: str | None
    lines: tuple[int, ...]


def collapse_zones(rows: Iterable[VmRow]) -> tuple[Offer, ...]:
    groups: dict[tuple[str, str, int, str], list[VmRow]] = defaultdict(list)
    for r in rows:
        groups[(r.instance_type, r.accelerator_name, r.gpus_per_instance, r.region)].append(r)
    out: list[Offer] = []
    for (it, acc, n, region), rs in sorted(groups.items()):
        od = [r.on_demand for r in rs if r.on_demand is not None]
        sp = [r.spot for r in rs if r.spot is not None]
        first = min(rs, key=lambda r: r.line)
        mibs = {r.gpu_memory_mib for r in rs if r.gpu_memory_mib is not None}
        out.append(
            Offer(
                instance_type=it,
                accelerator_name=acc,
                gpus_per_instance=n,
                region=region,
                vcpus=first.vcpus,
                memory_gib=first.memory_gib,
                on_demand=min(od) if od else None,
                spot=min(sp) if sp else None,
                zones=len({r.zone for r in rs}),
                # Conflicting memory figures within one shape are not evidence of anything.
                gpu_memory_mib=mibs.pop() if len(mibs) == 1 else None,
                gpu_info_name=first.gpu_info_name,
                lines=tuple(sorted(r.line for r in rs)),
            )
        )
    return tuple(out)


# ---- names -> slugs ------------------------------------------------------------------------

IssueKind = Literal["unknown", "ambiguous", "conflict"]


@dataclass(frozen=True, slots=True)
class NameIssue:
    """An accelerator name that was not mapped, with the offers it held back."""

    name: str
    kind: IssueKind
    candidates: tuple[str, ...]
    offers: int
    instance_types: tuple[str, ...]
    detail: str


@dataclass(frozen=True, slots=True)
class MappedOffer:
    gpu_slug: str
    via: Literal["alias", "alias+memory", "hint"]
    offer: Offer


@dataclass(frozen=True, slots=True)
class MappingResult:
    mapped: tuple[MappedOffer, ...]
    issues: tuple[NameIssue, ...]
    hint_overrides: tuple[tuple[str, str, str], ...]  # (instance type, alias said, hint says)

    @property
    def unknown_names(self) -> tuple[tuple[str, int], ...]:
        """``(name, offers)`` for names no index knows, sorted by name."""
        return tuple((i.name, i.offers) for i in self.issues if i.kind == "unknown")


@dataclass(frozen=True, slots=True)
class InstanceHint:
    """A sourced statement that ``instance_type`` on ``provider`` carries ``gpu_slug``: used where
    the SkyPilot name alone cannot tell the variant (``A100``: PCIe or SXM4)."""

    provider: str
    instance_type: str
    gpu_slug: str
    source: str


def alias_index_from_docs(
    docs: Iterable[Mapping[str, object]], *, kinds: Iterable[str] | None = None
) -> dict[str, list[AliasEntry]]:
    """The alias index the service builds from catalog documents (normalised alias -> entries):
    each slug and full name, and its aliases (only of ``kinds`` when given). PCI ids are left out:
    they are never SkyPilot names."""
    wanted = set(kinds) if kinds is not None else None
    index: dict[str, list[AliasEntry]] = {}

    def add(name: str, slug: str, default: bool) -> None:
        entries = index.setdefault(normalise_name(name), [])
        for i, e in enumerate(entries):
            if e.slug == slug:
                if default and not e.is_default:
                    entries[i] = AliasEntry(slug=slug, is_default=True)
                return
        entries.append(AliasEntry(slug=slug, is_default=default))

    for d in docs:
        slug = str(d["slug"])
        add(slug, slug, False)
        if wanted is None:
            add(str(d.get("name") or slug), slug, False)
        for a in d.get("aliases") or []:  # type: ignore[attr-defined]
            if isinstance(a, Mapping) and (wanted is None or a.get("kind") in wanted):
                add(str(a["name"]), slug, bool(a.get("default", False)))
    return index


def memory_mib_from_docs(docs: Iterable[Mapping[str, object]]) -> dict[str, tuple[int, ...]]:
    """slug -> (marketed MiB, usable MiB) from catalog documents, for memory evidence."""
    out: dict[str, tuple[int, ...]] = {}
    for d in docs:
        mem = d.get("memory")
        vals: set[int] = set()
        if isinstance(mem, Mapping):
            for k in ("memory_bytes", "usable_memory_bytes"):
                v = mem.get(k)
                if isinstance(v, int) and v > 0:
                    vals.add(v // 2**20)
        out[str(d["slug"])] = tuple(sorted(vals))
    return out


def memory_matches(mib: int, slug_mibs: Iterable[int], *, tolerance: float = MEMORY_TOLERANCE) -> bool:
    return any(abs(mib - m) <= tolerance * m for m in slug_mibs)


def map_offers(
    offers: Iterable[Offer],
    indexes: Sequence[Mapping[str, Iterable[AliasEntry]]],
    *,
    provider: str,
    gpu_memory_mib: Mapping[str, Iterable[int]],
    hints: Iterable[InstanceHint] = (),
) -> MappingResult:
    """Map each offer's accelerator name to one catalog slug, or report why not.

    * A sourced :class:`InstanceHint` for (provider, instance type) names the slug outright.
      When the alias would have said something else, the pair is listed in ``hint_overrides``.
    * Otherwise the name is resolved through ``indexes`` in order (the first index that knows
      the name wins: pass the catalog's SkyPilot-kind aliases first, the full alias index
      after). No index knows it: ``unknown``.
    * Memory evidence (``GpuInfo`` MiB, when plausible) keeps the candidates whose catalog
      memory matches within 10%. It may narrow an ambiguous name (``A100`` -> the 40 GB parts)
      but never widen one; if it rules out every candidate the offer is a ``conflict``.
    * Several candidates left: ``ambiguous`` (the form factor of an ``A100`` is not in the
      name; a stated default is not used: a price must not be guessed onto a variant).
    """
    hint_by_key = {(h.provider, h.instance_type): h.gpu_slug for h in hints}
    mapped: list[MappedOffer] = []
    problems: dict[tuple[str, IssueKind, tuple[str, ...], str], list[Offer]] = defaultdict(list)
    overrides: set[tuple[str, str, str]] = set()
    for o in offers:
        candidates: tuple[str, ...] = ()
        for index in indexes:
            candidates = resolve_name(o.accelerator_name, index).slugs
            if candidates:
                break
        hinted = hint_by_key.get((provider, o.instance_type))
        via: Literal["alias", "alias+memory", "hint"] = "alias"
        if hinted is not None:
            if hinted not in gpu_memory_mib:
                problems[
                    (o.accelerator_name, "conflict", (hinted,), "hint names a GPU the catalog lacks")
                ].append(o)
                continue
            if candidates and hinted not in candidates:
                overrides.add((o.instance_type, "|".join(candidates), hinted))
            candidates, via = (hinted,), "hint"
        if not candidates:
            problems[(o.accelerator_name, "unknown", (), "no alias matches this name")].append(o)
            continue
        mib = o.gpu_memory_mib
        if mib is not None and mib >= MIN_PLAUSIBLE_GPU_MIB:
            fits = tuple(c for c in candidates if memory_matches(mib, gpu_memory_mib.get(c, ())))
            if not fits:
                problems[
                    (o.accelerator_name, "conflict", candidates, f"GpuInfo says {mib} MiB per GPU")
                ].append(o)
                continue
            if len(fits) < len(candidates) and via == "alias":
                via = "alias+memory"
            candidates = fits
        if len(candidates) > 1:
            problems[(o.accelerator_name, "ambiguous", candidates, "form factor not in the name")].append(o)
            continue
        mapped.append(MappedOffer(candidates[0], via, o))
    issues = tuple(
        sorted(
            (
                NameIssue(
                    name=name,
                    kind=kind,
                    candidates=cands,
                    offers=len(os_),
                    instance_types=tuple(sorted({x.instance_type for x in os_})),
                    detail=detail,
                )
                for (name, kind, cands, detail), os_ in problems.items()
            ),
            key=lambda i: (i.kind, i.name, i.candidates, i.detail),
        )
    )
    mapped.sort(key=lambda m: (m.gpu_slug, m.offer.region, m.offer.instance_type, m.offer.gpus_per_instance))
    return MappingResult(tuple(mapped), issues, tuple(sorted(overrides)))


# ---- price records ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PriceRecord:
    """One price row, shaped like the service's ``PriceIn`` (plus ``gpu_slug``): ``amount`` is
    US dollars per instance-hour as a decimal string."""

    gpu_slug: str
    provider: str
    region: str
    instance_type: str
    gpus_per_instance: int
    pricing_model: PricingModel
    currency: str
    amount: str
    effective_date: dt.date
    source: str
    date_basis: str = "effective"

    def as_dict(self) -> dict[str, object]:
        return {
            "gpu_slug": self.gpu_slug,
            "provider": self.provider,
            "region": self.region,
            "instance_type": self.instance_type,
            "gpus_per_instance": self.gpus_per_instance,
            "pricing_model": self.pricing_model,
            "currency": self.currency,
            "amount": self.amount,
            "effective_date": self.effective_date.isoformat(),
            "source": self.source,
            "is_estimate": False,
            "date_basis": self.date_basis,
        }


def format_amount(d: Decimal) -> str:
    """Half-even to 6 places, no exponent, no trailing zeros (``0.256800`` -> ``0.2568``)."""
    q = d.quantize(AMOUNT_QUANTUM, rounding=ROUND_HALF_EVEN).normalize()
    s = format(q, "f")
    return s


def source_label(repo: str, path: str, *, commit: str | None = None, date: dt.date | None = None) -> str:
    """``skypilot-org/skypilot-catalog catalogs/v8/aws/vms.csv @ <commit> (<date>)``."""
    s = f"{repo} {path}"
    if commit:
        s += f" @ {commit}"
    if date:
        s += f" ({date.isoformat()})"
    return s


def price_records(
    mapped: Iterable[MappedOffer],
    *,
    provider: str,
    effective_date: dt.date,
    source: str,
    date_basis: str = "effective",
) -> tuple[PriceRecord, ...]:
    """One record per (slug, provider, region, instance type, GPUs, pricing model). If two
    offers land on the same key (same shape listed under two accelerator spellings), the lower
    price is kept, like the zone rule."""
    best: dict[tuple[str, str, str, int, str], Decimal] = {}
    for m in mapped:
        o = m.offer
        for model, amount in (("on_demand", o.on_demand), ("spot", o.spot)):
            if amount is None:
                continue
            key = (m.gpu_slug, o.region, o.instance_type, o.gpus_per_instance, model)
            if key not in best or amount < best[key]:
                best[key] = amount
    out = [
        PriceRecord(
            gpu_slug=slug,
            provider=provider,
            region=region,
            instance_type=it,
            gpus_per_instance=n,
            pricing_model="on_demand" if model == "on_demand" else "spot",
            currency=CURRENCY,
            amount=format_amount(amount),
            effective_date=effective_date,
            source=source,
            date_basis=date_basis,
        )
        for (slug, region, it, n, model), amount in best.items()
    ]
    out.sort(
        key=lambda r: (
            r.gpu_slug,
            r.provider,
            r.region,
            r.instance_type,
            r.gpus_per_instance,
            r.pricing_model,
        )
    )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ImportReport:
    """Everything an operator needs to judge an import before committing it."""

    provider: str
    records: tuple[PriceRecord, ...]
    errors: tuple[RowError, ...]
    skipped: tuple[SkippedRow, ...]
    issues: tuple[NameIssue, ...]
    hint_overrides: tuple[tuple[str, str, str], ...]
    gpu_rows: int
    non_gpu_rows: int
    duplicate_rows: int

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def unknown_names(self) -> tuple[tuple[str, int], ...]:
        return tuple((i.name, i.offers) for i in self.issues if i.kind == "unknown")

    def skipped_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(s.reason for s in self.skipped).items()))


def import_vms_csv(
    text: str,
    *,
    provider: str,
    effective_date: dt.date,
    source: str,
    indexes: Sequence[Mapping[str, Iterable[AliasEntry]]],
    gpu_memory_mib: Mapping[str, Iterable[int]],
    hints: Iterable[InstanceHint] = (),
    host_rules: Mapping[str, Mapping[int, tuple[str, ...]]] | None = None,
    date_basis: str = "effective",
) -> ImportReport:
    """parse -> collapse zones -> map names -> price records, in one call. With errors, no
    records are returned at all (nothing half-imported). ``host_rules`` defaults to
    :data:`GCP_HOST_RULES` for ``provider == "gcp"``."""
    if host_rules is None and provider == "gcp":
        host_rules = GCP_HOST_RULES
    parsed = parse_vms_csv(text, host_rules=host_rules)
    if not parsed.ok:
        return ImportReport(
            provider, (), parsed.errors, (), (), (), 0, parsed.non_gpu_rows, parsed.duplicate_rows
        )
    offers = collapse_zones(parsed.rows)
    result = map_offers(offers, indexes, provider=provider, gpu_memory_mib=gpu_memory_mib, hints=hints)
    records = price_records(
        result.mapped, provider=provider, effective_date=effective_date, source=source, date_basis=date_basis
    )
    return ImportReport(
        provider=provider,
        records=records,
        errors=(),
        skipped=parsed.skipped,
        issues=result.issues,
        hint_overrides=result.hint_overrides,
        gpu_rows=len(parsed.rows),
        non_gpu_rows=parsed.non_gpu_rows,
        duplicate_rows=parsed.duplicate_rows,
    )
