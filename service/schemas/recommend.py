"""Wire models for ``POST /v1/recommend`` and ``GET /v1/recommendations/{id}``.

The workload is exactly what ``/v1/estimate`` takes without the hardware (:class:`WorkloadIn`);
the constraints, the objective and the cost assumptions say what may be chosen and how the
choices are ranked. Every reason (an option's, an exclusion's, a what-if's) carries a stable
machine ``code``, its numbers in ``params`` and a ``message`` in the language the request's
``Accept-Language`` asked for (English or Chinese).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.core.pricing.cost import CostAssumptions
from service.core.recommend.search import (
    DEFAULT_SERVING_ENGINE,
    Constraints,
    Pool,
    RecommendQuestion,
)
from service.schemas.common import DataVersion, JsonInt, NameStr, SafeStr
from service.schemas.estimate import AccuracyOut, BandOut, WorkloadIn
from service.schemas.gpus import SuspectReasonOut

Objective = Literal["fastest", "cheapest", "cost_per_million_tokens", "perf_per_watt"]
FormFactor = Literal["pcie", "sxm", "oam"]
ProvenanceName = Literal["measured", "interpolated", "transferred", "published", "derived", "spec"]

PricingModel = Literal["on_demand", "spot", "reserved"]

RECOMMENDATION_ID_PATTERN = r"^rec_[0-9a-f]{24}$"

_STRICT = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)
"""Request bodies take JSON types as the schema states them (``RequestModel``'s rule)."""

GpuName = Annotated[NameStr, Field(min_length=1, max_length=200, description="slug, alias or PCI id")]


class PoolIn(BaseModel):
    """GPUs you already have: one pool of identical nodes. Free GPUs per node decide what can
    be placed: tensor parallelism stays inside a node, data parallelism may span nodes."""

    model_config = _STRICT

    gpu: NameStr = Field(min_length=1, max_length=200, description="slug, alias or PCI id", examples=["L40"])
    gpus_per_node: JsonInt = Field(ge=1, le=72, examples=[8])
    free_gpus_per_node: JsonInt | None = Field(
        default=None, ge=0, le=72, description="default: every GPU of the node is free"
    )
    nodes: JsonInt = Field(default=1, ge=1, le=4096)
    interconnect: Literal["nvlink", "pcie"] | None = Field(
        default=None, description="between the GPUs of a node; default: what the catalog says the part has"
    )
    network_gbps_per_node: float | None = Field(
        default=None,
        gt=0,
        le=100_000,
        description="network between nodes, Gb/s per node (all NICs together); default: the stated default "
        "of the network model, named in multi-node answers",
        examples=[400],
    )
    rdma: bool | None = Field(
        default=None,
        description="GPUDirect RDMA between nodes (InfiniBand, RoCE, EFA); default: not stated, timed as RDMA and "
        "said so in the answer (false: NCCL sockets at half the rate)",
    )
    purchase_price_per_gpu: float | None = Field(
        default=None,
        gt=0,
        le=10_000_000,
        description="what one GPU of this pool cost, in the request's cost currency: owned GPUs are costed "
        "by TCO (amortised purchase + electricity), never by a rental price; default: the catalog's purchase "
        "price, else electricity only (the answer says the capital cost is unknown)",
        examples=[8000],
    )


class BudgetIn(BaseModel):
    model_config = _STRICT

    per_hour: float | None = Field(default=None, gt=0, le=1e9, description="whole deployment, per hour")
    per_run: float | None = Field(
        default=None,
        gt=0,
        le=1e12,
        description="one run of a job with workload.tokens: training, or an offline batch generation "
        "(judged at the run cost band's upper end)",
    )
    purchase: float | None = Field(default=None, gt=0, le=1e12, description="capital for buying the GPUs")
    currency: Literal["USD", "CNY"] = "USD"


class ConstraintsIn(BaseModel):
    """What the answer may choose from. Everything is optional: no constraint, no filter."""

    model_config = _STRICT

    deadline_hours: float | None = Field(
        default=None,
        gt=0,
        le=100_000,
        description="training must finish within this (needs workload.tokens); "
        "decided at the band's upper end",
    )
    budget: BudgetIn | None = None
    max_gpus: JsonInt = Field(
        default=8,
        ge=1,
        le=4096,
        description="GPUs of one option, all nodes together (default: one 8-GPU node; beside an inventory, "
        "its free GPUs)",
    )
    allowed_gpus: list[GpuName] | None = Field(
        default=None,
        min_length=1,
        max_length=100,
        description="only these (any name the catalog resolves); leave it out to allow every GPU",
    )
    excluded_gpus: list[GpuName] = Field(default_factory=list, max_length=100)
    inventory: list[PoolIn] | None = Field(
        default=None, max_length=50, description="only GPUs you have: each pool's free GPUs bound the options"
    )
    max_power_w_per_gpu: float | None = Field(
        default=None, gt=0, le=10_000, description="board power (TDP) cap per GPU"
    )
    max_power_w_total: float | None = Field(
        default=None, gt=0, le=10_000_000, description="TDP of all GPUs of an option"
    )
    form_factors: list[FormFactor] | None = Field(default=None, max_length=3, examples=[["pcie"]])
    nvlink_required: bool = False
    providers: list[Annotated[SafeStr, Field(min_length=1, max_length=100)]] | None = Field(
        default=None,
        min_length=1,
        max_length=50,
        description="cloud providers whose prices may be used, by id (case-insensitive: 'aws', "
        "'gcp', 'lambda' ...; an id no price row names is refused with the known ones)",
    )
    min_provenance: ProvenanceName | None = Field(
        default=None,
        description="every number of an option at least this good (measured > interpolated > "
        "transferred > published > derived > spec)",
    )
    max_band_pct: float | None = Field(
        default=None,
        gt=0,
        le=1000,
        description="widest accepted band: (high - low) / mid of the objective's time, %",
    )
    allow_gradient_checkpointing: bool = Field(
        default=True, description="training: may trade compute for memory"
    )
    allow_quantization: bool = Field(
        default=False,
        description="serving: may offer quantised weights, per GPU: FP8 (W8A8) where it has FP8 tensor cores, "
        "else INT8 (W8A8) on a serving engine; AWQ 4-bit everywhere; NVFP4 on Blackwell, MXFP4 on CDNA 4",
    )
    allow_disaggregation: bool = Field(
        default=True,
        description="serving at a request rate on a continuous engine: may split the GPUs into a prefill pool "
        "and a decode pool (strategy.disaggregated) where that serves the load with fewer GPUs or a lower TPOT",
    )
    allow_expert_parallel: bool = Field(
        default=True,
        description="serving an MoE model on a continuous engine: may spread whole experts over a replica's "
        "GPUs with data-parallel attention (strategy.expert_parallel)",
    )
    vendors: list[Literal["nvidia", "amd", "intel"]] | None = None
    allow_suspect_prices: bool = Field(
        default=False,
        description="may rank on price rows a quality check flags suspect (placeholders such as one rate for "
        "every GPU of a provider, spot equal to on-demand everywhere, outliers against the providers' median)",
    )

    def _max_gpus(self) -> int:
        """``max_gpus`` as given; unset beside an inventory, the inventory's free GPUs (an owned
        cluster of 16 GPUs is not capped at one 8-GPU node by a default)."""
        if "max_gpus" in self.model_fields_set or self.inventory is None:
            return self.max_gpus
        free = sum(
            p.nodes
            * (
                p.gpus_per_node
                if p.free_gpus_per_node is None
                else min(p.free_gpus_per_node, p.gpus_per_node)
            )
            for p in self.inventory
        )
        return max(self.max_gpus, min(free, 4096))

    def to_core(self) -> Constraints:
        b = self.budget
        return Constraints(
            deadline_hours=self.deadline_hours,
            budget_per_hour=float(b.per_hour) if b and b.per_hour is not None else None,
            budget_per_run=float(b.per_run) if b and b.per_run is not None else None,
            budget_purchase=float(b.purchase) if b and b.purchase is not None else None,
            currency=b.currency if b else "USD",
            max_gpus=self._max_gpus(),
            allowed_gpus=tuple(self.allowed_gpus) if self.allowed_gpus is not None else None,
            excluded_gpus=tuple(self.excluded_gpus),
            pools=tuple(
                Pool(
                    gpu=p.gpu,
                    gpus_per_node=p.gpus_per_node,
                    free_gpus_per_node=p.gpus_per_node
                    if p.free_gpus_per_node is None
                    else min(p.free_gpus_per_node, p.gpus_per_node),
                    nodes=p.nodes,
                    interconnect=p.interconnect,
                    network_gbps_per_node=p.network_gbps_per_node,
                    rdma=p.rdma,
                    purchase_price_per_gpu=p.purchase_price_per_gpu,
                )
                for p in self.inventory
            )
            if self.inventory is not None
            else None,
            max_power_w_per_gpu=self.max_power_w_per_gpu,
            max_power_w_total=self.max_power_w_total,
            form_factors=tuple(self.form_factors) if self.form_factors else None,
            nvlink_required=self.nvlink_required,
            providers=tuple(self.providers) if self.providers is not None else None,
            min_provenance=self.min_provenance,
            max_band_pct=self.max_band_pct,
            allow_gradient_checkpointing=self.allow_gradient_checkpointing,
            allow_quantization=self.allow_quantization,
            allow_disaggregation=self.allow_disaggregation,
            allow_expert_parallel=self.allow_expert_parallel,
            vendors=tuple(self.vendors) if self.vendors else None,
        )


class CostAssumptionsIn(BaseModel):
    """How prices become costs; every default is sourced or argued in ``service.core.pricing.cost``
    (``CostAssumptions``) and docs/prices.md. The currency is the budget's."""

    model_config = _STRICT

    pricing_models: list[PricingModel] = Field(
        default_factory=lambda: list[PricingModel](["on_demand"]),
        min_length=1,
        max_length=3,
        description="rental prices that may be used (spot and reserved only when asked for)",
    )
    utilisation: float = Field(
        default=0.7, gt=0, le=1, description="TCO: share of owned GPU-hours doing this work"
    )
    pue: float = Field(default=1.58, ge=1, le=5, description="TCO: data-centre power usage effectiveness")
    electricity_usd_per_kwh: float = Field(default=0.10, ge=0, le=10)
    amortisation_years: float = Field(default=5.0, gt=0, le=20)
    node_overhead_fraction: float = Field(
        default=0.25, ge=0, le=10, description="TCO: the host around a per-node (SXM/OAM) baseboard"
    )
    host_power_fraction: float = Field(default=0.82, ge=0, le=10, description="TCO: host power per GPU power")

    def to_core(
        self, *, currency: str, providers: list[str] | None, allow_suspect: bool = False
    ) -> CostAssumptions:
        return CostAssumptions(
            currency=currency,
            allow_suspect=allow_suspect,
            pricing_models=tuple(dict.fromkeys(self.pricing_models)),
            providers=frozenset(providers) if providers is not None else None,
            utilisation=self.utilisation,
            pue=self.pue,
            electricity_usd_per_kwh=self.electricity_usd_per_kwh,
            amortisation_years=self.amortisation_years,
            node_overhead_fraction=self.node_overhead_fraction,
            host_power_fraction=self.host_power_fraction,
        )


class RecommendRequest(BaseModel):
    """A job and what may be chosen: which GPU, how many, which strategy."""

    model_config = _STRICT

    workload: WorkloadIn
    constraints: ConstraintsIn = Field(default_factory=ConstraintsIn)
    objective: Objective = Field(
        default="fastest",
        description="fastest: shortest time to train / highest training throughput, or lowest TPOT at the "
        "requested rate for serving; cheapest: lowest cost of the run (training with tokens), per "
        "token trained, or per hour of the serving fleet; cost_per_million_tokens: lowest cost per "
        "million tokens trained or served at the requested load; perf_per_watt: most tokens per "
        "second per watt of board power",
    )
    limit: JsonInt = Field(default=5, ge=1, le=50, description="ranked options returned")
    cost: CostAssumptionsIn = Field(default_factory=CostAssumptionsIn)

    def engine_assumed(self) -> str | None:
        """The engine a load without a stated one is served on (a load means continuous batching)."""
        w = self.workload
        batch = w.mode == "inference" and bool(w.tokens)  # an offline batch: every request queued at once
        if "engine" in w.model_fields_set or not (
            w.requests_per_s is not None or w.concurrency is not None or batch
        ):
            return None
        return DEFAULT_SERVING_ENGINE

    def asked(self) -> dict[str, Any]:
        """The request as asked, defaults filled in -- the engine the search assumed among them, so
        that the question asked again (a shared link restores the form from it) is this one."""
        out = self.model_dump(mode="json")
        assumed = self.engine_assumed()
        if assumed is not None:
            out["workload"]["engine"] = assumed
        return out

    def to_core(self) -> RecommendQuestion:
        job = self.workload.to_core()
        assumed = self.engine_assumed()
        if assumed is not None:
            job = replace(job, engine=assumed)
        return RecommendQuestion(
            job=job,
            engine_assumed=assumed,
            constraints=self.constraints.to_core(),
            objective=self.objective,
            limit=self.limit,
            cost=self.cost.to_core(
                currency=self.constraints.budget.currency if self.constraints.budget else "USD",
                providers=[p.lower() for p in self.constraints.providers]
                if self.constraints.providers is not None
                else None,
                allow_suspect=self.constraints.allow_suspect_prices,
            ),
        )


# ---- the answer ---------------------------------------------------------------------------------


class ReasonOut(BaseModel):
    code: str = Field(
        description="stable machine code (docs/architecture.md, 'Recommendation')",
        examples=["MEMORY_INSUFFICIENT"],
    )
    params: dict[str, Any] = Field(default_factory=dict, description="the numbers behind the sentence")
    message: str = Field(description="the sentence, in the language Accept-Language asked for (en, zh)")


class GpuRef(BaseModel):
    slug: str
    name: str
    architecture: str | None = None
    form_factor: str | None = None
    tdp_w: float | None = None


class PoolsOut(BaseModel):
    """Disaggregated prefill/decode: the GPUs of each pool (whole tensor-parallel groups)."""

    model_config = ConfigDict(frozen=True)  # hashable: part of a frontier point's plan key

    prefill_gpus: int
    decode_gpus: int


class StrategyOut(BaseModel):
    """How the GPUs of an option are used."""

    gpu_count: int
    nodes: int = Field(description="nodes the option spans")
    gpus_per_node: int
    sharding: str | None = Field(default=None, description="training: none | ddp | fsdp | zero1-3")
    mixed_precision: str | None = None
    gradient_checkpointing: bool | None = None
    finetune: str | None = None
    precision: str
    micro_batch: int | None = None
    global_batch: int | None = None
    accumulation_steps: int | None = None
    tensor_parallel: int = 1
    replicas: int | None = Field(default=None, description="serving: replicas of a TP group")
    engine: str | None = None
    quant_method: str | None = None
    kv_cache_dtype: str | None = None
    expert_parallel: bool | None = Field(
        default=None,
        description="serving an MoE model: whole experts spread over each replica's tensor_parallel GPUs, "
        "attention data-parallel (constraints.allow_expert_parallel)",
    )
    disaggregated: PoolsOut | None = Field(
        default=None,
        description="serving: separate prefill and decode pools (constraints.allow_disaggregation); "
        "replicas counts both",
    )


class MemoryPerGpuOut(BaseModel):
    needed_bytes: int = Field(
        description="device memory needed per GPU at the band's upper end (what fit is decided on)"
    )
    needed_mid_bytes: int
    usable_bytes: int
    headroom_bytes: int
    peak_phase: str
    provenance: str


class FigureOut(BaseModel):
    """One number with its 80% band, provenance and the stated accuracy of its kind."""

    value: float
    band: BandOut | None = None
    unit: str
    provenance: str
    accuracy: AccuracyOut | None = None


class TrainingPerfOut(BaseModel):
    step_time: FigureOut
    tokens_per_s: float = Field(
        description="all GPUs together; images per second for a CNN (throughput_unit)"
    )
    samples_per_s: float = Field(description="sequences (or images) per second, all GPUs together")
    throughput_unit: Literal["tokens", "images"] = Field(
        default="tokens", description="what tokens_per_s and the per-million objectives count"
    )
    time_to_train: FigureOut | None = Field(default=None, description="hours; with workload.tokens")
    mfu: float
    bound: str
    source_gpus: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


class ServingPerfOut(BaseModel):
    ttft: FigureOut | None = Field(default=None, description="p50, ms")
    tpot: FigureOut | None = Field(default=None, description="p50, ms")
    output_tokens_per_s: float = Field(description="served at the requested load, all replicas")
    capacity_requests_per_s: float | None = Field(default=None, description="largest rate within the targets")
    headroom: float | None = None
    utilisation: float | None = None
    concurrency_per_replica: int | None = None
    max_concurrency_per_replica: int | None = None
    time_to_generate: FigureOut | None = Field(
        default=None,
        description="hours to generate workload.tokens (an offline batch: every request queued at once)",
    )
    source_gpus: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list)


