"""What a cost answer is made of: the assumptions it rests on (each sourced or argued), the
quotes it returns (rent, purchase, run, TCO) and the machine codes of their notes. Pure data and
two small formulas (:func:`run_cost`, :func:`cost_per_million_tokens`); the price book that makes
quotes is :mod:`service.core.pricing.cost`, which re-exports everything here."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

from service.core.errors import InvalidConfiguration
from service.core.pricing.quality import Suspicion

NO_PRICE = "NO_PRICE"
"""Reason code: no rental price row (of the allowed pricing models and providers) prices the GPU."""
NO_PURCHASE_PRICE = "NO_PURCHASE_PRICE"
"""Reason code: no purchase price row for the GPU, so no TCO."""
NO_POWER_FIGURE = "NO_POWER_FIGURE"
"""Reason code: neither a measured average power nor a TDP, so no energy cost, so no TCO."""

CURRENCIES: tuple[str, ...] = ("USD", "CNY")
RENTAL_MODELS: tuple[str, ...] = ("on_demand", "spot", "reserved")

HOURS_PER_YEAR = 365.25 * 24  # 8,766 h: a Julian year, so leap years average out over an amortisation period

# ---- quote notes (machine codes) -------------------------------------------------------------

PAYS_FOR_IDLE_GPUS = "pays_for_idle_gpus"  # the shape holds more GPUs than the job uses
MULTI_INSTANCE = "multi_instance"  # several instances: the job spans nodes
STALE_PRICE = "stale_price"  # a price row is older than stale_after_days
CURRENCY_CONVERTED = "currency_converted"  # amount converted through the FX table
SPOT_INTERRUPTIBLE = "spot_interruptible"  # spot capacity can be reclaimed mid-run
RESERVED_COMMITMENT = "reserved_commitment"  # reserved/capacity-block rate: needs a commitment
PRICE_IS_ESTIMATE = "price_is_estimate"  # the row is marked an estimate, not a list price
HOST_NOT_INCLUDED = "host_not_included"  # a per-card purchase price: the server is not in the capex
SUSPECT_PRICE = "suspect_price"  # the row failed a price-quality check (quality.py); used only when allowed
PRICE_AGE_LOWER_BOUND = "price_age_lower_bound"  # the row's date is when it was read, not when it was set
CAPEX_FROM_POOL = "capex_from_pool"  # owned GPUs: the purchase price per GPU the inventory pool states
CAPEX_UNKNOWN = "capex_unknown"  # owned GPUs without a purchase price: electricity only
QUOTE_NOTES: tuple[str, ...] = (
    PAYS_FOR_IDLE_GPUS,
    MULTI_INSTANCE,
    STALE_PRICE,
    CURRENCY_CONVERTED,
    SPOT_INTERRUPTIBLE,
    RESERVED_COMMITMENT,
    PRICE_IS_ESTIMATE,
    HOST_NOT_INCLUDED,
    SUSPECT_PRICE,
    PRICE_AGE_LOWER_BOUND,
    CAPEX_FROM_POOL,
    CAPEX_UNKNOWN,
)
"""Every note a quote carries; each has words in every language (``service.api.presenters.notice_words``)."""


# ---- assumptions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CostAssumptions:
    """What a cost answer assumes; every default is sourced or argued here and in docs/prices.md.

    * ``pue`` 1.58: Uptime Institute's industry-average annual PUE for 2023 (Global Data Center
      Survey; "Large data centers are mostly more efficient, analysis confirms", UII Update 221,
      2023-11-23: flat at 1.55-1.59 since 2020). New hyperscale halls reach ~1.1-1.3; pass yours.
    * ``electricity_usd_per_kwh`` 0.10: between the US industrial (~8 c) and commercial (~12-16 c)
      sector averages of EIA Electric Power Monthly table 5.6.B (2024 year to date through July,
      e.g. East North Central 8.10 / 12.22, Middle Atlantic 8.25 / 15.57 c/kWh). Argued, not a
      quote: large sites buy near industrial rates, colocation passes on commercial ones.
    * ``amortisation_years`` 5: the useful life Amazon gives a subset of its servers from
      2025-01-01 (shortened from six years, citing the pace of AI; Amazon.com 2024 annual
      report); GPU generations turn over every ~2 years, so 5 is the longest defensible.
    * ``utilisation`` 0.7: the share of owned GPU-hours doing the work being costed. Argued, not
      sourced: owned clusters lose hours to maintenance, failures, queue gaps and fragmentation.
      Rent is billed per hour used, so it applies to TCO only.
    * ``node_overhead_fraction`` 0.25: the host around an 8-GPU SXM/OAM baseboard (CPUs, memory,
      NICs, chassis, power supplies) as a fraction of the baseboard's price, applied to per-node
      purchase prices only. Argued: Intel's Gaudi 3 list price (USD 125,000 per 8-OAM kit)
      explicitly excludes the host; no vendor publishes the split.
    * ``host_power_fraction`` 0.82: host power as a fraction of the GPUs' power figure, from
      NVIDIA's DGX H100 datasheet (10.2 kW maximum system power for 8 x 700 W = 5.6 kW of GPUs:
      (10.2 - 5.6) / 5.6). Both are maxima, so the ratio is like for like.
    * ``allow_suspect`` False: rows :mod:`~service.core.pricing.quality` flags (placeholders,
      anomalies) are left out of quotes unless the caller allows them.
    * ``stale_after_days`` 180: ``GPU_ADVISOR_PRICE_STALE_DAYS``' default (the caller passes
      the setting).
    """

    currency: str = "USD"
    pricing_models: tuple[str, ...] = ("on_demand",)
    providers: frozenset[str] | None = None
    stale_after_days: int = 180
    utilisation: float = 0.7
    pue: float = 1.58
    electricity_usd_per_kwh: float = 0.10
    amortisation_years: float = 5.0
    node_overhead_fraction: float = 0.25
    host_power_fraction: float = 0.82
    allow_suspect: bool = False

    def __post_init__(self) -> None:
        if self.currency not in CURRENCIES:
            raise InvalidConfiguration("currency", f"one of {', '.join(CURRENCIES)}, got {self.currency!r}")
        if not self.pricing_models:
            raise InvalidConfiguration("pricing_models", "at least one pricing model")
        bad = [m for m in self.pricing_models if m not in RENTAL_MODELS]
        if bad:
            raise InvalidConfiguration(
                "pricing_models",
                f"rental models are {', '.join(RENTAL_MODELS)}; not {', '.join(map(repr, bad))}",
            )
        if self.stale_after_days < 0:
            raise InvalidConfiguration("stale_after_days", "must be >= 0")
        if not 0 < self.utilisation <= 1:
            raise InvalidConfiguration("utilisation", "must be in (0, 1]")
        if not self.pue >= 1:
            raise InvalidConfiguration("pue", "must be >= 1 (total facility power / IT power)")
        if not self.electricity_usd_per_kwh >= 0:
            raise InvalidConfiguration("electricity_usd_per_kwh", "must be >= 0")
        if not self.amortisation_years > 0:
            raise InvalidConfiguration("amortisation_years", "must be > 0")
        if not self.node_overhead_fraction >= 0:
            raise InvalidConfiguration("node_overhead_fraction", "must be >= 0")
        if not self.host_power_fraction >= 0:
            raise InvalidConfiguration("host_power_fraction", "must be >= 0")


# ---- quotes --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RentQuote:
    """Renting ``gpu_count`` GPUs of ``gpu_slug`` as ``instances`` x ``instance_type``:
    ``per_hour`` for all instances, ``per_gpu_hour`` per GPU used (idle GPUs of the shape
    included in the price), both in ``currency``."""

    gpu_slug: str
    gpu_count: int
    gpus_paid: int
    instances: int
    provider: str
    region: str
    instance_type: str
    gpus_per_instance: int
    pricing_model: str
    currency: str
    per_hour: float
    per_gpu_hour: float
    price_row_ids: tuple[int, ...]
    effective_date: dt.date
    age_days: int
    stale: bool
    fx_date: dt.date | None
    source: str
    notes: tuple[str, ...] = ()
    suspect: tuple[Suspicion, ...] = ()  # why the row is not trusted (empty: clean)
    age_is_lower_bound: bool = False  # the row's date is when it was read: it is at least this old

    @property
    def per_paid_gpu_hour(self) -> float:
        """The shape's own per-GPU rate (what a job using every GPU of it would pay)."""
        return self.per_hour / self.gpus_paid


