"""Constraints on estimated options, ranking by the objective, ties within error, the
time-vs-cost frontier."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from service.core.estimation.estimate import ServingAnswer, TimeAnswer
from service.core.estimation.frozen import replace
from service.core.evidence.provenance import at_least, rank, weakest
from service.core.pricing.cost import (
    NO_PURCHASE_PRICE,
    Tco,
    tco,
    tco_exclusion,
)
from service.core.recommend.deployment import no_price_reason, owned_tco
from service.core.recommend.models import Exclusion, Option, RecommendData, RecommendQuestion
from service.core.recommend.reasons import Reason, ReasonCode

MEASURED_RATIO_FLOOR: Final = 0.03
"""Smallest log half-width given a measured figure (run-to-run spread of a stack's median)."""

COST_OBJECTIVES: Final = frozenset({"cheapest", "cost_per_million_tokens"})
"""The objectives ranked on what a plan costs (they need a price; ties go by cost first)."""


def ratio_half_width(answer: TimeAnswer | ServingAnswer) -> float:
    """80% half-width of the log error of a figure *relative to another GPU's*: the held-out
    pair error of the path it took, or a measured cell's own p10-p90 (never below
    :data:`MEASURED_RATIO_FLOOR`)."""
    if answer.provenance == "measured":
        band = answer.step_time_band if isinstance(answer, TimeAnswer) else answer.tpot_band
        mid = band.mid or 1.0
        if band.low <= 0 or not math.isfinite(band.high):
            return MEASURED_RATIO_FLOOR
        return max(MEASURED_RATIO_FLOOR, math.log(band.high / mid), -math.log(band.low / mid))
    a = answer.accuracy
    if a is not None and math.isfinite(a.log_q10) and math.isfinite(a.log_q90):
        return max(MEASURED_RATIO_FLOOR, -a.log_q10, a.log_q90)
    band = answer.step_time_band if isinstance(answer, TimeAnswer) else answer.tpot_band
    mid = band.mid or 1.0
    if band.low <= 0 or not math.isfinite(band.high):
        return 1.0
    return max(MEASURED_RATIO_FLOOR, math.log(band.high / mid), -math.log(band.low / mid))


def _band_pct(low: float, mid: float, high: float) -> float:
    return (high - low) / mid * 100.0 if mid > 0 and math.isfinite(high) else math.inf


def _check_constraints(o: Option, q: RecommendQuestion, data: RecommendData) -> Option | Exclusion:
    """Budget, provenance, band and price rules on an estimated option (first failing wins)."""
    cons = q.constraints
    name = o.gpu.name or o.gpu.slug
    reasons: list[Reason] = []
    if cons.min_provenance is not None and not at_least(o.provenance, cons.min_provenance):
        reasons.append(
            Reason(
                "PROVENANCE_BELOW_MIN",
                {"gpu": name, "provenance": o.provenance, "minimum": cons.min_provenance},
            )
        )
    if cons.max_band_pct is not None:
        pct = _option_band_pct(o)
        if pct > cons.max_band_pct:
            reasons.append(
                Reason(
                    "BAND_TOO_WIDE",
                    {"gpu": name, "band_pct": round(pct, 1), "max_band_pct": cons.max_band_pct},
                )
            )
    needs_price = (
        q.objective in COST_OBJECTIVES or cons.budget_per_hour is not None or cons.budget_per_run is not None
    )
    if o.quote is None and o.tco is None and needs_price:
        reasons.append(no_price_reason(o, q, name))
    reasons += _over_budgets(o, q, name)
    if cons.budget_purchase is not None:
        owned = _with_tco(o, q, data) if data.prices is not None else o
        if owned.tco is None or owned.tco.capex_unknown:
            reasons.append(
                Reason(
                    ReasonCode(owned.tco_missing or NO_PURCHASE_PRICE),
                    {"gpu": name, "gpu_count": o.gpu_count},
                )
            )
        elif owned.tco.capex > cons.budget_purchase:
            reasons.append(
                _over_budget(o, name, "purchase", owned.tco.capex, cons.budget_purchase, owned.tco.currency)
            )
    if reasons:
        return Exclusion(o.gpu, reasons[0], tuple(reasons[1:]))
    if o.quote is None and o.tco is None and o.price_missing is not None:
        # ranked without a cost (none was asked for), but say no instance type holds it
        return replace(o, reasons=(*o.reasons, no_price_reason(o, q, name)))
    return o


def admitted(o: Option, q: RecommendQuestion, data: RecommendData) -> bool:
    """Whether the constraints keep ``o`` (perhaps with a reason added): what a GPU's search
    prefers among its plans, so that a budget the fastest plan breaks leaves a smaller one that
    keeps it rather than excluding the GPU."""
    return not isinstance(_check_constraints(o, q, data), Exclusion)


def bounded(q: RecommendQuestion) -> bool:
    """Whether a constraint beyond speed can exclude a plan (a budget, a provenance floor, a
    band limit): then a GPU's search times more counts than its objective alone needs."""
    c = q.constraints
    return any(
        v is not None
        for v in (c.budget_per_hour, c.budget_per_run, c.budget_purchase, c.min_provenance, c.max_band_pct)
    )


def _over_budget(o: Option, name: str, what: str, cost: float, budget: float, currency: str) -> Reason:
    return Reason(
        "OVER_BUDGET",
        {
            "gpu": name,
            "gpu_count": o.gpu_count,
            "what": what,
            "cost": round(cost, 2),
            "budget": budget,
            "currency": currency,
        },
    )


def _over_budgets(o: Option, q: RecommendQuestion, name: str) -> list[Reason]:
    """The per-hour and per-run budgets the option breaks, on what it is costed by: its rental
    quote, or for GPUs on hand their TCO (a budget bounds owning as it bounds renting)."""
    cons = q.constraints
    if o.quote is not None:
        per_hour, currency = o.quote.per_hour, o.quote.currency
        run_high = o.run_cost[2] if o.run_cost is not None else None
    elif o.tco is not None:
        per_hour, currency = o.tco.per_hour, o.tco.currency
        run_high = (
            o.run_cost[2] if o.run_cost is not None else o.tco.run.high if o.tco.run is not None else None
        )
    else:
        return []
    out: list[Reason] = []
    if cons.budget_per_hour is not None and per_hour > cons.budget_per_hour:
        out.append(_over_budget(o, name, "per_hour", per_hour, cons.budget_per_hour, currency))
    if cons.budget_per_run is not None and run_high is not None and run_high > cons.budget_per_run:
        out.append(_over_budget(o, name, "per_run", run_high, cons.budget_per_run, currency))
    return out


def _with_tco(o: Option, q: RecommendQuestion, data: RecommendData) -> Option:
    """Owning instead of renting: the option's TCO per hour (and for the run), or why not."""
    if data.prices is None:
        return o
    hb = o.hours_band
    if q.constraints.pools is not None:  # GPUs on hand: always costed by TCO, capex known or not
        t = owned_tco(data, q, o.gpu, o.gpu_count, hours=o.hours, hours_band=hb)
        return replace(o, tco=t, reasons=(*o.reasons, *_capex_unknown(o, t)))
    t = tco(
        data.prices,
        o.gpu.slug,
        gpu_count=o.gpu_count,
        tdp_w=o.gpu.tdp_w,
        assumptions=q.cost,
        hours=o.hours,
        hours_low=min(hb[0], o.hours) if hb and o.hours else None,
        hours_high=max(hb[1], o.hours) if hb and o.hours else None,
    )
    if t is None:
        return replace(
            o, tco_missing=tco_exclusion(data.prices, o.gpu.slug, tdp_w=o.gpu.tdp_w) or NO_PURCHASE_PRICE
        )
    return replace(o, tco=t)


def _capex_unknown(o: Option, t: Tco | None) -> tuple[Reason, ...]:
    """Said on an owned plan costed on electricity only (no purchase price known)."""
    if t is None or not t.capex_unknown:
        return ()
    name = o.gpu.name or o.gpu.slug
    params = {
        "gpu": name,
        "gpu_count": o.gpu_count,
        "energy_per_hour": t.energy_per_hour,
        "currency": t.currency,
    }
    return (Reason("CAPEX_UNKNOWN", params),)


def _option_band_pct(o: Option) -> float:
    t = o.est.time
    if t is not None:
        b = t.step_time_band
        return _band_pct(b.low, b.mid, b.high)
    s = o.est.serving
    if s is not None:
        b = s.tpot_band
        return _band_pct(b.low, b.mid, b.high)
    return math.inf


def _objective_value(o: Option, objective: str) -> float | None:
    if objective == "fastest":
        return o.time_value
    if objective == "perf_per_watt":
        ppw = o.perf_per_watt
        return 1.0 / ppw if ppw else None
    if objective == "cost_per_million_tokens":
        return o.cost_per_million_tokens
    # cheapest: the run when it has one, else per token trained, else the fleet per hour
    if o.run_cost is not None:
        return o.run_cost[1]
    if o.train is not None:
        return o.cost_per_million_tokens
    return o.quote.per_hour if o.quote is not None else o.tco.per_hour if o.tco is not None else None


def _rank(options: Sequence[Option], objective: str) -> list[Option]:
    # (value, option): one copy of each option, made below with every ranked field at once
    scored = [(_objective_value(o, objective), o) for o in options]
    # ties: fewer GPUs, then the faster plan (lower time or TPOT), then the better evidence
    # (a measured plan before one anchored on that measurement), then the name
    scored.sort(
        key=lambda s: (
            s[0] is None,
            s[0] or 0.0,
            s[1].gpu_count,
            s[1].time_value,
            -_evidence(s[1].provenance),
            s[1].gpu.slug,
        )
    )
    if not scored:
        return []
    best_value, best = scored[0]
    out = []
    for i, (value, o) in enumerate(scored, start=1):
        ratio = u = None
        within = i == 1
        if value is not None and best_value:
            ratio = value / best_value
            u = o.u if o.gpu.slug == best.gpu.slug else math.hypot(o.u, best.u)
            within = within or abs(math.log(ratio)) <= u
        reasons = list(o.reasons)
        if i == 1:
            reasons.insert(0, Reason("BEST_FOR_OBJECTIVE", {"objective": objective}))
        elif within and ratio is not None:
            reasons.insert(
                0,
                Reason(
                    "WITHIN_ERROR_OF_BEST",
                    {"ratio": round(ratio, 3), "uncertainty_pct": round((math.exp(u or 0) - 1) * 100)},
                ),
            )
        out.append(
            replace(
                o,
                objective_value=value,
                rank=i,
                ratio_to_best=ratio,
                ratio_uncertainty=u,
                within_error_of_best=within,
                reasons=tuple(reasons),
            )
        )
    return out


def _evidence(provenance: str) -> int:
    try:
        return rank(provenance)
    except ValueError:
        return 0


def _frontier(points: Sequence[Option]) -> list[Option]:
    """Time-vs-cost Pareto frontier (both known), sorted by time."""
    pts = [o for o in points if o.cost_value is not None]
    pts.sort(key=lambda o: (o.time_value, o.cost_value or 0.0, o.gpu_count, o.gpu.slug))
    out: list[Option] = []
    best_cost = math.inf
    for o in pts:
        c = o.cost_value or 0.0
        if c < best_cost - 1e-12:
            out.append(o)
            best_cost = c
    return out


def _rank_again(options: Sequence[Option], objective: str) -> list[Option]:
    """Re-rank after the full estimates replaced the quick ones (uncertainties changed)."""
    return _rank(
        [
            replace(
                o,
                reasons=tuple(
                    r for r in o.reasons if r.code not in ("BEST_FOR_OBJECTIVE", "WITHIN_ERROR_OF_BEST")
                ),
            )
            for o in options
        ],
        objective,
    )


def weakest_provenance(options: Sequence[Option]) -> str:
    return weakest(*(o.provenance for o in options)) if options else "spec"