class NetworkOut(BaseModel):
    """The links of the instance type (or inventory pool) an option is priced on."""

    intra_node: str = Field(description="nvlink | infinity_fabric | pcie | none: between the GPUs of a node")
    gpu_link_gpus: int = Field(description="the largest group of a node's GPUs that link joins")
    inter_node_gbps: float | None = Field(
        description="network between nodes, Gb/s per instance; null: none stated (not used across nodes)"
    )
    rdma: str | None = Field(description="efa | infiniband | roce | yes | no; null: not stated")
    intra_basis: str = Field(description="table (sourced per-instance row or the request) or form_factor")
    inter_basis: str = Field(description="table or provider_default")
    source: str


class CostOut(BaseModel):
    currency: str
    provider: str | None = None
    region: str | None = None
    instance_type: str | None = None
    instances: int | None = None
    gpus_paid: int | None = Field(
        default=None, description="GPUs rented: the cheapest shape covering the count"
    )
    pricing_model: str | None = None
    per_hour: float | None = None
    run: BandOut | None = Field(
        default=None, description="cost of the training run (band from the time band)"
    )
    per_million_tokens: float | None = Field(
        default=None,
        description="training: the run's cost per million tokens trained; serving: the whole hour's "
        "price per million OUTPUT tokens served at the requested load (input tokens ride free in this "
        "figure; per_million_input / per_million_output split the hour between them). What "
        "objective cost_per_million_tokens ranks by",
    )
    per_million_input: float | None = Field(
        default=None,
        description="serving on a continuous engine: the hour's price split by the share of GPU time prompts "
        "take (prefill_time_share), per million input tokens served at the answer's load",
    )
    per_million_output: float | None = Field(
        default=None, description="serving: the rest of the hour per million output tokens served"
    )
    per_million_blended: float | None = Field(
        default=None,
        description="serving: input and output prices blended 3 : 1 (Artificial Analysis's ratio)",
    )
    tco: dict[str, Any] | None = Field(default=None, description="buying instead of renting")
    price_row_ids: list[int] = Field(default_factory=list)
    price_age_days: int | None = None
    price_age_is_lower_bound: bool = Field(
        default=False,
        description="the price row's date is when its copy was read, not when it was set: "
        "price_age_days is a lower bound (the price is at least that old)",
    )
    stale: bool | None = None
    suspect: bool = Field(
        default=False, description="the price row failed a quality check; used only with allow_suspect_prices"
    )
    suspect_reasons: list[SuspectReasonOut] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    network: NetworkOut | None = Field(
        default=None, description="the links of the instance type it is priced on"
    )