@dataclass(frozen=True, slots=True)
class PurchaseQuote:
    """The newest purchase price of a GPU: ``amount`` per unit (a card, or a node of
    ``gpus_per_unit`` GPUs for SXM/OAM parts), in ``currency`` as the row states it."""

    gpu_slug: str
    unit: str
    gpus_per_unit: int
    currency: str
    amount: float
    amounts: Mapping[str, float]  # in each currency the FX table reaches, the row's own included
    fx_date: dt.date | None
    price_row_id: int
    effective_date: dt.date
    age_days: int
    source: str
    is_estimate: bool

    @property
    def per_node(self) -> bool:
        """Priced per node (several GPUs per unit), as DESIGN prices SXM/OAM parts."""
        return self.gpus_per_unit > 1


@dataclass(frozen=True, slots=True)
class RunCost:
    """The cost of ``hours`` at a quote's rate, with the band from the time band."""

    amount: float
    low: float
    high: float
    currency: str
    hours: float


@dataclass(frozen=True, slots=True)
class Tco:
    """Owning the GPUs instead of renting them, per hour of use: amortised purchase (with the
    host for per-node parts) over utilised hours, plus energy at the facility's PUE."""

    gpu_slug: str
    gpu_count: int
    gpus_paid: int
    units: int
    per_node: bool
    currency: str
    capex: float  # purchase of ``units`` (and their hosts, per node), in ``currency``
    capex_per_hour: float  # amortised capex per hour of use (divided by utilisation)
    energy_per_hour: float
    per_hour: float
    per_gpu_hour: float
    power_w: float  # per GPU
    power_source: Literal["measured", "tdp"]
    energy_kw: float  # at the wall: GPUs + host, times PUE
    purchase: PurchaseQuote | None  # None: the pool's own price (CAPEX_FROM_POOL) or none (CAPEX_UNKNOWN)
    price_row_ids: tuple[int, ...]
    age_days: int
    stale: bool
    fx_date: dt.date | None
    assumptions: CostAssumptions
    run: RunCost | None = None
    notes: tuple[str, ...] = ()

    @property
    def capex_unknown(self) -> bool:
        """Electricity only: no purchase price is known for these owned GPUs."""
        return CAPEX_UNKNOWN in self.notes


