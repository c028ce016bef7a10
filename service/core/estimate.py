"""One estimate, as a pure function: a GPU, a job, the fitted calibrations and the measured
cell in; memory, time (or serving latency), an optional solve-for and warnings out.

``estimate(gpu, job, calibrations, measured)`` does no I/O, so ``/v1/estimate``, the batch
endpoint, the CLI and the recommender call it alike, hundreds of times per request. The
caller resolves names and loads data: the GPU's :class:`~service.core.specs.GpuSpec`, the
:class:`CalibrationSet` (fitted once per measurement watermark) and the latest-measured view
of the exact benchmark cell the job corresponds to (:func:`benchmark_cell`, then
:func:`service.core.aggregate.latest_measured`).

Provenance (DESIGN, ranked in :mod:`service.core.provenance`): ``measured`` when the exact cell
was measured on this GPU with evidence that counts (>= 2 hosts or a trusted agent);
``interpolated`` when efficiencies were fitted on this GPU; ``transferred`` when fitted on another
GPU (named) and carried over without a published input; ``published`` when the answer leans on
the published tables (named in ``sources``): the cross-GPU ratio from their joint fit, or an
anchor on one of them; ``derived`` when the time depends on a catalog peak
derived from a sibling GPU (the derivation is noted and the band spans the alternative
sibling's value); ``spec`` for the datasheet roofline with the spec-default efficiencies.
Every time figure carries the held-out error measured for its provenance and the GPU's
architecture (:mod:`service.core.accuracy`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from service.core.accuracy import Accuracy, accuracy_for
from service.core.aggregate import CellView
from service.core.band import Band
from service.core.calibration import Calibration, CalibrationSet
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.memory import (
    InferenceConfig,
    MemoryEstimate,
    TrainConfig,
    estimate_inference,
    estimate_training,
    fewest_gpus,
    largest_context,
    largest_micro_batch,
    most_concurrent_sequences,
)
from service.core.models import (
    CnnSpec,
    DecoderSpec,
    EncoderSpec,
    ModelSpec,
    from_hf_config,
    from_parameter_count,
    get_model,
)
from service.core.performance import SPEC_DEFAULTS, estimate_serving, estimate_step
from service.core.precision import PEAK_KEY
from service.core.provenance import weakest
from service.core.specs import GpuSpec
from service.core.transfer import arch_key
from service.core.vocabulary import VocabularyError, canonical_parameters, parameters_hash

__all__ = [
    "ESTIMATOR_VERSION",
    "Estimate",
    "Job",
    "JobSpec",
    "MemoryAnswer",
    "Notice",
    "ServingAnswer",
    "SolveAnswer",
    "TimeAnswer",
    "benchmark_cell",
    "build_job",
    "estimate",
    "resolve_model",
    "workload_for",
]

ESTIMATOR_VERSION = "1.1.0"
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
    seq_len: int = 2048
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


@dataclass(frozen=True, slots=True)
class Job:
    """A job with its model resolved and its defaults filled: a training configuration or a
    serving configuration, plus what to compute beyond memory."""

    model: ModelSpec
    mode: str
    config: TrainConfig | InferenceConfig
    tokens: float | None = None
    solve_for: str | None = None
    model_is_preset: bool = True
    model_note: str | None = None  # the shape assumed for a bare parameter count
    stated: frozenset[str] = frozenset()
    """Defaultable training fields the caller gave (``precision``, ``sharding``, ``loop``,
    ``optimizer_impl``, ``mixed_precision``): a what-if may change the others."""

    @property
    def inference(self) -> bool:
        return isinstance(self.config, InferenceConfig)

    @property
    def precision(self) -> str:
        return self.config.precision

    @property
    def gpu_count(self) -> int:
        c = self.config
        return c.gpu_count if isinstance(c, TrainConfig) else c.tensor_parallel


def resolve_model(spec: JobSpec) -> tuple[ModelSpec, str | None, bool]:
    """(model, assumed-shape note, is a preset) from exactly one of the three model inputs.

    Raises :class:`InvalidConfiguration` naming the field, or
    :class:`~service.core.models.ModelNotFound` (with close matches) for an unknown name."""
    given = [x for x in (spec.model, spec.hf_config, spec.params_billion) if x is not None]
    if len(given) != 1:
        raise InvalidConfiguration("model", "give exactly one of model, hf_config, params_billion")
    if spec.model is not None:
        return get_model(spec.model), None, True
    if spec.hf_config is not None:
        from service.core.models import UnsupportedArchitecture

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
    config: TrainConfig | InferenceConfig
    if spec.mode == "inference":
        if not isinstance(model, DecoderSpec):
            raise InvalidConfiguration("mode", "inference estimates are modelled for decoder-only models")
        config = InferenceConfig(
            model=model,
            precision=spec.precision or "bf16",
            quant_method=spec.quant_method,
            batch_size=spec.batch_size,
            input_len=spec.input_len,
            output_len=spec.output_len,
            engine=spec.engine,
            tensor_parallel=max(spec.tensor_parallel, 1) if spec.gpu_count > 1 else 1,
            kv_cache_bytes_per_element=1.0 if spec.kv_cache_dtype == "fp8" else 0.0,
        )
    else:
        kwargs: dict[str, Any] = {}
        if spec.lora_targets:
            kwargs["lora_targets"] = tuple(spec.lora_targets)
        if isinstance(model, CnnSpec):
            kwargs["seq_len"] = 1
            kwargs["optimizer"] = spec.optimizer if spec.optimizer != "adamw" else "sgd"
        else:
            kwargs["seq_len"] = spec.seq_len
            kwargs["optimizer"] = spec.optimizer
        precision = spec.precision or ("bf16" if spec.mode == "fine-tuning" else "amp_bf16")
        sharding = spec.sharding or ("none" if spec.gpu_count == 1 else "ddp")
        mixed = spec.mixed_precision or (
            "fsdp_policy" if sharding == "fsdp" and precision.startswith("amp_") else "autocast")
        config = TrainConfig(
            model=model,
            precision=precision,
            batch_size=spec.batch_size,
            gradient_checkpointing=spec.gradient_checkpointing,
            finetune=spec.finetune or ("lora" if spec.mode == "fine-tuning" else "full"),
            lora_rank=spec.lora_rank,
            attention=spec.attention,
            sharding=sharding,
            gpu_count=spec.gpu_count,
            tensor_parallel=spec.tensor_parallel,
            global_batch=spec.global_batch,
            optimizer_impl=spec.optimizer_impl or DEFAULT_OPTIMIZER_IMPL,
            loop=spec.loop,
            mixed_precision=mixed,
            **kwargs,
        )
    stated = frozenset(name for name in ("precision", "sharding", "loop", "optimizer_impl", "mixed_precision")
                       if getattr(spec, name) is not None)
    return Job(model=model, mode=spec.mode, config=config, tokens=spec.tokens, solve_for=spec.solve_for,
               model_is_preset=preset, model_note=note, stated=stated)


def workload_for(job: Job) -> str:
    """The benchmark workload whose measurements calibrate this job's time."""
    if job.inference:
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
    if isinstance(c, TrainConfig) and isinstance(m, DecoderSpec):
        workload = "llm-train"
        params = {
            "model": m.id, "precision": c.precision, "batch_size": c.batch_size, "seq_len": c.seq_len,
            "gradient_checkpointing": c.gradient_checkpointing, "finetune": c.finetune,
            "lora_rank": c.lora_rank if c.finetune != "full" else 0,
            "lora_targets": ",".join(c.lora_targets) if c.finetune != "full" else "",
            "attention": c.attention, "optimizer": c.optimizer, "sharding": c.sharding,
            "gpu_count": c.gpu_count, "global_batch": c.global_batch,
        }
        # declared variants, named only away from the vocabulary defaults (cells measured
        # before they existed keep their hash); an unstated loop is looked up as loss_only,
        # the central estimate
        for name, value, default in (("loop", c.loop or "loss_only", "loss_only"),
                                     ("optimizer_impl", c.optimizer_impl, "fused"),
                                     ("mixed_precision", c.mixed_precision, "autocast")):
            if value != default:
                params[name] = value
    elif isinstance(c, TrainConfig) and isinstance(m, EncoderSpec) and m.id == "bert-large":
        workload, params = "bert-large-train", {"precision": c.precision, "batch_size": c.batch_size,
                                                "seq_len": c.seq_len}
    elif isinstance(c, TrainConfig) and isinstance(m, CnnSpec):
        workload, params = "resnet50-train", {"precision": c.precision, "batch_size": c.batch_size}
    elif isinstance(c, InferenceConfig):
        workload = "llm-infer"
        params = {
            "model": m.id, "precision": c.precision, "quant_method": c.quant_method, "engine": c.engine,
            "batch_size": c.batch_size, "input_len": c.input_len, "output_len": c.output_len,
        }
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


