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

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from service.core.catalog.models import DecoderSpec
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.estimate import Estimate, Job, JobSpec, ServingAnswer, TimeAnswer, estimate
from service.core.estimation.memory import (
    InferenceConfig,
    MemoryEstimate,
    TrainConfig,
    estimate_inference,
    estimate_training,
)
from service.core.estimation.serving import (
    CONTINUOUS_EFFICIENCIES,
    ENGINE_CLASSES,
    OPS_PER_DECODE_STEP,
    OPS_PER_LAYER_DECODE,
    concurrency_cap,
    deployment,
    iteration_s,
    serve_at_rate,
)
from service.core.evidence.aggregate import CellView
from service.core.evidence.provenance import at_least, weakest
from service.core.pricing.cost import (
    NO_PRICE,
    NO_PURCHASE_PRICE,
    CostAssumptions,
    PriceBook,
    RentQuote,
    Tco,
    cost_per_million_tokens,
    run_cost,
    tco,
    tco_exclusion,
)

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
]

GiB: Final = 2**30

OBJECTIVES: Final[tuple[str, ...]] = ("fastest", "cheapest", "cost_per_million_tokens", "perf_per_watt")

REASON_CODES: Final[tuple[str, ...]] = (
    # exclusions
    "EXCLUDED_BY_USER",
    "NOT_ALLOWED",
    "NOT_IN_INVENTORY",
    "VENDOR_NOT_ALLOWED",
    "FORM_FACTOR",
    "NO_NVLINK",
    "OVER_POWER_CAP",
    "POWER_UNKNOWN",
    "NO_MEMORY_FIGURE",
    "PRECISION_UNSUPPORTED",
    "MEMORY_INSUFFICIENT",
    "NO_PLACEMENT",
    "OVER_GPU_LIMIT",
    "NO_TIME_ESTIMATE",
    "MISSES_DEADLINE",
    "MISSES_TTFT",
    "MISSES_TPOT",
    "PROVENANCE_BELOW_MIN",
    "BAND_TOO_WIDE",
    "NO_PRICE",
    "NO_PURCHASE_PRICE",
    "NO_POWER_FIGURE",
    "OVER_BUDGET",
    # options
    "FITS",
    "SHARDED_TO_FIT",
    "CHECKPOINTING_TO_FIT",
    "SINGLE_GPU_TOO_SMALL",
    "MEETS_DEADLINE",
    "MEETS_TARGETS",
    "BANDWIDTH_BOUND",
    "COMPUTE_BOUND",
    "BEST_FOR_OBJECTIVE",
    "WITHIN_ERROR_OF_BEST",
    "MEASURED_HERE",
    "QUANTISED_WEIGHTS",
    "MULTI_NODE",
    # what-ifs
    "WITH_GRADIENT_CHECKPOINTING",
    "WITH_QLORA",
    "WITH_FUSED_OPTIMIZER",
    "WITH_FP8_WEIGHTS",
    # warnings
    "NO_OPTION",
    "GLOBAL_BATCH_HELD",
)
"""Every code the recommender emits (docs/architecture.md lists them with their meaning); the
presenter has a sentence for each in every language (tests/api/test_recommend_sentences.py)."""

TRAIN_COUNTS: Final[tuple[int, ...]] = (1, 2, 4, 8)
"""Counts inside one node; above 8, whole nodes of the GPU's node size (powers of two of them)."""

MEASURED_RATIO_FLOOR: Final = 0.03
"""Smallest log half-width given a measured figure (run-to-run spread of a stack's median)."""


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pool:
    """GPUs on hand: ``nodes`` nodes of ``gpus_per_node`` GPUs, ``free_gpus_per_node`` of them
    free. Tensor parallelism stays inside a node; data parallelism may span nodes."""

    gpu: str  # slug (resolved by the caller)
    gpus_per_node: int
    free_gpus_per_node: int
    nodes: int = 1
    interconnect: str | None = None  # "nvlink" | "pcie" | None (the catalog's)

    @property
    def free(self) -> int:
        return self.free_gpus_per_node * self.nodes


@dataclass(frozen=True, slots=True)
class Constraints:
    deadline_hours: float | None = None
    budget_per_hour: float | None = None
    budget_per_run: float | None = None
    budget_purchase: float | None = None
    currency: str = "USD"
    max_gpus: int = 8
    allowed_gpus: tuple[str, ...] | None = None  # slugs
    excluded_gpus: tuple[str, ...] = ()
    pools: tuple[Pool, ...] | None = None
    max_power_w_per_gpu: float | None = None
    max_power_w_total: float | None = None
    form_factors: tuple[str, ...] | None = None
    nvlink_required: bool = False
    providers: tuple[str, ...] | None = None
    min_provenance: str | None = None
    max_band_pct: float | None = None
    allow_gradient_checkpointing: bool = True
    allow_quantization: bool = False
    vendors: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class RecommendQuestion:
    job: JobSpec
    constraints: Constraints = field(default_factory=Constraints)
    objective: str = "fastest"
    limit: int = 5
    cost: CostAssumptions = field(default_factory=CostAssumptions)


@dataclass(frozen=True, slots=True)
class GpuNames:
    """Names schedulers know a GPU by (the catalog's aliases of those kinds)."""

    gfd: str | None = None  # Kubernetes GPU feature discovery: nvidia.com/gpu.product
    skypilot: str | None = None
    short: str | None = None  # Slurm gres type


@dataclass(frozen=True, slots=True)
class RecommendData:
    """What the use case loads from the read snapshot; nothing here does I/O."""

    specs: Mapping[str, GpuSpec]
    calibrations: CalibrationSet
    names: Mapping[str, GpuNames] = field(default_factory=dict)
    measured: Callable[[GpuSpec, Job], CellView | None] | None = None
    prices: PriceBook | None = None
    """Rent and purchase prices (``service.core.pricing.cost``); None: no cost is answered."""


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reason:
    """A stable code and the numbers a sentence about it needs (the presenter words it)."""

    code: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Exclusion:
    gpu: GpuSpec
    reason: Reason
    also: tuple[Reason, ...] = ()


@dataclass(frozen=True, slots=True)
class Option:
    gpu: GpuSpec
    gpu_count: int
    nodes: int
    gpus_per_node: int
    est: Estimate
    memory_high_bytes: int
    usable_bytes: int
    quote: RentQuote | None
    hours: float | None  # time to train (training with tokens)
    hours_band: tuple[float, float] | None
    tokens_per_s: float  # trained, or served at the requested load
    power_w: float | None
    provenance: str
    time_value: float  # the objective's "time" axis: s per 1M tokens / hours / TPOT s
    objective_value: float | None
    u: float  # 80% half-width of the log error of this option's figure relative to another GPU's
    reasons: tuple[Reason, ...] = ()
    rank: int = 0
    ratio_to_best: float | None = None
    ratio_uncertainty: float | None = None
    within_error_of_best: bool = False
    run_cost: tuple[float, float, float] | None = None  # (low, mid, high)
    cost_per_million_tokens: float | None = None
    schedule: Scheduling | None = None
    tco: Tco | None = None
    tco_missing: str | None = None  # why there is no TCO (a service.core.pricing.cost reason code)

    @property
    def train(self) -> TrainConfig | None:
        c = self.est.job.config
        return c if isinstance(c, TrainConfig) else None

    @property
    def serve(self) -> InferenceConfig | None:
        c = self.est.job.config
        return c if isinstance(c, InferenceConfig) else None

    @property
    def perf_per_watt(self) -> float | None:
        return self.tokens_per_s / self.power_w if self.power_w else None

    @property
    def cost_value(self) -> float | None:
        """The frontier's cost axis: run cost, else per-million-token cost, else per hour."""
        if self.run_cost is not None:
            return self.run_cost[1]
        if self.cost_per_million_tokens is not None:
            return self.cost_per_million_tokens
        return self.quote.per_hour if self.quote is not None else None


