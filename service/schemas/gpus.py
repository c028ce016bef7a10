"""Wire models for the GPU catalog: the catalog document (shipped files and admin writes use
the same schema) and the API envelopes around it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from service.core.catalog import records as core
from service.schemas.common import (
    ByteCount,
    DataVersion,
    JsonInt,
    NonNegativeInt32,
    RequestModel,
    SafeStr,
    SaneDate,
    UtcDatetime,
    Warning_,
    bounded_decimal,
    physical,
)

Support = Literal["yes", "no", "unknown"]
SLUG_PATTERN = r"^[a-z0-9]+(?:-[a-z0-9.]+)*$"
SOURCE_KINDS = (
    "vendor-datasheet",
    "vendor-brief",
    "oem-sheet",
    "cloud-doc",
    "whitepaper",
    "measured",
    "pci-ids",
    "derived",
)
SourceGroup = Literal["memory", "peaks", "power", "identity", "interconnect", "usable_memory", "compute"]


class _Strict(RequestModel):
    """Catalog documents: unknown members refused, JSON types as the schema states them."""


Text = Annotated[SafeStr, Field(max_length=2000)]
"""A descriptive text of a catalog document (kept in a JSON column)."""
Tflops = Annotated[float, physical(0, 1e6)]
"""A per-device peak in TFLOP/s (or TOPS): the largest shipping part is below 1e4."""


class Memory(_Strict):
    marketed: Text | None = Field(default=None, description="the datasheet's figure, e.g. '141 GB HBM3e'")
    type: Text | None = None
    memory_bytes: ByteCount | None = Field(default=None, description="physical memory, bytes")
    usable_memory_bytes: ByteCount | None = Field(
        default=None, description="what the driver reports with default ECC (nvidia-smi total), bytes"
    )
    bandwidth_gb_per_s: Annotated[float, physical(0, 1e6)] | None = None
    bus_width_bits: NonNegativeInt32 | None = None
    ecc: Support = "unknown"


class Compute(_Strict):
    sm_count: NonNegativeInt32 | None = None
    cuda_cores: NonNegativeInt32 | None = None
    tensor_cores: NonNegativeInt32 | None = None
    boost_clock_mhz: Annotated[float, physical(0, 1e5)] | None = None


class Peaks(_Strict):
    """Dense, per device, FP32 accumulate (sparse figures halved)."""

    fp64_tflops: Tflops | None = None
    fp64_tensor_tflops: Tflops | None = None
    fp32_tflops: Tflops | None = None
    tf32_tflops: Tflops | None = None
    bf16_tflops: Tflops | None = None
    fp16_tflops: Tflops | None = None
    fp8_tflops: Tflops | None = None
    fp4_tflops: Tflops | None = None  # NVFP4 on Blackwell, MXFP4 on CDNA 4
    int8_tops: Tflops | None = None
    int4_tops: Tflops | None = None


class Supports(_Strict):
    fp32: Support = "unknown"
    tf32: Support = "unknown"
    bf16: Support = "unknown"
    fp16: Support = "unknown"
    fp8: Support = "unknown"
    fp4: Support = Field(
        default="unknown",
        description="FP4 tensor cores (NVFP4 on Blackwell, MXFP4 on Blackwell and CDNA 4): 4-bit weights "
        "and activations run natively, not dequantised",
    )
    int8: Support = "unknown"
    int4: Support = "unknown"


class Identity(_Strict):
    compute_capability: str | None = Field(default=None, pattern=r"^\d{1,3}\.\d{1,3}$")
    pci_vendor_id: str | None = Field(default=None, pattern=r"^0x[0-9a-f]{4}$")
    pci_device_ids: list[Annotated[str, Field(pattern=r"^0x[0-9a-f]{4}$")]] = Field(
        default_factory=list, max_length=256
    )

    @field_validator("pci_device_ids")
    @classmethod
    def _pci(cls, v: list[str]) -> list[str]:
        import re

        for x in v:
            if not re.fullmatch(r"0x[0-9a-f]{4}", x):
                raise ValueError(f"PCI device id must look like 0x2335 (lower-case hex), got {x!r}")
        return v


class NvLink(_Strict):
    topology: Literal["switched", "pairwise", "none"] = "none"
    domain_size: JsonInt | None = Field(default=None, ge=1, le=100_000)
    per_direction_gb_per_s: Annotated[float, physical(0, 1e6)] | None = None
    version: Text | None = None


class Pcie(_Strict):
    gen: JsonInt | None = Field(default=None, ge=1, le=7)
    lanes: JsonInt | None = Field(default=None, ge=1, le=32)


class Interconnect(_Strict):
    nvlink: NvLink = Field(default_factory=NvLink)
    p2p_over_pcie: Support = "unknown"
    pcie: Pcie = Field(default_factory=Pcie)
    note: Text | None = None


class Power(_Strict):
    tdp_w: Annotated[float, physical(0, 1e5)] | None = None
    configurable_min_w: Annotated[float, physical(0, 1e5)] | None = None


class AliasIn(_Strict):
    name: SafeStr = Field(min_length=1, max_length=200)
    kind: Literal["nvml", "gfd", "skypilot", "short", "other"]
    default: bool = False


_GROUP_FIELDS: dict[str, tuple[str, ...]] = {
    "memory": ("memory.memory_bytes", "memory.bandwidth_gb_per_s"),
    "usable_memory": ("memory.usable_memory_bytes",),
    "peaks": tuple(f"peaks.{k}" for k in Peaks.model_fields),
    "power": ("power.tdp_w",),
    "compute": ("compute.sm_count", "compute.cuda_cores", "compute.tensor_cores", "compute.boost_clock_mhz"),
}


class Alternative(_Strict):
    """The same derivation from another sibling whose per-SM, per-clock rate differs: the
    estimator's band for a derived figure spans both values."""

    sibling: str = Field(pattern=SLUG_PATTERN, max_length=100, description="slug of the alternative sibling")
    values: dict[Annotated[SafeStr, Field(max_length=64)], Tflops] = Field(
        min_length=1,
        description="figure key (within the source's group) -> value derived from the alternative sibling",
    )

    @field_validator("values")
    @classmethod
    def _non_negative(cls, v: dict[str, float]) -> dict[str, float]:
        for key, value in v.items():
            if value < 0:
                raise ValueError(f"alternative value for {key!r} must be >= 0")
        return v


