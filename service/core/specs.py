"""GPU specs as the core sees them, support flags, node shapes, and name normalisation.

Pure: built from the effective catalog document (a plain dict) by :func:`gpu_spec_from_doc`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Support = Literal["yes", "no", "unknown"]
SUPPORT_KEYS: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4")
FORM_FACTORS: tuple[str, ...] = ("pcie", "sxm", "oam")
NVLINK_TOPOLOGIES: tuple[str, ...] = ("switched", "pairwise", "none")
VENDORS: tuple[str, ...] = ("nvidia", "amd", "intel")

# Peak keys in the catalog document, by benchmark precision (DESIGN: dense, FP32 accumulate).
PEAK_KEY_BY_PRECISION: dict[str, str] = {
    "fp32": "fp32_tflops",
    "tf32": "tf32_tflops",
    "amp_fp16": "fp16_tflops",
    "fp16": "fp16_tflops",
    "amp_bf16": "bf16_tflops",
    "bf16": "bf16_tflops",
    "fp8": "fp8_tflops",
    "int8": "int8_tops",
    "int4": "int4_tops",
}
SUPPORT_KEY_BY_PRECISION: dict[str, str] = {
    "fp32": "fp32",
    "tf32": "tf32",
    "amp_fp16": "fp16",
    "fp16": "fp16",
    "amp_bf16": "bf16",
    "bf16": "bf16",
    "fp8": "fp8",
    "int8": "int8",
    "int4": "int4",
}


@dataclass(frozen=True, slots=True)
class NodeShape:
    """How GPUs of this model connect inside a node. Bandwidths per direction, GB/s (1e9 B/s)."""

    nvlink_topology: str = "none"
    nvlink_domain_size: int = 1
    nvlink_per_direction_gb_per_s: float | None = None
    p2p_over_pcie: Support = "unknown"
    pcie_gen: int | None = None
    pcie_lanes: int | None = None

    @property
    def pcie_per_direction_gb_per_s(self) -> float | None:
        """PCIe payload bandwidth per direction: ~0.985 GB/s per lane for gen3 (128b/130b),
        doubling each generation (gen4 ~1.97, gen5 ~3.94 GB/s per lane)."""
        if self.pcie_gen is None or self.pcie_lanes is None or self.pcie_gen < 3:
            return None
        return 0.985 * float(2 ** (self.pcie_gen - 3)) * self.pcie_lanes


@dataclass(frozen=True, slots=True)
class GpuSpec:
    slug: str
    vendor: str
    name: str
    architecture: str | None
    form_factor: str | None
    memory_bytes: int | None
    usable_memory_bytes: int | None
    bandwidth_gb_per_s: float | None
    tdp_w: float | None
    compute_capability: str | None
    peaks: Mapping[str, float | None] = field(default_factory=dict)
    supports: Mapping[str, Support] = field(default_factory=dict)
    node: NodeShape = field(default_factory=NodeShape)

    def peak_for(self, precision: str) -> float | None:
        """Dense peak (TFLOP/s or TOP/s) for a benchmark precision, or None if unsourced."""
        key = PEAK_KEY_BY_PRECISION.get(precision)
        value = None if key is None else self.peaks.get(key)
        return None if value is None else float(value)

    def support_for(self, precision: str) -> Support:
        key = SUPPORT_KEY_BY_PRECISION.get(precision)
        if key is None:
            return "unknown"
        return self.supports.get(key, "unknown")


def gpu_spec_from_doc(doc: Mapping[str, Any]) -> GpuSpec:
    mem = doc.get("memory") or {}
    ic = doc.get("interconnect") or {}
    nv = ic.get("nvlink") or {}
    pcie = ic.get("pcie") or {}
    ident = doc.get("identity") or {}
    power = doc.get("power") or {}
    return GpuSpec(
        slug=doc["slug"],
        vendor=doc["vendor"],
        name=doc["name"],
        architecture=doc.get("architecture"),
        form_factor=doc.get("form_factor"),
        memory_bytes=mem.get("memory_bytes"),
        usable_memory_bytes=mem.get("usable_memory_bytes"),
        bandwidth_gb_per_s=mem.get("bandwidth_gb_per_s"),
        tdp_w=power.get("tdp_w"),
        compute_capability=ident.get("compute_capability"),
        peaks=dict(doc.get("peaks") or {}),
        supports=dict(doc.get("supports") or {}),
        node=NodeShape(
            nvlink_topology=nv.get("topology") or "none",
            nvlink_domain_size=int(nv.get("domain_size") or 1),
            nvlink_per_direction_gb_per_s=nv.get("per_direction_gb_per_s"),
            p2p_over_pcie=ic.get("p2p_over_pcie") or "unknown",
            pcie_gen=pcie.get("gen"),
            pcie_lanes=pcie.get("lanes"),
        ),
    )


# ---- names -------------------------------------------------------------------------------

_MIG_RE = re.compile(r"[-_ ]mig[-_ ]?(\d+g\.\d+gb)$", re.IGNORECASE)
_SHARED_RE = re.compile(r"[-_ ]shared$", re.IGNORECASE)
_VENDOR_PREFIXES = ("nvidia", "tesla", "geforce", "amd", "instinct", "intel", "habana")


def normalise_name(name: str) -> str:
    """Case- and punctuation-insensitive key: lower-case alphanumerics only."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


