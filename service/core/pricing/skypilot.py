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

import ast
import csv
import datetime as dt
import io
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from typing import Literal

from service.core.catalog.specs import AliasEntry, normalise_name, resolve_name

REQUIRED_COLUMNS: tuple[str, ...] = (
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "Price",
    "Region",
)
OPTIONAL_COLUMNS: tuple[str, ...] = ("SpotPrice", "GpuInfo", "AvailabilityZone")
CURRENCY = "USD"
AMOUNT_QUANTUM = Decimal("0.000001")

# GPUs memory evidence is taken from GpuInfo only above this size: SkyPilot's RunPod fetcher
# writes gigabytes into ``SizeInMiB`` (an 80 GB A100 shows as 80), so small values are not MiB.
MIN_PLAUSIBLE_GPU_MIB = 1024
# A GpuInfo memory figure "matches" a catalog GPU within this relative tolerance of its marketed
# or usable memory (AWS reports an A10G's 24 GB as 22,888 MiB: -6.9%).
MEMORY_TOLERANCE = 0.10

# SkyPilot's GCP host table (sky/catalog/gcp_catalog.py, _ACC_INSTANCE_TYPE_DICTS): for these
# accelerators the host VM family is fixed by the accelerator and count.
GCP_HOST_RULES: Mapping[str, Mapping[int, tuple[str, ...]]] = {
    "A100": {
        1: ("a2-highgpu-1g",),
        2: ("a2-highgpu-2g",),
        4: ("a2-highgpu-4g",),
        8: ("a2-highgpu-8g",),
        16: ("a2-megagpu-16g",),
    },
    "A100-80GB": {
        1: ("a2-ultragpu-1g",),
        2: ("a2-ultragpu-2g",),
        4: ("a2-ultragpu-4g",),
        8: ("a2-ultragpu-8g",),
    },
    "L4": {
        1: ("g2-standard-4", "g2-standard-8", "g2-standard-12", "g2-standard-16", "g2-standard-32"),
        2: ("g2-standard-24",),
        4: ("g2-standard-48",),
        8: ("g2-standard-96",),
    },
    "H100": {1: ("a3-highgpu-1g",), 2: ("a3-highgpu-2g",), 4: ("a3-highgpu-4g",), 8: ("a3-highgpu-8g",)},
    "H100-MEGA": {8: ("a3-megagpu-8g",)},
    "H200": {8: ("a3-ultragpu-8g",)},
    "B200": {8: ("a4-highgpu-8g",)},
}

SkipReason = Literal["fractional-gpu", "no-price", "accelerator-without-fixed-host", "no-host-in-zone"]
PricingModel = Literal["on_demand", "spot"]


# ---- parsing -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RowError:
    """A malformed row: ``line`` is the 1-based line in the file (the header is line 1)."""

    line: int
    column: str | None
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" + (f", column {self.column}" if self.column else "")
        return f"{where}: {self.message}"


@dataclass(frozen=True, slots=True)
class SkippedRow:
    line: int
    reason: SkipReason
    detail: str


@dataclass(frozen=True, slots=True)
class VmRow:
    """One zone's offer of one instance shape with a whole number of accelerators."""

    line: int
    instance_type: str
    accelerator_name: str
    gpus_per_instance: int
    vcpus: float | None
    memory_gib: float | None
    region: str
    zone: str | None
    on_demand: Decimal | None
    spot: Decimal | None
    gpu_memory_mib: int | None
    gpu_info_name: str | None


@dataclass(frozen=True, slots=True)
class ParseResult:
    rows: tuple[VmRow, ...]
    skipped: tuple[SkippedRow, ...]
    errors: tuple[RowError, ...]
    non_gpu_rows: int
    duplicate_rows: int

    @property
    def ok(self) -> bool:
        return not self.errors


@dataclass(frozen=True, slots=True)
class _HostRow:
    line: int
    vcpus: float | None
    memory_gib: float | None
    on_demand: Decimal | None
    spot: Decimal | None