CATALOG_SOURCES = "catalog_sources"
"""The error type of the provenance rules of a GPU document (a figure needs a source of its
group; a derived source names its sibling, figures and derivation): cross-field rules the
schema states in words (``x-domain-rules``), not in JSON Schema."""


def _rule(message: str) -> PydanticCustomError:
    return PydanticCustomError(CATALOG_SOURCES, "{rule}", {"rule": message})


class Source(_Strict):
    group: SourceGroup
    title: Text
    url: Text | None = None
    source_kind: Literal[
        "vendor-datasheet",
        "vendor-brief",
        "oem-sheet",
        "cloud-doc",
        "whitepaper",
        "measured",
        "pci-ids",
        "derived",
    ]
    note: Text | None = None
    figures: list[Annotated[SafeStr, Field(max_length=64)]] | None = Field(
        default=None,
        description="the figure keys of this group (e.g. 'bf16_tflops') the source covers; required when derived",
    )
    derived_from: str | None = Field(
        default=None,
        pattern=SLUG_PATTERN,
        max_length=100,
        description="derived only: slug of the sibling whose documented per-SM, per-clock rate was used",
    )
    alternative: Alternative | None = Field(
        default=None,
        description="derived only: the value(s) an alternative sibling with a different rate gives",
    )

    @model_validator(mode="after")
    def _derivation(self) -> Source:
        if self.figures is not None:
            allowed = {path.split(".", 1)[1] for path in _GROUP_FIELDS.get(self.group, ())}
            unknown = [f for f in self.figures if f not in allowed]
            if not self.figures or unknown:
                raise _rule(
                    f"figures must name keys of group {self.group!r} ({sorted(allowed) or 'none'}), got {self.figures!r}"
                )
        if self.source_kind != "derived":
            if self.derived_from is not None or self.alternative is not None:
                raise _rule("derived_from and alternative belong to source_kind 'derived' only")
            return self
        if not self.derived_from:
            raise _rule("a derived source must name the sibling it was derived from (derived_from)")
        if not self.figures:
            raise _rule("a derived source must list the figures it derived (figures)")
        if not self.note or not self.note.strip():
            raise _rule("a derived source must show its derivation in note")
        if self.alternative is not None:
            if self.alternative.sibling == self.derived_from:
                raise _rule("the alternative sibling must differ from derived_from")
            extra = [k for k in self.alternative.values if k not in self.figures]
            if extra:
                raise _rule(
                    f"alternative values {extra!r} are not among the derived figures {self.figures!r}"
                )
        return self


