"""GPU specs as the core sees them, support flags, node shapes, and name normalisation.

Pure: built from the effective catalog document (a plain dict) by :func:`gpu_spec_from_doc`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from service.core.catalog.precision import PEAK_KEY, SUPPORT_KEY
from service.core.errors import MissingFigure

Support = Literal["yes", "no", "unknown"]
SUPPORT_KEYS: tuple[str, ...] = ("fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "int4")
FORM_FACTORS: tuple[str, ...] = ("pcie", "sxm", "oam")
NVLINK_TOPOLOGIES: tuple[str, ...] = ("switched", "pairwise", "none")
VENDORS: tuple[str, ...] = ("nvidia", "amd", "intel")
RDMA_NETWORK_KINDS: frozenset[str] = frozenset({"efa", "infiniband", "roce", "yes"})
"""An instance's or pool's inter-node network kinds NCCL runs over RDMA (EFA through
aws-ofi-nccl); any other, or none stated, is NCCL's sockets."""


@dataclass(frozen=True, slots=True)
class NodeShape:
    """How GPUs of this model connect inside a node. Bandwidths per direction, GB/s (1e9 B/s).
    Unknown stays unknown: ``pcie_gen``/``pcie_lanes`` are ``None`` when unsourced."""

    nvlink_topology: str = "none"
    nvlink_domain_size: int = 1
    nvlink_per_direction_gb_per_s: float | None = None
    p2p_over_pcie: Support = "unknown"
    pcie_gen: int | None = None
    pcie_lanes: int | None = None

    @property
    def pcie_per_direction_gb_per_s(self) -> float | None:
        """PCIe payload bandwidth per direction: ~0.985 GB/s per lane for gen3 (128b/130b),
        doubling each generation (gen4 ~1.97, gen5 ~3.94 GB/s per lane); ``None`` if unsourced."""
        if self.pcie_gen is None or self.pcie_lanes is None or self.pcie_gen < 3:
            return None
        return 0.985 * float(2 ** (self.pcie_gen - 3)) * self.pcie_lanes


def normalise_architecture(name: str | None) -> str:
    """``"Ada Lovelace"`` -> ``"ada"``, ``"Hopper"`` -> ``"hopper"``, ``"CDNA 3"`` -> ``"cdna3"``:
    the family key calibration transfer compares."""
    if not name:
        return "unknown"
    s = name.strip().lower().replace("lovelace", "").replace(" ", "").replace("-", "")
    return s or "unknown"