def parse_vms_csv(
    text: str,
    *,
    host_rules: Mapping[str, Mapping[int, tuple[str, ...]]] | None = None,
) -> ParseResult:
    """Parse a SkyPilot ``vms.csv``. ``host_rules`` (e.g. :data:`GCP_HOST_RULES`) says how
    GPU-only rows join their host VM; without it GPU-only rows are skipped."""
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return ParseResult((), (), (RowError(1, None, "empty file: no header row"),), 0, 0)
    except csv.Error as e:
        return ParseResult((), (), (RowError(1, None, f"unreadable CSV header: {e}"),), 0, 0)
    header = [h.strip().lstrip("\ufeff") for h in header]
    col = {name: i for i, name in enumerate(header)}
    missing = [c for c in REQUIRED_COLUMNS if c not in col]
    dupes = sorted(c for c, n in Counter(header).items() if n > 1 and c)
    errors: list[RowError] = [RowError(1, c, "missing required column") for c in missing]
    errors += [RowError(1, c, "column appears more than once") for c in dupes]
    if errors:
        return ParseResult((), (), tuple(errors), 0, 0)

    host_types = {h for per_count in (host_rules or {}).values() for hs in per_count.values() for h in hs}
    rows: list[VmRow] = []
    attachments: list[VmRow] = []
    hosts: dict[tuple[str, str, str | None], _HostRow] = {}
    skipped: list[SkippedRow] = []
    seen: set[tuple[str, ...]] = set()
    non_gpu = duplicates = 0
    while True:
        try:
            raw = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            errors.append(RowError(reader.line_num, None, f"unreadable CSV row: {e}"))
            break
        line = reader.line_num
        if not raw or all(not c.strip() for c in raw):
            continue
        if len(raw) != len(header):
            errors.append(RowError(line, None, f"expected {len(header)} fields, found {len(raw)}"))
            continue
        key = tuple(raw)
        if key in seen:
            duplicates += 1
            continue
        seen.add(key)

        def cell(name: str, raw: list[str] = raw) -> str:
            i = col.get(name)
            return raw[i].strip() if i is not None else ""

        row_errors: list[RowError] = []
        instance_type = cell("InstanceType")
        acc = cell("AcceleratorName")
        region = cell("Region")
        zone = cell("AvailabilityZone") or None
        vcpus = _optional_float(cell("vCPUs"), line, "vCPUs", row_errors)
        mem = _optional_float(cell("MemoryGiB"), line, "MemoryGiB", row_errors)
        price = _optional_price(cell("Price"), line, "Price", row_errors)
        spot = _optional_price(cell("SpotPrice"), line, "SpotPrice", row_errors)
        if not region:
            row_errors.append(RowError(line, "Region", "empty region"))

        if not acc:
            # A non-GPU instance; kept aside only when it is a fixed host of a GPU-only row.
            if not row_errors and instance_type in host_types:
                hosts[(instance_type, region, zone)] = _HostRow(line, vcpus, mem, price, spot)
            else:
                non_gpu += 1
            errors.extend(row_errors)
            continue

        count_text = cell("AcceleratorCount")
        count_f = _optional_float(count_text, line, "AcceleratorCount", row_errors)
        if count_f is None and not any(e.column == "AcceleratorCount" for e in row_errors):
            row_errors.append(RowError(line, "AcceleratorCount", "empty accelerator count on a GPU row"))
        if count_f is not None and count_f <= 0:
            row_errors.append(RowError(line, "AcceleratorCount", f"must be > 0, got {count_text!r}"))
        if row_errors:
            errors.extend(row_errors)
            continue
        assert count_f is not None
        if count_f != int(count_f):
            skipped.append(
                SkippedRow(line, "fractional-gpu", f"{instance_type or acc}: {count_text} x {acc}")
            )
            continue
        if price is None and spot is None:
            skipped.append(SkippedRow(line, "no-price", f"{instance_type or acc} in {region}"))
            continue
        mib, info_name = parse_gpu_info(cell("GpuInfo"))
        vm = VmRow(
            line=line,
            instance_type=instance_type,
            accelerator_name=acc,
            gpus_per_instance=int(count_f),
            vcpus=vcpus,
            memory_gib=mem,
            region=region,
            zone=zone,
            on_demand=price,
            spot=spot,
            gpu_memory_mib=mib,
            gpu_info_name=info_name,
        )
        (rows if instance_type else attachments).append(vm)

    joined, join_skips = _join_hosts(attachments, hosts, host_rules or {})
    rows += joined
    skipped += join_skips
    if errors:
        return ParseResult((), (), tuple(errors), non_gpu, duplicates)
    rows.sort(key=lambda r: (r.instance_type, r.accelerator_name, r.region, r.zone or "", r.line))
    skipped.sort(key=lambda s: (s.line, s.reason))
    return ParseResult(tuple(rows), tuple(skipped), (), non_gpu + len(hosts), duplicates)