class DerivedFigure(BaseModel):
    """One derived catalog figure and the range its siblings give (low == high: one sibling)."""

    value: float
    low: float
    high: float
    derived_from: str
    alternative_sibling: str | None = None


class GpuDocument(_Strict):
    """One catalog GPU. Every figure group with a non-null figure needs a source."""

    slug: str = Field(pattern=SLUG_PATTERN, max_length=100)
    vendor: Literal["nvidia", "amd", "intel"]
    name: SafeStr = Field(min_length=1, max_length=200)
    architecture: SafeStr | None = Field(default=None, max_length=64)
    chip: Text | None = None
    form_factor: Literal["pcie", "sxm", "oam"]
    market: Text | None = None
    launch_year: JsonInt | None = Field(default=None, ge=2000, le=2100)
    memory: Memory = Field(default_factory=Memory)
    compute: Compute = Field(default_factory=Compute)
    peaks: Peaks = Field(default_factory=Peaks)
    supports: Supports = Field(default_factory=Supports)
    identity: Identity = Field(default_factory=Identity)
    interconnect: Interconnect = Field(default_factory=Interconnect)
    power: Power = Field(default_factory=Power)
    aliases: list[AliasIn] = Field(default_factory=list, max_length=256)
    sources: list[Source] = Field(default_factory=list, max_length=256)
    notes: SafeStr | None = Field(default=None, max_length=8000)

    @model_validator(mode="after")
    def _sourced(self) -> GpuDocument:
        groups = {s.group for s in self.sources}
        data = self.model_dump()
        for group, paths in _GROUP_FIELDS.items():
            for path in paths:
                section, key = path.split(".")
                if data[section].get(key) is not None and group not in groups:
                    raise _rule(f"{path} has a value but no source with group {group!r}")
        for src in self.sources:
            if src.source_kind != "derived":
                continue
            if src.derived_from == self.slug:
                raise _rule("a derived source cannot be derived from the GPU itself")
            section = _GROUP_FIELDS[src.group][0].split(".")[0]
            for key in src.figures or ():
                if data[section].get(key) is None:
                    raise _rule(f"{section}.{key} is listed as derived but has no value")
        return self

    def derived_figures(self) -> dict[str, DerivedFigure]:
        """Figures computed from a sibling (source_kind ``derived``), keyed by dotted path, with
        the band an estimate must span: the value and, where an alternative sibling with a
        different per-SM rate exists, the alternative value."""
        data = self.model_dump()
        out: dict[str, DerivedFigure] = {}
        for src in self.sources:
            if src.source_kind != "derived" or not src.derived_from:
                continue
            section = _GROUP_FIELDS[src.group][0].split(".")[0]
            for key in src.figures or ():
                value = float(data[section][key])
                alt = src.alternative.values.get(key) if src.alternative else None
                low, high = (value, value) if alt is None else (min(value, alt), max(value, alt))
                out[f"{section}.{key}"] = DerivedFigure(
                    value=value,
                    low=low,
                    high=high,
                    derived_from=src.derived_from,
                    alternative_sibling=src.alternative.sibling
                    if src.alternative and alt is not None
                    else None,
                )
        return out


class GpuOut(GpuDocument):
    """A catalog GPU as served: the effective document plus bookkeeping."""

    model_config = ConfigDict(extra="forbid")
    origin: Literal["catalog", "admin"]
    overridden_fields: list[str] = Field(description="dotted paths an admin override changed")
    revision: int
    catalog_version: str | None
    updated_at: UtcDatetime
    links: dict[str, str] = Field(default_factory=dict)


class GpuAnswer(GpuOut):
    """``GET /v1/gpus/{ident}``: the GPU, plus ``warnings`` when resolving the name assumed
    something (``assumed_variant`` under ``on_ambiguous=default``, a ``-SHARED`` or MIG suffix
    peeled off); absent otherwise."""

    warnings: list[Warning_] | None = Field(
        default=None, description="what resolving the name assumed; absent when nothing"
    )


class GpuList(BaseModel):
    items: list[GpuOut]
    next_cursor: str | None
    count: int
    data_version: DataVersion


