"""Which GPU, how many, which strategy: the recommendation search, pure.

``recommend(job, question, data)`` enumerates GPU x count x strategy for a training job (or
GPU x tensor-parallel degree x replicas x weight format for a serving job), prunes what cannot
work before estimating anything, estimates the rest with :func:`service.core.estimation.estimate.estimate`,
ranks by the objective and explains every choice and every exclusion with a stable code and
its numbers (sentences are the presenter's job: ``params`` carry everything a sentence says).

Search, training
    The memory breakdown of a (count, sharding, checkpointing) configuration does not depend on
    the GPU -- only the usable memory it is compared with does -- so each breakdown is computed
    once (lazily, memoised) and compared with every GPU. DDP (and a single GPU) holds a full
    replica, so its breakdown is the same at every count above one; FSDP's shrinks with the
    count. Per GPU the smallest count at which any allowed strategy fits is found first; at that
    count one configuration per strategy family is timed (without checkpointing when that fits;
    DDP without checkpointing is never slower than FSDP at the same count, so FSDP is timed only
    where DDP needs checkpointing or does not fit). One more count is timed where the objective
    or a deadline needs it (the largest allowed count for ``fastest``; the smallest that meets
    the deadline, from the time's 1/n scaling, checked by the estimator). The global batch is
    held fixed across counts when the workload gives one (gradient accumulation); otherwise the
    micro-batch is. Where no data-parallel plan fits, even with checkpointing, tensor
    parallelism inside one node is tried over the same families (``_TrainingSearch.fitting``).

Search, serving
    Per GPU and weight format, every tensor-parallel degree that fits (weights and the KV cache
    of one request per GPU) and can be placed (NVLink domain, free GPUs per node), then the
    fewest replicas that meet the p50 TTFT / TPOT targets at the requested rate (exponential then
    binary search on the replica count, one queueing evaluation per step); the full estimate
    (bands, provenance, capacity) only for the options returned.

Ranking
    Lower is better for every objective value (time, cost, watts per token/s). Ties break on
    GPU count, then slug: deterministic for the same input and data. ``within_error_of_best``
    compares *ratios*: bands on absolute times are correlated across GPUs (they share the
    calibration they were transferred from), so an option is within error of the best when
    ``|log(value / best)|`` is at most the 80% half-width of the ratio's error,
    ``sqrt(u_a^2 + u_b^2)``, where each ``u`` is the held-out log error of the path the figure
    took (:mod:`service.core.estimation.accuracy`: the transfer entries are leave-one-GPU-out *pair*
    errors -- errors of cross-GPU ratios by construction) or a measured cell's own p10-p90.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.estimate import Job, context_overrun
from service.core.estimation.frozen import replace
from service.core.estimation.memory import (
    InferenceConfig,
    TrainConfig,
)
from service.core.recommend.assumptions import assumptions
from service.core.recommend.candidates import _count_cap, _Counter, _static_reasons
from service.core.recommend.models import (
    DEFAULT_SERVING_ENGINE,
    OBJECTIVES,
    Constraints,
    Exclusion,
    GpuNames,
    Option,
    Pool,
    Recommendation,
    RecommendData,
    RecommendQuestion,
    Scheduling,
    StoredRecommendation,
    WhatIf,
)
from service.core.recommend.precision_whatifs import fp16_what_ifs, quantization_what_ifs
from service.core.recommend.ranking import (
    _check_constraints,
    _frontier,
    _objective_value,
    _rank,
    _with_tco,
    admitted,
    weakest_provenance,
)
from service.core.recommend.reasons import REASON_CODES, Reason
from service.core.recommend.scheduling import scheduling
from service.core.recommend.serving import _ServingSearch
from service.core.recommend.training import _TrainingSearch
from service.core.recommend.training_counts import LONG_RUN_HOURS

__all__ = [
    "DEFAULT_SERVING_ENGINE",
    "OBJECTIVES",
    "REASON_CODES",
    "Constraints",
    "Exclusion",
    "GpuNames",
    "Option",
    "Pool",
    "Reason",
    "RecommendData",
    "RecommendQuestion",
    "Recommendation",
    "Scheduling",
    "StoredRecommendation",
    "WhatIf",
    "recommend",
    "scheduling",
    "weakest_provenance",
]


LONG_RUN_COST_SLACK: Final = 1.25
"""A first plan longer than a year names the fastest plan costing at most 25 % more."""


def recommend(job: Job, q: RecommendQuestion, data: RecommendData) -> Recommendation:
    """Rank the GPUs of ``data.specs`` for ``job`` under ``q`` (module docstring)."""
    if q.objective not in OBJECTIVES:
        raise InvalidConfiguration("objective", f"objective must be one of {', '.join(OBJECTIVES)}")
    counter = _Counter()
    search = _TrainingSearch(job, q, data, counter) if isinstance(job.config, TrainConfig) else None
    serving = _ServingSearch(job, q, data, counter) if isinstance(job.config, InferenceConfig) else None
    _validate(job, q, data, search, serving)
    searched: _TrainingSearch | _ServingSearch = search if search is not None else serving  # type: ignore[assignment]
    found = _search_gpus(q, data, searched)
    ranked = _rank(found.feasible, q.objective)
    if serving is not None:
        ranked = serving.finish(ranked[: q.limit]) + ranked[q.limit :]
    warnings: list[Reason] = []
    if not ranked:
        missed = _fastest_missed(found.excluded, lambda o: admitted(o, q, data))
        if missed is not None and missed.plan is not None:  # shown, saying on itself that it misses
            shown = replace(missed.plan, reasons=(missed.reason, *missed.plan.reasons))
            ranked = _rank([shown], q.objective)
            warnings.append(_deadline_unmet(shown, q))
    options = tuple(
        _with_tco(replace(o, schedule=scheduling(o, data.names.get(o.gpu.slug))), q, data)
        for o in ranked[: q.limit]
    )
    ranked_ids = {id(o) for o in found.feasible}  # by identity: dataclass == compares every field
    pool = [o for o in found.pool if id(o) in ranked_ids or (_passes(o, q, data) and _in_time(o, q))]
    if search is not None and options and q.constraints.deadline_hours is None:
        long_run = _long_run(search, options[0], q, data, pool)
        if long_run is not None:
            warnings.append(long_run)
    whatifs = searched.what_ifs(options, found.excluded)
    whatifs += fp16_what_ifs(job, q, data, found.excluded, options, recommend)
    whatifs += quantization_what_ifs(job, q, data, options, recommend)
    if not options:
        warnings.append(Reason("NO_OPTION", {"excluded": len(found.excluded)}))
    if q.engine_assumed is not None:
        warnings.append(Reason("ENGINE_ASSUMED", {"engine": q.engine_assumed}))
    overrun = context_overrun(job.config)
    if overrun is not None:
        warnings.append(
            Reason(
                "BEYOND_CONTEXT", {"model": job.config.model.id, "tokens": overrun[0], "limit": overrun[1]}
            )
        )
    if search is not None and search.global_batch_held:
        warnings.append(Reason("GLOBAL_BATCH_HELD", {"global_batch": search.global_batch}))
    return Recommendation(
        job=job,
        objective=q.objective,
        options=options,
        frontier=tuple(_frontier(pool)),
        excluded=tuple(found.excluded),
        what_if=tuple(whatifs[:3]),
        warnings=tuple(warnings),
        candidates=counter.candidates,
        memory_estimates=counter.memory,
        timed=counter.timed,
        gpus=len(data.specs),
        not_ranked=tuple(found.not_ranked),
        feasible=len(found.feasible),
        assumptions=assumptions(q, options[0] if options else None, q.engine_assumed),
    )


def _passes(o: Option, q: RecommendQuestion, data: RecommendData) -> bool:
    """Whether :func:`_check_constraints` keeps ``o`` as it is; a plan without a cost that no
    instance type holds never is (it is excluded or gains a reason), so its reasons are not built."""
    if o.quote is None and o.tco is None and o.price_missing is not None:
        return False
    return _check_constraints(o, q, data) is o


def _in_time(o: Option, q: RecommendQuestion) -> bool:
    """Whether ``o`` meets the deadline at its band's upper end, as the search judges a plan
    (the frontier offers only plans that pass the constraints)."""
    deadline = q.constraints.deadline_hours
    return deadline is None or o.hours_band is None or o.hours_band[1] <= deadline


def _validate(
    job: Job,
    q: RecommendQuestion,
    data: RecommendData,
    search: _TrainingSearch | None,
    serving: _ServingSearch | None,
) -> None:
    """Questions the search cannot answer, refused with the field that makes them so."""
    cons = q.constraints
    if search is None and serving is None:
        raise InvalidConfiguration(
            "workload.model",
            "recommendations are modelled for decoder and encoder "
            "training and decoder serving; batch inference of encoders "
            "and CNNs: use /v1/estimate",
        )
    if serving is not None and not isinstance(job.model, DecoderSpec):
        raise InvalidConfiguration("workload.model", "serving recommendations are modelled for decoder LLMs")
    if cons.deadline_hours is not None and serving is not None and not serving.offline:
        raise InvalidConfiguration(
            "constraints.deadline_hours",
            "a deadline applies to training and to an offline batch (workload.tokens: output tokens to "
            "generate, without requests_per_s or concurrency, on vllm, sglang or tensorrt-llm); a "
            "serving job runs until stopped: give latency targets",
        )
    if cons.deadline_hours is not None and search is not None and not job.tokens:
        raise InvalidConfiguration(
            "constraints.deadline_hours", "a deadline needs workload.tokens (tokens to train)"
        )
    both = sorted(set(cons.allowed_gpus or ()) & set(cons.excluded_gpus))
    if both:
        raise InvalidConfiguration(
            "constraints.excluded_gpus", f"{', '.join(both)} both allowed and excluded: name each in one list"
        )
    known = (  # every provider a rental row names, read only when the question names providers
        frozenset(r.provider for rows in data.prices.rentals.values() for r in rows)
        if data.prices is not None and q.cost.providers
        else None
    )
    unknown = sorted(set(q.cost.providers or ()) - known) if known else []
    if unknown:
        raise InvalidConfiguration(
            "constraints.providers",
            f"no price row names provider(s) {', '.join(unknown)}; known: {', '.join(sorted(known or ()))}",
        )
    runs = (search is not None and bool(job.tokens)) or (serving is not None and serving.offline)
    if cons.budget_per_run is not None and not runs:
        raise InvalidConfiguration(
            "constraints.budget.per_run",
            "a per-run budget applies to a job with workload.tokens: training, or an offline batch "
            "(inference without requests_per_s or concurrency)",
        )


@dataclass
class _Found:
    feasible: list[Option] = field(default_factory=list)
    pool: list[Option] = field(default_factory=list)  # every plan timed: the frontier's points
    excluded: list[Exclusion] = field(default_factory=list)
    not_ranked: list[tuple[GpuSpec, float]] = field(default_factory=list)


def _search_gpus(
    q: RecommendQuestion, data: RecommendData, searched: _TrainingSearch | _ServingSearch
) -> _Found:
    """Per GPU, most promising first: a GPU whose physical lower bound on the objective is
    worse than the limit-th option found so far cannot enter the answer and is not sized."""
    cons = q.constraints
    out = _Found()
    pending: list[tuple[float | None, str, GpuSpec, int]] = []
    for slug in sorted(data.specs):
        gpu = data.specs[slug]
        static = _static_reasons(gpu, searched.job, cons)
        if static:
            out.excluded.append(Exclusion(gpu, static[0], tuple(static[1:])))
            continue
        cap, why = _count_cap(gpu, cons)
        if why is not None or cap < 1:
            out.excluded.append(
                Exclusion(gpu, why or Reason("OVER_GPU_LIMIT", {"gpu": gpu.name, "max_gpus": cap}))
            )
            continue
        pending.append((searched.bound(gpu, cap), slug, gpu, cap))
    pending.sort(key=lambda x: (x[0] is None, x[0] or 0.0, x[1]))
    values: list[float] = []
    for bound, _slug, gpu, cap in pending:
        if bound is not None and len(values) >= q.limit and bound > values[q.limit - 1]:
            ruled_out = searched.screen(gpu, cap)  # what memory or placement rules out is still said
            if ruled_out is not None:
                out.excluded.append(ruled_out)
            else:
                out.not_ranked.append((gpu, bound))
            continue
        searched.threshold = values[q.limit - 1] if len(values) >= q.limit else None
        found = searched.options(gpu, cap)
        if isinstance(found, Exclusion):
            out.excluded.append(found)
            continue
        primary, others = found
        out.pool.extend([primary, *others])
        checked = _check_constraints(primary, q, data)
        if isinstance(checked, Exclusion):
            out.excluded.append(checked)
            continue
        out.feasible.append(checked)
        v = _objective_value(checked, q.objective)
        if v is not None:
            values.append(v)
            values.sort()
    out.excluded.sort(key=lambda x: x.gpu.slug)
    return out


def _fastest_missed(excluded: Sequence[Exclusion], admit: Callable[[Option], bool]) -> Exclusion | None:
    """The exclusion of the fastest plan found among those that miss the deadline but keep the
    other constraints (what the answer shows when no plan meets it; a plan over the budget, or
    unpriced where a price is needed, is not shown in its place)."""
    missed = [
        e for e in excluded if e.plan is not None and e.reason.code == "MISSES_DEADLINE" and admit(e.plan)
    ]
    return min(
        missed,
        key=lambda e: (e.plan.time_value, e.plan.gpu_count, e.plan.gpu.slug) if e.plan else (0.0, 0, ""),
        default=None,
    )


def _deadline_unmet(o: Option, q: RecommendQuestion) -> Reason:
    """No plan meets the deadline: the fastest shown, and the GPUs of its kind that perfect
    scaling would need at least (more GPUs never scale better than linearly)."""
    hb, deadline = o.hours_band, q.constraints.deadline_hours
    least = math.ceil(o.gpu_count * hb[1] / deadline) if hb is not None and deadline else None
    if least is not None and least > o.gpus_per_node > 1:  # whole nodes beyond one
        least = -(-least // o.gpus_per_node) * o.gpus_per_node
    if q.constraints.pools is not None:
        least = None  # the inventory, not max_gpus, caps the count: no count to raise to
    return Reason(
        "NO_PLAN_MEETS_DEADLINE",
        {
            "deadline_hours": deadline,
            "gpu": o.gpu.name or o.gpu.slug,
            "gpu_count": o.gpu_count,
            "hours": round(o.hours or 0.0, 1),
            "hours_high": round(hb[1], 1) if hb is not None else None,
            "gpus_at_least": least if least is not None and least > o.gpu_count else None,
        },
    )


def _long_run(
    search: _TrainingSearch, first: Option, q: RecommendQuestion, data: RecommendData, pool: list[Option]
) -> Reason | None:
    """A first plan longer than a year: the fastest plan within +25 % of its cost (its GPU at
    about doubling counts is timed for this), or the fastest plan found when cost is unknown."""
    if first.hours is None or first.hours <= LONG_RUN_HOURS:
        return None
    cap, _ = _count_cap(first.gpu, q.constraints)
    more = [o for o in search.faster(first, cap) if _check_constraints(o, q, data) is o]
    pool.extend(o for o in more if o not in pool)
    base = first.cost_value
    near = [
        o
        for o in pool
        if o.time_value < first.time_value
        and (base is None or (o.cost_value is not None and o.cost_value <= base * LONG_RUN_COST_SLACK))
    ]
    best = min(near, key=lambda o: (o.time_value, o.gpu_count), default=None)
    return Reason(
        "LONG_RUN",
        {
            "hours": round(first.hours, 1),
            "years": round(first.hours / (365.0 * 24.0), 2),
            "cost_slack_pct": round((LONG_RUN_COST_SLACK - 1.0) * 100),
            "faster_gpu": (best.gpu.name or best.gpu.slug) if best else None,
            "faster_gpu_count": best.gpu_count if best else None,
            "faster_hours": round(best.hours, 1) if best and best.hours else None,
            "faster_cost_ratio": round(best.cost_value / base, 3)
            if best and base and best.cost_value is not None
            else None,
        },
    )