def _join_hosts(
    attachments: list[VmRow],
    hosts: Mapping[tuple[str, str, str | None], _HostRow],
    rules: Mapping[str, Mapping[int, tuple[str, ...]]],
) -> tuple[list[VmRow], list[SkippedRow]]:
    out: list[VmRow] = []
    skips: list[SkippedRow] = []
    for a in attachments:
        host_types = rules.get(a.accelerator_name, {}).get(a.gpus_per_instance)
        if not host_types:
            skips.append(
                SkippedRow(
                    a.line,
                    "accelerator-without-fixed-host",
                    f"{a.gpus_per_instance} x {a.accelerator_name} in {a.zone or a.region}: "
                    "attaches to a host VM of any size",
                )
            )
            continue
        found = False
        for ht in host_types:
            h = hosts.get((ht, a.region, a.zone))
            if h is None:
                continue
            found = True
            on_demand = (
                a.on_demand + h.on_demand if a.on_demand is not None and h.on_demand is not None else None
            )
            spot = a.spot + h.spot if a.spot is not None and h.spot is not None else None
            if on_demand is None and spot is None:
                skips.append(
                    SkippedRow(
                        a.line,
                        "no-price",
                        f"{a.gpus_per_instance} x {a.accelerator_name} on {ht} in {a.zone or a.region}: "
                        "the GPU and its host have no price in common (on-demand or spot)",
                    )
                )
                continue
            out.append(
                VmRow(
                    line=a.line,
                    instance_type=ht,
                    accelerator_name=a.accelerator_name,
                    gpus_per_instance=a.gpus_per_instance,
                    vcpus=h.vcpus,
                    memory_gib=h.memory_gib,
                    region=a.region,
                    zone=a.zone,
                    on_demand=on_demand,
                    spot=spot,
                    gpu_memory_mib=a.gpu_memory_mib,
                    gpu_info_name=a.gpu_info_name,
                )
            )
        if not found:
            skips.append(
                SkippedRow(
                    a.line,
                    "no-host-in-zone",
                    f"{a.gpus_per_instance} x {a.accelerator_name} in {a.zone or a.region}: "
                    f"no {'/'.join(host_types)} row in that zone",
                )
            )
    return out, skips


def _optional_float(text: str, line: int, column: str, errors: list[RowError]) -> float | None:
    if not text:
        return None
    try:
        v = float(text)
    except ValueError:
        errors.append(RowError(line, column, f"not a number: {text!r}"))
        return None
    if not math.isfinite(v):
        errors.append(RowError(line, column, f"not a finite number: {text!r}"))
        return None
    if v < 0:
        errors.append(RowError(line, column, f"negative: {text!r}"))
        return None
    return v


def _optional_price(text: str, line: int, column: str, errors: list[RowError]) -> Decimal | None:
    if not text:
        return None
    try:
        d = Decimal(text)
    except InvalidOperation:
        errors.append(RowError(line, column, f"not a number: {text!r}"))
        return None
    if not d.is_finite():
        errors.append(RowError(line, column, f"not a finite number: {text!r}"))
        return None
    if d < 0:
        errors.append(RowError(line, column, f"negative price: {text!r}"))
        return None
    if d == 0:
        # SkyPilot writes 0.0 where it has no price (GCP's a4-highgpu-8g host rows): a zero is
        # "no price", never "free".
        return None
    return d


def parse_gpu_info(text: str) -> tuple[int | None, str | None]:
    """``(memory MiB per GPU, GPU name)`` from a SkyPilot ``GpuInfo`` cell, or ``None`` parts.

    The cell is a Python-literal dict (single quotes) on most clouds, JSON on a few:
    ``{'Gpus': [{'Name': 'A100', ..., 'MemoryInfo': {'SizeInMiB': 40960}}], ...}``. It is
    informational: anything unreadable is treated as absent, never as an error.
    """
    if not text:
        return None, None
    doc: object
    try:
        doc = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        try:
            doc = json.loads(text)
        except ValueError:
            return None, None
    if not isinstance(doc, dict):
        return None, None
    gpus = doc.get("Gpus")
    if not isinstance(gpus, list) or not gpus or not isinstance(gpus[0], dict):
        return None, None
    g = gpus[0]
    name = g.get("Name") if isinstance(g.get("Name"), str) else None
    info = g.get("MemoryInfo")
    size = info.get("SizeInMiB") if isinstance(info, dict) else None
    mib = int(size) if isinstance(size, int | float) and not isinstance(size, bool) and size > 0 else None
    return mib, name


def render_vms_csv(rows: Iterable[VmRow]) -> str:
    """A SkyPilot-format ``vms.csv`` holding ``rows`` (one CSV row per zone offer, GpuInfo as a
    Python literal like SkyPilot writes it). ``parse_vms_csv(render_vms_csv(r)).rows`` gives back
    ``r`` except for the line numbers: the round trip the importer is tested on."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(
        (
            "InstanceType",
            "AcceleratorName",
            "AcceleratorCount",
            "vCPUs",
            "MemoryGiB",
            "GpuInfo",
            "Price",
            "SpotPrice",
            "Region",
            "AvailabilityZone",
        )
    )
    for r in rows:
        info = ""
        if r.gpu_memory_mib is not None or r.gpu_info_name is not None:
            g: dict[str, object] = {}
            if r.gpu_info_name is not None:
                g["Name"] = r.gpu_info_name
            g["Count"] = r.gpus_per_instance
            if r.gpu_memory_mib is not None:
                g["MemoryInfo"] = {"SizeInMiB": r.gpu_memory_mib}
            info = repr({"Gpus": [g]})
        w.writerow(
            (
                r.instance_type,
                r.accelerator_name,
                r.gpus_per_instance,
                "" if r.vcpus is None else r.vcpus,
                "" if r.memory_gib is None else r.memory_gib,
                info,
                "" if r.on_demand is None else r.on_demand,
                "" if r.spot is None else r.spot,
                r.region,
                r.zone or "",
            )
        )
    return out.getvalue()


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
