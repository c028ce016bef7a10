"""What a recommendation is asked and what it answers: frozen inputs and outputs, no logic."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from service.core.catalog.specs import GpuSpec
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.estimate import Estimate, Job, JobSpec
from service.core.estimation.frozen import fast_init
from service.core.estimation.memory import (
    InferenceConfig,
    TrainConfig,
)
from service.core.evidence.aggregate import CellView
from service.core.pricing.cost import (
    CostAssumptions,
    NoMatchingInstance,
    PriceBook,
    RentQuote,
    Tco,
)
from service.core.pricing.shapes import InstanceNetwork
from service.core.recommend.reasons import Reason, form_of

DEFAULT_SERVING_ENGINE: Final = "vllm"
"""A request rate or concurrency without an engine means continuous batching: vLLM, the most
deployed open-source continuous-batching server (its figures are transferred from the
TensorRT-LLM calibration, ``service.core.estimation.serving``)."""

OBJECTIVES: Final[tuple[str, ...]] = ("fastest", "cheapest", "cost_per_million_tokens", "perf_per_watt")


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
    network_gbps_per_node: float | None = None  # between nodes; None: the stated default
    rdma: bool | None = None  # GPUDirect RDMA between nodes (InfiniBand, RoCE, EFA)
    purchase_price_per_gpu: float | None = (
        None  # what one GPU cost, in the cost currency; None: the catalog's
    )

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
    allow_disaggregation: bool = True
    allow_expert_parallel: bool = True
    vendors: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class RecommendQuestion:
    job: JobSpec
    constraints: Constraints = field(default_factory=Constraints)
    objective: str = "fastest"
    limit: int = 5
    cost: CostAssumptions = field(default_factory=CostAssumptions)
    engine_assumed: str | None = None
    """The serving engine the search assumed because the request gave a load but no engine."""


@dataclass(frozen=True, slots=True)
class GpuNames:
    """Names schedulers know a GPU by (the catalog's aliases of those kinds)."""

    gfd: str | None = None  # Kubernetes GPU feature discovery: nvidia.com/gpu.product
    skypilot: str | None = None


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
class Exclusion:
    gpu: GpuSpec
    reason: Reason
    also: tuple[Reason, ...] = ()
    plan: Option | None = None
    """The best plan found that the reason rules out (a deadline missed), when there is one."""


@fast_init  # ~35 options built and copied a request
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
    needs_nvlink: bool = False
    """Whether the plan needs NVLink inside a node (tensor parallelism, FSDP in a node): the
    node shape an instance must hold for it to be priced as deployed."""
    network: InstanceNetwork | None = None  # the links of the instance (or pool) it is priced on
    price_missing: NoMatchingInstance | None = None  # why no instance type holds its node shape

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
    def currency(self) -> str | None:
        """The currency its costs are in: its rental quote's, else its TCO's (None: not costed)."""
        if self.quote is not None:
            return self.quote.currency
        return self.tco.currency if self.tco is not None else None

    @property
    def cost_value(self) -> float | None:
        """The frontier's cost axis: run cost, else per-million-token cost, else per hour."""
        if self.run_cost is not None:
            return self.run_cost[1]
        if self.cost_per_million_tokens is not None:
            return self.cost_per_million_tokens
        if self.quote is not None:
            return self.quote.per_hour
        return self.tco.per_hour if self.tco is not None else None


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

    def __post_init__(self) -> None:
        form_of(self.code, self.params)  # a what-if is worded like a reason: declared parameters only


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
    feasible: int = 0
    """GPUs with an option that meets every constraint; ``options`` holds the best ``limit``."""
    assumptions: tuple[Reason, ...] = ()
    """What the first option (or the question) assumed that moves the answer."""