@dataclass(frozen=True, slots=True)
class Scheduling:
    """How to ask a scheduler for an option (defaults: the GPU's catalog aliases)."""

    k8s_resource: str
    k8s_per_pod: int
    k8s_pods: int
    k8s_node_selector: Mapping[str, str]
    slurm: tuple[str, ...]
    skypilot: Mapping[str, Any] | None
    torchrun: tuple[str, ...] | None


K8S_RESOURCE: Final[dict[str, str]] = {
    "nvidia": "nvidia.com/gpu",
    "amd": "amd.com/gpu",
    "intel": "habana.ai/gaudi",
}
"""Device-plugin resource names (NVIDIA, AMD and Intel Gaudi device plugins)."""


def scheduling(o: Option, names: GpuNames | None) -> Scheduling:
    """Kubernetes (node selector on GFD's ``nvidia.com/gpu.product``, one pod per node for
    training and per replica for serving), Slurm (``--gres`` per node, ``--time`` from the upper
    end of the time band, rounded up to the minute), SkyPilot and torchrun arguments."""
    names = names or GpuNames()
    serve = o.serve
    per_pod = serve.tensor_parallel if serve is not None else o.gpus_per_node
    pods = serve.replicas if serve is not None else o.nodes
    selector = {"nvidia.com/gpu.product": names.gfd} if o.gpu.vendor == "nvidia" and names.gfd else {}
    gres_type = (names.short or o.gpu.slug).lower().replace(" ", "-")
    slurm = [f"--nodes={o.nodes}", f"--gres=gpu:{gres_type}:{o.gpus_per_node}"]
    if o.train is not None:
        slurm.append(f"--ntasks-per-node={o.gpus_per_node}")
    if o.hours_band is not None:
        minutes = max(1, math.ceil(o.hours_band[1] * 60.0))
        d, rem = divmod(minutes, 24 * 60)
        h, m = divmod(rem, 60)
        slurm.append(f"--time={d}-{h:02d}:{m:02d}:00" if d else f"--time={h:02d}:{m:02d}:00")
    sky = (
        {"accelerators": f"{names.skypilot}:{o.gpus_per_node}", "num_nodes": o.nodes}
        if names.skypilot
        else None
    )
    torchrun: tuple[str, ...] | None = None
    if o.train is not None and o.gpu_count > 1:
        torchrun = (
            ("--standalone", f"--nproc-per-node={o.gpus_per_node}")
            if o.nodes == 1
            else (
                f"--nnodes={o.nodes}",
                f"--nproc-per-node={o.gpus_per_node}",
                "--rdzv-backend=c10d",
                "--rdzv-endpoint=$MASTER_ADDR:29500",
                "--rdzv-id=$SLURM_JOB_ID",
            )
        )
    return Scheduling(
        k8s_resource=K8S_RESOURCE.get(o.gpu.vendor, "nvidia.com/gpu"),
        k8s_per_pod=per_pod,
        k8s_pods=pods,
        k8s_node_selector=selector,
        slurm=tuple(slurm),
        skypilot=sky,
        torchrun=torchrun,
    )


@dataclass(frozen=True, slots=True)
class StoredRecommendation:
    """A stored answer as the wire wrote it (the presenter re-words its sentences)."""

    id: str
    api_key_id: int | None
    data_version: str
    request: Mapping[str, Any]
    response: Mapping[str, Any]
    created_at: dt.datetime


@dataclass(frozen=True, slots=True)
class WhatIf:
    code: str
    gpu: GpuSpec
    gpu_count: int
    change: Mapping[str, Any]
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Recommendation:
    job: Job
    objective: str
    options: tuple[Option, ...]
    frontier: tuple[Option, ...]
    excluded: tuple[Exclusion, ...]
    what_if: tuple[WhatIf, ...]
    warnings: tuple[Reason, ...]
    candidates: int
    memory_estimates: int
    timed: int
    gpus: int = 0
    not_ranked: tuple[tuple[GpuSpec, float], ...] = ()
    """GPUs not sized because a physical lower bound on their objective value was already worse
    than the last option returned (with that bound)."""


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _gib(x: float) -> float:
    return round(x / GiB, 1)


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


@dataclass
class _Counter:
    candidates: int = 0
    memory: int = 0
    timed: int = 0


class _MemoryTable:
    """Training memory breakdowns keyed by what they depend on (never the GPU)."""

    def __init__(self, base: TrainConfig, counter: _Counter) -> None:
        self.base = base
        self.counter = counter
        self._memo: dict[tuple[int, str, bool, int, str], MemoryEstimate | None] = {}

    def get(self, cfg: TrainConfig) -> MemoryEstimate | None:
        n = cfg.gpu_count if cfg.sharding not in ("none", "ddp") else min(cfg.gpu_count, 2)
        key = (n, cfg.sharding, cfg.gradient_checkpointing, cfg.batch_size, cfg.finetune + cfg.optimizer_impl)
        if key not in self._memo:
            self.counter.memory += 1
            try:
                self._memo[key] = estimate_training(cfg)
            except InvalidConfiguration:
                self._memo[key] = None
        return self._memo[key]


def _node_size(gpu: GpuSpec) -> int:
    node = gpu.node
    if node.nvlink_topology == "switched" and node.nvlink_domain_size > 8:
        return node.nvlink_domain_size
    return 8


# --------------------------------------------------------------------------------------------
# Static filters: what rules a GPU out before anything is estimated
# --------------------------------------------------------------------------------------------


def _static_reasons(gpu: GpuSpec, job: Job, cons: Constraints) -> list[Reason]:
    out: list[Reason] = []
    name = gpu.name or gpu.slug
    if gpu.slug in cons.excluded_gpus:
        out.append(Reason("EXCLUDED_BY_USER", {"gpu": name}))
    if cons.allowed_gpus is not None and gpu.slug not in cons.allowed_gpus:
        out.append(Reason("NOT_ALLOWED", {"gpu": name}))
    if cons.pools is not None and not any(p.gpu == gpu.slug for p in cons.pools):
        out.append(Reason("NOT_IN_INVENTORY", {"gpu": name}))
    if cons.vendors is not None and gpu.vendor not in cons.vendors:
        out.append(
            Reason("VENDOR_NOT_ALLOWED", {"gpu": name, "vendor": gpu.vendor, "allowed": list(cons.vendors)})
        )
    if cons.form_factors is not None and gpu.form_factor not in cons.form_factors:
        out.append(
            Reason(
                "FORM_FACTOR",
                {"gpu": name, "form_factor": gpu.form_factor, "allowed": list(cons.form_factors)},
            )
        )
    if cons.nvlink_required and gpu.node.nvlink_topology == "none":
        out.append(Reason("NO_NVLINK", {"gpu": name}))
    if cons.max_power_w_per_gpu is not None:
        if gpu.tdp_w is None:
            out.append(Reason("POWER_UNKNOWN", {"gpu": name, "cap_w": cons.max_power_w_per_gpu}))
        elif gpu.tdp_w > cons.max_power_w_per_gpu:
            out.append(
                Reason(
                    "OVER_POWER_CAP",
                    {"gpu": name, "tdp_w": gpu.tdp_w, "cap_w": cons.max_power_w_per_gpu, "per": "gpu"},
                )
            )
    if gpu.fit_memory_bytes is None:
        out.append(Reason("NO_MEMORY_FIGURE", {"gpu": name}))
    if gpu.support_for(job.precision) == "no":
        out.append(Reason("PRECISION_UNSUPPORTED", {"gpu": name, "precision": job.precision}))
    return out


