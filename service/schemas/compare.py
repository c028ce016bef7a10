"""Wire model of ``GET /v1/compare``: GPUs side by side, self-describing for tables and charts.

Every list of per-GPU values (``values``, ``cells``, ``prices``) is in the order of the
``gpus`` column list, which is the order the request named them; ratios and speed-ups are to
the first GPU. Units are in field names or, for generic rows, in ``unit``; every figure says
where it came from (``provenance`` and its source).
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field

from service.schemas.common import DataVersion, Warning_

FigureProvenance = Literal["datasheet", "derived", "measured", "registry", "unsourced"]


class CompareGpu(BaseModel):
    """One compared GPU (a column)."""

    query: str = Field(description="the name as the request gave it")
    slug: str
    name: str
    url: str
    vendor: str
    architecture: str | None
    form_factor: str | None
    warnings: list[Warning_] = Field(default_factory=list, description="what resolving the name assumed")


class SpecFigure(BaseModel):
    """One catalog figure of one GPU. ``provenance``: ``datasheet`` (vendor datasheet, brief,
    whitepaper, OEM sheet or cloud doc: ``source_kind`` says which), ``derived`` (computed from a
    datasheeted sibling: ``derivation`` says how), ``measured`` (e.g. usable memory as the driver
    reports it), ``registry`` (PCI ID registry), ``unsourced`` (``value`` is null: nobody
    publishes it; never guessed)."""

    value: float | int | None
    ratio_to_first: float | None = Field(
        description="value / the first GPU's value; null if either is unknown"
    )
    provenance: FigureProvenance
    source_kind: str | None = None
    source_title: str | None = None
    source_url: str | None = None
    derivation: str | None = None
    marketed: str | None = Field(
        default=None,
        description="the datasheet's own words where it publishes no figure in the row's unit (memory: "
        "'141 GB HBM3e', the enabled part of larger HBM stacks, so no byte count is stated; the usable "
        "row is the figure fits are decided on)",
    )


class SpecRow(BaseModel):
    """One figure across the compared GPUs."""

    key: str = Field(description="stable id, unit in the name: 'bf16_tflops', 'usable_memory_gib'")
    label: str
    group: str = Field(description="catalog figure group: memory, peaks, compute, power, interconnect")
    unit: str
    higher_is_better: bool
    values: list[SpecFigure]
    differs: bool = Field(description="not every GPU has the same value")


class CapabilityRow(BaseModel):
    """A categorical capability across the GPUs (support flags are yes | no | unknown)."""

    key: str
    label: str
    values: list[str | int | None]
    differs: bool


class ResultCell(BaseModel):
    """One GPU's figure for one workload configuration.

    ``source``: ``measurement`` (the latest-measured view of this GPU's cell), ``estimate`` (the
    estimator, ``provenance`` as ``/v1/estimate`` labels it: interpolated, transferred,
    published, derived or spec), or ``none`` (``reason`` says why there is no figure)."""

    source: Literal["measurement", "estimate", "none"]
    value: float | None = Field(description="median (measurement) or central estimate, in the row's unit")
    low: float | None = Field(default=None, description="p10 (measurement) or band low (estimate)")
    high: float | None = Field(default=None, description="p90 (measurement) or band high (estimate)")
    provenance: str | None = None
    oom: bool = Field(
        default=False, description="measured out of memory (on evidence that counts), or estimated not to fit"
    )
    thin: bool = Field(
        default=False, description="measured, but the chosen stack has fewer than k usable results"
    )
    count: int | None = Field(default=None, description="usable results behind a measurement")
    speedup_vs_first: float | None = Field(
        default=None, description="this value / the first GPU's (for lower-is-better metrics: first / this)"
    )
    fingerprint_hash: str | None = None
    newest_measured_at: dt.datetime | None = None
    source_gpus: list[str] = Field(default_factory=list, description="GPUs an estimate was transferred from")
    reason: str | None = None


class ResultRow(BaseModel):
    """One workload configuration (a benchmark cell) across the GPUs."""

    workload: str
    parameters: dict[str, Any]
    parameters_hash: str
    metric: str
    unit: str
    higher_is_better: bool
    cells: list[ResultCell]
    common_stack: bool | None = Field(
        description="the measured GPUs' figures come from one software stack (driver, CUDA, torch, ... "
        "equal); false: they had to be mixed; null: fewer than two GPUs measured"
    )
    stack: dict[str, Any] | None = Field(
        default=None, description="the common software stack, when there is one"
    )


class ProviderPrice(BaseModel):
    """The cheapest shape of one provider, per GPU-hour of a whole instance."""

    provider: str
    region: str
    instance_type: str
    gpus_per_instance: int
    pricing_model: str
    currency: str
    per_gpu_hour: float = Field(description="per GPU-hour, in `currency`")
    per_instance_hour: float = Field(description="per instance-hour, in `currency`")
    effective_date: dt.date
    age_days: int
    stale: bool
    fx_date: dt.date | None = Field(description="the FX rate's date when converted, else null")
    price_row_ids: list[int]
    source: str


class GpuPrices(BaseModel):
    """Cheapest on-demand price per provider of one GPU; ``reason`` ``NO_PRICE`` when no row
    prices it (a price is never invented)."""

    slug: str
    cheapest_per_gpu_hour: float | None = Field(
        description="the lowest per-GPU-hour figure over providers, in `currency`"
    )
    ratio_to_first: float | None
    providers: list[ProviderPrice]
    reason: str | None = None


class CompareOut(BaseModel):
    gpus: list[CompareGpu]
    specs: list[SpecRow]
    capabilities: list[CapabilityRow]
    results: list[ResultRow]
    currency: Literal["USD", "CNY"]
    pricing_model: Literal["on_demand"] = "on_demand"
    prices: list[GpuPrices]
    stale_after_days: int
    as_of: dt.datetime
    data_version: DataVersion
    notes: list[str] = Field(default_factory=list)