@dataclass(frozen=True, slots=True)
class ParsedName:
    """A query name with Kubernetes GFD suffixes peeled off (``-SHARED``, ``-MIG-1g.10gb``)."""

    base: str
    shared: bool = False
    mig_profile: str | None = None

    @property
    def keys(self) -> list[str]:
        """Normalised lookup keys, most specific first: as given, then without vendor words."""
        k = normalise_name(self.base)
        out = [k]
        stripped = k
        changed = True
        while changed:
            changed = False
            for p in _VENDOR_PREFIXES:
                if stripped.startswith(p) and len(stripped) > len(p):
                    stripped = stripped[len(p) :]
                    changed = True
        if stripped != k:
            out.append(stripped)
        return out


def parse_name(name: str) -> ParsedName:
    s = name.strip()
    shared = False
    mig = None
    if _SHARED_RE.search(s):
        shared = True
        s = _SHARED_RE.sub("", s)
    m = _MIG_RE.search(s)
    if m:
        mig = m.group(1).lower()
        s = s[: m.start()]
    return ParsedName(base=s, shared=shared, mig_profile=mig)


@dataclass(frozen=True, slots=True)
class AliasEntry:
    slug: str
    is_default: bool = False


@dataclass(frozen=True, slots=True)
class Resolution:
    """Outcome of resolving a name: ``slugs`` has one element when resolved, several when
    ambiguous (``default_slug`` set if a stated default exists), none when unknown."""

    query: str
    slugs: tuple[str, ...]
    default_slug: str | None = None
    mig_profile: str | None = None
    shared: bool = False
    close_matches: tuple[str, ...] = ()

    @property
    def resolved(self) -> str | None:
        return self.slugs[0] if len(self.slugs) == 1 else None

    @property
    def ambiguous(self) -> bool:
        return len(self.slugs) > 1


def resolve_name(
    query: str, index: Mapping[str, Iterable[AliasEntry]], *, max_close: int = 5
) -> Resolution:
    """Resolve ``query`` against an alias index (normalised alias -> entries).

    Lookup order: the normalised query, then the query without vendor words. Each slug is
    also its own alias, so ``nvidia-h200-sxm`` and ``NVIDIA H200 SXM`` both resolve.
    """
    parsed = parse_name(query)
    for key in parsed.keys:
        entries = list(index.get(key, ()))
        if entries:
            slugs = tuple(sorted({e.slug for e in entries}))
            defaults = sorted({e.slug for e in entries if e.is_default})
            return Resolution(
                query=query,
                slugs=slugs,
                default_slug=defaults[0] if len(slugs) > 1 and len(defaults) == 1 else None,
                mig_profile=parsed.mig_profile,
                shared=parsed.shared,
            )
    close = difflib.get_close_matches(parsed.keys[-1], list(index), n=max_close * 3, cutoff=0.6)
    seen: list[str] = []
    for c in close:
        for e in index[c]:
            if e.slug not in seen:
                seen.append(e.slug)
    return Resolution(query=query, slugs=(), close_matches=tuple(seen[:max_close]))