class KubernetesHint(BaseModel):
    node_selector: dict[str, str] = Field(description="GPU feature discovery's product label (NVIDIA)")
    resources: dict[str, dict[str, int]] = Field(
        description="per pod: limits of the device plugin's resource"
    )
    pods: int = Field(description="training: one pod per node; serving: one pod per replica")


class SchedulingOut(BaseModel):
    kubernetes: KubernetesHint | None = None
    slurm: list[str] = Field(
        default_factory=list, description="sbatch options (walltime from the band's upper end)"
    )
    skypilot: dict[str, Any] | None = None
    torchrun: list[str] | None = Field(default=None, description="multi-node training: torchrun arguments")


class OptionOut(BaseModel):
    rank: int
    gpu: GpuRef
    strategy: StrategyOut
    memory: MemoryPerGpuOut
    training: TrainingPerfOut | None = None
    serving: ServingPerfOut | None = None
    cost: CostOut | None = None
    power_w: float | None = Field(default=None, description="board power (TDP) of all GPUs of the option")
    perf_per_watt: float | None = Field(default=None, description="tokens/s per W of board power")
    provenance: str = Field(description="the weakest provenance among the option's numbers")
    objective_value: float | None = None
    objective_unit: str
    ratio_to_best: float | None = Field(default=None, description="objective value / the best's (>= 1 worse)")
    ratio_uncertainty: float | None = Field(
        default=None, description="80% half-width of log(ratio to the best) from the cross-GPU ratio errors"
    )
    within_error_of_best: bool
    reasons: list[ReasonOut] = Field(default_factory=list)
    warnings: list[ReasonOut] = Field(default_factory=list)
    scheduling: SchedulingOut | None = None