def _count_cap(gpu: GpuSpec, cons: Constraints) -> tuple[int, Reason | None]:
    """Most GPUs of this kind one option may use: ``max_gpus``, the free GPUs of its pools and
    the total power cap. The reason says which bound binds when it leaves fewer than one."""
    cap = cons.max_gpus
    why: Reason | None = None
    if cons.pools is not None:
        free = sum(p.free for p in cons.pools if p.gpu == gpu.slug)
        cap = min(cap, free)
        if free < 1:
            why = Reason("NOT_IN_INVENTORY", {"gpu": gpu.name or gpu.slug, "free": 0})
    if cons.max_power_w_total is not None and gpu.tdp_w:
        by_power = int(cons.max_power_w_total // gpu.tdp_w)
        if by_power < cap:
            cap = by_power
            if cap < 1:
                why = Reason(
                    "OVER_POWER_CAP",
                    {
                        "gpu": gpu.name or gpu.slug,
                        "tdp_w": gpu.tdp_w,
                        "cap_w": cons.max_power_w_total,
                        "per": "total",
                    },
                )
    return cap, why


def _pool_shape(gpu: GpuSpec, cons: Constraints) -> tuple[int, int] | None:
    """(free GPUs per node, nodes) of the best pool of this GPU, or None without inventory."""
    if cons.pools is None:
        return None
    pools = [p for p in cons.pools if p.gpu == gpu.slug and p.free_gpus_per_node > 0]
    if not pools:
        return (0, 0)
    best = max(pools, key=lambda p: (p.free_gpus_per_node, p.nodes))
    return best.free_gpus_per_node, sum(
        p.nodes for p in pools if p.free_gpus_per_node == best.free_gpus_per_node
    )


def _placement(gpu: GpuSpec, n: int, cons: Constraints) -> tuple[int, int]:
    """(nodes, GPUs per node) for ``n`` GPUs: the pool's free GPUs per node, else whole nodes
    of the GPU's node size."""
    shape = _pool_shape(gpu, cons)
    per = shape[0] if shape is not None and shape[0] > 0 else _node_size(gpu)
    per = min(per, n)
    return max(1, math.ceil(n / per)), per


# --------------------------------------------------------------------------------------------
# The search
# --------------------------------------------------------------------------------------------


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
        q.objective in ("cheapest", "cost_per_million_tokens")
        or cons.budget_per_hour is not None
        or cons.budget_per_run is not None
    )
    if o.quote is None and needs_price:
        reasons.append(
            Reason(
                NO_PRICE,
                {
                    "gpu": name,
                    "gpu_count": o.gpu_count,
                    "providers": sorted(cons.providers) if cons.providers else None,
                    "pricing_models": list(q.cost.pricing_models),
                    "currency": q.cost.currency,
                },
            )
        )
    if o.quote is not None:
        if cons.budget_per_hour is not None and o.quote.per_hour > cons.budget_per_hour:
            reasons.append(
                Reason(
                    "OVER_BUDGET",
                    {
                        "gpu": name,
                        "gpu_count": o.gpu_count,
                        "what": "per_hour",
                        "cost": round(o.quote.per_hour, 2),
                        "budget": cons.budget_per_hour,
                        "currency": o.quote.currency,
                    },
                )
            )
        if cons.budget_per_run is not None and o.run_cost is not None and o.run_cost[2] > cons.budget_per_run:
            reasons.append(
                Reason(
                    "OVER_BUDGET",
                    {
                        "gpu": name,
                        "gpu_count": o.gpu_count,
                        "what": "per_run",
                        "cost": round(o.run_cost[2], 2),
                        "budget": cons.budget_per_run,
                        "currency": o.quote.currency,
                    },
                )
            )
    if cons.budget_purchase is not None:
        owned = _with_tco(o, q, data) if data.prices is not None else o
        if owned.tco is None:
            reasons.append(
                Reason(owned.tco_missing or NO_PURCHASE_PRICE, {"gpu": name, "gpu_count": o.gpu_count})
            )
        elif owned.tco.capex > cons.budget_purchase:
            reasons.append(
                Reason(
                    "OVER_BUDGET",
                    {
                        "gpu": name,
                        "gpu_count": o.gpu_count,
                        "what": "purchase",
                        "cost": round(owned.tco.capex, 2),
                        "budget": cons.budget_purchase,
                        "currency": owned.tco.currency,
                    },
                )
            )
    if reasons:
        return Exclusion(o.gpu, reasons[0], tuple(reasons[1:]))
    return o


def _with_tco(o: Option, q: RecommendQuestion, data: RecommendData) -> Option:
    """Owning instead of renting: the option's TCO per hour (and for the run), or why not."""
    if data.prices is None:
        return o
    hb = o.hours_band
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
    return o.quote.per_hour if o.quote is not None else None


def _rank(options: Sequence[Option], objective: str) -> list[Option]:
    scored = []
    for o in options:
        v = _objective_value(o, objective)
        scored.append(replace(o, objective_value=v))
    scored.sort(key=lambda o: (o.objective_value is None, o.objective_value or 0.0, o.gpu_count, o.gpu.slug))
    if not scored:
        return []
    best = scored[0]
    out = []
    for i, o in enumerate(scored, start=1):
        ratio = u = None
        within = i == 1
        if o.objective_value is not None and best.objective_value:
            ratio = o.objective_value / best.objective_value
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
                rank=i,
                ratio_to_best=ratio,
                ratio_uncertainty=u,
                within_error_of_best=within,
                reasons=tuple(reasons),
            )
        )
    return out


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


def _price(data: RecommendData, q: RecommendQuestion, gpu: GpuSpec, n: int) -> RentQuote | None:
    """The cheapest rentable shape covering ``n`` GPUs under the question's cost assumptions."""
    return data.prices.rent(gpu.slug, n, q.cost) if data.prices is not None else None


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Plan:
    """One training configuration and its memory."""

    cfg: TrainConfig
    mem: MemoryEstimate


