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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal

from service.core.catalog.records import FxRate, PriceRow, convert
from service.core.errors import InvalidConfiguration
from service.core.pricing.memo import BoundedMemo
from service.core.pricing.quality import Suspicion, assess_catalog
from service.core.pricing.quotes import CAPEX_FROM_POOL, CAPEX_UNKNOWN
from service.core.pricing.quotes import (
    CURRENCIES as CURRENCIES,
)
from service.core.pricing.quotes import (
    CURRENCY_CONVERTED as CURRENCY_CONVERTED,
)
from service.core.pricing.quotes import (
    HOST_NOT_INCLUDED as HOST_NOT_INCLUDED,
)
from service.core.pricing.quotes import (
    HOURS_PER_YEAR as HOURS_PER_YEAR,
)
from service.core.pricing.quotes import (
    MULTI_INSTANCE as MULTI_INSTANCE,
)
from service.core.pricing.quotes import (
    NO_POWER_FIGURE as NO_POWER_FIGURE,
)
from service.core.pricing.quotes import (  # re-exported: callers import them from here
    NO_PRICE as NO_PRICE,
)
from service.core.pricing.quotes import (
    NO_PURCHASE_PRICE as NO_PURCHASE_PRICE,
)
from service.core.pricing.quotes import (
    PAYS_FOR_IDLE_GPUS as PAYS_FOR_IDLE_GPUS,
)
from service.core.pricing.quotes import (
    PRICE_AGE_LOWER_BOUND as PRICE_AGE_LOWER_BOUND,
)
from service.core.pricing.quotes import (
    PRICE_IS_ESTIMATE as PRICE_IS_ESTIMATE,
)
from service.core.pricing.quotes import (
    RENTAL_MODELS as RENTAL_MODELS,
)
from service.core.pricing.quotes import (
    RESERVED_COMMITMENT as RESERVED_COMMITMENT,
)
from service.core.pricing.quotes import (
    SPOT_INTERRUPTIBLE as SPOT_INTERRUPTIBLE,
)
from service.core.pricing.quotes import (
    STALE_PRICE as STALE_PRICE,
)
from service.core.pricing.quotes import (
    SUSPECT_PRICE as SUSPECT_PRICE,
)
from service.core.pricing.quotes import (
    CostAssumptions as CostAssumptions,
)
from service.core.pricing.quotes import (
    PurchaseQuote as PurchaseQuote,
)
from service.core.pricing.quotes import (
    RentQuote as RentQuote,
)
from service.core.pricing.quotes import (
    RunCost as RunCost,
)
from service.core.pricing.quotes import (
    Tco as Tco,
)
from service.core.pricing.quotes import (
    cost_per_million_tokens as cost_per_million_tokens,
)
from service.core.pricing.quotes import (
    run_cost as run_cost,
)
from service.core.pricing.shapes import (
    EMPTY_TABLE,
    NO_MATCHING_INSTANCE,
    DeployShape,
    GpuLink,
    InstanceNetwork,
    ShapeTable,
    holds,
)

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
    network: InstanceNetwork
    suspect: tuple[Suspicion, ...] = ()
    age_is_lower_bound: bool = False


@dataclass(frozen=True, slots=True)
class ShapePrice:
    """A plan's node shape priced as deployed: ``shape.nodes`` instances of one type, each
    holding a whole node, and the links that type has (for the network model)."""

    quote: RentQuote
    shape: DeployShape
    network: InstanceNetwork