class FrontierPoint(BaseModel):
    gpu: str
    gpu_count: int
    hours: float | None = Field(default=None, description="time to train, h (training with tokens)")
    cost: float | None = Field(default=None, description="cost_value, in cost_unit (null: no price)")
    time_value: float = Field(description="in time_unit")
    time_unit: str = Field(
        description="h (time to train), s/1M tokens (training without tokens) or s TPOT (serving)"
    )
    cost_value: float = Field(description="in cost_unit")
    cost_unit: str = Field(description="e.g. USD/run, USD/1M tokens or USD/h")
    neighbour: Literal["faster", "cheaper"] | None = Field(
        default=None, description="the frontier's nearest faster or cheaper point next to option #1"
    )
    time_vs_first: float | None = Field(default=None, description="time_value / option #1's (1.0: the same)")
    cost_vs_first: float | None = Field(default=None, description="cost_value / option #1's")
    rank: int | None = Field(
        default=None, description="the option's rank when it is among the options returned"
    )
    tensor_parallel: int | None = Field(
        default=None, description="GPUs per model replica (serving) or tensor-parallel degree (training)"
    )
    replicas: int | None = Field(default=None, description="model replicas (serving; null for training)")
    quant_method: str | None = Field(default=None, description="weight format served (serving)")
    sharding: str | None = Field(default=None, description="data-parallel sharding (training)")
    provider: str | None = Field(default=None, description="where it is priced (null: not rented)")
    instance_type: str | None = Field(
        default=None, description="the rentable shape it is priced on: one GPU count is often several plans"
    )
    gpus_paid: int | None = Field(
        default=None, description="GPUs the instances hold (more than gpu_count when a shape is larger)"
    )
    expert_parallel: bool | None = Field(
        default=None,
        description="serving an MoE model with its experts spread over each replica (as the option's)",
    )
    disaggregated: PoolsOut | None = Field(
        default=None,
        description="serving: separate prefill and decode pools, each of TP tensor_parallel; replicas counts "
        "both (null: every replica serves both phases)",
    )


