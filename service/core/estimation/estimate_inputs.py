"""A job as a caller states it (:class:`JobSpec`), resolved and defaulted into a :class:`Job`
(the benchmark cell that measures it: :mod:`.benchmark_cells`)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
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
from service.core.errors import InvalidConfiguration
from service.core.estimation.fp4 import NVFP4_BYTES_PER_ELEMENT
from service.core.estimation.frozen import fast_init
from service.core.estimation.memory import (
    DEFAULT_LORA_TARGETS,
    BatchInferenceConfig,
    InferenceConfig,
    TrainConfig,
)
from service.core.estimation.serving import ENGINE_CLASSES, Workload
from service.core.estimation.serving_disagg_layout import Disaggregation, replica_nodes
from service.core.estimation.serving_lora import LoraServing
from service.core.estimation.serving_requests import (
    check_load,
    check_offline,
    check_serving_features,
    is_offline,
)

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
    quant_method: str | None = None
    """None: the checkpoint's own format (:attr:`DecoderSpec.checkpoint_format`), else ``none``."""
    engine: str = "hf-transformers"
    kv_cache_dtype: str = "auto"
    engine_version: str | None = None
    prefix_cache_hit_rate: float = 0.0
    memory_fraction: float | None = None
    speculative: str | None = None
    draft_tokens: int = 0
    acceptance_rate: float = 0.0
    lora: LoraServing | None = None
    disaggregated: Disaggregation | None = None
    expert_parallel: bool = False
    price_per_gpu_hour: float | None = None
    """Read by the use case (cost per million tokens), not by the estimate."""
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
    offline: bool = False
    """A batch job of ``tokens`` output tokens, neither a rate nor clients: every request is
    queued at once and each replica runs as many as its scheduler and KV cache admit
    (:func:`~service.core.estimation.serving_queue.offline_throughput`)."""


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
    :data:`DEFAULT_OPTIMIZER_IMPL`; ``seq_len`` :data:`DEFAULT_TRAIN_SEQ_LEN` (an encoder's
    :data:`DEFAULT_ENCODER_SEQ_LEN`, at most its learned positions); ``loop`` not stated (``loss_only`` with the band's upper end
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
    _inference_only(spec, model)
    if spec.mode == "inference":
        config, serving = _inference_config(spec, model)
    else:
        if isinstance(model, CnnSpec):
            seq_len = 1
            optimizer = spec.optimizer if spec.optimizer != "adamw" else "sgd"
        else:
            default = DEFAULT_ENCODER_SEQ_LEN if isinstance(model, EncoderSpec) else DEFAULT_TRAIN_SEQ_LEN
            seq_len = spec.seq_len or default
            optimizer = spec.optimizer
            _within_learned_positions(model, seq_len)
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
        spec.quant_method is not None,
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


@functools.lru_cache(maxsize=64)
def _stated(
    precision: bool,
    sharding: bool,
    loop: bool,
    optimizer_impl: bool,
    mixed_precision: bool,
    quant_method: bool,
) -> frozenset[str]:
    """:attr:`Job.stated` from which of the defaultable fields were given (64 combinations, each
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
                ("quant_method", quant_method),
            )
            if given
        ]
    )


def _inference_only(spec: JobSpec, model: ModelSpec) -> None:
    """Sparse layouts beyond Mixtral's are modelled for inference only (no training memory model)."""
    if spec.mode != "inference" and isinstance(model, DecoderSpec) and model.is_sparse_layout:
        raise InvalidConfiguration(
            "mode",
            f"{model.id}: training and fine-tuning are modelled for dense and Mixtral-layout decoders; "
            "this model's layout (MLA, shared or narrow experts, dense layers among MoE ones) is "
            "modelled for inference only",
        )


KV_BYTES_PER_ELEMENT: dict[str, float] = {"fp8": 1.0, "int8": 1.0, "nvfp4": NVFP4_BYTES_PER_ELEMENT}
"""Bytes per cached K/V element by ``kv_cache_dtype`` (``auto``: the compute dtype's)."""


def _inference_config(
    spec: JobSpec, model: ModelSpec
) -> tuple[InferenceConfig | BatchInferenceConfig, ServingQuestion | None]:
    """Serving a decoder (``replicas = gpu_count / tensor_parallel`` copies of a TP group), or
    batched inference of an encoder / CNN (``gpu_count`` independent replicas)."""
    if spec.engine not in ENGINE_CLASSES:
        raise InvalidConfiguration(
            "engine",
            f"engine {spec.engine!r} is not modelled (modelled: {', '.join(ENGINE_CLASSES)})",
        )
    if not isinstance(model, DecoderSpec):
        return _batch_inference_config(spec, model), None
    tp = max(spec.tensor_parallel, 1)
    continuous = ENGINE_CLASSES[spec.engine].batching == "continuous"
    if spec.solve_for != "min_gpus" and (spec.gpu_count < tp or spec.gpu_count % tp):
        raise InvalidConfiguration(
            "gpu_count",
            f"gpu_count ({spec.gpu_count}) must be a multiple of tensor_parallel "
            f"({tp}): replicas x tensor_parallel GPUs",
        )
    check_load(spec, continuous)
    check_serving_features(spec, model, continuous)
    check_offline(spec, continuous)
    share = _concurrency_share(spec, tp)
    config = InferenceConfig(
        model=model,
        precision=spec.precision or "bf16",
        quant_method=_weight_format(spec, model),
        batch_size=share or spec.batch_size,
        input_len=spec.input_len,
        output_len=spec.output_len,
        engine=spec.engine,
        tensor_parallel=tp,
        kv_cache_bytes_per_element=KV_BYTES_PER_ELEMENT.get(spec.kv_cache_dtype, 0.0),
        replicas=max(1, spec.gpu_count // tp),
        kv_cache_dtype=spec.kv_cache_dtype,
        engine_version=spec.engine_version,
        prefix_cache_hit_rate=spec.prefix_cache_hit_rate,
        memory_fraction=spec.memory_fraction,
        speculative=spec.speculative,
        draft_tokens=spec.draft_tokens,
        acceptance_rate=spec.acceptance_rate,
        lora=spec.lora,
        disaggregated=spec.disaggregated,
        expert_parallel=spec.expert_parallel,
        nodes=replica_nodes(
            spec.pipeline_parallel, spec.gpus_per_node, spec.network_gbps_per_node, spec.rdma
        ),
    )
    serving = None
    if continuous:
        serving = ServingQuestion(
            workload=Workload(
                float(spec.input_len), float(max(spec.output_len, 1)), spec.input_len_cv, spec.output_len_cv
            ),
            requests_per_s=spec.requests_per_s,
            concurrency=share,
            ttft_target_s=spec.ttft_target_ms / 1e3 if spec.ttft_target_ms else None,
            tpot_target_s=spec.tpot_target_ms / 1e3 if spec.tpot_target_ms else None,
            offline=is_offline(spec),
        )
    return config, serving


def _concurrency_share(spec: JobSpec, tp: int) -> int | None:
    """Clients per replica of a closed loop: ``concurrency`` counts every client of the
    deployment (as ``requests_per_s`` counts every arrival), split evenly over the replicas --
    the decode replicas of a disaggregated one -- the last share rounded up."""
    if spec.concurrency is None:
        return None
    gpus = spec.disaggregated.decode_gpus if spec.disaggregated is not None else spec.gpu_count
    return -(-spec.concurrency // max(1, gpus // tp))


def _within_learned_positions(model: ModelSpec, seq_len: int) -> None:
    """An encoder's learned position table has ``max_position_embeddings`` rows: a longer
    sequence cannot be embedded at all (an index error, not a quality question as for RoPE)."""
    if isinstance(model, EncoderSpec) and seq_len > model.max_position_embeddings:
        raise InvalidConfiguration(
            "seq_len", f"{model.id} takes at most {model.max_position_embeddings} positions"
        )


def _weight_format(spec: JobSpec, model: DecoderSpec) -> str:
    """The weights served: as asked, else the format the checkpoint ships in (an FP8 DeepSeek-V3 is
    loaded as FP8, not as a 16-bit copy nobody publishes)."""
    return spec.quant_method if spec.quant_method is not None else model.checkpoint_format


def _batch_inference_config(spec: JobSpec, model: EncoderSpec | CnnSpec) -> BatchInferenceConfig:
    """Batched inference of an encoder / CNN: ``gpu_count`` independent one-GPU replicas, a
    static batch (no request rate), an encoder's sequence within its position limit."""
    if spec.tensor_parallel > 1:
        raise InvalidConfiguration("tensor_parallel", "encoders and CNNs are served one GPU per replica")
    if spec.requests_per_s is not None or spec.solve_for == "min_gpus":
        raise InvalidConfiguration("requests_per_s", "request-rate serving is modelled for decoder LLMs")
    if spec.tokens:
        raise InvalidConfiguration(
            "tokens",
            "tokens is the volume of a training run or of a decoder's generation (output tokens); "
            "batched encoder and CNN inference takes none",
        )
    seq = 1
    if isinstance(model, EncoderSpec):
        seq = spec.seq_len or DEFAULT_ENCODER_SEQ_LEN
        _within_learned_positions(model, seq)
    return BatchInferenceConfig(
        model=model,
        precision=spec.precision or "bf16",
        batch_size=spec.batch_size,
        seq_len=seq,
        replicas=spec.gpu_count,
    )


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