_FABRICS: Final[dict[str, str]] = {"nvidia": "NVLink", "amd": "Infinity Fabric", "intel": "RoCE"}


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU model as the core sees it: the effective catalog document's figures.

    ``peaks`` holds only sourced dense peaks, keyed by :data:`~service.core.catalog.precision.PEAK_KEY`
    values (``fp32``, ``tf32``, ``bf16``, ``fp16``, ``fp8``, ``int8``, ``int4``, ``fp64``):
    TFLOP/s for floating point, TOP/s for integers. A figure nobody sourced is absent, never
    guessed; :meth:`require_peak` raises :class:`~service.core.errors.MissingFigure` for it.
    """

    slug: str
    vendor: str = "nvidia"
    name: str = ""
    architecture: str | None = None
    form_factor: str | None = None
    memory_bytes: int | None = None
    usable_memory_bytes: int | None = None
    bandwidth_gb_per_s: float | None = None
    tdp_w: float | None = None
    compute_capability: str | None = None
    peaks: Mapping[str, float] = field(default_factory=dict)
    supports: Mapping[str, Support] = field(default_factory=dict)
    node: NodeShape = field(default_factory=NodeShape)
    peak_ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Derived peaks (catalog source kind ``derived``), keyed like ``peaks``: the (low, high)
    range spanning the primary value and an alternative sibling's (equal when there is none).
    An estimate whose time depends on one says so and its band spans the range."""
    bandwidth_range: tuple[float, float] | None = None
    """The same for a derived memory bandwidth (None when the bandwidth is sourced)."""
    derivations: Mapping[str, str] = field(default_factory=dict)
    """Derived figure (peak key, or ``bandwidth``) -> how it was derived: the sibling, the
    catalog source's title and the alternative sibling's value."""
    family: str = field(default="", compare=False)
    """Normalised architecture (``hopper``, ``ada``, ``ampere``...), derived from
    ``architecture`` on construction."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "family", normalise_architecture(self.architecture))

    def peak_for(self, precision: str) -> float | None:
        """Dense peak (TFLOP/s or TOP/s) a benchmark precision runs at, or None if unsourced."""
        key = PEAK_KEY.get(precision, precision)
        value = self.peaks.get(key)
        return None if value is None or value <= 0 else float(value)

    def require_peak(self, precision: str) -> float:
        v = self.peak_for(precision)
        if v is None:
            raise MissingFigure(self.slug, f"{PEAK_KEY.get(precision, precision)} peak")
        return v

    def derived_peak(self, precision: str) -> str | None:
        """The derivation of the peak ``precision`` runs at, when that peak is derived."""
        return self.derivations.get(PEAK_KEY.get(precision, precision))

    def require_bandwidth(self) -> float:
        if not self.bandwidth_gb_per_s:
            raise MissingFigure(self.slug, "memory bandwidth")
        return float(self.bandwidth_gb_per_s)

    def support_for(self, precision: str) -> Support:
        key = SUPPORT_KEY.get(precision)
        if key is None:
            return "unknown"
        return self.supports.get(key, "unknown")

    @property
    def scale_up_fabric(self) -> str:
        """What the vendor calls the GPU-to-GPU fabric inside a node or rack: NVLink, AMD's
        Infinity Fabric (xGMI), the RoCE ports integrated on Gaudi."""
        return _FABRICS.get(self.vendor, "NVLink")

    def scale_up_gb_per_s(self, ranks: int, span: int | None = None) -> float | None:
        """Per-direction bandwidth each GPU of a group of ``ranks`` in one node gets over its
        NVLink (or Infinity Fabric, or Gaudi's RoCE mesh); None where the group spans (``span``
        GPUs, the group's own size unless strided) more than the domain, or nothing is sourced.
        A switch gives every GPU its whole figure whatever the group. An OAM baseboard is a full
        mesh: the catalog's figure is the sum of one link to each of the other ``domain - 1``
        GPUs (AMD's 8-OAM platform: 7 x 64 GB/s per direction; Gaudi: 3 ports per peer), so a
        group of ``ranks`` reaches its peers over ``ranks - 1`` of them."""
        node = self.node
        bw, domain = node.nvlink_per_direction_gb_per_s, node.nvlink_domain_size
        if node.nvlink_topology == "none" or not bw or max(ranks, span or 0) > max(domain, 1):
            return None
        if self.form_factor == "oam" and node.nvlink_topology == "pairwise" and domain > 1:
            return bw * (max(ranks, 2) - 1) / (domain - 1)
        return bw

    @property
    def fit_memory_bytes(self) -> int | None:
        """Memory a fit is decided against: the driver-reported usable figure, else the
        physical one (optimistic; answers say so), else None."""
        return self.usable_memory_bytes or self.memory_bytes


def _peaks_from_doc(peaks: Mapping[str, Any]) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in peaks.items():
        if v is not None:
            out[k.removesuffix("_tflops").removesuffix("_tops")] = float(v)
    return out


def _derived(
    doc: Mapping[str, Any],
) -> tuple[dict[str, tuple[float, float]], tuple[float, float] | None, dict[str, str]]:
    """Peak ranges, bandwidth range and derivation texts from the document's ``derived`` sources
    (the plain-data twin of ``GpuDocument.derived_figures()``)."""
    ranges: dict[str, tuple[float, float]] = {}
    bandwidth: tuple[float, float] | None = None
    texts: dict[str, str] = {}
    for src in doc.get("sources") or ():
        if src.get("source_kind") != "derived" or not src.get("derived_from"):
            continue
        group = src.get("group")
        section = doc.get("peaks") if group == "peaks" else doc.get("memory") if group == "memory" else None
        if not section:
            continue
        alt = src.get("alternative") or {}
        for key in src.get("figures") or ():
            value = section.get(key)
            if value is None or (group == "memory" and key != "bandwidth_gb_per_s"):
                continue
            other = (alt.get("values") or {}).get(key)
            lo, hi = (float(value), float(value)) if other is None else (min(value, other), max(value, other))
            text = f"derived from {src['derived_from']} at an equal per-SM, per-clock rate"
            if src.get("title"):
                text += f" (catalog source: {src['title']})"
            if other is not None:
                text += f"; the alternative sibling {alt.get('sibling')} gives {float(other):g}"
            if group == "memory":
                bandwidth = (lo, hi)
                texts["bandwidth"] = text
            else:
                short = key.removesuffix("_tflops").removesuffix("_tops")
                ranges[short] = (lo, hi)
                texts[short] = text
    return ranges, bandwidth, texts


def gpu_spec_from_doc(doc: Mapping[str, Any]) -> GpuSpec:
    mem = doc.get("memory") or {}
    ic = doc.get("interconnect") or {}
    nv = ic.get("nvlink") or {}
    pcie = ic.get("pcie") or {}
    ident = doc.get("identity") or {}
    power = doc.get("power") or {}
    ranges, bw_range, derivations = _derived(doc)
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
        peaks=_peaks_from_doc(doc.get("peaks") or {}),
        supports=dict(doc.get("supports") or {}),
        node=NodeShape(
            nvlink_topology=nv.get("topology") or "none",
            nvlink_domain_size=int(nv.get("domain_size") or 1),
            nvlink_per_direction_gb_per_s=nv.get("per_direction_gb_per_s"),
            p2p_over_pcie=ic.get("p2p_over_pcie") or "unknown",
            pcie_gen=pcie.get("gen"),
            pcie_lanes=pcie.get("lanes"),
        ),
        peak_ranges=ranges,
        bandwidth_range=bw_range,
        derivations=derivations,
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


def resolve_name(query: str, index: Mapping[str, Iterable[AliasEntry]], *, max_close: int = 5) -> Resolution:
    """Resolve ``query`` against an alias index (normalised alias -> entries).

    Lookup order: the normalised query, then the query without vendor words. Each slug is
    also its own alias, so ``nvidia-h200-sxm`` and ``NVIDIA H200 SXM`` both resolve.
    """
    parsed = parse_name(query)
    for key in parsed.keys:
        entries = list(index.get(key, ()))
        if entries:
            # a slug names its GPU even where it normalises like a family name ("intel-gaudi3"
            # and the family "Gaudi 3"): the list links every GPU by its slug
            exact = [e.slug for e in entries if e.slug == query.strip().lower()]
            slugs = tuple(exact[:1]) or tuple(sorted({e.slug for e in entries}))
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
