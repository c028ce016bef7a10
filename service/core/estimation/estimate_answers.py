"""What an estimate answers: memory, time, serving, solve-for and warnings, and the configuration
echoed back."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from service.core.catalog.models import (
    EncoderSpec,
)
from service.core.catalog.specs import GpuSpec
from service.core.estimation.accuracy import Accuracy
from service.core.estimation.band import Band
from service.core.estimation.estimate_inputs import (
    Job,
)
from service.core.estimation.frozen import fast_init
from service.core.estimation.memory import (
    InferenceConfig,
    MemoryEstimate,
    TrainConfig,
)

# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------


class NoticeCode(StrEnum):
    """Every warning code an estimate (and so a recommendation's option) carries; the API words
    each in English and Chinese (``service.api.presenters.notice_words``)."""

    PCIE_MULTI_GPU_UNVALIDATED = "pcie_multi_gpu_unvalidated"
    MULTI_GPU_UNVALIDATED = "multi_gpu_unvalidated"
    SPARSE_TIME_UNVALIDATED = "sparse_time_unvalidated"
    USABLE_MEMORY_UNKNOWN = "usable_memory_unknown"
    ASSUMED_SHAPE = "assumed_shape"
    MEASURED_OOM = "measured_oom"
    NO_TIME_ESTIMATE = "no_time_estimate"
    NO_SERVING_AS_GIVEN = "no_serving_as_given"
    TRY_FSDP_MIXED_PRECISION_POLICY = "try_fsdp_mixed_precision_policy"
    TRY_FUSED_OPTIMIZER = "try_fused_optimizer"
    CONTEXT_CAPPED_AT_MODEL_LIMIT = "context_capped_at_model_limit"
    BEYOND_CONTEXT = "beyond_context"
    DOES_NOT_FIT = "does_not_fit"
    TIGHT_FOR_LARGEST_REQUEST = "tight_for_largest_request"
    CHECKPOINT_DEQUANTISED = "checkpoint_dequantised"
    NETWORK_ASSUMED = "network_assumed"
    OVERLOADED = "overloaded"
    NO_PEER_TO_PEER = "no_peer_to_peer"
    CONCURRENCY_QUEUED = "concurrency_queued"
    # what resolving a GPU name assumed (service.core.catalog.records.GpuWarning), passed on
    ASSUMED_VARIANT = "assumed_variant"
    MIG_SLICE = "mig_slice"
    SHARED_GPU = "shared_gpu"


@fast_init
@dataclass(frozen=True, slots=True)
class Notice:
    """A warning attached to an answer: a stable code, its English sentence and the figures a
    sentence in another language needs (``params``)."""

    code: str
    message: str
    params: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        NoticeCode(self.code)  # an undeclared code would reach a reader with no words for it


@fast_init
@dataclass(frozen=True, slots=True)
class MemoryAnswer:
    estimate: MemoryEstimate
    usable_memory_bytes: int
    fits: bool
    headroom_bytes: int
    provenance: str
    measured_peak_allocated_bytes: int | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class TimeAnswer:
    step_time_s: float
    step_time_band: Band
    accumulation_steps: int
    tokens_per_s: float
    tokens_per_s_per_gpu: float
    samples_per_s: float
    mfu: float
    bound: str
    provenance: str
    time_to_train_s: float | None = None
    time_to_train_band: Band | None = None
    source_gpus: tuple[str, ...] = ()
    calibration_points: int = 0
    measured_step_time_s: float | None = None
    notes: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()
    """Published tables the figure leans on (``service.core.evidence.published`` ids)."""
    accuracy: Accuracy | None = None
    """Held-out error measured for this provenance and the GPU's architecture."""
    time_shares: Mapping[str, float] = field(default_factory=dict)
    """Fractions of the modelled step by term (compute, memory, communication, host; and
    pipeline_bubble with pipeline stages): ``bound`` names the largest of the four."""
    stack: str = "hf-eager"
    """The training stack the figure assumes (``service.core.estimation.stacks``)."""
    network: str | None = None
    """The node layout and network assumed, for a job on more than one GPU."""


@dataclass(frozen=True, slots=True)
class RateAnswer:
    """Serving at an offered request rate over all replicas (``service.core.estimation.serving``, the
    queueing model): p50 latencies, whether the targets are met, the fleet's capacity at the
    targets and the headroom it leaves."""

    requests_per_s: float
    stable: bool
    ttft_p50_s: float
    tpot_p50_s: float
    ttft_mean_s: float
    in_flight_per_replica: float
    utilisation: float
    queue_wait_s: float
    capacity_requests_per_s: float
    headroom: float
    meets_ttft: bool | None
    meets_tpot: bool | None
    validated: bool
    note: str


@dataclass(frozen=True, slots=True)
class DisaggAnswer:
    """Disaggregated prefill/decode (:mod:`service.core.estimation.serving_disagg`): the pools, the
    KV transfer every prompt pays, and how busy the prefill pool is."""

    prefill_gpus: int
    decode_gpus: int
    prefill_replicas: int
    decode_replicas: int
    kv_transfer_s: float
    kv_link: str
    prefill_s: float
    prefill_wait_s: float
    prefill_utilisation: float
    layout: str


@dataclass(frozen=True, slots=True)
class ServingAnswer:
    ttft_s: float
    ttft_band: Band
    tpot_s: float
    tpot_band: Band
    output_tokens_per_s: float
    prefill_bound: str
    decode_bound: str
    provenance: str
    source_gpus: tuple[str, ...] = ()
    measured_ttft_s: float | None = None
    measured_tpot_s: float | None = None
    sources: tuple[str, ...] = ()
    accuracy: Accuracy | None = None
    engine: str = "hf-transformers"
    tensor_parallel: int = 1
    replicas: int = 1
    concurrency_per_replica: int = 0
    max_concurrency_per_replica: int = 0
    rate: RateAnswer | None = None
    notes: tuple[str, ...] = ()
    engine_version: str = ""
    engine_version_requested: str | None = None
    prefill_time_share: float | None = None
    """Share of the replicas' GPU time spent on prompts (continuous engines): what splits the cost
    of an hour into input and output tokens."""
    disaggregated: DisaggAnswer | None = None
    input_tokens_per_s: float | None = None
    """Prompt tokens served per second, all replicas (continuous engines)."""
    time_to_generate: Band | None = None
    """Seconds to generate the job's ``tokens`` output tokens at ``output_tokens_per_s`` (a
    batch job; None without ``tokens``)."""


@dataclass(frozen=True, slots=True)
class SolveAnswer:
    target: str
    value: int
    detail: str
    replicas: int | None = None
    tensor_parallel: int | None = None
    ttft_s: float | None = None
    tpot_s: float | None = None
    headroom: float | None = None


@fast_init
@dataclass(frozen=True, slots=True)
class Estimate:
    job: Job
    gpu: GpuSpec
    memory: MemoryAnswer
    time: TimeAnswer | None = None
    serving: ServingAnswer | None = None
    solve: SolveAnswer | None = None
    warnings: tuple[Notice, ...] = ()

    @property
    def configuration(self) -> dict[str, Any]:
        """The configuration estimated, defaults filled (built on demand: a recommender
        estimating hundreds of candidates reads it for a few)."""
        return _configuration(self.job)


def configuration_of(job: Job) -> dict[str, Any]:
    """The configuration a job stands for, defaults filled (what answers echo back)."""
    return _configuration(job)


def _configuration(job: Job) -> dict[str, Any]:
    c = job.config
    out: dict[str, Any] = {"precision": c.precision}
    if isinstance(c, TrainConfig):
        out.update(
            batch_size=c.batch_size,
            seq_len=c.seq_len,
            gradient_checkpointing=c.gradient_checkpointing,
            finetune=c.finetune,
            lora_rank=c.lora_rank if c.finetune != "full" else None,
            attention=c.attention,
            optimizer=c.optimizer,
            sharding=c.sharding,
            gpu_count=c.gpu_count,
            tensor_parallel=c.tensor_parallel,
            global_batch=c.effective_global_batch,
            optimizer_impl=c.optimizer_impl,
            loop=c.loop,
            mixed_precision=c.mixed_precision,
            pipeline_parallel=c.pipeline_parallel,
            gpus_per_node=c.gpus_per_node or None,
            network_gbps_per_node=c.network_gbps_per_node or None,
            rdma=c.rdma,
            stack=c.stack,
        )
    elif isinstance(c, InferenceConfig):
        out.update(
            batch_size=c.batch_size,
            input_len=c.input_len,
            output_len=c.output_len,
            quant_method=c.quant_method,
            weight_format=c.weight_format,
            engine=c.engine,
            kv_cache_bytes_per_element=c.kv_bytes,
            tensor_parallel=c.tensor_parallel,
            replicas=c.replicas,
            gpu_count=c.gpu_count,
        )
        if c.lora is not None:
            out["lora"] = {"adapters": c.lora.adapters, "rank": c.lora.rank, "max_loras": c.lora.max_loras}
        if c.expert_parallel:
            out["expert_parallel"] = True
        if c.disaggregated is not None:
            dis = c.disaggregated
            out["disaggregated"] = {"prefill_gpus": dis.prefill_gpus, "decode_gpus": dis.decode_gpus}
        q = job.serving
        if q is not None:
            out.update(
                requests_per_s=q.requests_per_s,
                concurrency=q.concurrency,
                input_len_cv=q.workload.input_cv,
                output_len_cv=q.workload.output_cv,
                ttft_target_ms=q.ttft_target_s * 1e3 if q.ttft_target_s else None,
                tpot_target_ms=q.tpot_target_s * 1e3 if q.tpot_target_s else None,
            )
    else:
        out.update(
            batch_size=c.batch_size,
            seq_len=c.seq_len if isinstance(c.model, EncoderSpec) else None,
            replicas=c.replicas,
            gpu_count=c.gpu_count,
        )
    return out
