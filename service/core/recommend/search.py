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
    micro-batch is.

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

from dataclasses import replace

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.estimate import Job
from service.core.estimation.memory import (
    InferenceConfig,
    TrainConfig,
)
from service.core.recommend.candidates import _count_cap, _Counter, _static_reasons
from service.core.recommend.models import (
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
from service.core.recommend.ranking import (
    _check_constraints,
    _frontier,
    _objective_value,
    _rank,
    _with_tco,
    weakest_provenance,
)
from service.core.recommend.reasons import REASON_CODES, Reason
from service.core.recommend.scheduling import scheduling
from service.core.recommend.serving import _ServingSearch
from service.core.recommend.training import _TrainingSearch

__all__ = [
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


def recommend(job: Job, q: RecommendQuestion, data: RecommendData) -> Recommendation:
    """Rank the GPUs of ``data.specs`` for ``job`` under ``q`` (module docstring)."""
    if q.objective not in OBJECTIVES:
        raise InvalidConfiguration("objective", f"objective must be one of {', '.join(OBJECTIVES)}")
    cons = q.constraints
    counter = _Counter()
    search = _TrainingSearch(job, q, data, counter) if isinstance(job.config, TrainConfig) else None
    serving = _ServingSearch(job, q, data, counter) if isinstance(job.config, InferenceConfig) else None
    if search is None and serving is None:
        raise InvalidConfiguration(
            "workload.model",
            "recommendations are modelled for decoder and encoder "
            "training and decoder serving; batch inference of encoders "
            "and CNNs: use /v1/estimate",
        )
    if serving is not None and not isinstance(job.model, DecoderSpec):
        raise InvalidConfiguration("workload.model", "serving recommendations are modelled for decoder LLMs")
    if cons.deadline_hours is not None and serving is not None:
        raise InvalidConfiguration(
            "constraints.deadline_hours",
            "a deadline applies to training (a serving job runs until stopped: give latency targets)",
        )
    if cons.deadline_hours is not None and search is not None and not job.tokens:
        raise InvalidConfiguration(
            "constraints.deadline_hours", "a deadline needs workload.tokens (tokens to train)"
        )
    if cons.budget_per_run is not None and (search is None or not job.tokens):
        raise InvalidConfiguration(
            "constraints.budget.per_run", "a per-run budget applies to training with workload.tokens"
        )
    feasible: list[Option] = []
    frontier_pool: list[Option] = []
    excluded: list[Exclusion] = []
    searched: _TrainingSearch | _ServingSearch = search if search is not None else serving  # type: ignore[assignment]
    pending: list[tuple[float | None, str, GpuSpec, int]] = []
    for slug in sorted(data.specs):
        gpu = data.specs[slug]
        static = _static_reasons(gpu, job, cons)
        if static:
            excluded.append(Exclusion(gpu, static[0], tuple(static[1:])))
            continue
        cap, why = _count_cap(gpu, cons)
        if why is not None or cap < 1:
            excluded.append(
                Exclusion(gpu, why or Reason("OVER_GPU_LIMIT", {"gpu": gpu.name, "max_gpus": cap}))
            )
            continue
        pending.append((searched.bound(gpu, cap), slug, gpu, cap))
    # most promising first: a GPU whose physical lower bound on the objective is worse than the
    # limit-th option found so far cannot enter the answer and is not sized (``not_ranked``)
    pending.sort(key=lambda x: (x[0] is None, x[0] or 0.0, x[1]))
    values: list[float] = []
    not_ranked: list[tuple[GpuSpec, float]] = []
    for bound, _slug, gpu, cap in pending:
        if bound is not None and len(values) >= q.limit and bound > values[q.limit - 1]:
            # not sized; but what memory or placement rules out is still said
            ruled_out = searched.screen(gpu, cap)
            if ruled_out is not None:
                excluded.append(ruled_out)
            else:
                not_ranked.append((gpu, bound))
            continue
        found = searched.options(gpu, cap)
        if isinstance(found, Exclusion):
            excluded.append(found)
            continue
        primary, others = found
        frontier_pool.extend([primary, *others])
        checked = _check_constraints(primary, q, data)
        if isinstance(checked, Exclusion):
            excluded.append(checked)
            continue
        feasible.append(checked)
        v = _objective_value(checked, q.objective)
        if v is not None:
            values.append(v)
            values.sort()
    excluded.sort(key=lambda x: x.gpu.slug)
    ranked = _rank(feasible, q.objective)
    if serving is not None:
        ranked = serving.finish(ranked[: q.limit]) + ranked[q.limit :]
    options = tuple(
        _with_tco(replace(o, schedule=scheduling(o, data.names.get(o.gpu.slug))), q, data)
        for o in ranked[: q.limit]
    )
    frontier = _frontier([o for o in frontier_pool if _check_constraints(o, q, data) is o or o in feasible])
    whatifs = (
        search.what_ifs(options, excluded) if search is not None else serving.what_ifs(options, excluded)  # type: ignore[union-attr]
    )
    warnings: list[Reason] = []
    if not options:
        warnings.append(Reason("NO_OPTION", {"excluded": len(excluded)}))
    if search is not None and search.global_batch_held:
        warnings.append(Reason("GLOBAL_BATCH_HELD", {"global_batch": search.global_batch}))
    return Recommendation(
        job=job,
        objective=q.objective,
        options=options,
        frontier=tuple(frontier),
        excluded=tuple(excluded),
        what_if=tuple(whatifs[:3]),
        warnings=tuple(warnings),
        candidates=counter.candidates,
        memory_estimates=counter.memory,
        timed=counter.timed,
        gpus=len(data.specs),
        not_ranked=tuple(not_ranked),
    )
