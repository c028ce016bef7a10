"""Parsing SkyPilot ``vms.csv`` text into rows (step 1 of :mod:`service.core.pricing.skypilot`,
which re-exports every name here): columns, GCP host joins, ``GpuInfo``, row errors. Pure."""

from __future__ import annotations

import ast
import csv
import io
import json
import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

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
    header, errors = _read_header(reader)
    if errors:
        return ParseResult((), (), tuple(errors), 0, 0)
    col = {name: i for i, name in enumerate(header)}

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

        got = _gpu_vm_row(cell, line, instance_type, acc, region, zone, vcpus, mem, price, spot, row_errors)
        if got is None:
            errors.extend(row_errors)
        elif isinstance(got, SkippedRow):
            skipped.append(got)
        else:
            (rows if instance_type else attachments).append(got)

    joined, join_skips = _join_hosts(attachments, hosts, host_rules or {})
    rows += joined
    skipped += join_skips
    if errors:
        return ParseResult((), (), tuple(errors), non_gpu, duplicates)
    rows.sort(key=lambda r: (r.instance_type, r.accelerator_name, r.region, r.zone or "", r.line))
    skipped.sort(key=lambda s: (s.line, s.reason))
    return ParseResult(tuple(rows), tuple(skipped), (), non_gpu + len(hosts), duplicates)


def _read_header(reader: Iterator[list[str]]) -> tuple[list[str], list[RowError]]:
    """The header's column names (BOM and spaces stripped), or why the file cannot be read:
    every missing or repeated column is named at once, so one fix round suffices."""
    try:
        header = next(reader)
    except StopIteration:
        return [], [RowError(1, None, "empty file: no header row")]
    except csv.Error as e:
        return [], [RowError(1, None, f"unreadable CSV header: {e}")]
    header = [h.strip().lstrip("\ufeff") for h in header]
    col = {name: i for i, name in enumerate(header)}
    missing = [c for c in REQUIRED_COLUMNS if c not in col]
    dupes = sorted(c for c, n in Counter(header).items() if n > 1 and c)
    errors: list[RowError] = [RowError(1, c, "missing required column") for c in missing]
    errors += [RowError(1, c, "column appears more than once") for c in dupes]
    return header, errors


def _gpu_vm_row(
    cell: Callable[[str], str],
    line: int,
    instance_type: str,
    acc: str,
    region: str,
    zone: str | None,
    vcpus: float | None,
    mem: float | None,
    price: Decimal | None,
    spot: Decimal | None,
    row_errors: list[RowError],
) -> VmRow | SkippedRow | None:
    """One GPU row: the VM, or why it is skipped (fractional GPU, no price), or None when
    ``row_errors`` (appended to here) says why it is wrong."""
    count_text = cell("AcceleratorCount")
    count_f = _optional_float(count_text, line, "AcceleratorCount", row_errors)
    if count_f is None and not any(e.column == "AcceleratorCount" for e in row_errors):
        row_errors.append(RowError(line, "AcceleratorCount", "empty accelerator count on a GPU row"))
    if count_f is not None and count_f <= 0:
        row_errors.append(RowError(line, "AcceleratorCount", f"must be > 0, got {count_text!r}"))
    if row_errors:
        return None
    assert count_f is not None
    if count_f != int(count_f):
        return SkippedRow(line, "fractional-gpu", f"{instance_type or acc}: {count_text} x {acc}")
    if price is None and spot is None:
        return SkippedRow(line, "no-price", f"{instance_type or acc} in {region}")
    mib, info_name = parse_gpu_info(cell("GpuInfo"))
    return VmRow(
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