class _Hourly(Protocol):
    @property
    def per_hour(self) -> float: ...

    @property
    def currency(self) -> str: ...


def run_cost(
    quote: _Hourly, hours: float, *, hours_low: float | None = None, hours_high: float | None = None
) -> RunCost:
    """``hours`` at ``quote.per_hour``; the band is the time band times the same rate (billing
    is taken as continuous: clouds bill per second or per minute, so rounding is negligible at
    the hours a training run takes)."""
    if not hours >= 0 or not math.isfinite(hours):
        raise InvalidConfiguration("hours", f"must be a finite number >= 0, got {hours!r}")
    lo = hours if hours_low is None else hours_low
    hi = hours if hours_high is None else hours_high
    if not (0 <= lo <= hours <= hi) or not math.isfinite(hi):
        raise InvalidConfiguration(
            "hours_low", f"need 0 <= hours_low <= hours <= hours_high, got {lo}, {hours}, {hi}"
        )
    r = quote.per_hour
    return RunCost(amount=r * hours, low=r * lo, high=r * hi, currency=quote.currency, hours=hours)


def cost_per_million_tokens(
    per_hour: float, *, capacity_tokens_per_s: float, served_tokens_per_s: float
) -> float:
    """The cost of a million tokens at a stated load. The hour is paid whether or not the
    capacity is used, so the hour's price is divided by the tokens actually served at that
    load, never by the capacity: a deployment run at half its capacity pays twice as much per
    token as one run flat out."""
    if not served_tokens_per_s > 0:
        raise InvalidConfiguration("served_tokens_per_s", "must be > 0: no tokens served, no cost per token")
    if not capacity_tokens_per_s > 0:
        raise InvalidConfiguration("capacity_tokens_per_s", "must be > 0")
    if served_tokens_per_s > capacity_tokens_per_s * (1 + 1e-9):
        raise InvalidConfiguration(
            "served_tokens_per_s",
            f"{served_tokens_per_s:g} tokens/s served exceeds the capacity {capacity_tokens_per_s:g} tokens/s",
        )
    return per_hour / (served_tokens_per_s * 3600.0) * 1e6