@dataclass(frozen=True, slots=True)
class NoMatchingInstance:
    """No priced instance type holds ``shape`` (reason :data:`NO_MATCHING_INSTANCE`); ``detail``
    says why the nearest candidates do not, ``suspect_only`` when only suspect rows would."""

    gpu_slug: str
    shape: DeployShape
    detail: str
    suspect_only: bool = False
    reason: str = NO_MATCHING_INSTANCE


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
    suspect_rows: Mapping[int, tuple[Suspicion, ...]] = field(default_factory=dict)
    _memo: BoundedMemo = field(default_factory=BoundedMemo, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        prices_by_slug: Mapping[str, Sequence[PriceRow]],
        rates: Sequence[FxRate],
        *,
        today: dt.date,
        shapes: ShapeTable = EMPTY_TABLE,
        links: Mapping[str, GpuLink] | None = None,
    ) -> PriceBook:
        """``rates`` newest first (as the catalog repository returns them); ``shapes`` the
        sourced instance table and ``links`` each GPU's form factor and link domain (the links
        of instance types not in the table follow from them)."""
        suspect = assess_catalog(prices_by_slug)
        links = links or {}
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
                        network=shapes.network(
                            p.provider, p.instance_type, p.gpus_per_instance, links.get(slug)
                        ),
                        suspect=suspect.get(p.id, ()),
                        age_is_lower_bound=p.date_basis == "retrieved",
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
        return cls(
            today=today, rentals=rentals, purchases=purchases, usd_rates=usd_rates, suspect_rows=suspect
        )

    def priced_slugs(self) -> frozenset[str]:
        """GPUs with at least one rental row (any model, any provider)."""
        return frozenset(self.rentals)

    def _quote(
        self, slug: str, r: _Rental, gpu_count: int, a: CostAssumptions, instances: int | None = None
    ) -> RentQuote | None:
        rate = r.amounts.get(a.currency)
        if rate is None:
            return None
        if instances is None:
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
        if r.suspect:
            notes.append(SUSPECT_PRICE)
        if r.age_is_lower_bound:
            notes.append(PRICE_AGE_LOWER_BOUND)
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
            suspect=r.suspect,
            age_is_lower_bound=r.age_is_lower_bound,
        )

    def _allowed(self, slug: str, a: CostAssumptions) -> list[_Rental]:
        return [
            r
            for r in self.rentals.get(slug, ())
            if r.pricing_model in a.pricing_models
            and (a.providers is None or r.provider in a.providers)
            and (a.allow_suspect or not r.suspect)
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

    def min_gpu_hour(self, slug: str, assumptions: CostAssumptions) -> float | None:
        """The lowest rate of one GPU-hour of ``slug`` in any allowed row (a whole instance's rate
        over its GPUs): no plan of it is rented for less, so a bound built on it is a true one."""
        rates = [
            rate / r.gpus_per_instance
            for r in self._allowed(slug, assumptions)
            if (rate := r.amounts.get(assumptions.currency)) is not None
        ]
        return min(rates) if rates else None

    @staticmethod
    def _instances(shape: DeployShape, r: _Rental) -> int:
        """One instance per node; independent nodes (serving replicas) share instances."""
        if not shape.independent:
            return shape.nodes
        return -(-shape.nodes // (r.gpus_per_instance // shape.gpus_per_node))

    def rent_shape(
        self, slug: str, shape: DeployShape, assumptions: CostAssumptions
    ) -> ShapePrice | NoMatchingInstance:
        """The cheapest way to rent ``shape`` as deployed: ``shape.nodes`` instances of one type,
        each holding a whole node with the link it needs (:func:`~service.core.pricing.shapes.holds`),
        or why no type can (reason :data:`NO_MATCHING_INSTANCE`, or :data:`NO_PRICE` when no
        allowed row prices the GPU at all)."""
        key = ("shape", slug, shape, assumptions)
        if key in self._memo:
            return self._memo[key]  # type: ignore[return-value]
        a = assumptions
        best: _Rental | None = None
        best_rank: tuple[float, bool, str, str, str, str, int] | None = None
        refused: dict[str, tuple[int, str]] = {}
        allowed = self._allowed(slug, a)
        for r in allowed:
            rate = r.amounts.get(a.currency)
            if rate is None:
                continue
            why = holds(shape, r.gpus_per_instance, r.network)
            if why is not None:
                refused.setdefault(f"{r.provider} {r.instance_type}", (r.gpus_per_instance, why))
                continue
            rank = (
                self._instances(shape, r) * rate,
                r.age_days > a.stale_after_days,
                r.provider,
                r.region,
                r.instance_type,
                r.pricing_model,
                r.row_id,
            )
            if best_rank is None or rank < best_rank:
                best, best_rank = r, rank
        out: ShapePrice | NoMatchingInstance
        if best is not None:
            quote = self._quote(slug, best, shape.gpus, a, instances=self._instances(shape, best))
            assert quote is not None  # the rate was there
            out = ShapePrice(quote=quote, shape=shape, network=best.network)
        else:
            suspect_only = not a.allow_suspect and any(
                r.suspect
                and r.pricing_model in a.pricing_models
                and (a.providers is None or r.provider in a.providers)
                and holds(shape, r.gpus_per_instance, r.network) is None
                for r in self.rentals.get(slug, ())
            )
            # the nearest misses first: the largest instances
            shown = sorted(refused.items(), key=lambda kv: (-kv[1][0], kv[0]))[:3]
            detail = "; ".join(f"{k}: {why}" for k, (_, why) in shown) + (
                f"; {len(refused) - 3} more" if len(refused) > 3 else ""
            )
            if suspect_only:
                detail = "only suspect price rows hold this shape (allow_suspect_prices to use them)" + (
                    f"; {detail}" if detail else ""
                )
            out = NoMatchingInstance(
                gpu_slug=slug,
                shape=shape,
                detail=detail or "no allowed price row",
                suspect_only=suspect_only,
                reason=NO_MATCHING_INSTANCE if allowed or suspect_only else NO_PRICE,
            )
        self._memo[key] = out
        return out

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
    price_per_gpu: float | None = None,
    owned: bool = False,
) -> Tco | None:
    """Cost per hour of use of ``gpu_count`` owned GPUs of ``slug``: capex (:func:`_capex`)
    amortised linearly over ``amortisation_years`` of 8,766 h, divided by ``utilisation`` (idle
    owned hours are paid too); energy = power per GPU x gpu_count x (1 + host power fraction) x
    PUE x electricity price, with the measured power (``avg_power_w``) where there is one, else
    the TDP (an upper bound for most workloads). ``price_per_gpu``: the inventory's own purchase
    price (asked currency). ``owned``: GPUs on hand are costed even without a purchase price, on
    electricity only (:data:`CAPEX_UNKNOWN`; the caller says so). Otherwise ``None`` without a
    purchase price or a power figure (:func:`tco_exclusion`). ``hours``: the run's cost."""
    if gpu_count < 1:
        raise InvalidConfiguration("gpu_count", "must be >= 1")
    p = book.purchase(slug) if price_per_gpu is None else None
    if p is None and price_per_gpu is None and not owned:
        return None
    if avg_power_w is not None and avg_power_w > 0:
        power_w, source = float(avg_power_w), "measured"
    elif tdp_w is not None and tdp_w > 0:
        power_w, source = float(tdp_w), "tdp"
    else:
        return None
    a = assumptions
    kwh_price = book.from_usd(a.electricity_usd_per_kwh, a.currency)
    capex = _capex(p, price_per_gpu, gpu_count, a)
    if capex is None or kwh_price is None:
        return None  # no FX rate into the asked currency: not quoted rather than guessed
    units, paid, amount, per_node, how = capex
    capex_per_hour = amount / (a.amortisation_years * HOURS_PER_YEAR) / a.utilisation
    energy_kw = power_w * gpu_count * (1 + a.host_power_fraction) * a.pue / 1000.0
    energy_per_hour = energy_kw * kwh_price[0]
    per_hour = capex_per_hour + energy_per_hour
    stale = p is not None and p.age_days > a.stale_after_days
    notes = [PAYS_FOR_IDLE_GPUS] if paid > gpu_count else []
    notes += [HOST_NOT_INCLUDED] if not per_node else []
    notes += [STALE_PRICE] if stale else []
    notes += [CURRENCY_CONVERTED] if p is not None and a.currency != p.currency else []
    notes += [PRICE_IS_ESTIMATE] if p is not None and p.is_estimate else []
    notes += [how] if how is not None else []
    out = Tco(
        gpu_slug=slug,
        gpu_count=gpu_count,
        gpus_paid=paid,
        units=units,
        per_node=per_node,
        currency=a.currency,
        capex=amount,
        capex_per_hour=capex_per_hour,
        energy_per_hour=energy_per_hour,
        per_hour=per_hour,
        per_gpu_hour=per_hour / gpu_count,
        power_w=power_w,
        power_source="measured" if source == "measured" else "tdp",
        energy_kw=energy_kw,
        purchase=p,
        price_row_ids=(p.price_row_id,) if p is not None else (),
        age_days=p.age_days if p is not None else 0,
        stale=stale,
        fx_date=p.fx_date
        if p is not None and a.currency != p.currency
        else kwh_price[1]
        if a.currency != "USD"
        else None,
        assumptions=a,
        notes=tuple(notes),
    )
    if hours is not None:
        out = replace(out, run=run_cost(out, hours, hours_low=hours_low, hours_high=hours_high))
    return out


def _capex(
    p: PurchaseQuote | None, price_per_gpu: float | None, gpu_count: int, a: CostAssumptions
) -> tuple[int, int, float, bool, str | None] | None:
    """(units, GPUs paid, capex, priced per node, note): units = ceil(gpu_count / GPUs per
    unit) of the catalog's price (x (1 + node overhead) for a per-node price); else the pool's
    own price per GPU; else none known (0, :data:`CAPEX_UNKNOWN`). None without an FX rate."""
    if price_per_gpu is not None:
        return gpu_count, gpu_count, price_per_gpu * gpu_count, False, CAPEX_FROM_POOL
    if p is None:
        return gpu_count, gpu_count, 0.0, False, CAPEX_UNKNOWN
    unit_price = p.amounts.get(a.currency)
    if unit_price is None:
        return None
    units = -(-gpu_count // p.gpus_per_unit)
    amount = units * unit_price * ((1 + a.node_overhead_fraction) if p.per_node else 1.0)
    return units, units * p.gpus_per_unit, amount, p.per_node, None
