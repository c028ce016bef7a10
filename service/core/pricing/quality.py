"""Which price rows are not to be trusted: placeholders and anomalies (issue 24, "Price quality").

A price row is a provider's statement, copied from a catalog. Some statements are not prices:
Mithril sells capacity by auction and SkyPilot writes 1.0 per GPU-hour for every part it lists;
RunPod's catalog copies the on-demand figure into the spot column. Such rows must not decide a
cost ranking. The checks here look only at the rows themselves (no clock, no I/O) and flag a row
``suspect`` with every reason that applies; callers leave suspect rows out of rankings unless
asked (``CostAssumptions.allow_suspect``) and always show the reasons.

The checks, per rental row (purchase rows are not checked: one row per GPU, nothing to compare):

* :data:`UNIFORM_PRICE` -- a provider states one per-GPU-hour rate (in one currency and pricing
  model) for every one of at least :data:`MIN_MODELS_FOR_UNIFORM` different GPU models. Parts a
  generation apart (an H100 and an H200, an L4 and a B200) do not cost the same to build or to
  run, so one rate for all of them is a placeholder, not a price.
* :data:`SPOT_EQUALS_ON_DEMAND` -- every one of at least :data:`MIN_PAIRS_FOR_SPOT` (instance,
  region) pairs of a provider has a spot rate exactly equal to its on-demand rate. Spot capacity
  is sold at a discount for being interruptible; equal everywhere means the column was filled
  with the on-demand figure. Only the spot rows are flagged (the on-demand figure may be real).
* :data:`FAR_BELOW_MEDIAN` / :data:`FAR_ABOVE_MEDIAN` -- the row's per-GPU-hour rate is below
  ``median / LOW_OUTLIER_FACTOR`` or above ``median * HIGH_OUTLIER_FACTOR``, where the median is
  over providers (each provider's own median counts once, so a provider listing one price in 17
  regions does not outvote the others) of the same GPU, pricing model and currency, and at least
  :data:`MIN_PROVIDERS_FOR_MEDIAN` providers price it (with two, neither is the odd one).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from decimal import Decimal

from service.core.catalog.records import PriceRow, PriceSuspicion

UNIFORM_PRICE = "uniform_price_across_gpus"
SPOT_EQUALS_ON_DEMAND = "spot_equals_on_demand"
FAR_BELOW_MEDIAN = "far_below_median"
FAR_ABOVE_MEDIAN = "far_above_median"
SUSPECT_CODES: tuple[str, ...] = (UNIFORM_PRICE, SPOT_EQUALS_ON_DEMAND, FAR_BELOW_MEDIAN, FAR_ABOVE_MEDIAN)

MIN_MODELS_FOR_UNIFORM = 2
"""Two different GPU models at one rate is already one rate too many for a price list."""
MIN_PAIRS_FOR_SPOT = 2
"""One equal pair may be a coincidence of rounding; every pair of several is a filled column."""
MIN_PROVIDERS_FOR_MEDIAN = 3
"""With two providers a ratio says which is cheaper, not which is wrong."""
LOW_OUTLIER_FACTOR = 2.5
"""Below 40 % of the providers' median. In the shipped SkyPilot snapshot the cheapest real list
prices of a part sit at about half the median (Hyperbolic H100 SXM 1.29 vs a 2.67 median, 0.48;
RunPod A100 80 GB 1.59 vs 3.09, 0.51); the placeholder Mithril rows sit at 0.37 (H100) and 0.29
(H200)."""
HIGH_OUTLIER_FACTOR = 6.0
"""Above 6x the median. Real list prices reach 5.5x: hyperscalers charge up to ~4.6x the
neocloud median for the same part (Azure ND H100 v5, 98.32 per 8 H100 = 12.29 per GPU-hour vs
2.67) and a region can add more (GCP a3-highgpu-8g in europe-west4, 14.69, 5.5x). The error this
catches is a whole instance's price put against fewer GPUs than it has: an 8-GPU instance's
price booked as one GPU's is ~8x.