@dataclass(frozen=True, slots=True)
class Notice:
    """A warning attached to an answer: a stable code and a sentence."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class MemoryAnswer:
    estimate: MemoryEstimate
    usable_memory_bytes: int
    fits: bool
    headroom_bytes: int
    provenance: str
    measured_peak_allocated_bytes: int | None = None


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
    """Published tables the figure leans on (``service.core.published`` ids)."""
    accuracy: Accuracy | None = None
    """Held-out error measured for this provenance and the GPU's architecture."""


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
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SolveAnswer:
    target: str
    value: int
    detail: str


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


def estimate(gpu: GpuSpec, job: Job, calibrations: CalibrationSet, measured: CellView | None = None) -> Estimate:
    """Memory, time and the optional solve-for for ``job`` on ``gpu``.

    ``measured`` is the latest-measured view of :func:`benchmark_cell` on this GPU (or None).
    Raises :class:`InvalidConfiguration` for a GPU without a memory figure or a precision the
    GPU does not support (code ``PRECISION_UNSUPPORTED``)."""
    warnings: list[Notice] = []
    usable = gpu.usable_memory_bytes
    if usable is None:
        if gpu.memory_bytes is None:
            raise InvalidConfiguration("gpu", f"{gpu.slug} has no sourced memory size; no fit can be computed")
        usable = gpu.memory_bytes
        warnings.append(Notice("usable_memory_unknown", f"{gpu.slug}: the driver-reported usable memory is not "
                                                        "sourced; physical memory used, so the fit may be optimistic"))
    if job.model_note:
        warnings.append(Notice("assumed_shape", job.model_note))
    precision = job.precision
    if gpu.support_for(precision) == "no":
        raise InvalidConfiguration("precision", f"{gpu.slug} does not support {precision}", code="PRECISION_UNSUPPORTED")
    n_gpus = job.config.gpu_count if isinstance(job.config, TrainConfig) else 1
    if n_gpus > 1 and gpu.node.nvlink_topology == "none":
        warnings.append(Notice("pcie_multi_gpu_unvalidated", "multi-GPU communication over PCIe is modelled from the "
                                                             "datasheet only; no PCIe-only multi-GPU measurement validates it"))
    elif n_gpus > 1:
        warnings.append(Notice("multi_gpu_unvalidated", "multi-GPU communication is modelled from the node shape; it "
                                                        "has not been validated against multi-GPU measurements yet"))
    c = job.config
    mem = estimate_training(c) if isinstance(c, TrainConfig) else estimate_inference(c)
    counts = measured is not None and measured.provenance == "measured"
    peak_measured = measured.memory.get("peak_allocated_bytes") if measured is not None else None
    fits = mem.fits(usable)
    if measured is not None and measured.measured_oom:
        fits = False
        n_oom = measured.status_counts.get("oom", 0)
        warnings.append(Notice("measured_oom", f"this exact configuration ran out of memory on {gpu.slug} "
                                               f"({n_oom} measured results)"))
    memory = MemoryAnswer(
        estimate=mem, usable_memory_bytes=usable, fits=fits, headroom_bytes=mem.headroom_bytes(usable),
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
            else:
                serving_answer = _serving(c, gpu, cal, cell, workload)
        except MissingFigure as exc:
            warnings.append(Notice("no_time_estimate", f"no time estimate: {exc.message}"))
    if isinstance(c, TrainConfig) and not fits:
        warnings.extend(_what_if(c, mem, usable))
    solve: SolveAnswer | None = None
    if job.solve_for:
        solve, notices = _solve(job, usable)
        warnings.extend(notices)
    return Estimate(job=job, gpu=gpu, memory=memory, time=time_answer,
                    serving=serving_answer, solve=solve, warnings=tuple(warnings))


def _what_if(c: TrainConfig, mem: MemoryEstimate, usable: int) -> list[Notice]:
    """Cheap alternatives the caller did not rule out, for a training job that does not fit:
    FSDP's mixed-precision policy instead of autocast over FSDP shards (which keeps every bf16
    weight cast, unsharded, until autocast exits) and the fused AdamW instead of foreach/forloop
    when the optimizer step is the peak."""
    from dataclasses import replace

    out: list[Notice] = []
    if c.sharding == "fsdp" and c.mixed_precision == "autocast" and c.precision.startswith("amp_"):
        alt = estimate_training(replace(c, mixed_precision="fsdp_policy"))
        if alt.fits(usable):
            out.append(Notice("try_fsdp_mixed_precision_policy", (
                "with FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) instead of torch.autocast, "
                f"{alt.device_memory_band.high / 2**30:.1f} GiB per GPU at the band's upper end: it fits "
                "(autocast keeps the whole model's bf16 weight casts until it exits; the policy casts one "
                "gathered layer at a time)")))
    if (mem.peak_phase == "optimizer-step" and c.optimizer == "adamw" and c.optimizer_impl != "fused"
            and c.sharding not in ("zero1", "zero2", "zero3")):
        # fused AdamW changes only the optimizer step: drop its temporaries
        temp = mem.components.get("optimizer_step_temporaries", 0)
        alt_peak = max([v for k, v in mem.phases.items() if k != "optimizer-step"]
                       + [mem.phases["optimizer-step"] - temp])
        if mem.fits_with_peak(alt_peak, usable):
            out.append(Notice("try_fused_optimizer", (
                f"the {c.optimizer_impl} AdamW step is the peak ({temp / 2**30:.1f} GiB of step temporaries); "
                "torch.optim.AdamW(..., fused=True) (HF Trainer: optim='adamw_torch_fused') needs "
                f"{(mem.upper_scale * alt_peak + mem.upper_fixed) / 2**30:.1f} GiB at the band's upper end and fits")))
    return out


def _configuration(job: Job) -> dict[str, Any]:
    c = job.config
    out: dict[str, Any] = {"precision": c.precision}
    if isinstance(c, TrainConfig):
        out.update(
            batch_size=c.batch_size, seq_len=c.seq_len, gradient_checkpointing=c.gradient_checkpointing,
            finetune=c.finetune, lora_rank=c.lora_rank if c.finetune != "full" else None,
            attention=c.attention, optimizer=c.optimizer, sharding=c.sharding, gpu_count=c.gpu_count,
            tensor_parallel=c.tensor_parallel, global_batch=c.effective_global_batch,
            optimizer_impl=c.optimizer_impl, loop=c.loop, mixed_precision=c.mixed_precision,
        )
    else:
        out.update(
            batch_size=c.batch_size, input_len=c.input_len, output_len=c.output_len,
            quant_method=c.quant_method, engine=c.engine, kv_cache_bytes_per_element=c.kv_bytes,
            tensor_parallel=c.tensor_parallel,
        )
    return out


def _accuracy(scope: str, gpu: GpuSpec, workload: str) -> Accuracy | None:
    return _accuracy_by_key(scope, gpu.compute_capability, gpu.family, workload)


@functools.lru_cache(maxsize=4096)
def _accuracy_by_key(scope: str, cc: str | None, family: str, workload: str) -> Accuracy | None:
    """Cached: a recommendation asks it for hundreds of candidates of a handful of kinds."""
    return accuracy_for(scope, arch_key(GpuSpec(slug="-", compute_capability=cc, architecture=family)), workload)


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
    return (replace(gpu, peaks={**gpu.peaks, **lo}, bandwidth_gb_per_s=bw_lo),
            replace(gpu, peaks={**gpu.peaks, **hi}, bandwidth_gb_per_s=bw_hi), text)


def _time(c: TrainConfig, gpu: GpuSpec, cal: Calibration | None, tokens: float | None,
          cell: CellView | None, workload: str = "*") -> TimeAnswer:
    if cal is not None:
        e = cal.efficiencies
        st = estimate_step(c, gpu, e, band=cal.band_for(c), provenance=cal.provenance)
        prov, sources, n, notes = cal.provenance, cal.source_gpus, cal.n_points, cal.notes
        scope, tables = cal.scope, cal.sources
    else:
        e = SPEC_DEFAULTS
        st = estimate_step(c, gpu)
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
            slow = estimate_step(c, span[0], e).step_time_s
            fast = estimate_step(c, span[1], e).step_time_s
            if abs(slow - fast) > 1e-9 * step:
                rel_lo, rel_hi = 1.0 - band.low / step, band.high / step - 1.0
                band = Band(min(band.low, fast * (1.0 - rel_lo)), step, max(band.high, slow * (1.0 + rel_hi)))
                prov = weakest(prov, "derived")
                notes = (*notes, f"{gpu.slug}: {span[2]}; the step time is {fast * 1e3:.4g}-{slow * 1e3:.4g} ms "
                                 "across the two values and the band spans both")
    k = step / st.step_time_s if st.step_time_s else 1.0
    ttt = ttt_band = None
    if tokens:
        per_step = c.effective_global_batch * c.seq_len
        steps = math.ceil(tokens / per_step)
        ttt = steps * step
        ttt_band = band.scaled(steps)
    return TimeAnswer(
        step_time_s=step, step_time_band=band, accumulation_steps=st.accumulation_steps,
        tokens_per_s=st.tokens_per_s / k * c.data_parallel, tokens_per_s_per_gpu=st.tokens_per_s / k,
        samples_per_s=st.samples_per_s / k * c.data_parallel, mfu=st.mfu / k, bound=st.bound,
        provenance=prov, time_to_train_s=ttt, time_to_train_band=ttt_band, source_gpus=tuple(sources),
        calibration_points=n, measured_step_time_s=measured, notes=tuple(notes), sources=tuple(tables),
        accuracy=accuracy,
    )


def _serving(c: InferenceConfig, gpu: GpuSpec, cal: Calibration | None, cell: CellView | None,
             workload: str = "llm-infer") -> ServingAnswer:
    if cal is not None:
        e = cal.efficiencies
        sv = estimate_serving(c, gpu, e, band=cal.band_for(c), provenance=cal.provenance)
        prov, sources, scope, tables, notes = cal.provenance, tuple(cal.source_gpus), cal.scope, cal.sources, cal.notes
    else:
        e = SPEC_DEFAULTS
        sv = estimate_serving(c, gpu)
        prov, sources, scope, tables, notes = "spec", (), "spec-default", (), ()
    ttft_ms = cell.median("ttft_ms_p50") if cell is not None else None
    tpot_ms = cell.median("tpot_ms_p50") if cell is not None else None
    if ttft_ms and tpot_ms:
        ttft, tpot = ttft_ms / 1e3, tpot_ms / 1e3
        return ServingAnswer(
            ttft_s=ttft, ttft_band=Band(ttft * 0.95, ttft, ttft * 1.05), tpot_s=tpot,
            tpot_band=Band(tpot * 0.95, tpot, tpot * 1.05), output_tokens_per_s=c.batch_size / tpot,
            prefill_bound=sv.prefill_bound, decode_bound=sv.decode_bound, provenance="measured",
            source_gpus=sources, measured_ttft_s=ttft, measured_tpot_s=tpot,
        )
    accuracy = _accuracy(scope, gpu, workload)
    ttft_band, tpot_band = sv.ttft_band, sv.tpot_band
    span = _derived_span(gpu, "fp32" if c.precision == "fp32" else "bf16")
    if span is not None:
        lo, hi = estimate_serving(c, span[1], e), estimate_serving(c, span[0], e)
        if abs(hi.ttft_s - lo.ttft_s) + abs(hi.tpot_s - lo.tpot_s) > 1e-12:
            ttft_band = Band(min(ttft_band.low, lo.ttft_s), sv.ttft_s, max(ttft_band.high, hi.ttft_s))
            tpot_band = Band(min(tpot_band.low, lo.tpot_s), sv.tpot_s, max(tpot_band.high, hi.tpot_s))
            prov = weakest(prov, "derived")
            notes = (*notes, f"{gpu.slug}: {span[2]}; the bands span both values")
    return ServingAnswer(
        ttft_s=sv.ttft_s, ttft_band=ttft_band, tpot_s=sv.tpot_s, tpot_band=tpot_band,
        output_tokens_per_s=sv.output_tokens_per_s, prefill_bound=sv.prefill_bound,
        decode_bound=sv.decode_bound, provenance=prov, source_gpus=sources, sources=tuple(tables),
        accuracy=accuracy, notes=tuple(notes),
    )


def _solve(job: Job, usable: int) -> tuple[SolveAnswer, list[Notice]]:
    target = job.solve_for
    assert target is not None
    c = job.config
    notices: list[Notice] = []
    if target == "max_micro_batch":
        if not isinstance(c, TrainConfig):
            raise InvalidConfiguration("solve_for", "max_micro_batch applies to training; use max_concurrency for inference")
        v = largest_micro_batch(c, usable)
        return SolveAnswer(target, v, f"largest per-GPU micro-batch at seq_len {c.seq_len} that fits at the band's "
                                      "upper end"), notices
    if target == "max_context":
        v = largest_context(c, usable)
        what = "training seq_len" if isinstance(c, TrainConfig) else f"prompt length with output_len {c.output_len} kept"
        detail = f"longest {what} that fits (multiples of 128)"
        limit = _context_limit(job)
        cap = limit if isinstance(c, TrainConfig) else limit - c.output_len
        if limit and v > cap:
            v = max(0, cap)
            notices.append(Notice("context_capped_at_model_limit", (
                f"{job.model.id} has max_position_embeddings {limit:,}: the answer is capped there, although "
                "memory would allow more")))
            detail += f", capped at the model's max_position_embeddings ({limit:,})"
        return SolveAnswer(target, v, detail), notices
    if target == "max_concurrency":
        if not isinstance(c, InferenceConfig):
            raise InvalidConfiguration("solve_for", "max_concurrency applies to inference; use max_micro_batch for training")
        v = most_concurrent_sequences(c, usable)
        return SolveAnswer(target, v, f"concurrent sequences of {c.input_len}+{c.output_len} tokens that fit"), notices
    if not isinstance(c, TrainConfig):
        raise InvalidConfiguration("solve_for", "min_gpus applies to training")
    amp = c.precision.startswith("amp_")
    # an amp_* job moved onto FSDP takes the mixed-precision policy unless the caller chose autocast
    keep_autocast = "mixed_precision" in job.stated and c.mixed_precision == "autocast"
    mixed = "autocast" if keep_autocast else "fsdp_policy"
    found = fewest_gpus(c, usable, sharded_mixed_precision=mixed)
    if amp and (keep_autocast or (c.sharding == "fsdp" and c.mixed_precision == "autocast")):
        alt = fewest_gpus(replace(c, sharding="fsdp", mixed_precision="fsdp_policy") if c.gpu_count > 1 or
                          c.sharding == "fsdp" else c, usable, sharded_mixed_precision="fsdp_policy")
        if alt is not None and (found is None or alt[0] < found[0]):
            notices.append(Notice("try_fsdp_mixed_precision_policy", (
                f"with FSDP MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) it fits on {alt[0]} GPUs"
                + ("" if found is None else f" instead of {found[0]}")
                + "; torch.autocast over FSDP shards keeps the whole model's bf16 weight casts until it exits")))
    if found is None:
        return SolveAnswer(target, 0, "does not fit on any GPU count searched (up to 4096)"), notices
    n, _ = found
    shard = c.sharding if c.sharding not in ("none", "ddp") else "fsdp"
    how = shard if n > 1 else c.sharding
    if how == "fsdp" and amp:
        used = c.mixed_precision if c.sharding == "fsdp" else mixed
        how += " with " + ("MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)" if used == "fsdp_policy"
                           else "torch.autocast")
    return SolveAnswer(target, n, f"fewest GPUs that fit with sharding {how}"), notices


def _context_limit(job: Job) -> int:
    """The model's own position limit (0: none known)."""
    m = job.model
    if isinstance(m, DecoderSpec | EncoderSpec):
        return int(m.max_position_embeddings)
    return 0