class GpuCandidate(BaseModel):
    slug: str
    name: str
    url: str
    default: bool = False


class AmbiguousGpu(BaseModel):
    query: str
    detail: str
    candidates: list[GpuCandidate]
    default: str | None


class GpuPatch(BaseModel):
    """JSON merge patch (RFC 7396) over the effective document; stored in the override layer."""

    model_config = ConfigDict(extra="allow")


if TYPE_CHECKING:
    Amount = Decimal
    Rate = Decimal
else:
    Amount = bounded_decimal(
        max_digits=18,
        decimal_places=6,
        le=Decimal(10**9),
        description="price in `currency` (per hour for hourly models): a JSON number (rounded to 6 places) or a "
        'decimal string such as "0.71"; more than 0, at most 1e9',
    )
    Rate = bounded_decimal(
        max_digits=20,
        decimal_places=10,
        le=Decimal(10**6),
        description="units of `quote` per unit of `base`: a JSON number (rounded to 10 places) or a decimal "
        'string such as "7.1"; more than 0, at most 1e6',
    )


class SuspectReasonOut(BaseModel):
    """Why a price row is not trusted (service/core/pricing/quality.py)."""

    code: Literal[
        "uniform_price_across_gpus", "spot_equals_on_demand", "far_below_median", "far_above_median"
    ]
    detail: str

    @classmethod
    def of(cls, items: Iterable[core.PriceSuspicion]) -> list[SuspectReasonOut]:
        return [cls.model_validate({"code": s.code, "detail": s.detail}) for s in items]


class PriceIn(_Strict):
    provider: SafeStr = Field(min_length=1, max_length=64)
    region: SafeStr = Field(min_length=1, max_length=64)
    instance_type: SafeStr = Field(min_length=1, max_length=100)
    gpus_per_instance: JsonInt = Field(ge=1, le=1024)
    pricing_model: Literal["purchase", "on_demand", "spot", "reserved"]
    currency: Literal["USD", "CNY"]
    amount: Amount
    effective_date: SaneDate
    source: SafeStr = Field(min_length=1, max_length=500)
    is_estimate: bool = True
    date_basis: Literal["effective", "retrieved"] = Field(
        default="effective",
        description="effective: the price was set or quoted on effective_date; retrieved: effective_date is "
        "only when the copy was read, so the price is at least that old (its age is a lower bound)",
    )

    def to_core(self) -> core.PriceEntry:
        return core.PriceEntry(
            provider=self.provider,
            region=self.region,
            instance_type=self.instance_type,
            gpus_per_instance=self.gpus_per_instance,
            pricing_model=self.pricing_model,
            currency=self.currency,
            amount=self.amount,
            effective_date=self.effective_date,
            source=self.source,
            is_estimate=self.is_estimate,
            date_basis=self.date_basis,
        )


class PriceOut(PriceIn):
    model_config = ConfigDict(extra="forbid", strict=False)
    id: int
    gpu_slug: str
    per_gpu_hour: Decimal | None = Field(description="amount / gpus_per_instance for hourly models")
    age_days: int
    stale: bool
    converted: dict[str, Decimal] = Field(
        default_factory=dict, description="amount in other currencies via the FX table"
    )
    fx_date: dt.date | None = None
    age_is_lower_bound: bool = Field(
        default=False, description="true when date_basis is retrieved: the price is at least age_days old"
    )
    suspect: bool = Field(
        default=False,
        description="the row failed a price-quality check; left out of rankings unless allow_suspect_prices",
    )
    suspect_reasons: list[SuspectReasonOut] = Field(default_factory=list)


class PriceList(BaseModel):
    gpu_slug: str
    items: list[PriceOut]
    data_version: DataVersion


class FxRateIn(_Strict):
    """A conversion rate between the two currencies prices use: base and quote differ."""

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [
                {"properties": {"base": {"const": a}, "quote": {"const": b}}}
                for a, b in (("USD", "CNY"), ("CNY", "USD"))
            ]
        }
    )

    base: Literal["USD", "CNY"]
    quote: Literal["USD", "CNY"]
    rate: Rate
    effective_date: SaneDate
    source: SafeStr = Field(min_length=1, max_length=500)

    def to_core(self) -> core.FxRate:
        return core.FxRate(
            base=self.base,
            quote=self.quote,
            rate=self.rate,
            effective_date=self.effective_date,
            source=self.source,
        )
