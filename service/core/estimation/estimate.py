"""One estimate, as a pure function: a GPU, a job, the fitted calibrations and the measured
cell in; memory, time (or serving latency), an optional solve-for and warnings out.

``estimate(gpu, job, calibrations, measured)`` does no I/O, so ``/v1/estimate``, the batch
endpoint, the CLI and the recommender call it alike, hundreds of times per request. The
caller resolves names and loads data: the GPU's :class:`~service.core.catalog.specs.GpuSpec`, the
:class:`CalibrationSet` (fitted once per measurement watermark) and the latest-measured view
of the exact benchmark cell the job corresponds to (:func:`benchmark_cell`, then
:func:`service.core.evidence.aggregate.latest_measured`).

Provenance (DESIGN, ranked in :mod:`service.core.evidence.provenance`): ``measured`` when the exact cell
was measured on this GPU with evidence that counts (>= 2 hosts or a trusted agent);
``interpolated`` when efficiencies were fitted on this GPU; ``transferred`` when fitted on another
GPU (named) and carried over without a published input; ``published`` when the answer leans on
the published tables (named in ``sources``): the cross-GPU ratio from their joint fit, or an
anchor on one of them; ``derived`` when the time depends on a catalog peak
derived from a sibling GPU (the derivation is noted and the band spans the alternative
sibling's value); ``spec`` for the datasheet roofline with the spec-default efficiencies.
Every time figure carries the held-out error measured for its provenance and the GPU's
architecture (:mod:`service.core.estimation.accuracy`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from service.core.catalog.models import (
    CnnSpec,
    DecoderSpec,
    EncoderSpec,
    ModelSpec,
    from_hf_config,
    from_parameter_count,
    get_model,
)
from service.core.catalog.precision import PEAK_KEY
from service.core.catalog.specs import GpuSpec
from service.core.catalog.vocabulary import VocabularyError, canonical_parameters, parameters_hash
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.accuracy import Accuracy, accuracy_for
from service.core.estimation.band import Band
from service.core.estimation.calibration import Calibration, CalibrationSet
from service.core.estimation.frozen import fast_init
from service.core.estimation.memory import (
    DEFAULT_LORA_TARGETS,
    BatchInferenceConfig,
    InferenceConfig,
    MemoryEstimate,
    TrainConfig,
    estimate_batch_inference,
    estimate_inference,
    estimate_training,
    fewest_gpus,
    largest_context,
    largest_micro_batch,
    most_concurrent_sequences,
    training_breakdown,
)
from service.core.estimation.performance import SPEC_DEFAULTS, step_summary, time_shares
from service.core.estimation.serving import (
    CONTINUOUS_BAND,
    CONTINUOUS_EFFICIENCIES,
    ENGINE_CLASSES,
    TRANSFERRED_ENGINE_BAND_FACTOR,
    HostProfile,
    ServingPlan,
    Workload,
    capacity_at_slo,
    concurrency_cap,
    decode_bound,
    deployment,
    estimate_serving,
    plan_min_gpus,
    serve_at_rate,
    serve_concurrency,
    tp_candidates,
)
from service.core.estimation.serving import (
    estimate_batch_inference as batch_inference_time,
)
from service.core.estimation.stacks import STACK_EFFECTS, stack_note
from service.core.estimation.transfer import arch_key
from service.core.evidence.aggregate import CellView
from service.core.evidence.provenance import weakest

__all__ = [
    "ESTIMATOR_VERSION",
    "ONE_MODEL_INPUT",
    "Estimate",
    "Job",
    "JobSpec",
    "MemoryAnswer",
    "Notice",
    "RateAnswer",
    "ServingAnswer",
    "ServingQuestion",
    "SolveAnswer",
    "TimeAnswer",
    "benchmark_cell",
    "build_job",
    "configuration_of",
    "estimate",
    "has_one_model_input",
    "resolve_model",
    "workload_for",
]

ESTIMATOR_VERSION = "1.8.0"
"""Bumped whenever a change to the models can change an answer for the same inputs."""

MODES: tuple[str, ...] = ("training", "fine-tuning", "inference")
SOLVE_TARGETS: tuple[str, ...] = ("max_micro_batch", "max_context", "max_concurrency", "min_gpus")


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job as a caller states it, defaults not yet filled (the request's fields).

    Exactly one of ``model`` (preset id, alias or Hugging Face id), ``hf_config`` (a
    ``config.json`` body) or ``params_billion``. ``None`` means "use the default" where the
    default depends on other fields (precision by mode, finetune by mode, sharding by count).
    """

    model: str | None = None
    hf_config: Mapping[str, Any] | None = None
    params_billion: float | None = None
    mode: str = "training"
    gpu_count: int = 1
    precision: str | None = None
    batch_size: int = 1
    seq_len: int | None = None
    gradient_checkpointing: bool = False
    finetune: str | None = None
    lora_rank: int = 16
    lora_targets: tuple[str, ...] | None = None
    attention: str = "sdpa"
    optimizer: str = "adamw"
    sharding: str | None = None
    tensor_parallel: int = 1
    global_batch: int = 0
    tokens: float | None = None
    input_len: int = 1024
    output_len: int = 256
    quant_method: str = "none"
    engine: str = "hf-transformers"
    kv_cache_dtype: str = "auto"
    solve_for: str | None = None
    loop: str | None = None
    optimizer_impl: str | None = None
    mixed_precision: str | None = None
    # serving at a request rate (continuous-batching engines)
    requests_per_s: float | None = None
    concurrency: int | None = None
    input_len_cv: float = 0.0
    output_len_cv: float = 0.0
    ttft_target_ms: float | None = None
    tpot_target_ms: float | None = None
    # training layout, network and stack (issue 25)
    pipeline_parallel: int = 1
    gpus_per_node: int | None = None
    network_gbps_per_node: float | None = None
    rdma: bool = True
    stack: str = "hf-eager"


DEFAULT_OPTIMIZER_IMPL = "foreach"
"""``optimizer_impl`` when the caller does not say: what ``torch.optim.AdamW(params)`` runs on
CUDA. torch 2.x picks ``foreach`` whenever every parameter is a CUDA tensor (DTensor shards
included) and neither ``fused`` nor ``foreach`` is passed (``torch/optim/optimizer.py``
``_default_to_fused_or_foreach``; fused is not the default, pytorch/pytorch#95241/#95415). The
HF Trainer runs ``adamw_torch`` (that same call) up to transformers 4.54 and
``adamw_torch_fused`` (``fused=True``) from 4.55 on with torch >= 2.8
(huggingface/transformers#25109, #37358; ``training_args.py`` in 5.x). ``foreach`` is the
implementation whose step temporaries (one state-dtype copy of the parameter group) a fit must
allow for when the loop is not known; ``fused`` saves them."""