class _TrainingSearch:
    def __init__(self, job: Job, q: RecommendQuestion, data: RecommendData, counter: _Counter) -> None:
        assert isinstance(job.config, TrainConfig)
        self.job = job
        self.q = q
        self.data = data
        self.counter = counter
        self.base: TrainConfig = job.config
        self.table = _MemoryTable(self.base, counter)
        self.global_batch = self.base.global_batch
        self.global_batch_held = bool(self.global_batch)
        cons = q.constraints
        ck: tuple[bool, ...]
        if self.base.gradient_checkpointing:
            ck = (True,)
        elif cons.allow_gradient_checkpointing:
            ck = (False, True)
        else:
            ck = (False,)
        self.checkpointing = ck
        stated = job.stated
        if "sharding" in stated and self.base.sharding not in ("none",):
            self.shardings: tuple[str, ...] = (self.base.sharding,)
        elif self.base.finetune == "qlora":
            self.shardings = ("ddp",)  # QLoRA with FSDP / ZeRO-3 is not modelled
        else:
            self.shardings = ("ddp", "fsdp")
        self._plans: dict[tuple[int, str, bool], _Plan | None] = {}
        self._relaxed_memo: dict[tuple[str, int, str, bool], MemoryEstimate | None] = {}
        self.fewest: dict[str, int] = {}
        """Per GPU, the fewest GPUs any allowed strategy fits on (what a what-if must beat)."""

    # ---- configurations ----------------------------------------------------------------

    def counts(self, cap: int, gpu: GpuSpec) -> list[int]:
        node = _node_size(gpu)
        out = [n for n in TRAIN_COUNTS if n <= cap and n <= node]
        k = node * 2 if node >= 8 else 16
        while k <= cap:
            out.append(k)
            k *= 2
        if cap not in out and cap > 1 and cap <= node:
            out.append(cap)  # an inventory of, say, 6 free GPUs
        return sorted(set(out))

    def plan(self, n: int, sharding: str, ckpt: bool) -> _Plan | None:
        """The configuration at ``n`` GPUs (global batch held when given), memoised."""
        key = (n, sharding, ckpt)
        if key in self._plans:
            return self._plans[key]
        b = self.base
        micro = b.batch_size
        g = self.global_batch
        if g:
            if g < n:
                self._plans[key] = None
                return None
            per_rank = g // n if g % n == 0 else 0
            if not per_rank:
                self._plans[key] = None
                return None
            micro = max(d for d in range(1, min(micro, per_rank) + 1) if per_rank % d == 0)
        s = "none" if n == 1 else sharding
        amp = b.precision.startswith("amp_")
        mixed = b.mixed_precision
        if "mixed_precision" not in self.job.stated:
            mixed = "fsdp_policy" if s == "fsdp" and amp else "autocast"
        elif mixed == "fsdp_policy" and s != "fsdp":
            self._plans[key] = None
            return None
        try:
            cfg = replace(
                b,
                gpu_count=n,
                sharding=s,
                gradient_checkpointing=ckpt,
                batch_size=micro,
                global_batch=g,
                mixed_precision=mixed,
            )
        except InvalidConfiguration:
            self._plans[key] = None
            return None
        mem = self.table.get(cfg)
        plan = _Plan(cfg, mem) if mem is not None else None
        self._plans[key] = plan
        return plan

    def fitting(self, n: int, usable: int) -> list[_Plan]:
        """Per strategy family at ``n`` GPUs, the lightest-in-compute configuration that fits
        (no checkpointing when that fits). DDP without checkpointing makes FSDP moot."""
        out: list[_Plan] = []
        shardings = ("none",) if n == 1 else self.shardings
        for s in shardings:
            for ck in self.checkpointing:
                self.counter.candidates += 1
                p = self.plan(n, s, ck)
                if p is not None and p.mem.fits(usable):
                    out.append(p)
                    break
            if out and s in ("none", "ddp") and not out[0].cfg.gradient_checkpointing:
                break
        return out

    def lightest(self, n: int) -> _Plan | None:
        """The smallest-footprint configuration allowed at ``n`` GPUs (what an exclusion quotes)."""
        best: _Plan | None = None
        shardings = ("none",) if n == 1 else self.shardings
        for s in shardings:
            for ck in self.checkpointing:
                p = self.plan(n, s, ck)
                if p is not None and (
                    best is None or p.mem.device_memory_band.high < best.mem.device_memory_band.high
                ):
                    best = p
        return best

    # ---- per GPU ----------------------------------------------------------------------------

    def bound(self, gpu: GpuSpec, cap: int) -> float | None:
        """A lower bound on this GPU's objective value from the roofline alone: a trained token
        costs at least ``4 N`` FLOPs (forward ``2 N``, backward through the activations ``2 N``;
        ``6 N`` with weight gradients), run at the dense peak on every GPU allowed. None where
        the objective has no such bound (prices) or a figure is missing."""
        peak = gpu.peak_for(self.base.precision) or gpu.peak_for("bf16")
        if not peak:
            return None
        flops = 4.0 * float(self.job.model.active_params)
        if self.q.objective == "fastest":
            s_per_token = flops / (cap * peak * 1e12)
            return self.job.tokens * s_per_token / 3600.0 if self.job.tokens else 1e6 * s_per_token
        if self.q.objective == "perf_per_watt" and gpu.tdp_w:
            return gpu.tdp_w * flops / (peak * 1e12)  # W per (token/s) on one GPU, perfectly used
        return None

    def screen(self, gpu: GpuSpec, cap: int) -> Exclusion | None:
        """The memory verdict alone (breakdowns are shared, so this is cheap): the exclusion a
        GPU gets when nothing fits, else None."""
        usable = int(gpu.fit_memory_bytes or 0)
        if any(self.fitting(n, usable) for n in self.counts(cap, gpu)):
            return None
        found = self.options(gpu, cap)
        return found if isinstance(found, Exclusion) else None

    def options(self, gpu: GpuSpec, cap: int) -> tuple[Option, list[Option]] | Exclusion:
        usable = int(gpu.fit_memory_bytes or 0)
        name = gpu.name or gpu.slug
        counts = self.counts(cap, gpu)
        n0 = None
        plans: list[_Plan] = []
        for n in counts:
            plans = self.fitting(n, usable)
            if plans:
                n0 = n
                break
        if n0 is not None:
            self.fewest[gpu.slug] = n0
        if n0 is None:
            top = counts[-1] if counts else 1
            light = self.lightest(top)
            single = self.lightest(1)
            params: dict[str, Any] = {"gpu": name, "usable_gib": _gib(usable), "gpu_count": top}
            if light is not None:
                params.update(
                    needed_gib=_gib(light.mem.device_memory_band.high),
                    sharding=light.cfg.sharding,
                    gradient_checkpointing=light.cfg.gradient_checkpointing,
                )
            if single is not None and top > 1:
                params["single_gpu_needed_gib"] = _gib(single.mem.device_memory_band.high)
            return Exclusion(gpu, Reason("MEMORY_INSUFFICIENT", params))
        if not gpu.bandwidth_gb_per_s or not (gpu.peak_for(self.base.precision) or gpu.peak_for("bf16")):
            p = plans[0]
            return Exclusion(
                gpu,
                Reason(
                    "NO_TIME_ESTIMATE",
                    {
                        "gpu": name,
                        "gpu_count": n0,
                        "needed_gib": _gib(p.mem.device_memory_band.high),
                        "usable_gib": _gib(usable),
                        "missing": "memory bandwidth"
                        if not gpu.bandwidth_gb_per_s
                        else f"{self.base.precision} tensor peak",
                    },
                ),
            )
        timed = [o for o in (self._option(gpu, p, usable) for p in plans) if o is not None]
        if not timed:
            return Exclusion(
                gpu, Reason("NO_TIME_ESTIMATE", {"gpu": name, "gpu_count": n0, "missing": "a time"})
            )
        first = min(timed, key=lambda o: (o.time_value, o.gpu_count))
        others = [o for o in timed if o is not first]
        cons = self.q.constraints
        primary = first
        # the objective or the deadline may want more GPUs than the fewest that fit
        target_n: int | None = None
        if self.q.objective == "fastest" and counts[-1] > n0:
            target_n = counts[-1]
        if cons.deadline_hours is not None and first.hours_band is not None:
            hi = first.hours_band[1]
            if hi > cons.deadline_hours:
                want = n0 * hi / cons.deadline_hours
                bigger = [n for n in counts if n >= want] or [counts[-1]]
                target_n = max(target_n or 0, bigger[0]) if self.q.objective == "fastest" else bigger[0]
        if target_n is not None and target_n > n0:
            more = self._scaled(gpu, first, target_n, usable, counts)
            if more is not None:
                others.append(first)
                primary = more
        if (
            cons.deadline_hours is not None
            and primary.hours_band is not None
            and primary.hours_band[1] > cons.deadline_hours
        ):
            # one more rung before giving up
            bigger = [n for n in counts if n > primary.gpu_count]
            if bigger:
                more = self._scaled(gpu, primary, bigger[0], usable, counts)
                if more is not None:
                    others.append(primary)
                    primary = more
            if primary.hours_band is not None and primary.hours_band[1] > cons.deadline_hours:
                return Exclusion(
                    gpu,
                    Reason(
                        "MISSES_DEADLINE",
                        {
                            "gpu": name,
                            "gpu_count": primary.gpu_count,
                            "hours_high": round(primary.hours_band[1], 1),
                            "hours": round(primary.hours or 0.0, 1),
                            "deadline_hours": cons.deadline_hours,
                            "max_gpus": counts[-1],
                        },
                    ),
                )
        if cons.deadline_hours is not None and primary.hours_band is not None:
            primary = replace(
                primary,
                reasons=(
                    *primary.reasons,
                    Reason(
                        "MEETS_DEADLINE",
                        {
                            "hours_high": round(primary.hours_band[1], 1),
                            "deadline_hours": cons.deadline_hours,
                        },
                    ),
                ),
            )
        if n0 > 1:
            single = self.lightest(1)
            if single is not None:
                primary = replace(
                    primary,
                    reasons=(
                        Reason(
                            "SINGLE_GPU_TOO_SMALL",
                            {
                                "gpu": name,
                                "needed_gib": _gib(single.mem.device_memory_band.high),
                                "usable_gib": _gib(usable),
                            },
                        ),
                        *primary.reasons,
                    ),
                )
        return primary, others

    def _scaled(self, gpu: GpuSpec, like: Option, n: int, usable: int, counts: list[int]) -> Option | None:
        """The same strategy family at ``n`` GPUs (it fits: DDP's memory does not grow with the
        count and FSDP's shrinks), checkpointing dropped when that fits there."""
        cfg = like.train
        assert cfg is not None
        family = cfg.sharding if cfg.sharding != "none" else "ddp"
        plan = None
        for ck in self.checkpointing:
            p = self.plan(n, family, ck)
            if p is not None and p.mem.fits(usable):
                plan = p
                break
        if plan is None:
            return None
        return self._option(gpu, plan, usable)

    def _option(self, gpu: GpuSpec, plan: _Plan, usable: int) -> Option | None:
        cfg = plan.cfg
        job = replace(self.job, config=cfg, solve_for=None)
        measured = self.data.measured(gpu, job) if self.data.measured is not None else None
        self.counter.timed += 1
        try:
            est = estimate(gpu, job, self.data.calibrations, measured, breakdown=plan.mem)
        except (InvalidConfiguration, MissingFigure):
            return None
        t = est.time
        if t is None or not est.memory.fits:
            return None
        n = cfg.gpu_count
        nodes, per = _placement(gpu, n, self.q.constraints)
        quote = _price(self.data, self.q, gpu, n)
        hours = t.time_to_train_s / 3600.0 if t.time_to_train_s else None
        hb = t.time_to_train_band
        hours_band = (hb.low / 3600.0, hb.high / 3600.0) if hb is not None else None
        tps = t.tokens_per_s
        time_value = hours if hours is not None else (1e6 / tps if tps > 0 else math.inf)
        run: tuple[float, float, float] | None = None
        cpm = None
        if quote is not None:
            if hours is not None and hours_band is not None:
                rc = run_cost(
                    quote, hours, hours_low=min(hours_band[0], hours), hours_high=max(hours_band[1], hours)
                )
                run = (rc.low, rc.amount, rc.high)
            if tps > 0:
                cpm = cost_per_million_tokens(
                    quote.per_hour, capacity_tokens_per_s=tps, served_tokens_per_s=tps
                )
        reasons = [
            Reason(
                "FITS",
                {
                    "gpu": gpu.name or gpu.slug,
                    "gpu_count": n,
                    "needed_gib": _gib(plan.mem.device_memory_band.high),
                    "usable_gib": _gib(usable),
                    "headroom_gib": _gib(usable - plan.mem.device_memory_band.high),
                },
            )
        ]
        if cfg.sharding in ("fsdp", "zero3") and n > 1:
            ddp = self.plan(n, "ddp", cfg.gradient_checkpointing)
            if ddp is not None and not ddp.mem.fits(usable):
                reasons.append(
                    Reason(
                        "SHARDED_TO_FIT",
                        {
                            "sharding": cfg.sharding,
                            "gpu_count": n,
                            "ddp_needed_gib": _gib(ddp.mem.device_memory_band.high),
                            "usable_gib": _gib(usable),
                        },
                    )
                )
        if cfg.gradient_checkpointing and not self.base.gradient_checkpointing:
            off = self.plan(n, cfg.sharding if n > 1 else "none", False)
            if off is not None:
                reasons.append(
                    Reason(
                        "CHECKPOINTING_TO_FIT",
                        {
                            "needed_without_gib": _gib(off.mem.device_memory_band.high),
                            "usable_gib": _gib(usable),
                        },
                    )
                )
        if nodes > 1:
            reasons.append(Reason("MULTI_NODE", {"nodes": nodes, "gpus_per_node": per}))
        if t.provenance == "measured":
            reasons.append(Reason("MEASURED_HERE", {"gpu": gpu.name or gpu.slug}))
        reasons.append(
            Reason("COMPUTE_BOUND" if t.bound == "compute" else "BANDWIDTH_BOUND", {"mfu": round(t.mfu, 3)})
            if t.bound in ("compute", "memory")
            else Reason("COMPUTE_BOUND", {"mfu": round(t.mfu, 3)})
        )
        return Option(
            gpu=gpu,
            gpu_count=n,
            nodes=nodes,
            gpus_per_node=per,
            est=est,
            memory_high_bytes=int(plan.mem.device_memory_band.high),
            usable_bytes=usable,
            quote=quote,
            hours=hours,
            hours_band=hours_band,
            tokens_per_s=tps,
            power_w=gpu.tdp_w * n if gpu.tdp_w else None,
            provenance=t.provenance,
            time_value=time_value,
            objective_value=None,
            u=ratio_half_width(t),
            reasons=tuple(reasons),
            run_cost=run,
            cost_per_million_tokens=cpm,
        )

    # ---- what-ifs -----------------------------------------------------------------------------

    def _relaxed(
        self, code: str, f: Callable[[TrainConfig], TrainConfig], cfg: TrainConfig
    ) -> MemoryEstimate | None:
        key = (code, cfg.gpu_count, cfg.sharding, cfg.gradient_checkpointing)
        memo = self._relaxed_memo
        if key not in memo:
            self.counter.memory += 1
            try:
                memo[key] = estimate_training(f(cfg))
            except InvalidConfiguration:
                memo[key] = None
        return memo[key]

    def what_ifs(self, options: Sequence[Option], excluded: Sequence[Exclusion]) -> list[WhatIf]:
        """Changes the caller ruled out (or did not ask for) that fit the job on fewer GPUs of a
        kind: checkpointing, QLoRA instead of LoRA, the fused AdamW step."""
        out: list[WhatIf] = []
        base = self.base
        relax: list[tuple[str, dict[str, Any], Callable[[TrainConfig], TrainConfig]]] = []
        if not self.q.constraints.allow_gradient_checkpointing and not base.gradient_checkpointing:
            relax.append(
                (
                    "WITH_GRADIENT_CHECKPOINTING",
                    {"constraints.allow_gradient_checkpointing": True},
                    lambda c: replace(c, gradient_checkpointing=True),
                )
            )
        if (
            base.finetune == "lora" and "finetune" not in self.job.stated and base.precision != "fp32"
        ) or base.finetune == "lora":
            relax.append(
                (
                    "WITH_QLORA",
                    {"workload.finetune": "qlora"},
                    lambda c: replace(
                        c, finetune="qlora", sharding="ddp" if c.sharding in ("fsdp", "zero3") else c.sharding
                    ),
                )
            )
        if base.optimizer == "adamw" and base.optimizer_impl != "fused":
            relax.append(
                (
                    "WITH_FUSED_OPTIMIZER",
                    {"workload.optimizer_impl": "fused"},
                    lambda c: replace(c, optimizer_impl="fused"),
                )
            )
        if not relax:
            return out
        current: dict[str, int] = {o.gpu.slug: self.fewest.get(o.gpu.slug, o.gpu_count) for o in options}
        for ex in excluded:
            if ex.reason.code == "MEMORY_INSUFFICIENT":
                current.setdefault(ex.gpu.slug, 10**9)
        specs = self.data.specs
        seen: set[tuple[str, str]] = set()
        for slug in sorted(current, key=lambda s: (-(current[s]), s)):
            gpu = specs.get(slug)
            if gpu is None:
                continue
            usable = int(gpu.fit_memory_bytes or 0)
            now = current[slug]
            cap, _ = _count_cap(gpu, self.q.constraints)
            for code, change, f in relax:
                if (code, slug) in seen:
                    continue
                for n in self.counts(max(cap, 1), gpu):
                    if n >= now:
                        break
                    p = self.lightest(n)
                    if p is None:
                        continue
                    mem = self._relaxed(code, f, p.cfg)
                    if mem is not None and mem.fits(usable):
                        seen.add((code, slug))
                        out.append(
                            WhatIf(
                                code,
                                gpu,
                                n,
                                change,
                                {
                                    "gpu": gpu.name or slug,
                                    "gpu_count": n,
                                    "needed_gib": _gib(mem.device_memory_band.high),
                                    "usable_gib": _gib(usable),
                                    "instead_of": None if now >= 10**9 else now,
                                },
                            )
                        )
                        break
        # fewest GPUs first, then the smaller card
        out.sort(key=lambda w: (w.gpu_count, w.gpu.fit_memory_bytes or 0, w.code, w.gpu.slug))
        return out[:3]