"""

RENTAL = frozenset({"on_demand", "spot", "reserved"})


Suspicion = PriceSuspicion
"""Why one row is suspect: a machine ``code`` (one of :data:`SUSPECT_CODES`) and a sentence with
the figures that triggered it (defined with the price records, which the catalog views carry)."""


def _per_gpu(row: PriceRow) -> Decimal:
    return row.amount / row.gpus_per_instance


def _fmt(x: Decimal | float) -> str:
    return f"{float(x):.4g}"


def _uniform(rows: list[PriceRow], out: dict[int, list[Suspicion]]) -> None:
    groups: dict[tuple[str, str, str], list[PriceRow]] = defaultdict(list)
    for r in rows:
        groups[(r.provider, r.pricing_model, r.currency)].append(r)
    for (provider, model, currency), rs in groups.items():
        models = {r.gpu_slug for r in rs}
        rates = {_per_gpu(r) for r in rs}
        if len(models) >= MIN_MODELS_FOR_UNIFORM and len(rates) == 1:
            detail = (
                f"{provider} states one {model} rate, {_fmt(next(iter(rates)))} {currency} per GPU-hour, "
                f"for all {len(models)} GPU models it lists ({', '.join(sorted(models))})"
            )
            for r in rs:
                out[r.id].append(Suspicion(UNIFORM_PRICE, detail))


def _spot_equal(rows: list[PriceRow], out: dict[int, list[Suspicion]]) -> None:
    by_key: dict[tuple[str, str, str, str, int, str], dict[str, PriceRow]] = defaultdict(dict)
    for r in rows:
        if r.pricing_model in ("on_demand", "spot"):
            key = (r.provider, r.gpu_slug, r.region, r.instance_type, r.gpus_per_instance, r.currency)
            by_key[key][r.pricing_model] = r
    pairs: dict[str, list[tuple[PriceRow, PriceRow]]] = defaultdict(list)
    for key, models in by_key.items():
        if "on_demand" in models and "spot" in models:
            pairs[key[0]].append((models["on_demand"], models["spot"]))
    for provider, ps in pairs.items():
        if len(ps) >= MIN_PAIRS_FOR_SPOT and all(od.amount == sp.amount for od, sp in ps):
            detail = (
                f"{provider}'s spot rate equals its on-demand rate on all {len(ps)} instance/region "
                "pairs it prices: the spot column holds the on-demand figure, not a spot price"
            )
            for _, sp in ps:
                out[sp.id].append(Suspicion(SPOT_EQUALS_ON_DEMAND, detail))


def _outliers(rows: list[PriceRow], out: dict[int, list[Suspicion]]) -> None:
    groups: dict[tuple[str, str, str], dict[str, list[Decimal]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        groups[(r.gpu_slug, r.pricing_model, r.currency)][r.provider].append(_per_gpu(r))
    medians: dict[tuple[str, str, str], tuple[float, int]] = {}
    for key, by_provider in groups.items():
        if len(by_provider) >= MIN_PROVIDERS_FOR_MEDIAN:
            provider_medians = [float(statistics.median(v)) for v in by_provider.values()]
            medians[key] = (float(statistics.median(provider_medians)), len(by_provider))
    for r in rows:
        m = medians.get((r.gpu_slug, r.pricing_model, r.currency))
        if m is None:
            continue
        median, providers = m
        rate = float(_per_gpu(r))
        if rate < median / LOW_OUTLIER_FACTOR:
            code, how = FAR_BELOW_MEDIAN, f"below 1/{LOW_OUTLIER_FACTOR:g} of"
        elif rate > median * HIGH_OUTLIER_FACTOR:
            code, how = FAR_ABOVE_MEDIAN, f"above {HIGH_OUTLIER_FACTOR:g}x"
        else:
            continue
        detail = (
            f"{_fmt(rate)} {r.currency} per GPU-hour ({r.pricing_model}) is {how} the median "
            f"{_fmt(median)} of the {providers} providers that price {r.gpu_slug}"
        )
        out[r.id].append(Suspicion(code, detail))


def assess(rows: Iterable[PriceRow]) -> Mapping[int, tuple[Suspicion, ...]]:
    """Every suspect rental row among ``rows`` (all GPUs, all providers: the checks compare
    across them), by row id, with its reasons in the order of :data:`SUSPECT_CODES`. Rows not
    in the answer are clean. Rows with no GPUs or no positive amount are left to the caller."""
    rental = [r for r in rows if r.pricing_model in RENTAL and r.gpus_per_instance >= 1 and r.amount > 0]
    found: dict[int, list[Suspicion]] = defaultdict(list)
    _uniform(rental, found)
    _spot_equal(rental, found)
    _outliers(rental, found)
    order = {c: i for i, c in enumerate(SUSPECT_CODES)}
    return {rid: tuple(sorted(s, key=lambda x: order[x.code])) for rid, s in found.items()}


def assess_catalog(prices_by_slug: Mapping[str, Iterable[PriceRow]]) -> Mapping[int, tuple[Suspicion, ...]]:
    """:func:`assess` over a catalog's rows as the repositories hand them (by GPU slug)."""
    return assess(r for rows in prices_by_slug.values() for r in rows)