DEFAULT_TRAIN_SEQ_LEN = 2048
DEFAULT_ENCODER_SEQ_LEN = 512
"""``seq_len`` when not given: 2048 for training; 512 for encoder inference (the
``bert-large-infer`` vocabulary default)."""


@dataclass(frozen=True, slots=True)
class ServingQuestion:
    """What a serving estimate is asked beyond one configuration: a request rate over all
    replicas (or a fixed concurrency per replica), the length distributions and p50 targets."""

    workload: Workload
    requests_per_s: float | None = None
    concurrency: int | None = None
    ttft_target_s: float | None = None
    tpot_target_s: float | None = None


_INFERENCE_CONFIGS = (InferenceConfig, BatchInferenceConfig)
"""For ``isinstance``: a tuple built once (``A | B`` would build a union on every call)."""


@fast_init
@dataclass(frozen=True, slots=True)
class Job:
    """A job with its model resolved and its defaults filled: a training configuration or a
    serving configuration, plus what to compute beyond memory."""

    model: ModelSpec
    mode: str
    config: TrainConfig | InferenceConfig | BatchInferenceConfig
    tokens: float | None = None
    solve_for: str | None = None
    model_is_preset: bool = True
    model_note: str | None = None  # the shape assumed for a bare parameter count
    stated: frozenset[str] = frozenset()
    """Defaultable training fields the caller gave (``precision``, ``sharding``, ``loop``,
    ``optimizer_impl``, ``mixed_precision``): a what-if may change the others."""
    serving: ServingQuestion | None = None

    @property
    def inference(self) -> bool:
        return isinstance(self.config, _INFERENCE_CONFIGS)

    @property
    def precision(self) -> str:
        return self.config.precision

    @property
    def gpu_count(self) -> int:
        """Every GPU of the job: data-parallel ranks x TP (training), replicas x TP (serving)."""
        return self.config.gpu_count


ONE_MODEL_INPUT = "give exactly one of model, hf_config, params_billion"
"""The rule every request naming a model follows, as answers state it (field ``model``)."""


def has_one_model_input(model: object, hf_config: object, params_billion: object) -> bool:
    """Whether exactly one of a preset name, a config.json body and a parameter count is given."""
    return (model is not None) + (hf_config is not None) + (params_billion is not None) == 1


def resolve_model(spec: JobSpec) -> tuple[ModelSpec, str | None, bool]:
    """(model, assumed-shape note, is a preset) from exactly one of the three model inputs.

    Raises :class:`InvalidConfiguration` naming the field, or
    :class:`~service.core.catalog.models.ModelNotFound` (with close matches) for an unknown name."""
    if not has_one_model_input(spec.model, spec.hf_config, spec.params_billion):
        raise InvalidConfiguration("model", ONE_MODEL_INPUT)
    if spec.model is not None:
        return get_model(spec.model), None, True
    if spec.hf_config is not None:
        from service.core.catalog.models import UnsupportedArchitecture

        try:
            return from_hf_config(spec.hf_config), None, False
        except UnsupportedArchitecture as exc:
            raise InvalidConfiguration("hf_config", str(exc)) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidConfiguration("hf_config", f"hf_config is not a usable config.json: {exc}") from None
    assert spec.params_billion is not None
    try:
        model, shape = from_parameter_count(spec.params_billion)
    except ValueError as exc:
        raise InvalidConfiguration("params_billion", str(exc)) from None
    return model, shape, False


def build_job(spec: JobSpec, model: ModelSpec | None = None) -> Job:
    """Fill the defaults and validate the combination (``InvalidConfiguration`` names the
    field). Defaults: precision ``amp_bf16`` for training, ``bf16`` for fine-tuning (PEFT and
    full fine-tuning load the base in bf16; ask for ``amp_bf16`` for fp32 master weights) and
    for inference; ``fine-tuning`` means LoRA unless ``finetune`` says otherwise; sharding
    ``none`` on one GPU and ``ddp`` on several; ``mixed_precision`` the FSDP mixed-precision
    policy for ``amp_*`` with ``sharding='fsdp'``, autocast otherwise; ``optimizer_impl``
    :data:`DEFAULT_OPTIMIZER_IMPL`; ``loop`` not stated (``loss_only`` with the band's upper end
    covering ``keeps_outputs``); a CNN trains with SGD."""
    note: str | None = None
    preset = True
    if model is None:
        model, note, preset = resolve_model(spec)
    if spec.mode not in MODES:
        raise InvalidConfiguration("mode", f"mode must be one of {', '.join(MODES)}")
    if spec.solve_for is not None and spec.solve_for not in SOLVE_TARGETS:
        raise InvalidConfiguration("solve_for", f"solve_for must be one of {', '.join(SOLVE_TARGETS)}")
    config: TrainConfig | InferenceConfig | BatchInferenceConfig
    serving: ServingQuestion | None = None
    if spec.mode == "inference":
        config, serving = _inference_config(spec, model)
    else:
        if isinstance(model, CnnSpec):
            seq_len = 1
            optimizer = spec.optimizer if spec.optimizer != "adamw" else "sgd"
        else:
            seq_len = spec.seq_len or DEFAULT_TRAIN_SEQ_LEN
            optimizer = spec.optimizer
        precision = spec.precision or ("bf16" if spec.mode == "fine-tuning" else "amp_bf16")
        sharding = spec.sharding or ("none" if spec.gpu_count == 1 else "ddp")
        mixed = spec.mixed_precision or (
            "fsdp_policy" if sharding == "fsdp" and precision.startswith("amp_") else "autocast"
        )
        config = TrainConfig(  # model and precision by position: > 15 keywords would build a dict per call
            model,
            precision,
            batch_size=spec.batch_size,
            seq_len=seq_len,
            gradient_checkpointing=spec.gradient_checkpointing,
            finetune=spec.finetune or ("lora" if spec.mode == "fine-tuning" else "full"),
            lora_rank=spec.lora_rank,
            lora_targets=tuple(spec.lora_targets) if spec.lora_targets else DEFAULT_LORA_TARGETS,
            attention=spec.attention,
            optimizer=optimizer,
            sharding=sharding,
            gpu_count=spec.gpu_count,
            tensor_parallel=spec.tensor_parallel,
            global_batch=spec.global_batch,
            optimizer_impl=spec.optimizer_impl or DEFAULT_OPTIMIZER_IMPL,
            loop=spec.loop,
            mixed_precision=mixed,
            pipeline_parallel=spec.pipeline_parallel,
            gpus_per_node=spec.gpus_per_node or 0,
            network_gbps_per_node=spec.network_gbps_per_node or 0.0,
            rdma=spec.rdma,
            stack=spec.stack,
        )
    stated = _stated(
        spec.precision is not None,
        spec.sharding is not None,
        spec.loop is not None,
        spec.optimizer_impl is not None,
        spec.mixed_precision is not None,
    )
    return Job(
        model=model,
        mode=spec.mode,
        config=config,
        tokens=spec.tokens,
        solve_for=spec.solve_for,
        model_is_preset=preset,
        model_note=note,
        stated=stated,
        serving=serving,
    )