class ExclusionOut(BaseModel):
    gpu: GpuRef
    code: str
    params: dict[str, Any] = Field(default_factory=dict)
    message: str
    also: list[ReasonOut] = Field(default_factory=list, description="other reasons that also rule it out")


class WhatIfOut(BaseModel):
    code: str
    params: dict[str, Any] = Field(default_factory=dict)
    message: str
    change: dict[str, Any] = Field(description="what to change in the request")
    gpu: str
    gpu_count: int


class WatermarksOut(BaseModel):
    catalog: int
    measurement: int


class ConsideredOut(BaseModel):
    gpus: int
    candidates: int = Field(description="GPU x count x strategy combinations enumerated")
    memory_estimates: int = Field(description="memory breakdowns computed (shared by every GPU)")
    timed: int = Field(description="candidates timed by the estimator after pruning")
    feasible: int = Field(
        default=0,
        description="GPUs with an option that meets every constraint; `options` lists the best `limit` of them "
        "(ask again with a larger limit for the rest)",
    )
    not_ranked: list[str] = Field(
        default_factory=list,
        description="GPUs not sized: a physical lower bound on their objective value was already worse than the "
        "last option returned (neither options nor exclusions)",
    )


class RecommendResponse(BaseModel):
    recommendation_id: str | None = Field(
        pattern=RECOMMENDATION_ID_PATTERN,
        examples=["rec_3f9a0c1b2d4e5f6a7b8c9d0e"],
        description="the stored answer's id (GET /v1/recommendations/{id}); null when it could not be stored "
        "(`not_stored` says why)",
    )
    not_stored: str | None = Field(
        default=None,
        description="why the answer was not stored (the database could not write or was busy); the answer "
        "itself is complete",
    )
    as_of: dt.datetime
    data_version: DataVersion
    watermarks: WatermarksOut
    estimator_version: str
    calibration_watermark: int | None = None
    objective: Objective
    question: dict[str, Any] = Field(description="the workload as understood: model, mode, defaults filled")
    asked: dict[str, Any] | None = Field(
        default=None,
        description="the request as asked (workload, constraints, objective, limit, cost assumptions): "
        "POSTing it again asks the same question; null in answers stored before it was kept",
    )
    options: list[OptionOut]
    frontier: list[FrontierPoint] = Field(
        description="time vs cost Pareto frontier over every feasible option"
    )
    excluded: list[ExclusionOut]
    what_if: list[WhatIfOut] = Field(description="at most 3 changes that make a cheaper option feasible")
    warnings: list[ReasonOut] = Field(default_factory=list)
    assumptions: list[ReasonOut] = Field(
        default_factory=list,
        description="what the first option assumed that moves the answer: optimizer-state recipe (and "
        "what the other needs), loop, stack, network, engine, prices used, band level",
    )
    considered: ConsideredOut