# --------------------------------------------------------------------------------------------
# Serving
# --------------------------------------------------------------------------------------------


class _ServingSearch:
    def __init__(self, job: Job, q: RecommendQuestion, data: RecommendData, counter: _Counter) -> None:
        assert isinstance(job.config, InferenceConfig)
        self.job = job
        self.q = q
        self.data = data
        self.counter = counter
        self.base: InferenceConfig = job.config
        self.serving = job.serving
        self.continuous = ENGINE_CLASSES[self.base.engine].batching == "continuous"
        self.rate = self.serving.requests_per_s if self.serving is not None else None
        formats = [self.base.quant_method]
        if q.constraints.allow_quantization and self.base.quant_method == "none":
            formats += ["fp8", "awq"]
        self.formats = tuple(formats)
        self._mem: dict[tuple[str, int], MemoryEstimate] = {}
        self.host_floor_s = 0.0
        """Eager generate launches every op of a decode step from Python: the host profile's
        dispatch cost per op bounds TPOT from below on every GPU alike (``service.core.estimation.serving``)."""
        if not self.continuous:
            host = data.calibrations.host_profile("llm-infer", self.base.precision)
            m = self.base.model
            if host is not None and isinstance(m, DecoderSpec):
                self.host_floor_s = host.dispatch_s * (
                    m.num_layers * OPS_PER_LAYER_DECODE + OPS_PER_DECODE_STEP
                )
        self._rejected: dict[str, Reason] = {}

    def memory(self, fmt: str, tp: int) -> MemoryEstimate:
        key = (fmt, tp)
        if key not in self._mem:
            self.counter.memory += 1
            self._mem[key] = estimate_inference(
                replace(self.base, quant_method=fmt, tensor_parallel=tp, replicas=1)
            )
        return self._mem[key]

    def tp_degrees(self, gpu: GpuSpec, cap: int) -> tuple[list[int], int]:
        """TP degrees that divide the KV heads, up to the NVLink domain (8 on a PCIe node) and
        the free GPUs of one node; the second value is what placement allows per node."""
        m = self.base.model
        assert isinstance(m, DecoderSpec)
        node = gpu.node
        top = max(node.nvlink_domain_size, 1) if node.nvlink_topology == "switched" else 8
        per_node = top
        shape = _pool_shape(gpu, self.q.constraints)
        if shape is not None:
            per_node = shape[0]
        if self.q.constraints.nvlink_required and node.nvlink_topology == "pairwise":
            top = min(top, 2)
        out = []
        k = 1
        while k <= min(top, cap, 64):
            if m.num_kv_heads % k == 0:
                out.append(k)
            k *= 2
        return out, per_node

    def bound(self, gpu: GpuSpec, cap: int) -> float | None:
        """A lower bound on the objective from the roofline: every decode step streams the
        weights a GPU holds (``fastest``: TPOT >= weight bytes per GPU / bandwidth at the largest
        TP that fits and can be placed); ``perf_per_watt`` at a request rate: at least one TP
        group of the smallest degree that fits draws its board power for the same tokens."""
        if not gpu.bandwidth_gb_per_s:
            return None
        usable = int(gpu.fit_memory_bytes or 0)
        tps, per_node = self.tp_degrees(gpu, cap)
        fitting = [
            (fmt, tp)
            for fmt in self.formats
            for tp in tps
            if tp <= per_node and self.memory(fmt, tp).fits(usable)
        ]
        if not fitting:
            return None
        m = self.base.model
        active = float(m.active_params) / float(m.total_params) if m.total_params else 1.0
        if self.q.objective == "fastest":
            stream = min(
                float(self.memory(fmt, tp).persistent.get("weights", 0))
                * active
                / (gpu.bandwidth_gb_per_s * 1e9)
                for fmt, tp in fitting
            )
            return max(stream, self.host_floor_s)
        if self.q.objective == "perf_per_watt" and gpu.tdp_w and self.rate and self.serving is not None:
            return min(tp for _f, tp in fitting) * gpu.tdp_w / (self.rate * self.serving.workload.output_len)
        return None

    def screen(self, gpu: GpuSpec, cap: int) -> Exclusion | None:
        """Memory and placement alone: ``MEMORY_INSUFFICIENT`` when no TP degree holds a replica,
        ``NO_PLACEMENT`` when the ones that do cannot be placed, else None."""
        usable = int(gpu.fit_memory_bytes or 0)
        tps, per_node = self.tp_degrees(gpu, cap)
        fits = [(fmt, tp) for fmt in self.formats for tp in tps if self.memory(fmt, tp).fits(usable)]
        if fits and any(tp <= per_node for _f, tp in fits):
            return None
        found = self.options(gpu, cap)
        return found if isinstance(found, Exclusion) else None

    def options(self, gpu: GpuSpec, cap: int) -> tuple[Option, list[Option]] | Exclusion:
        usable = int(gpu.fit_memory_bytes or 0)
        name = gpu.name or gpu.slug
        tps, per_node = self.tp_degrees(gpu, cap)
        candidates: list[Option] = []
        smallest_need: tuple[float, int, str] | None = None
        placement_block: int | None = None
        latency_miss: Reason | None = None
        over_limit: Reason | None = None
        no_time = not gpu.bandwidth_gb_per_s or not (gpu.peak_for("bf16") or gpu.peak_for("fp16"))
        for fmt in self.formats:
            if fmt in ("fp8",) and gpu.support_for("fp8") == "no" and fmt != self.base.quant_method:
                continue
            for tp in tps:
                self.counter.candidates += 1
                mem = self.memory(fmt, tp)
                need = mem.device_memory_band.high
                if not mem.fits(usable):
                    if smallest_need is None or need < smallest_need[0]:
                        smallest_need = (need, tp, fmt)
                    continue
                if tp > per_node:
                    placement_block = tp if placement_block is None else min(placement_block, tp)
                    continue
                if no_time:
                    if smallest_need is None or smallest_need[0] > 0:
                        smallest_need = (-need, tp, fmt)  # marks "fits" for the exclusion
                    continue
                fewest = min(
                    (o.gpu_count for o in candidates if o.est.job.config.quant_method == fmt),  # type: ignore[union-attr]
                    default=None,
                )
                if fewest is not None and tp > fewest:
                    break  # one replica of this TP already needs more GPUs than the best plan
                found = self._plan(gpu, fmt, tp, cap, usable, mem, fewest)
                if isinstance(found, Reason):
                    if found.code in ("MISSES_TTFT", "MISSES_TPOT"):
                        latency_miss = latency_miss or found
                    elif found.code == "OVER_GPU_LIMIT":
                        over_limit = over_limit or found
                    continue
                if found is not None:
                    candidates.append(found)
                if not (self.continuous and self.rate is not None):
                    break  # no load to size: the smallest TP group that fits
        if not candidates:
            if no_time and smallest_need is not None and smallest_need[0] < 0:
                return Exclusion(
                    gpu,
                    Reason(
                        "NO_TIME_ESTIMATE",
                        {
                            "gpu": name,
                            "gpu_count": smallest_need[1],
                            "needed_gib": _gib(-smallest_need[0]),
                            "usable_gib": _gib(usable),
                            "missing": "memory bandwidth"
                            if not gpu.bandwidth_gb_per_s
                            else "16-bit tensor peak",
                        },
                    ),
                )
            if placement_block is not None:
                return Exclusion(
                    gpu,
                    Reason(
                        "NO_PLACEMENT",
                        {"gpu": name, "tensor_parallel": placement_block, "free_per_node": per_node},
                    ),
                )
            if over_limit is not None:
                return Exclusion(gpu, over_limit)
            if latency_miss is not None:
                return Exclusion(gpu, latency_miss)
            need = smallest_need[0] if smallest_need is not None else math.inf
            tp = smallest_need[1] if smallest_need is not None else (tps[-1] if tps else 1)
            fmt = smallest_need[2] if smallest_need is not None else self.formats[0]
            return Exclusion(
                gpu,
                Reason(
                    "MEMORY_INSUFFICIENT",
                    {
                        "gpu": name,
                        "tensor_parallel": tp,
                        "gpu_count": tp,
                        **_serving_memory(self.memory(fmt, tp), usable),
                    },
                ),
            )
        obj = self.q.objective
        if obj == "fastest":
            key: Callable[[Option], tuple[float, ...]] = lambda o: (o.time_value, o.gpu_count)  # noqa: E731
        elif obj == "perf_per_watt":
            key = lambda o: (-(o.perf_per_watt or 0.0), o.gpu_count)  # noqa: E731
        else:
            key = lambda o: ((o.quote.per_hour if o.quote else math.inf), o.gpu_count, o.time_value)  # noqa: E731
        candidates.sort(key=key)
        return candidates[0], candidates[1:]

    def _ok(self, r: Any) -> bool:
        s = self.serving
        if not r.stable or r.utilisation > 0.9:
            return False
        if s is not None and s.ttft_target_s is not None and r.ttft_s > s.ttft_target_s:
            return False
        return not (s is not None and s.tpot_target_s is not None and r.tpot_s > s.tpot_target_s)

    def _plan(
        self,
        gpu: GpuSpec,
        fmt: str,
        tp: int,
        cap: int,
        usable: int,
        mem: MemoryEstimate,
        fewest: int | None = None,
    ) -> Option | Reason | None:
        """The fewest replicas of TP ``tp`` that meet the targets at the rate (None: not fewer
        GPUs than ``fewest``, found by a smaller TP of the same format)."""
        name = gpu.name or gpu.slug
        cfg = replace(self.base, quant_method=fmt, tensor_parallel=tp, replicas=1)
        replicas = 1
        if self.continuous and self.rate is not None:
            assert self.serving is not None
            w = self.serving.workload
            try:
                d = deployment(cfg, gpu)
            except InvalidConfiguration:
                return Reason("MEMORY_INSUFFICIENT", {"gpu": name, "tensor_parallel": tp})
            if d.missing:
                return Reason("NO_TIME_ESTIMATE", {"gpu": name, "missing": d.missing})
            seqs, _ = concurrency_cap(
                d, w.input_len, w.output_len, reserve_gib=CONTINUOUS_EFFICIENCIES.reserve_gib
            )
            if seqs < 1:
                return Reason("MEMORY_INSUFFICIENT", {"gpu": name, "tensor_parallel": tp})
            max_rep = max(1, cap // tp)
            rate = self.rate

            one = cfg  # replicas=1: each replica takes rate / reps
            seen: dict[int, Any] = {}

            def ok(reps: int) -> bool:
                if reps not in seen:
                    self.counter.timed += 1
                    seen[reps] = serve_at_rate(one, gpu, rate / reps, w, CONTINUOUS_EFFICIENCIES, d)
                return self._ok(seen[reps])

            s = self.serving

            def lone_misses() -> Reason | None:
                """A lone request must meet the targets, else no replica count helps."""
                lone = serve_at_rate(cfg, gpu, 1e-6, w, CONTINUOUS_EFFICIENCIES, d)
                self.counter.timed += 1
                if s.ttft_target_s is not None and lone.ttft_s > s.ttft_target_s:
                    return Reason(
                        "MISSES_TTFT",
                        {
                            "gpu": name,
                            "tensor_parallel": tp,
                            "ttft_ms": round(lone.ttft_s * 1e3, 1),
                            "target_ms": round(s.ttft_target_s * 1e3, 1),
                        },
                    )
                if s.tpot_target_s is not None and lone.tpot_s > s.tpot_target_s:
                    return Reason(
                        "MISSES_TPOT",
                        {
                            "gpu": name,
                            "tensor_parallel": tp,
                            "tpot_ms": round(lone.tpot_s * 1e3, 2),
                            "target_ms": round(s.tpot_target_s * 1e3, 2),
                        },
                    )
                return None

            lo, hi = 0, 1
            # the replicas the decode throughput and the TPOT target allow at best (a bound up
            # to the iteration time's curvature, hence the margin): what cannot fit under the
            # GPU limit, or beat a smaller TP's plan, is not searched
            guess = _replicas_guess(d, w, seqs, rate, s.tpot_target_s)
            if guess > max_rep * GUESS_MARGIN:
                return Reason(
                    "OVER_GPU_LIMIT",
                    {
                        "gpu": name,
                        "tensor_parallel": tp,
                        "max_gpus": cap,
                        "replicas_needed_more_than": max_rep,
                        "replicas_at_least": guess,
                    },
                )
            floor = max(0, int(guess / GUESS_MARGIN) - 1)  # taken as too few: the search starts there
            if fewest is not None:
                most = fewest // tp  # ties go to the larger TP (lower latency)
                if most < 1 or guess > most * GUESS_MARGIN or not ok(most):
                    return None
                hi, lo = most, min(floor, most - 1)
            else:
                hi = min(max_rep, guess)
                if ok(hi):
                    lo = min(floor, hi - 1)
                elif hi >= max_rep:
                    return lone_misses() or Reason(
                        "OVER_GPU_LIMIT",
                        {
                            "gpu": name,
                            "tensor_parallel": tp,
                            "max_gpus": cap,
                            "replicas_needed_more_than": max_rep,
                        },
                    )
                else:
                    lo, hi = hi, min(max_rep, hi * 2)
            while not ok(hi):
                lo = hi
                if hi >= max_rep:
                    return lone_misses() or Reason(
                        "OVER_GPU_LIMIT",
                        {
                            "gpu": name,
                            "tensor_parallel": tp,
                            "max_gpus": cap,
                            "replicas_needed_more_than": max_rep,
                        },
                    )
                hi = min(max_rep, hi * 2)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if ok(mid):
                    hi = mid
                else:
                    lo = mid
            replicas = hi
        n = replicas * tp
        cfg = replace(cfg, replicas=replicas)
        job = replace(self.job, config=cfg, solve_for=None)
        quote = _price(self.data, self.q, gpu, n)
        nodes, per = _placement(gpu, n, self.q.constraints)
        if self.q.constraints.pools is not None:
            shape = _pool_shape(gpu, self.q.constraints)
            if shape is not None and shape[0] >= tp:
                per = (shape[0] // tp) * tp
                nodes = math.ceil(replicas / (shape[0] // tp))
        full: Estimate | None = None
        if self.continuous and self.rate is not None:
            assert self.serving is not None
            r = seen[replicas]  # one replica at rate / replicas: the fleet's latencies
            tpot, ttft, served = r.tpot_s, r.ttft_s, self.rate * self.serving.workload.output_len
            bound = r.bound
        else:
            self.counter.timed += 1
            measured = self.data.measured(gpu, job) if self.data.measured is not None else None
            try:
                est = estimate(gpu, job, self.data.calibrations, measured, breakdown=mem)
            except (InvalidConfiguration, MissingFigure):
                return Reason("NO_TIME_ESTIMATE", {"gpu": name, "missing": "a time"})
            sv = est.serving
            if sv is None:
                return Reason("NO_TIME_ESTIMATE", {"gpu": name, "missing": "a time"})
            tpot, ttft, served, bound = sv.tpot_s, sv.ttft_s, sv.output_tokens_per_s, sv.decode_bound
            full = est
        placeholder = (
            full if full is not None else Estimate(job=job, gpu=gpu, memory=_memory_answer(mem, usable))
        )
        cpm = (
            cost_per_million_tokens(quote.per_hour, capacity_tokens_per_s=served, served_tokens_per_s=served)
            if quote is not None and served > 0
            else None
        )
        reasons = [
            Reason(
                "FITS",
                {
                    "gpu": name,
                    "gpu_count": n,
                    "tensor_parallel": tp,
                    "headroom_gib": _gib(usable - mem.device_memory_band.high),
                    **_serving_memory(mem, usable),
                },
            )
        ]
        if tp > 1:
            alone = self.memory(fmt, 1)
            if not alone.fits(usable):
                reasons.append(
                    Reason("SINGLE_GPU_TOO_SMALL", {"gpu": name, **_serving_memory(alone, usable)})
                )
        if (
            self.serving is not None
            and (self.serving.ttft_target_s or self.serving.tpot_target_s)
            and self.rate
        ):
            reasons.append(
                Reason(
                    "MEETS_TARGETS",
                    {
                        "replicas": replicas,
                        "tensor_parallel": tp,
                        "rate": self.rate,
                        "ttft_ms": round(ttft * 1e3, 1),
                        "tpot_ms": round(tpot * 1e3, 2),
                        "ttft_target_ms": round(self.serving.ttft_target_s * 1e3, 1)
                        if self.serving.ttft_target_s
                        else None,
                        "tpot_target_ms": round(self.serving.tpot_target_s * 1e3, 2)
                        if self.serving.tpot_target_s
                        else None,
                    },
                )
            )
        if bound == "memory":
            reasons.append(Reason("BANDWIDTH_BOUND", {"bandwidth_gb_per_s": gpu.bandwidth_gb_per_s}))
        elif bound == "compute":
            reasons.append(Reason("COMPUTE_BOUND", {}))
        if fmt != "none":
            reasons.append(Reason("QUANTISED_WEIGHTS", {"quant_method": fmt}))
        return Option(
            gpu=gpu,
            gpu_count=n,
            nodes=nodes,
            gpus_per_node=per,
            est=placeholder,
            memory_high_bytes=int(mem.device_memory_band.high),
            usable_bytes=usable,
            quote=quote,
            hours=None,
            hours_band=None,
            tokens_per_s=served,
            power_w=gpu.tdp_w * n if gpu.tdp_w else None,
            provenance=full.serving.provenance
            if full is not None and full.serving is not None
            else ENGINE_CLASSES[cfg.engine].provenance,
            time_value=tpot if math.isfinite(tpot) else math.inf,
            objective_value=None,
            u=ratio_half_width(full.serving) if full is not None and full.serving is not None else 0.0,
            reasons=tuple(reasons),
            cost_per_million_tokens=cpm,
        )

    def finish(self, options: Sequence[Option]) -> list[Option]:
        """The full estimate (bands, provenance, accuracy, capacity) for the options returned."""
        out = []
        for o in options:
            if o.est.serving is not None:
                out.append(o)
                continue
            job = o.est.job
            measured = self.data.measured(o.gpu, job) if self.data.measured is not None else None
            mem = self.memory(job.config.quant_method, job.config.tensor_parallel)  # type: ignore[union-attr]
            try:
                est = estimate(o.gpu, job, self.data.calibrations, measured, breakdown=mem)
            except (InvalidConfiguration, MissingFigure):
                out.append(o)
                continue
            sv = est.serving
            if sv is None:
                out.append(o)
                continue
            out.append(replace(o, est=est, provenance=sv.provenance, u=ratio_half_width(sv)))
        return _rank_again(out, self.q.objective)

    def what_ifs(self, options: Sequence[Option], excluded: Sequence[Exclusion]) -> list[WhatIf]:
        """FP8 weights where quantisation was not allowed: fewer GPUs per replica."""
        out: list[WhatIf] = []
        if self.q.constraints.allow_quantization or self.base.quant_method != "none":
            return out
        for o in options[:3]:
            tp = o.est.job.config.tensor_parallel  # type: ignore[union-attr]
            if tp <= 1 or o.gpu.support_for("fp8") != "yes":
                continue
            for smaller in (tp // 4, tp // 2):
                if smaller < 1:
                    continue
                mem = self.memory("fp8", smaller)
                if mem.fits(o.usable_bytes):
                    out.append(
                        WhatIf(
                            "WITH_FP8_WEIGHTS",
                            o.gpu,
                            smaller,
                            {"constraints.allow_quantization": True},
                            {
                                "gpu": o.gpu.name or o.gpu.slug,
                                "tensor_parallel": smaller,
                                "instead_of": tp,
                                "needed_gib": _gib(mem.device_memory_band.high),
                                "usable_gib": _gib(o.usable_bytes),
                            },
                        )
                    )
                    break
        return out[:3]


GUESS_MARGIN: Final = 1.25
"""How far the replica bound may be off before a plan is given up on without a queueing
evaluation (the bound assumes an iteration time affine in the sequences decoding)."""


def _replicas_guess(d: Any, w: Any, seqs: int, rate: float, tpot_target_s: float | None) -> int:
    """Replicas a replica's iteration time suggests, a starting point for the search (checked
    by the queueing model). The iteration time is taken as affine in what it carries,
    ``t = a + b n + c p``: ``n = lambda O t`` sequences decoding (Little's law) and
    ``p = lambda I t`` prompt tokens prefilled per iteration, so ``t = a / (1 - lambda (b O +
    c I))``; the largest per-replica rate keeps ``t`` under the TPOT target and the sequences
    in flight under the engine's cap at 90% utilisation."""
    out_len = max(w.output_len, 1.0)
    in_len = max(w.input_len, 1.0)
    ctx = in_len + out_len / 2.0
    e = CONTINUOUS_EFFICIENCIES
    a = iteration_s(d, e, 0.0, ctx)
    b = (iteration_s(d, e, float(max(seqs, 1)), ctx) - a) / max(seqs, 1)
    c = (iteration_s(d, e, 0.0, ctx, in_len, in_len / 2.0, 1.0) - a) / in_len
    load = b * out_len + c * in_len  # seconds of iteration per unit of per-replica rate, per second
    if load <= 0:
        return 1
    lam = 0.9 / load  # utilisation 90%: t = a / (1 - 0.9) at most
    if tpot_target_s is not None:
        if tpot_target_s <= a:
            return 1
        lam = min(lam, (1.0 - a / tpot_target_s) / load)
    t = a / max(1e-9, 1.0 - lam * load)
    lam = min(lam, 0.9 * seqs / (out_len * t)) if seqs > 0 else lam
    return max(1, math.ceil(rate / lam)) if lam > 0 else 1


def _serving_memory(mem: MemoryEstimate, usable: int) -> dict[str, Any]:
    """Per-GPU serving memory in GiB and in GB (datasheets and the driver speak GB): the
    figure the fit is decided on (band's upper end), the weights and the KV cache at full
    context for every sequence, against the usable memory."""
    weights = float(mem.persistent.get("weights", mem.components.get("weights", 0)))
    kv = float(mem.persistent.get("kv_cache", mem.components.get("kv_cache", 0)))
    high = mem.device_memory_band.high
    return {
        "needed_gib": _gib(high),
        "usable_gib": _gib(usable),
        "weights_gib": _gib(weights),
        "kv_cache_gib": _gib(kv),
        "needed_gb": round(high / 1e9, 2),
        "usable_gb": round(usable / 1e9, 2),
        "weights_gb": round(weights / 1e9, 1),
        "kv_cache_gb": round(kv / 1e9, 1),
    }


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


def _memory_answer(mem: MemoryEstimate, usable: int) -> Any:
    from service.core.estimation.estimate import MemoryAnswer

    return MemoryAnswer(
        estimate=mem,
        usable_memory_bytes=usable,
        fits=mem.fits(usable),
        headroom_bytes=mem.headroom_bytes(usable),
        provenance="spec",
    )


def weakest_provenance(options: Sequence[Option]) -> str:
    return weakest(*(o.provenance for o in options)) if options else "spec"