@functools.lru_cache(maxsize=32)
def _stated(
    precision: bool, sharding: bool, loop: bool, optimizer_impl: bool, mixed_precision: bool
) -> frozenset[str]:
    """:attr:`Job.stated` from which of the defaultable fields were given (32 combinations, each
    frozenset built once and shared: it is immutable)."""
    return frozenset(
        [
            name
            for name, given in (
                ("precision", precision),
                ("sharding", sharding),
                ("loop", loop),
                ("optimizer_impl", optimizer_impl),
                ("mixed_precision", mixed_precision),
            )
            if given
        ]
    )


def _inference_config(
    spec: JobSpec, model: ModelSpec
) -> tuple[InferenceConfig | BatchInferenceConfig, ServingQuestion | None]:
    """Serving a decoder (``replicas = gpu_count / tensor_parallel`` copies of a TP group), or
    batched inference of an encoder / CNN (``gpu_count`` independent replicas)."""
    if spec.engine not in ENGINE_CLASSES:
        raise InvalidConfiguration(
            "engine",
            f"engine {spec.engine!r} is not modelled (modelled: "
            f"{', '.join(ENGINE_CLASSES)}); sglang has no published or "
            "measured data to calibrate it",
        )
    if not isinstance(model, DecoderSpec):
        if spec.tensor_parallel > 1:
            raise InvalidConfiguration("tensor_parallel", "encoders and CNNs are served one GPU per replica")
        if spec.requests_per_s is not None or spec.solve_for == "min_gpus":
            raise InvalidConfiguration("requests_per_s", "request-rate serving is modelled for decoder LLMs")
        seq = 1
        if isinstance(model, EncoderSpec):
            seq = spec.seq_len or DEFAULT_ENCODER_SEQ_LEN
            if seq > model.max_position_embeddings:
                raise InvalidConfiguration(
                    "seq_len", f"{model.id} takes at most {model.max_position_embeddings} positions"
                )
        return BatchInferenceConfig(
            model=model,
            precision=spec.precision or "bf16",
            batch_size=spec.batch_size,
            seq_len=seq,
            replicas=spec.gpu_count,
        ), None
    tp = max(spec.tensor_parallel, 1)
    if spec.solve_for != "min_gpus" and (spec.gpu_count < tp or spec.gpu_count % tp):
        raise InvalidConfiguration(
            "gpu_count",
            f"gpu_count ({spec.gpu_count}) must be a multiple of tensor_parallel "
            f"({tp}): replicas x tensor_parallel GPUs",
        )
    continuous = ENGINE_CLASSES[spec.engine].batching == "continuous"
    if spec.requests_per_s is not None and not continuous:
        raise InvalidConfiguration(
            "requests_per_s",
            "request-rate serving is modelled for continuous-batching "
            "engines (vllm, tensorrt-llm); hf-transformers serves one "
            "static batch (give batch_size)",
        )
    if spec.concurrency is not None and not continuous:
        raise InvalidConfiguration(
            "concurrency",
            "concurrency applies to continuous-batching engines; "
            "hf-transformers serves one static batch (give batch_size)",
        )
    if (
        spec.solve_for == "min_gpus"
        and spec.requests_per_s is None
        and (spec.ttft_target_ms or spec.tpot_target_ms)
    ):
        raise InvalidConfiguration("requests_per_s", "min_gpus with latency targets needs requests_per_s")
    config = InferenceConfig(
        model=model,
        precision=spec.precision or "bf16",
        quant_method=spec.quant_method,
        batch_size=spec.concurrency or spec.batch_size,
        input_len=spec.input_len,
        output_len=spec.output_len,
        engine=spec.engine,
        tensor_parallel=tp,
        kv_cache_bytes_per_element=1.0 if spec.kv_cache_dtype in ("fp8", "int8") else 0.0,
        replicas=max(1, spec.gpu_count // tp),
    )
    serving = None
    if continuous:
        serving = ServingQuestion(
            workload=Workload(
                float(spec.input_len), float(max(spec.output_len, 1)), spec.input_len_cv, spec.output_len_cv
            ),
            requests_per_s=spec.requests_per_s,
            concurrency=spec.concurrency,
            ttft_target_s=spec.ttft_target_ms / 1e3 if spec.ttft_target_ms else None,
            tpot_target_s=spec.tpot_target_ms / 1e3 if spec.tpot_target_ms else None,
        )
    return config, serving


def workload_for(job: Job) -> str:
    """The benchmark workload whose measurements calibrate this job's time."""
    if job.inference:
        if isinstance(job.model, EncoderSpec):
            return "bert-large-infer"
        if isinstance(job.model, CnnSpec):
            return "resnet50-infer"
        return "llm-infer"
    if isinstance(job.model, EncoderSpec):
        return "bert-large-train"
    if isinstance(job.model, CnnSpec):
        return "resnet50-train"
    return "llm-train"


def benchmark_cell(job: Job) -> tuple[str, dict[str, Any], str] | None:
    """(workload, canonical parameters, parameters hash) of the benchmark cell that measures
    exactly this job, or ``None`` (a model given by config or size is no preset cell)."""
    if not job.model_is_preset:
        return None
    c = job.config
    m = job.model
    params: dict[str, Any]
    if isinstance(c, TrainConfig) and (c.stack != "hf-eager" or c.pipeline_parallel > 1):
        return None  # the agent measures the eager reference loop without pipeline stages
    if isinstance(c, TrainConfig) and isinstance(m, DecoderSpec):
        workload = "llm-train"
        params = {
            "model": m.id,
            "precision": c.precision,
            "batch_size": c.batch_size,
            "seq_len": c.seq_len,
            "gradient_checkpointing": c.gradient_checkpointing,
            "finetune": c.finetune,
            "lora_rank": c.lora_rank if c.finetune != "full" else 0,
            "lora_targets": ",".join(c.lora_targets) if c.finetune != "full" else "",
            "attention": c.attention,
            "optimizer": c.optimizer,
            "sharding": c.sharding,
            "gpu_count": c.gpu_count,
            "global_batch": c.global_batch,
        }
        # declared variants, named only away from the vocabulary defaults (cells measured
        # before they existed keep their hash); an unstated loop is looked up as loss_only,
        # the central estimate
        for name, value, default in (
            ("loop", c.loop or "loss_only", "loss_only"),
            ("optimizer_impl", c.optimizer_impl, "fused"),
            ("mixed_precision", c.mixed_precision, "autocast"),
        ):
            if value != default:
                params[name] = value
    elif isinstance(c, TrainConfig) and isinstance(m, EncoderSpec) and m.id == "bert-large":
        workload, params = (
            "bert-large-train",
            {"precision": c.precision, "batch_size": c.batch_size, "seq_len": c.seq_len},
        )
    elif isinstance(c, TrainConfig) and isinstance(m, CnnSpec):
        workload, params = "resnet50-train", {"precision": c.precision, "batch_size": c.batch_size}
    elif isinstance(c, InferenceConfig):
        if c.tensor_parallel != 1 or (job.serving is not None and job.serving.requests_per_s is not None):
            return None  # the llm-infer cell is one GPU at a fixed batch
        workload = "llm-infer"
        params = {
            "model": m.id,
            "precision": c.precision,
            "quant_method": c.quant_method,
            "engine": c.engine,
            "batch_size": c.batch_size,
            "input_len": c.input_len,
            "output_len": c.output_len,
        }
    elif isinstance(c, BatchInferenceConfig) and isinstance(m, EncoderSpec) and m.id == "bert-large":
        workload, params = (
            "bert-large-infer",
            {"precision": c.precision, "batch_size": c.batch_size, "seq_len": c.seq_len},
        )
    elif isinstance(c, BatchInferenceConfig) and isinstance(m, CnnSpec):
        workload, params = "resnet50-infer", {"precision": c.precision, "batch_size": c.batch_size}
    else:
        return None
    try:
        canon = canonical_parameters(workload, params)
    except VocabularyError:
        return None
    return workload, canon, parameters_hash(workload, canon)


# --------------------------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class Notice:
    """A warning attached to an answer: a stable code and a sentence."""

    code: str
    message: str


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


# --------------------------------------------------------------------------------------------
# The estimate
# --------------------------------------------------------------------------------------------


_PCIE_MULTI_GPU = Notice(
    "pcie_multi_gpu_unvalidated",
    "multi-GPU communication over PCIe is modelled from the "
    "datasheet only; no PCIe-only multi-GPU measurement validates it",
)
_MULTI_GPU = Notice(
    "multi_gpu_unvalidated",
    "multi-GPU communication is modelled from the node shape; it has not "
    "been validated against multi-GPU measurements yet",
)
"""Warnings whose text never varies, built once (a Notice is immutable, so answers may share it)."""


def estimate(
    gpu: GpuSpec,
    job: Job,
    calibrations: CalibrationSet,
    measured: CellView | None = None,
    *,
    breakdown: MemoryEstimate | None = None,
) -> Estimate:
    """Memory, time and the optional solve-for for ``job`` on ``gpu``.

    ``measured`` is the latest-measured view of :func:`benchmark_cell` on this GPU (or None).
    ``breakdown`` is the job's memory breakdown when the caller already has it: it does not depend
    on the GPU, so a recommender computes it once for every GPU it compares.
    Raises :class:`InvalidConfiguration` for a GPU without a memory figure or a precision the
    GPU does not support (code ``PRECISION_UNSUPPORTED``)."""
    warnings: list[Notice] = []
    usable = gpu.usable_memory_bytes
    if usable is None:
        if gpu.memory_bytes is None:
            raise InvalidConfiguration(
                "gpu", f"{gpu.slug} has no sourced memory size; no fit can be computed"
            )
        usable = gpu.memory_bytes
        warnings.append(
            Notice(
                "usable_memory_unknown",
                f"{gpu.slug}: the driver-reported usable memory is not "
                "sourced; physical memory used, so the fit may be optimistic",
            )
        )
    if job.model_note:
        warnings.append(Notice("assumed_shape", job.model_note))
    precision = job.precision
    if gpu.support_for(precision) == "no":
        raise InvalidConfiguration(
            "precision", f"{gpu.slug} does not support {precision}", code="PRECISION_UNSUPPORTED"
        )
    c = job.config
    n_gpus = (
        c.gpu_count
        if isinstance(c, TrainConfig)
        else (c.tensor_parallel if isinstance(c, InferenceConfig) else 1)
    )
    if n_gpus > 1:
        warnings.append(_PCIE_MULTI_GPU if gpu.node.nvlink_topology == "none" else _MULTI_GPU)
    if breakdown is not None:
        mem = breakdown
    elif isinstance(c, TrainConfig):
        mem = training_breakdown(c)
    elif isinstance(c, InferenceConfig):
        mem = estimate_inference(c)
    else:
        mem = estimate_batch_inference(c)
    counts = measured is not None and measured.provenance == "measured"
    peak_measured = measured.memory.get("peak_allocated_bytes") if measured is not None else None
    fits = mem.fits(usable)
    if measured is not None and measured.measured_oom:
        fits = False
        n_oom = measured.status_counts.get("oom", 0)
        warnings.append(
            Notice(
                "measured_oom",
                f"this exact configuration ran out of memory on {gpu.slug} ({n_oom} measured results)",
            )
        )
    memory = MemoryAnswer(
        estimate=mem,
        usable_memory_bytes=usable,
        fits=fits,
        headroom_bytes=mem.headroom_bytes(usable),
        provenance="measured" if counts and peak_measured is not None else "spec",
        measured_peak_allocated_bytes=int(peak_measured.median) if peak_measured is not None else None,
    )
    time_answer: TimeAnswer | None = None
    serving_answer: ServingAnswer | None = None
    if not gpu.bandwidth_gb_per_s:
        warnings.append(Notice("no_time_estimate", f"{gpu.slug} lacks a sourced bandwidth; no time estimate"))
    else:
        workload = workload_for(job)
        cal = calibrations.pick(gpu, workload, precision)
        cell = measured if counts else None
        try:
            if isinstance(c, TrainConfig):
                time_answer = _time(c, gpu, cal, job.tokens, cell, workload)
            elif isinstance(c, BatchInferenceConfig):
                time_answer = _batch_time(c, gpu, cal, cell)
            elif ENGINE_CLASSES[c.engine].batching == "continuous":
                try:
                    serving_answer = _continuous(c, gpu, job.serving, cell)
                except InvalidConfiguration as exc:
                    if exc.code != "MEMORY_INSUFFICIENT" or job.solve_for != "min_gpus":
                        raise
                    warnings.append(
                        Notice(
                            "no_serving_as_given",
                            f"{exc.message}; solve (min_gpus) gives "
                            "the replicas x tensor_parallel that serve it",
                        )
                    )
            else:
                serving_answer = _serving(
                    c, gpu, cal, cell, calibrations.host_profile("llm-infer", precision), workload
                )
        except MissingFigure as exc:
            warnings.append(Notice("no_time_estimate", f"no time estimate: {exc.message}"))
    if isinstance(c, TrainConfig) and not fits:
        warnings.extend(_what_if(c, mem, usable))
    solve: SolveAnswer | None = None
    if job.solve_for:
        solve, notices = _solve(job, usable, gpu)
        warnings.extend(notices)
    return Estimate(
        job=job,
        gpu=gpu,
        memory=memory,
        time=time_answer,
        serving=serving_answer,
        solve=solve,
        warnings=tuple(warnings),
    )


def _what_if(c: TrainConfig, mem: MemoryEstimate, usable: int) -> list[Notice]:
    """Cheap alternatives the caller did not rule out, for a training job that does not fit:
    FSDP's mixed-precision policy instead of autocast over FSDP shards (which keeps every bf16
    weight cast, unsharded, until autocast exits) and the fused AdamW instead of foreach/forloop
    when the optimizer step is the peak."""
    out: list[Notice] = []
    if c.sharding == "fsdp" and c.mixed_precision == "autocast" and c.precision.startswith("amp_"):
        alt = estimate_training(replace(c, mixed_precision="fsdp_policy"))
        if alt.fits(usable):
            out.append(
                Notice(
                    "try_fsdp_mixed_precision_policy",
                    (
                        "with FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) instead of torch.autocast, "
                        f"{alt.fit_bytes / 2**30:.1f} GiB per GPU at the band's upper end: it fits "
                        "(autocast keeps the whole model's bf16 weight casts until it exits; the policy casts one "
                        "gathered layer at a time)"
                    ),
                )
            )
    if (
        mem.peak_phase == "optimizer-step"
        and c.optimizer == "adamw"
        and c.optimizer_impl != "fused"
        and c.sharding not in ("zero1", "zero2", "zero3")
    ):
        # fused AdamW changes only the optimizer step: drop its temporaries
        temp = mem.components.get("optimizer_step_temporaries", 0)
        alt_peak = max(
            [v for k, v in mem.phases.items() if k != "optimizer-step"]
            + [mem.phases["optimizer-step"] - temp]
        )
        if mem.fits_with_peak(alt_peak, usable):
            out.append(
                Notice(
                    "try_fused_optimizer",
                    (
                        f"the {c.optimizer_impl} AdamW step is the peak ({temp / 2**30:.1f} GiB of step temporaries); "
                        "torch.optim.AdamW(..., fused=True) (HF Trainer: optim='adamw_torch_fused') needs "
                        f"{(mem.upper_scale * alt_peak + mem.upper_fixed) / 2**30:.1f} GiB at the band's upper end and fits"
                    ),
                )
            )
    return out


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


def _accuracy(scope: str, gpu: GpuSpec, workload: str) -> Accuracy | None:
    return _accuracy_by_key(scope, gpu.compute_capability, gpu.family, workload)


@functools.lru_cache(maxsize=4096)
def _accuracy_by_key(scope: str, cc: str | None, family: str, workload: str) -> Accuracy | None:
    """Cached: a recommendation asks it for hundreds of candidates of a handful of kinds."""
    return accuracy_for(
        scope, arch_key(GpuSpec(slug="-", compute_capability=cc, architecture=family)), workload
    )


def _derived_span(gpu: GpuSpec, precision: str) -> tuple[GpuSpec, GpuSpec, str] | None:
    """(the GPU at the low end of its derived figures, at the high end, the derivation) when the
    peak ``precision`` runs at, or the bandwidth, is derived from a sibling; else None."""
    what = gpu.derived_peak(precision)
    text = f"the {PEAK_KEY.get(precision, precision)} peak is {what}" if what else None
    if gpu.bandwidth_range is not None:
        bw = f"the memory bandwidth is {gpu.derivations.get('bandwidth', 'derived')}"
        text = f"{text}; {bw}" if text else bw
    if text is None:
        return None
    lo = {k: r[0] for k, r in gpu.peak_ranges.items()}
    hi = {k: r[1] for k, r in gpu.peak_ranges.items()}
    bw_lo, bw_hi = gpu.bandwidth_range or (gpu.bandwidth_gb_per_s, gpu.bandwidth_gb_per_s)
    return (
        replace(gpu, peaks={**gpu.peaks, **lo}, bandwidth_gb_per_s=bw_lo),
        replace(gpu, peaks={**gpu.peaks, **hi}, bandwidth_gb_per_s=bw_hi),
        text,
    )


def _time(
    c: TrainConfig,
    gpu: GpuSpec,
    cal: Calibration | None,
    tokens: float | None,
    cell: CellView | None,
    workload: str = "*",
) -> TimeAnswer:
    if cal is not None:
        e = cal.efficiencies
        st = step_summary(c, gpu, e, band=cal.band_for(c), provenance=cal.provenance)
        prov, sources, n, notes = cal.provenance, cal.source_gpus, cal.n_points, cal.notes
        scope, tables = cal.scope, cal.sources
    else:
        e = SPEC_DEFAULTS
        st = step_summary(c, gpu)
        prov, sources, n, notes = "spec", (), 0, ("datasheet roofline with the spec-default efficiencies",)
        scope, tables = "spec-default", ()
    accuracy = _accuracy(scope, gpu, workload)
    step = st.step_time_s
    band = st.step_time_band
    measured = None
    summary = cell.metrics.get("step_time_s") if cell is not None else None
    if cell is not None and summary is not None and summary.median > 0:
        measured = step = summary.median
        band = Band(min(summary.p10, step * 0.97), step, max(summary.p90, step * 1.03))
        prov = "measured"
        notes = (f"median of {cell.count} measured results for this exact configuration",)
        accuracy, tables = None, ()
    else:
        span = _derived_span(gpu, c.precision)
        if span is not None:
            slow = step_summary(c, span[0], e).step_time_s
            fast = step_summary(c, span[1], e).step_time_s
            if abs(slow - fast) > 1e-9 * step:
                rel_lo, rel_hi = 1.0 - band.low / step, band.high / step - 1.0
                band = Band(min(band.low, fast * (1.0 - rel_lo)), step, max(band.high, slow * (1.0 + rel_hi)))
                prov = weakest(prov, "derived")
                notes = (
                    *notes,
                    f"{gpu.slug}: {span[2]}; the step time is {fast * 1e3:.4g}-{slow * 1e3:.4g} ms "
                    "across the two values and the band spans both",
                )
    k = step / st.step_time_s if st.step_time_s else 1.0
    ttt = ttt_band = None
    if tokens:
        per_step = c.effective_global_batch * c.seq_len
        steps = math.ceil(tokens / per_step)
        ttt = steps * step
        ttt_band = band.scaled(steps)
    if c.stack != "hf-eager":
        notes = (
            *notes,
            stack_note(c.stack),
            *(f"stack {c.stack} sets {d}" for d in STACK_EFFECTS[c.stack].defaults),
        )
    network = st.layout.describe() if st.layout is not None and st.layout.nodes > 1 else None
    if network is not None:
        notes = (*notes, f"network: {network}")
    tokens_per_s = st.tokens_per_s / k * c.data_parallel
    return TimeAnswer(  # the step time and its band by position: > 15 keywords would build a dict per call
        step,
        band,
        accumulation_steps=st.accumulation_steps,
        tokens_per_s=tokens_per_s,
        tokens_per_s_per_gpu=tokens_per_s / c.gpu_count,
        samples_per_s=st.samples_per_s / k * c.data_parallel,
        mfu=st.mfu / k,
        bound=st.bound,
        provenance=prov,
        time_to_train_s=ttt,
        time_to_train_band=ttt_band,
        source_gpus=tuple(sources),
        calibration_points=n,
        measured_step_time_s=measured,
        notes=tuple(notes),
        sources=tuple(tables),
        accuracy=accuracy,
        time_shares=time_shares(st.shares),
        stack=c.stack,
        network=network,
    )


def _serving(
    c: InferenceConfig,
    gpu: GpuSpec,
    cal: Calibration | None,
    cell: CellView | None,
    host: HostProfile | None,
    workload: str = "llm-infer",
) -> ServingAnswer:
    """hf-transformers (eager, static batch): the GPU-side efficiencies come from this GPU's
    calibration (or a transfer); the host floor from the engine and host that measured it,
    the same for every GPU (:class:`~service.core.estimation.serving.HostProfile`)."""
    notes: tuple[str, ...] = ()
    if host is not None:
        notes = (
            f"host floor of eager generate: {host.dispatch_s * 1e6:.1f} us per op, measured with "
            f"{host.source} (a property of engine and host, applied to every GPU alike)",
        )
    if cal is not None:
        e = cal.efficiencies
        sv = estimate_serving(c, gpu, e, band=cal.band_for(c), provenance=cal.provenance, host=host)
        prov, sources, scope, tables = cal.provenance, tuple(cal.source_gpus), cal.scope, cal.sources
        notes = (*notes, *cal.notes)
    else:
        e = SPEC_DEFAULTS
        sv = estimate_serving(c, gpu, host=host)
        prov, sources, scope, tables = "spec", (), "spec-default", ()
    notes = (*notes, *sv.notes)
    ttft_ms = cell.median("ttft_ms_p50") if cell is not None else None
    tpot_ms = cell.median("tpot_ms_p50") if cell is not None else None
    if ttft_ms and tpot_ms:
        ttft, tpot = ttft_ms / 1e3, tpot_ms / 1e3
        return ServingAnswer(  # TTFT by position: > 15 keywords would build a dict per call
            ttft,
            ttft_band=Band(ttft * 0.95, ttft, ttft * 1.05),
            tpot_s=tpot,
            tpot_band=Band(tpot * 0.95, tpot, tpot * 1.05),
            output_tokens_per_s=c.batch_size / tpot,
            prefill_bound=sv.prefill_bound,
            decode_bound=sv.decode_bound,
            provenance="measured",
            source_gpus=sources,
            measured_ttft_s=ttft,
            measured_tpot_s=tpot,
            engine=c.engine,
            tensor_parallel=c.tensor_parallel,
            replicas=c.replicas,
            concurrency_per_replica=c.batch_size,
            notes=notes,
        )
    accuracy = _accuracy(scope, gpu, workload)
    ttft_band, tpot_band = sv.ttft_band, sv.tpot_band
    span = _derived_span(gpu, "fp32" if c.precision == "fp32" else "bf16")
    if span is not None:
        lo, hi = estimate_serving(c, span[1], e, host=host), estimate_serving(c, span[0], e, host=host)
        if abs(hi.ttft_s - lo.ttft_s) + abs(hi.tpot_s - lo.tpot_s) > 1e-12:
            ttft_band = Band(min(ttft_band.low, lo.ttft_s), sv.ttft_s, max(ttft_band.high, hi.ttft_s))
            tpot_band = Band(min(tpot_band.low, lo.tpot_s), sv.tpot_s, max(tpot_band.high, hi.tpot_s))
            prov = weakest(prov, "derived")
            notes = (*notes, f"{gpu.slug}: {span[2]}; the bands span both values")
    return ServingAnswer(  # TTFT by position: > 15 keywords would build a dict per call
        sv.ttft_s,
        ttft_band=ttft_band,
        tpot_s=sv.tpot_s,
        tpot_band=tpot_band,
        output_tokens_per_s=sv.output_tokens_per_s,
        prefill_bound=sv.prefill_bound,
        decode_bound=sv.decode_bound,
        provenance=prov,
        source_gpus=sources,
        sources=tuple(tables),
        accuracy=accuracy,
        engine=c.engine,
        tensor_parallel=c.tensor_parallel,
        replicas=c.replicas,
        concurrency_per_replica=c.batch_size,
        notes=tuple(notes),
    )


VALIDATED_UTILISATION = 0.85
"""The queueing model was validated (means of fixed-length runs) up to this utilisation; above
it the published finite runs never reach a steady state to compare with."""

QUEUEING_NOTE = (
    "p50 from Poisson arrivals split over the replicas, a state-dependent processor-sharing "
    "batch scheduler and an M/G/c admission queue (service.core.estimation.serving); validated on means "
    "of NVIDIA's TensorRT-LLM 0.14 online runs at 2-32 QPS on H100/H200 up to "
    f"{VALIDATED_UTILISATION:.0%} utilisation; p90/p99 are not validated and not answered"
)


def _continuous(
    c: InferenceConfig, gpu: GpuSpec, q: ServingQuestion | None, cell: CellView | None = None
) -> ServingAnswer:
    """A continuous-batching engine (tensorrt-llm published, vllm transferred): at a fixed
    concurrency per replica (``batch_size``/``concurrency``) or at a request rate. An agent's
    measurement of this exact cell (the llm-infer engine plug-in) answers as ``measured``."""
    eng = ENGINE_CLASSES[c.engine]
    e = CONTINUOUS_EFFICIENCIES
    d = deployment(c, gpu)
    w = q.workload if q is not None else Workload(float(c.input_len), float(max(c.output_len, 1)))
    k = TRANSFERRED_ENGINE_BAND_FACTOR if eng.provenance == "transferred" else 1.0
    notes: list[str] = [f"{eng.name}: {eng.source}", *d.notes]
    if eng.provenance == "transferred":
        notes.append(
            "continuous-batching class fitted on NVIDIA's published TensorRT-LLM tables, applied with "
            "vLLM's scheduler and memory defaults (no vLLM table calibrates it; band x"
            f"{TRANSFERRED_ENGINE_BAND_FACTOR:g})"
        )
    cap, _ = concurrency_cap(d, w.input_len, w.output_len, reserve_gib=e.reserve_gib)
    if cap < 1:
        raise InvalidConfiguration(
            "tensor_parallel",
            f"{c.model.id} leaves no KV cache for one request on "
            f"{gpu.slug} at tensor_parallel {c.tensor_parallel}",
            code="MEMORY_INSUFFICIENT",
        )
    lo_t, hi_t = (x * k for x in CONTINUOUS_BAND["ttft"])
    lo_p, hi_p = (x * k for x in CONTINUOUS_BAND["tpot"])
    rate: RateAnswer | None = None
    if q is not None and q.requests_per_s is not None:
        r = serve_at_rate(c, gpu, q.requests_per_s, w, e, d)
        per = capacity_at_slo(c, gpu, w, q.ttft_target_s, q.tpot_target_s, e, d)
        fleet = per * c.replicas
        validated = r.stable and r.utilisation <= VALIDATED_UTILISATION
        rate = RateAnswer(
            requests_per_s=q.requests_per_s,
            stable=r.stable,
            ttft_p50_s=r.ttft_s,
            tpot_p50_s=r.tpot_s,
            ttft_mean_s=r.ttft_mean_s,
            in_flight_per_replica=r.in_flight,
            utilisation=r.utilisation,
            queue_wait_s=r.queue_wait_s,
            capacity_requests_per_s=fleet,
            headroom=fleet / q.requests_per_s - 1.0 if q.requests_per_s > 0 else math.inf,
            meets_ttft=None if q.ttft_target_s is None else bool(r.stable and r.ttft_s <= q.ttft_target_s),
            meets_tpot=None if q.tpot_target_s is None else bool(r.stable and r.tpot_s <= q.tpot_target_s),
            validated=validated,
            note=QUEUEING_NOTE
            if validated
            else (
                "the replicas cannot keep up with this rate (overload)"
                if not r.stable
                else QUEUEING_NOTE
                + f"; this point is above {VALIDATED_UTILISATION:.0%} utilisation: not validated"
            ),
        )
        ttft, tpot = r.ttft_s, r.tpot_s
        out_tps = q.requests_per_s * w.output_len if r.stable else 0.0
        conc = round(r.in_flight)
        bound = r.bound
    else:
        pt = serve_concurrency(c, gpu, e, q.concurrency if q is not None else None, d)
        ttft, tpot = pt.ttft_s, pt.tpot_s
        out_tps = pt.output_tokens_per_s * c.replicas
        conc = int(pt.n)
        bound = decode_bound(d, e, pt.n)
        if (q.concurrency if q is not None and q.concurrency else c.batch_size) > cap:
            notes.append(f"concurrency capped at {cap} sequences per replica (scheduler and KV cache)")
    prov = eng.provenance
    measured_ttft = measured_tpot = None
    m_ttft = cell.median("ttft_ms_p50") if cell is not None and rate is None else None
    m_tpot = cell.median("tpot_ms_p50") if cell is not None and rate is None else None
    if cell is not None and m_ttft and m_tpot:
        measured_ttft, measured_tpot = m_ttft / 1e3, m_tpot / 1e3
        ttft, tpot, prov = measured_ttft, measured_tpot, "measured"
        out_tps = c.batch_size / tpot * c.replicas
        lo_t = hi_t = lo_p = hi_p = 0.05
        notes.append(f"median of {cell.count} measured results for this exact configuration and engine")
    finite = math.isfinite(ttft) and math.isfinite(tpot)
    return ServingAnswer(  # TTFT, its band and TPOT by position: > 15 keywords would build a dict per call
        ttft,
        Band(ttft * (1 - lo_t), ttft, ttft * (1 + hi_t)) if finite else Band(ttft, ttft, ttft),
        tpot,
        tpot_band=Band(tpot * (1 - lo_p), tpot, tpot * (1 + hi_p)) if finite else Band(tpot, tpot, tpot),
        output_tokens_per_s=out_tps,
        prefill_bound="compute",
        decode_bound=bound,
        provenance=prov,
        source_gpus=(),
        measured_ttft_s=measured_ttft,
        measured_tpot_s=measured_tpot,
        engine=c.engine,
        tensor_parallel=c.tensor_parallel,
        replicas=c.replicas,
        concurrency_per_replica=conc,
        max_concurrency_per_replica=cap,
        rate=rate,
        notes=tuple(notes),
    )


def _batch_time(
    c: BatchInferenceConfig, gpu: GpuSpec, cal: Calibration | None, cell: CellView | None
) -> TimeAnswer:
    """Encoder / CNN inference: one forward of the batch (``step_time_s``), inputs/s over all
    replicas; calibrated on the agent's ``bert-large-infer`` / ``resnet50-infer``."""
    if cal is not None:
        est = batch_inference_time(c, gpu, cal.efficiencies, band=cal.band_for(c), provenance=cal.provenance)
        prov, sources, n, notes = cal.provenance, cal.source_gpus, cal.n_points, cal.notes
    else:
        est = batch_inference_time(c, gpu)
        prov, sources, n, notes = "spec", (), 0, ("datasheet roofline with the spec-default efficiencies",)
    step, band = est.step_time_s, est.step_time_band
    measured = None
    summary = cell.metrics.get("step_time_s") if cell is not None else None
    if cell is not None and summary is not None and summary.median > 0:
        measured = step = summary.median
        band = Band(min(summary.p10, step * 0.97), step, max(summary.p90, step * 1.03))
        prov = "measured"
        notes = (f"median of {cell.count} measured results for this exact configuration",)
    m = c.model
    per_input = float(c.seq_len) if isinstance(m, EncoderSpec) else 1.0
    flops = (
        2.0 * c.batch_size * c.seq_len * m.matmul_params_per_token
        if isinstance(m, EncoderSpec)
        else m.forward_flops_per_image * c.batch_size
    )
    peak = gpu.peak_for(c.precision) or 0.0
    return TimeAnswer(
        step_time_s=step,
        step_time_band=band,
        accumulation_steps=1,
        tokens_per_s=c.batch_size * per_input / step * c.replicas,
        tokens_per_s_per_gpu=c.batch_size * per_input / step,
        samples_per_s=c.batch_size / step * c.replicas,
        mfu=flops / step / (peak * 1e12) if peak else 0.0,
        bound=est.bound,
        provenance=prov,
        source_gpus=tuple(sources),
        calibration_points=n,
        measured_step_time_s=measured,
        notes=tuple(notes),
        time_shares=_batch_shares(est.phases, est.step_time_s),
    )


def _batch_shares(phases: Mapping[str, float], step: float) -> dict[str, float]:
    """Shares of an encoder / CNN forward: a forward issued slower than it runs is host time."""
    host = phases.get("host_dispatch", 0.0)
    compute = phases.get("compute", 0.0) + phases.get("matmul", 0.0) + phases.get("attention", 0.0)
    memory = phases.get("memory", 0.0)
    if "matmul" in phases and host > compute + memory:  # encoder: max(GPU, host)
        compute = memory = 0.0
    rest = max(0.0, step - compute - memory)
    return time_shares((compute / step, memory / step, 0.0, rest / step, 0.0))


def _solve(job: Job, usable: int, gpu: GpuSpec) -> tuple[SolveAnswer, list[Notice]]:
    target = job.solve_for
    assert target is not None
    c = job.config
    notices: list[Notice] = []
    if isinstance(c, BatchInferenceConfig):
        raise InvalidConfiguration("solve_for", f"{target} is not modelled for encoder / CNN inference")
    if target == "max_micro_batch":
        if not isinstance(c, TrainConfig):
            raise InvalidConfiguration(
                "solve_for", "max_micro_batch applies to training; use max_concurrency for inference"
            )
        v = largest_micro_batch(c, usable)
        return SolveAnswer(
            target, v, f"largest per-GPU micro-batch at seq_len {c.seq_len} that fits at the band's upper end"
        ), notices
    if target == "max_context":
        v = largest_context(c, usable)
        what = (
            "training seq_len"
            if isinstance(c, TrainConfig)
            else f"prompt length with output_len {c.output_len} kept"
        )
        detail = f"longest {what} that fits (multiples of 128)"
        limit = _context_limit(job)
        cap = limit if isinstance(c, TrainConfig) else limit - c.output_len
        if limit and v > cap:
            v = max(0, cap)
            notices.append(
                Notice(
                    "context_capped_at_model_limit",
                    (
                        f"{job.model.id} has max_position_embeddings {limit:,}: the answer is capped there, although "
                        "memory would allow more"
                    ),
                )
            )
            detail += f", capped at the model's max_position_embeddings ({limit:,})"
        return SolveAnswer(target, v, detail), notices
    if target == "max_concurrency":
        if not isinstance(c, InferenceConfig):
            raise InvalidConfiguration(
                "solve_for", "max_concurrency applies to inference; use max_micro_batch for training"
            )
        if ENGINE_CLASSES[c.engine].batching == "continuous" and gpu.bandwidth_gb_per_s:
            cap, _ = concurrency_cap(
                deployment(c, gpu),
                float(c.input_len),
                float(max(c.output_len, 1)),
                reserve_gib=CONTINUOUS_EFFICIENCIES.reserve_gib,
            )
            return SolveAnswer(
                target,
                max(0, cap),
                f"sequences of {c.input_len}+{c.output_len} tokens one replica runs "
                f"at once: {c.engine}'s scheduler limit and paged KV cache",
            ), notices
        v = most_concurrent_sequences(c, usable)
        return SolveAnswer(
            target, v, f"concurrent sequences of {c.input_len}+{c.output_len} tokens that fit"
        ), notices
    if isinstance(c, InferenceConfig):
        return _min_gpus_serving(job, c, usable, gpu), notices
    amp = c.precision.startswith("amp_")
    # an amp_* job moved onto FSDP takes the mixed-precision policy unless the caller chose autocast
    keep_autocast = "mixed_precision" in job.stated and c.mixed_precision == "autocast"
    mixed = "autocast" if keep_autocast else "fsdp_policy"
    found = fewest_gpus(c, usable, sharded_mixed_precision=mixed)
    if amp and (keep_autocast or (c.sharding == "fsdp" and c.mixed_precision == "autocast")):
        alt = fewest_gpus(
            replace(c, sharding="fsdp", mixed_precision="fsdp_policy")
            if c.gpu_count > 1 or c.sharding == "fsdp"
            else c,
            usable,
            sharded_mixed_precision="fsdp_policy",
        )
        if alt is not None and (found is None or alt[0] < found[0]):
            notices.append(
                Notice(
                    "try_fsdp_mixed_precision_policy",
                    (
                        f"with FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) it fits on {alt[0]} GPUs"
                        + ("" if found is None else f" instead of {found[0]}")
                        + "; torch.autocast over FSDP shards keeps the whole model's bf16 weight casts until it exits"
                    ),
                )
            )
    if found is None:
        return SolveAnswer(target, 0, "does not fit on any GPU count searched (up to 4096)"), notices
    n, _ = found
    shard = c.sharding if c.sharding not in ("none", "ddp") else "fsdp"
    how = shard if n > 1 else c.sharding
    if how == "fsdp" and amp:
        used = c.mixed_precision if c.sharding == "fsdp" else mixed
        how += " with " + (
            "MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)"
            if used == "fsdp_policy"
            else "torch.autocast"
        )
    return SolveAnswer(target, n, f"fewest GPUs that fit with sharding {how}"), notices


def _context_limit(job: Job) -> int:
    """The model's own position limit (0: none known)."""
    m = job.model
    if isinstance(m, DecoderSpec | EncoderSpec):
        return int(m.max_position_embeddings)
    return 0


def _min_gpus_serving(job: Job, c: InferenceConfig, usable: int, gpu: GpuSpec) -> SolveAnswer:
    """Serving: with a request rate (continuous engines), the fewest ``replicas x TP`` GPUs that
    meet the p50 targets (:func:`~service.core.estimation.serving.plan_min_gpus`); otherwise the smallest
    TP group one copy of the model fits on."""
    q = job.serving
    if q is not None and q.requests_per_s is not None and gpu.bandwidth_gb_per_s:
        plan: ServingPlan | None = plan_min_gpus(
            c, gpu, q.requests_per_s, q.workload, q.ttft_target_s, q.tpot_target_s
        )
        if plan is None:
            return SolveAnswer(
                "min_gpus",
                0,
                f"no tensor-parallel degree of {gpu.slug} (up to its NVLink domain) meets "
                "the targets at any rate, or the model does not fit",
            )
        r = plan.estimate
        tried = ", ".join(
            f"TP{tp}: {reps} x {per:.2f} req/s"
            if 0 < reps <= 4 * plan.replicas
            else f"TP{tp}: {per:.2f} req/s per replica"
            if reps
            else f"TP{tp}: misses the targets"
            for tp, reps, per in plan.considered
        )
        return SolveAnswer(
            "min_gpus",
            plan.gpus,
            f"{plan.replicas} replicas x TP{plan.tensor_parallel} = {plan.gpus} GPUs serve {q.requests_per_s:g} req/s "
            f"at p50 TTFT {r.ttft_s * 1e3:.0f} ms, TPOT {r.tpot_s * 1e3:.1f} ms; capacity at the targets "
            f"{plan.capacity_per_replica * plan.replicas:.2f} req/s (headroom {plan.headroom:.0%}); considered {tried}",
            replicas=plan.replicas,
            tensor_parallel=plan.tensor_parallel,
            ttft_s=r.ttft_s,
            tpot_s=r.tpot_s,
            headroom=plan.headroom,
        )
    for tp in tp_candidates(c.model, gpu, limit=64):
        cfg = replace(c, tensor_parallel=tp, replicas=1)
        if estimate_inference(cfg).fits(usable):
            return SolveAnswer(
                "min_gpus",
                tp,
                f"smallest tensor-parallel group one copy fits on (TP{tp}); give "
                "requests_per_s (vllm / tensorrt-llm) to size replicas for a load",
                replicas=1,
                tensor_parallel=tp,
            )
    return SolveAnswer("min_gpus", 0, "does not fit on any tensor-parallel degree searched")
