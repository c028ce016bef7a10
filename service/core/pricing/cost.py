"""What a job costs: cloud rental from instance shapes, per run, per million tokens, and the
total cost of owning the GPUs (TCO). Pure: price rows and FX rates in, floats out; no clock
(the caller passes ``today``), no I/O.

Rules (DESIGN "Prices"; docs/prices.md, "Cost model"):

* **Rent** is per rentable instance shape, in whole instances: a job of ``n`` GPUs on a shape
  of ``g`` GPUs pays for ``ceil(n / g) * g`` GPUs, and the quote says so
  (``pays_for_idle_gpus``). The cheapest shape wins; ties go to the fresher row, then by
  provider, region, instance type and row id (deterministic). Spot and reserved prices are
  used only when the caller opts in (:attr:`CostAssumptions.pricing_models`).
* **Currency**: amounts convert through the dated FX table with
  :func:`service.core.catalog.records.convert` at the price row's effective date (the rate the price
  was quoted under), exactly as ``GET /v1/gpus/{slug}/prices`` converts them; a row with no
  usable rate is not quoted in the other currency (never guessed).
* **Age**: every quote names the price rows used, their effective date and age on ``today``;
  older than :attr:`CostAssumptions.stale_after_days` is ``stale`` (a warning, not an
  exclusion: an old list price is still a fact).
* **No price, no cost**: a GPU no row prices gets ``None`` and the caller excludes it with
  :data:`NO_PRICE` (rent) or :data:`NO_PURCHASE_PRICE` (TCO). A price is never invented from
  a sibling part.

:class:`PriceBook` is built once per catalog snapshot (and day) and is hot: ``/v1/recommend``
asks it for hundreds of candidates per request, so rows are indexed by slug, their amounts are
floats in both currencies, and answers are memoised per (slug, count, assumptions).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Literal, Protocol

from service.core.catalog.records import FxRate, PriceRow, convert
from service.core.errors import InvalidConfiguration

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
HOST_NOT_INCLUDED = "host_not_included"  # a per-card purchase price: the server around it is not costed


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
    purchase: PurchaseQuote
    price_row_ids: tuple[int, ...]
    age_days: int
    stale: bool
    fx_date: dt.date | None
    assumptions: CostAssumptions
    run: RunCost | None = None
    notes: tuple[str, ...] = ()


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


# ---- the price book ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Rental:
    row_id: int
    provider: str
    region: str
    instance_type: str
    gpus_per_instance: int
    pricing_model: str
    currency: str
    amounts: Mapping[str, float]  # per instance-hour, by currency
    fx_date: dt.date | None
    effective_date: dt.date
    age_days: int
    source: str
    is_estimate: bool


def _amounts(row: PriceRow, rates: Sequence[FxRate]) -> tuple[dict[str, float], dt.date | None]:
    out = {row.currency: float(row.amount)}
    fx_date = None
    for other in CURRENCIES:
        if other == row.currency:
            continue
        conv = convert(row.amount, row.currency, other, rates, row.effective_date)
        if conv is not None:
            out[other] = float(conv[0])
            fx_date = conv[1]
    return out, fx_date


_MODEL_NOTES = {"spot": SPOT_INTERRUPTIBLE, "reserved": RESERVED_COMMITMENT}


@dataclass(frozen=True, slots=True)
class PriceBook:
    """Every price row of a catalog snapshot, indexed for cost questions. Build it with
    :meth:`build` once per catalog snapshot and day; it is read-only afterwards (the memo only
    caches answers, which depend on nothing but the book and the arguments)."""

    today: dt.date
    rentals: Mapping[str, tuple[_Rental, ...]]
    purchases: Mapping[str, PurchaseQuote]
    usd_rates: Mapping[str, tuple[float, dt.date | None]]  # 1 USD in each currency, on ``today``
    _memo: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def build(
        cls, prices_by_slug: Mapping[str, Sequence[PriceRow]], rates: Sequence[FxRate], *, today: dt.date
    ) -> PriceBook:
        """``rates`` newest first (as the catalog repository returns them)."""
        rates = sorted(rates, key=lambda r: r.effective_date, reverse=True)
        rentals: dict[str, tuple[_Rental, ...]] = {}
        purchases: dict[str, PurchaseQuote] = {}
        for slug, rows in prices_by_slug.items():
            rent: list[_Rental] = []
            newest: PriceRow | None = None
            for p in rows:
                if p.pricing_model == "purchase":
                    if newest is None or (p.effective_date, p.id) > (newest.effective_date, newest.id):
                        newest = p
                    continue
                if p.pricing_model not in RENTAL_MODELS or p.gpus_per_instance < 1 or p.amount <= 0:
                    continue
                amounts, fx_date = _amounts(p, rates)
                rent.append(
                    _Rental(
                        row_id=p.id,
                        provider=p.provider,
                        region=p.region,
                        instance_type=p.instance_type,
                        gpus_per_instance=p.gpus_per_instance,
                        pricing_model=p.pricing_model,
                        currency=p.currency,
                        amounts=amounts,
                        fx_date=fx_date,
                        effective_date=p.effective_date,
                        age_days=(today - p.effective_date).days,
                        source=p.source,
                        is_estimate=p.is_estimate,
                    )
                )
            if rent:
                rent.sort(key=lambda r: (r.provider, r.region, r.instance_type, r.pricing_model, r.row_id))
                rentals[slug] = tuple(rent)
            if newest is not None:
                amounts, fx_date = _amounts(newest, rates)
                purchases[slug] = PurchaseQuote(
                    gpu_slug=slug,
                    unit=newest.instance_type,
                    gpus_per_unit=newest.gpus_per_instance,
                    currency=newest.currency,
                    amount=float(newest.amount),
                    amounts=amounts,
                    fx_date=fx_date,
                    price_row_id=newest.id,
                    effective_date=newest.effective_date,
                    age_days=(today - newest.effective_date).days,
                    source=newest.source,
                    is_estimate=newest.is_estimate,
                )
        usd_rates: dict[str, tuple[float, dt.date | None]] = {"USD": (1.0, None)}
        for cur in CURRENCIES:
            if cur != "USD":
                conv = convert(Decimal(1), "USD", cur, rates, today)
                if conv is not None:
                    usd_rates[cur] = (float(conv[0]), conv[1])
        return cls(today=today, rentals=rentals, purchases=purchases, usd_rates=usd_rates)

    def priced_slugs(self) -> frozenset[str]:
        """GPUs with at least one rental row (any model, any provider)."""
        return frozenset(self.rentals)

    def _quote(self, slug: str, r: _Rental, gpu_count: int, a: CostAssumptions) -> RentQuote | None:
        rate = r.amounts.get(a.currency)
        if rate is None:
            return None
        instances = -(-gpu_count // r.gpus_per_instance)
        paid = instances * r.gpus_per_instance
        per_hour = instances * rate
        stale = r.age_days > a.stale_after_days
        notes: list[str] = []
        if paid > gpu_count:
            notes.append(PAYS_FOR_IDLE_GPUS)
        if instances > 1:
            notes.append(MULTI_INSTANCE)
        if stale:
            notes.append(STALE_PRICE)
        if a.currency != r.currency:
            notes.append(CURRENCY_CONVERTED)
        if r.pricing_model in _MODEL_NOTES:
            notes.append(_MODEL_NOTES[r.pricing_model])
        if r.is_estimate:
            notes.append(PRICE_IS_ESTIMATE)
        return RentQuote(
            gpu_slug=slug,
            gpu_count=gpu_count,
            gpus_paid=paid,
            instances=instances,
            provider=r.provider,
            region=r.region,
            instance_type=r.instance_type,
            gpus_per_instance=r.gpus_per_instance,
            pricing_model=r.pricing_model,
            currency=a.currency,
            per_hour=per_hour,
            per_gpu_hour=per_hour / gpu_count,
            price_row_ids=(r.row_id,),
            effective_date=r.effective_date,
            age_days=r.age_days,
            stale=stale,
            fx_date=r.fx_date if a.currency != r.currency else None,
            source=r.source,
            notes=tuple(notes),
        )

    def _allowed(self, slug: str, a: CostAssumptions) -> list[_Rental]:
        return [
            r
            for r in self.rentals.get(slug, ())
            if r.pricing_model in a.pricing_models and (a.providers is None or r.provider in a.providers)
        ]

    @staticmethod
    def _rank(q: RentQuote) -> tuple[float, bool, str, str, str, str, tuple[int, ...]]:
        return (q.per_hour, q.stale, q.provider, q.region, q.instance_type, q.pricing_model, q.price_row_ids)

    def rent(self, slug: str, gpu_count: int, assumptions: CostAssumptions) -> RentQuote | None:
        """The cheapest way to rent ``gpu_count`` GPUs of ``slug`` in whole instances of one
        shape, or ``None`` (reason :data:`NO_PRICE`)."""
        if gpu_count < 1:
            raise InvalidConfiguration("gpu_count", "must be >= 1")
        key = ("rent", slug, gpu_count, assumptions)
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        a = assumptions
        best: _Rental | None = None
        best_rank: tuple[float, bool, str, str, str, str, int] | None = None
        for r in self._allowed(slug, a):
            rate = r.amounts.get(a.currency)
            if rate is None:
                continue
            # the order of _rank, on plain numbers: only the winner becomes a RentQuote
            rank = (
                -(-gpu_count // r.gpus_per_instance) * rate,
                r.age_days > a.stale_after_days,
                r.provider,
                r.region,
                r.instance_type,
                r.pricing_model,
                r.row_id,
            )
            if best_rank is None or rank < best_rank:
                best, best_rank = r, rank
        quote = self._quote(slug, best, gpu_count, a) if best is not None else None
        self._memo[key] = quote
        return quote

    def cheapest_by_provider(self, slug: str, assumptions: CostAssumptions) -> tuple[RentQuote, ...]:
        """Per provider, the shape with the lowest per-GPU-hour rate, quoted for the whole
        shape (``gpu_count = gpus_per_instance``, no idle GPUs); cheapest first."""
        key = ("by_provider", slug, assumptions)
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        best: dict[str, RentQuote] = {}
        for r in self._allowed(slug, assumptions):
            q = self._quote(slug, r, r.gpus_per_instance, assumptions)
            if q is None:
                continue
            cur = best.get(r.provider)
            rank = (q.per_gpu_hour, *self._rank(q)[1:])
            if cur is None or rank < (cur.per_gpu_hour, *self._rank(cur)[1:]):
                best[r.provider] = q
        out = tuple(sorted(best.values(), key=lambda q: (q.per_gpu_hour, q.provider)))
        self._memo[key] = out
        return out

    def purchase(self, slug: str) -> PurchaseQuote | None:
        """The newest purchase price row of ``slug``, or ``None`` (reason :data:`NO_PURCHASE_PRICE`)."""
        return self.purchases.get(slug)

    def from_usd(self, amount_usd: float, currency: str) -> tuple[float, dt.date | None] | None:
        """An amount stated in USD (an assumption such as the electricity price) in
        ``currency``, at the newest rate on ``today``; ``None`` without a rate."""
        rate = self.usd_rates.get(currency)
        if rate is None:
            return None
        return amount_usd * rate[0], rate[1]


# ---- TCO -----------------------------------------------------------------------------------------


def tco_exclusion(
    book: PriceBook, slug: str, *, tdp_w: float | None, avg_power_w: float | None = None
) -> str | None:
    """Why :func:`tco` answers ``None`` for this GPU (a reason code), or ``None`` if it does not."""
    if book.purchase(slug) is None:
        return NO_PURCHASE_PRICE
    if not (avg_power_w and avg_power_w > 0) and not (tdp_w and tdp_w > 0):
        return NO_POWER_FIGURE
    return None


def tco(
    book: PriceBook,
    slug: str,
    *,
    gpu_count: int,
    tdp_w: float | None,
    assumptions: CostAssumptions,
    avg_power_w: float | None = None,
    hours: float | None = None,
    hours_low: float | None = None,
    hours_high: float | None = None,
) -> Tco | None:
    """Cost per hour of use of ``gpu_count`` owned GPUs of ``slug``:

    * capex = units x purchase price (x (1 + node overhead) for a per-node price), units =
      ceil(gpu_count / GPUs per unit); amortised linearly over ``amortisation_years`` of
      8,766 h and divided by ``utilisation`` (idle owned hours are paid too);
    * energy = power per GPU x gpu_count x (1 + host power fraction) x PUE x electricity price,
      with the power the agent measured (``avg_power_w``, ``power_source: measured``) where
      there is one, else the TDP (``tdp``: an upper bound for most workloads).

    ``None`` when there is no purchase price or no power figure (:func:`tco_exclusion` says
    which). With ``hours``, ``run`` is the cost of the run and its band."""
    if gpu_count < 1:
        raise InvalidConfiguration("gpu_count", "must be >= 1")
    p = book.purchase(slug)
    if p is None:
        return None
    if avg_power_w is not None and avg_power_w > 0:
        power_w, source = float(avg_power_w), "measured"
    elif tdp_w is not None and tdp_w > 0:
        power_w, source = float(tdp_w), "tdp"
    else:
        return None
    a = assumptions
    unit_price = p.amounts.get(a.currency)
    kwh_price = book.from_usd(a.electricity_usd_per_kwh, a.currency)
    if unit_price is None or kwh_price is None:
        return None  # no FX rate into the asked currency: not quoted rather than guessed
    units = -(-gpu_count // p.gpus_per_unit)
    paid = units * p.gpus_per_unit
    capex = units * unit_price * ((1 + a.node_overhead_fraction) if p.per_node else 1.0)
    capex_per_hour = capex / (a.amortisation_years * HOURS_PER_YEAR) / a.utilisation
    energy_kw = power_w * gpu_count * (1 + a.host_power_fraction) * a.pue / 1000.0
    energy_per_hour = energy_kw * kwh_price[0]
    per_hour = capex_per_hour + energy_per_hour
    stale = p.age_days > a.stale_after_days
    notes: list[str] = []
    if paid > gpu_count:
        notes.append(PAYS_FOR_IDLE_GPUS)
    if not p.per_node:
        notes.append(HOST_NOT_INCLUDED)
    if stale:
        notes.append(STALE_PRICE)
    if a.currency != p.currency:
        notes.append(CURRENCY_CONVERTED)
    if p.is_estimate:
        notes.append(PRICE_IS_ESTIMATE)
    out = Tco(
        gpu_slug=slug,
        gpu_count=gpu_count,
        gpus_paid=paid,
        units=units,
        per_node=p.per_node,
        currency=a.currency,
        capex=capex,
        capex_per_hour=capex_per_hour,
        energy_per_hour=energy_per_hour,
        per_hour=per_hour,
        per_gpu_hour=per_hour / gpu_count,
        power_w=power_w,
        power_source="measured" if source == "measured" else "tdp",
        energy_kw=energy_kw,
        purchase=p,
        price_row_ids=(p.price_row_id,),
        age_days=p.age_days,
        stale=stale,
        fx_date=p.fx_date if a.currency != p.currency else kwh_price[1] if a.currency != "USD" else None,
        assumptions=a,
        notes=tuple(notes),
    )
    if hours is not None:
        out = replace(out, run=run_cost(out, hours, hours_low=hours_low, hours_high=hours_high))
    return out
