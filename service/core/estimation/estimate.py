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

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from service.core.catalog.models import DecoderSpec
from service.core.catalog.precision import FP16_FOR
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.band import Band
from service.core.estimation.benchmark_cells import benchmark_cell
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.engine_support import engine_refusal, format_refusal, served_format
from service.core.estimation.estimate_answers import (  # noqa: F401
    Estimate,
    MemoryAnswer,
    Notice,
    RateAnswer,
    ServingAnswer,
    SolveAnswer,
    TimeAnswer,
    _configuration,
    configuration_of,
)
from service.core.estimation.estimate_eager import eager_answer
from service.core.estimation.estimate_inputs import (  # noqa: F401
    _INFERENCE_CONFIGS,
    DEFAULT_ENCODER_SEQ_LEN,
    DEFAULT_OPTIMIZER_IMPL,
    DEFAULT_TRAIN_SEQ_LEN,
    MODES,
    ONE_MODEL_INPUT,
    SOLVE_TARGETS,
    Job,
    JobSpec,
    ServingQuestion,
    _inference_config,
    _stated,
    build_job,
    has_one_model_input,
    resolve_model,
    workload_for,
)
from service.core.estimation.estimate_oom import does_not_fit, tight_for_largest_request, what_if
from service.core.estimation.estimate_solve import (  # noqa: F401
    _context_limit,
    _min_gpus_serving,
    _solve,
)
from service.core.estimation.estimate_time import (  # noqa: F401
    QUEUEING_NOTE,
    VALIDATED_UTILISATION,
    _accuracy,
    _accuracy_by_key,
    _batch_shares,
    _batch_time,
    _continuous,
    _derived_span,
    _time,
    continuous_answer,
)
from service.core.estimation.memory import (
    BatchInferenceConfig,
    InferenceConfig,
    MemoryEstimate,
    TrainConfig,
    estimate_batch_inference,
    estimate_inference,
    memory_held,
    training_breakdown,
)
from service.core.estimation.network import Layout, layout_of, replica_layout
from service.core.estimation.serving import (
    ENGINE_CLASSES,
)
from service.core.estimation.serving_engines import ENGINE_VERSIONS
from service.core.estimation.source_anchor import serving_anchor, source_anchor
from service.core.evidence.aggregate import CellView

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
    "context_overrun",
    "estimate",
    "has_one_model_input",
    "resolve_model",
    "workload_for",
]

ESTIMATOR_VERSION = "1.36.0"
"""Bumped whenever a change to the models can change an answer for the same inputs."""


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
_SPARSE_TIME = Notice(
    "sparse_time_unvalidated",
    "memory is counted from the published architecture; serving time for MLA / shared-expert "
    "MoE layouts uses the engine class fitted on dense models and is not yet validated against "
    "published figures for them (per-layer MoE kernel and all-reduce floors are not modelled)",
)
"""Warnings whose text never varies, built once (a Notice is immutable, so answers may share it)."""


def estimate(
    gpu: GpuSpec,
    job: Job,
    calibrations: CalibrationSet,
    measured: CellView | None = None,
    *,
    breakdown: MemoryEstimate | None = None,
    measured_on: Callable[[str], CellView | None] | None = None,
) -> Estimate:
    """Memory, time and the optional solve-for for ``job`` on ``gpu``.

    ``measured`` is the latest-measured view of :func:`benchmark_cell` on this GPU (or None).
    ``breakdown`` is the job's memory breakdown when the caller already has it: it does not depend
    on the GPU, so a recommender computes it once for every GPU it compares. ``measured_on`` looks
    up the same cell measured on another GPU (by slug): a transferred training answer is anchored
    on its source GPU's measurement (:mod:`.source_anchor`).
    Raises :class:`InvalidConfiguration` for a GPU without a memory figure or a precision the
    GPU does not support (code ``PRECISION_UNSUPPORTED``)."""
    warnings: list[Notice] = []
    usable = _usable_memory(gpu, warnings)
    if job.model_note:
        warnings.append(Notice("assumed_shape", job.model_note, {"note": job.model_note}))
    job = _checkpoint_on(gpu, job, warnings)
    _refuse_unsupported_precision(gpu, job)
    c = job.config
    _layout_warnings(gpu, c, warnings)
    _context_warning(c, warnings)
    memory = _memory_answer(gpu, c, usable, measured, breakdown, warnings)
    timing = _time_or_serving(gpu, job, calibrations, measured, warnings, measured_on)
    time_answer, serving_answer = timing.time, timing.serving
    if timing.engine_refused and memory.fits:
        # the sequences may fit; the engine as configured cannot run them
        memory = replace(memory, fits=False)
    if serving_answer is not None and isinstance(c, InferenceConfig):
        serving_answer = _with_generation_time(_with_engine_version(serving_answer, c), job.tokens)
        warnings.extend(_overloaded(serving_answer))
        memory = _admitted(gpu, c, usable, measured, serving_answer, memory, warnings)
        if not memory.fits:  # a static batch that runs out of memory has no latency (as compare marks it)
            warnings.append(
                _no_serving_as_given(f"batch {c.batch_size} of {c.model.id} does not fit {gpu.slug}")
            )
            serving_answer = None
    if isinstance(c, TrainConfig) and not memory.fits:
        warnings.append(does_not_fit(memory, usable))
        warnings.extend(what_if(c, memory.estimate, usable))
    elif isinstance(c, TrainConfig):
        warnings.extend(tight_for_largest_request(c, memory))
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


@dataclass(frozen=True, slots=True)
class _Timing:
    """What :func:`_time_or_serving` found: a step time or a serving answer (or neither), and
    whether a continuous-batching engine refused the model as given -- its share of the device
    leaves no KV cache for one request, so the answer is ``fits: false`` whatever the sequences'
    own memory (its warning says why and what makes room)."""

    time: TimeAnswer | None = None
    serving: ServingAnswer | None = None
    engine_refused: bool = False


def _overloaded(s: ServingAnswer) -> list[Notice]:
    """A load the deployment cannot carry: the queue grows without bound, so its latencies are a
    saturated engine's and its rate figures no steady state -- said beside them, not only in the
    rate's fields."""
    r, dis = s.rate, s.disaggregated
    if r is not None and not r.stable:
        return [
            Notice(
                "overloaded",
                f"{r.requests_per_s:g} req/s is over what the deployment carries ({r.capacity_requests_per_s:.2f} "
                "req/s within its limits): the queue grows without bound; more replicas or GPUs serve it "
                "(solve_for min_gpus)",
                {
                    "requests_per_s": r.requests_per_s,
                    "capacity_requests_per_s": round(r.capacity_requests_per_s, 2),
                },
            )
        ]
    if dis is not None and dis.prefill_utilisation >= 1.0:
        return [
            Notice(
                "overloaded",
                f"the prefill pool is {dis.prefill_utilisation:.0%} busy: prompts arrive faster than it "
                "computes them and the queue grows without bound; a larger prefill pool serves it",
                {"prefill_busy_pct": round(dis.prefill_utilisation * 100.0)},
            )
        ]
    return []


def _with_generation_time(s: ServingAnswer, tokens: float | None) -> ServingAnswer:
    """The time to generate ``tokens`` output tokens at the answer's rate; its band follows the
    TPOT band (a batch job's time is its decode steps)."""
    if not tokens or s.output_tokens_per_s <= 0 or not math.isfinite(s.tpot_s) or s.tpot_s <= 0:
        return s
    mid = tokens / s.output_tokens_per_s
    b = s.tpot_band
    return replace(s, time_to_generate=Band(mid * b.low / s.tpot_s, mid, mid * b.high / s.tpot_s))


def _usable_memory(gpu: GpuSpec, warnings: list[Notice]) -> int:
    """The driver-reported usable memory, else the physical size with a warning that the fit may
    be optimistic; a GPU without either cannot be sized."""
    usable = gpu.usable_memory_bytes
    if usable is not None:
        return usable
    if gpu.memory_bytes is None:
        raise InvalidConfiguration("gpu", f"{gpu.slug} has no sourced memory size; no fit can be computed")
    warnings.append(_usable_unknown(gpu.slug))
    return gpu.memory_bytes


def _checkpoint_on(gpu: GpuSpec, job: Job, warnings: list[Notice]) -> Job:
    """The job with the weights the engine serves on ``gpu`` (:func:`.engine_support.served_format`):
    a checkpoint format it cannot run, not asked for, is loaded as 16-bit weights, and said."""
    c = job.config
    if not isinstance(c, InferenceConfig):
        return job
    fmt = served_format(c.quant_method, "quant_method" in job.stated, c.kv_cache_dtype, c.engine, gpu)
    if fmt == c.quant_method:
        return job
    warnings.append(
        Notice(
            "checkpoint_dequantised",
            f"{c.model.id}'s checkpoint ships {c.quant_method} weights, which {c.engine} cannot run on "
            f"{gpu.slug}: estimated as 16-bit weights (the checkpoint dequantised at load)",
            {"model": c.model.id, "format": c.quant_method, "engine": c.engine, "gpu": gpu.slug},
        )
    )
    return replace(job, config=replace(c, quant_method=fmt))


def _refuse_unsupported_precision(gpu: GpuSpec, job: Job) -> None:
    """A precision, weight format, KV-cache dtype or engine the GPU cannot run is refused, not
    estimated (:mod:`.engine_support`)."""
    if gpu.support_for(job.precision) == "no":
        alt = FP16_FOR.get(job.precision)
        runs = alt is not None and gpu.support_for(alt) == "yes"
        hint = f" (it has no bf16 tensor cores: precision {alt} runs, with loss scaling)" if runs else ""
        raise InvalidConfiguration(
            "precision", f"{gpu.slug} does not support {job.precision}{hint}", code="PRECISION_UNSUPPORTED"
        )
    c = job.config
    if isinstance(c, InferenceConfig):
        engine = engine_refusal(c.engine, gpu)
        if engine is not None:
            raise InvalidConfiguration("engine", engine, code="ENGINE_UNSUPPORTED")
        refused = format_refusal(c.weight_format, c.kv_cache_dtype, c.engine, gpu)
        if refused is not None:
            raise InvalidConfiguration(refused[0], refused[1], code="PRECISION_UNSUPPORTED")


def _admitted(
    gpu: GpuSpec,
    c: InferenceConfig,
    usable: int,
    measured: CellView | None,
    sv: ServingAnswer,
    memory: MemoryAnswer,
    warnings: list[Notice],
) -> MemoryAnswer:
    """The memory of the sequences a replica holds under the load, fitting where its engine admits
    them (:func:`_engine_sized`). At a rate: its mean in-flight
    sequences (Little's law; one sequence's KV cache understated a busy replica's several-fold),
    at most those it admits. A closed loop with more clients per replica than the engine admits
    (its KV cache and scheduler): the rest wait, and the memory is that of the admitted
    sequences -- the engine sizes its KV pool, it does not run out of memory -- with a warning
    saying how many wait."""
    share, cap = c.batch_size, sv.max_concurrency_per_replica  # the clients given, those admitted
    if sv.rate is not None:  # disaggregated: a decode replica's sequences (it holds their KV)
        flight = sv.rate.in_flight_per_replica
        held = min(math.ceil(flight), cap or 1) if sv.rate.stable and math.isfinite(flight) else 1
        if held <= c.batch_size:
            return memory  # an overloaded replica's queue grows without bound: its answer says so
        return _memory_answer(gpu, c, usable, measured, memory_held(c, held, usable), [])
    if sv.disaggregated is not None or cap < 1:
        return memory
    if cap >= share:  # the pool holds every client's sequence
        return _engine_sized(memory)
    warnings.append(
        Notice(
            "concurrency_queued",
            f"{share - cap} of the {share} clients per replica wait for admission: a replica holds {cap} "
            "sequences (KV cache and scheduler), so TTFT includes the wait; more replicas admit them",
            {"clients_per_replica": share, "admitted": cap, "waiting": share - cap},
        )
    )
    return _engine_sized(_memory_answer(gpu, replace(c, batch_size=cap), usable, measured, None, []))


def _engine_sized(memory: MemoryAnswer) -> MemoryAnswer:
    """Sequences a continuous-batching engine admits fit: it sized its KV pool to hold them in
    what the weights and its working set leave of its share. The band and the allocator slack on
    top of that pool would count its margin twice and refuse what it runs (DeepSeek-R1 at 128-256
    clients on B200s, which InferenceX ran)."""
    return memory if memory.fits else replace(memory, fits=True)


def _context_warning(c: TrainConfig | InferenceConfig | BatchInferenceConfig, warnings: list[Notice]) -> None:
    """A decoder asked for more tokens than its ``max_position_embeddings``: engines refuse such a
    ``max_model_len`` (vLLM) or need RoPE scaling the model was not configured with; the figures
    are what the memory and time of that length would be."""
    over = context_overrun(c)
    if over is not None:
        tokens, limit = over
        warnings.append(
            Notice(
                "beyond_context",
                f"{tokens:,} tokens per sequence exceed {c.model.id}'s max_position_embeddings "
                f"({limit:,}): engines refuse it without RoPE scaling, and the "
                "model's quality there is not what it was trained for",
                {"model": c.model.id, "tokens": tokens, "limit": limit},
            )
        )


def context_overrun(c: TrainConfig | InferenceConfig | BatchInferenceConfig) -> tuple[int, int] | None:
    """(tokens per sequence, the decoder's ``max_position_embeddings``) where the first exceeds
    the second, else None: one rule for the estimate's warning and the recommender's."""
    m = c.model
    if not isinstance(m, DecoderSpec) or not m.max_position_embeddings:
        return None
    tokens = c.input_len + c.output_len if isinstance(c, InferenceConfig) else getattr(c, "seq_len", 0)
    return (tokens, m.max_position_embeddings) if tokens > m.max_position_embeddings else None


def _layout_warnings(
    gpu: GpuSpec, c: TrainConfig | InferenceConfig | BatchInferenceConfig, warnings: list[Notice]
) -> None:
    """What the answer models without a measurement to validate it: multi-GPU communication
    (over PCIe or the node's links) and the serving time of sparse (MLA, shared-expert) layouts."""
    n_gpus = (
        c.gpu_count
        if isinstance(c, TrainConfig)
        else (c.tensor_parallel if isinstance(c, InferenceConfig) else 1)
    )
    if n_gpus > 1:
        warnings.append(_PCIE_MULTI_GPU if gpu.node.nvlink_topology == "none" else _MULTI_GPU)
        if gpu.node.p2p_over_pcie == "no":
            warnings.append(
                Notice(
                    "no_peer_to_peer",
                    f"{gpu.slug} has no PCIe peer-to-peer between cards: NCCL stages every collective "
                    "through host memory, slower than the PCIe bandwidth this answer times",
                    {"gpu": gpu.slug},
                )
            )
    if isinstance(c, TrainConfig):
        warnings.extend(_network_default(gpu, layout_of(c, gpu), bool(c.network_gbps_per_node)))
    if isinstance(c, InferenceConfig) and c.disaggregated is None:
        layout = replica_layout(c.nodes, gpu, c.tensor_parallel)
        warnings.extend(_network_default(gpu, layout, bool(c.nodes.network_gbps_per_node)))
    if isinstance(c, InferenceConfig) and c.model.is_sparse_layout:
        warnings.append(_SPARSE_TIME)


def _network_default(gpu: GpuSpec, layout: Layout, stated: bool) -> list[Notice]:
    """A multi-node job (or serving replica) on a network nobody stated runs at a DGX/HGX node's
    (one 400 Gb/s RDMA NIC per GPU): for a PCIe card's servers that is the exception, and the time
    leans on it."""
    if layout.nodes <= 1 or stated or gpu.form_factor in ("sxm", "oam"):
        return []  # a node size given without its network still times the default network
    return [
        Notice(
            "network_assumed",
            f"{layout.nodes} nodes on a network not stated: {layout.network_gbps_per_node:g} Gb/s per node "
            f"with RDMA (a DGX/HGX node's) is assumed; {gpu.slug} servers often have much less -- give "
            "network_gbps_per_node and rdma, the time depends on them",
            {"nodes": layout.nodes, "gbps_per_node": layout.network_gbps_per_node, "gpu": gpu.slug},
        )
    ]


def _memory_answer(
    gpu: GpuSpec,
    c: TrainConfig | InferenceConfig | BatchInferenceConfig,
    usable: int,
    measured: CellView | None,
    breakdown: MemoryEstimate | None,
    warnings: list[Notice],
) -> MemoryAnswer:
    """The memory breakdown against the usable memory; a measured OOM of this exact cell
    overrides the model's fit, and a measured peak (from evidence that counts) is shown beside it."""
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
        warnings.append(_measured_oom(gpu.slug, n_oom))
    return MemoryAnswer(
        estimate=mem,
        usable_memory_bytes=usable,
        fits=fits,
        headroom_bytes=mem.headroom_bytes(usable),
        provenance="measured" if counts and peak_measured is not None else "spec",
        measured_peak_allocated_bytes=int(peak_measured.median) if peak_measured is not None else None,
    )


def _time_or_serving(
    gpu: GpuSpec,
    job: Job,
    calibrations: CalibrationSet,
    measured: CellView | None,
    warnings: list[Notice],
    measured_on: Callable[[str], CellView | None] | None = None,
) -> _Timing:
    """Step time (training, batch inference) or serving latency (an engine): none without a
    sourced bandwidth or when a figure the model needs is missing, each with a warning saying so.
    A continuous-batching engine that cannot hold the model as given still gets its min_gpus
    solve."""
    if not gpu.bandwidth_gb_per_s:
        warnings.append(_no_bandwidth(gpu.slug))
        return _Timing()
    c, precision = job.config, job.precision
    workload = workload_for(job)
    cal = calibrations.pick(gpu, workload, precision)
    cell = measured if measured is not None and measured.provenance == "measured" else None
    try:
        # a transfer whose source GPU measured this configuration is anchored on it
        anchor = (
            None if cell is not None else source_anchor(cal, calibrations, workload, precision, measured_on)
        )
        if isinstance(c, TrainConfig):
            return _Timing(time=_time(c, gpu, cal, job.tokens, cell, workload, anchor))
        if isinstance(c, BatchInferenceConfig):
            return _Timing(time=_batch_time(c, gpu, cal, cell, anchor))
        if ENGINE_CLASSES[c.engine].batching != "continuous":
            host = calibrations.host_profile("llm-infer", precision)
            lean = (
                None
                if cell is not None
                else serving_anchor(cal, calibrations, workload, precision, measured_on)
            )
            return _Timing(serving=eager_answer(c, gpu, cal, cell, host, workload, lean))
        try:
            return _Timing(serving=continuous_answer(c, gpu, job.serving, cell))
        except InvalidConfiguration as exc:
            if exc.code != "MEMORY_INSUFFICIENT":
                raise
            # the memory answer says "does not fit", as eager serving's does: not a 422
            warnings.append(_no_serving_as_given(exc.message))
            return _Timing(engine_refused=True)
    except MissingFigure as exc:
        warnings.append(
            Notice(
                "no_time_estimate",
                f"no time estimate: {exc.message}",
                {"detail": exc.message, "gpu": exc.gpu, "figure": exc.figure},
            )
        )
    return _Timing()


def _usable_unknown(slug: str) -> Notice:
    return Notice(
        "usable_memory_unknown",
        f"{slug}: the driver-reported usable memory is not sourced; physical memory used, so the fit may be optimistic",
        {"gpu": slug},
    )


def _measured_oom(slug: str, n_oom: int) -> Notice:
    return Notice(
        "measured_oom",
        f"this exact configuration ran out of memory on {slug} ({n_oom} measured results)",
        {"gpu": slug, "results": n_oom},
    )


def _no_bandwidth(slug: str) -> Notice:
    return Notice(
        "no_time_estimate",
        f"{slug} lacks a sourced bandwidth; no time estimate",
        {"gpu": slug, "figure": "memory bandwidth"},
    )


def _no_serving_as_given(why: str) -> Notice:
    return Notice(
        "no_serving_as_given",
        f"{why}; solve (min_gpus) gives the replicas x tensor_parallel that serve it",
        {"detail": why},
    )


def _with_engine_version(s: ServingAnswer, c: InferenceConfig) -> ServingAnswer:
    """State the engine version the figures assume, beside the one the request names."""
    assumed = ENGINE_VERSIONS[c.engine]
    notes = s.notes
    if c.engine_version is not None:
        notes = (
            *notes,
            f"{c.engine} {c.engine_version} asked for; the figures assume {c.engine} {assumed} "
            "(no calibration is keyed by engine version yet)",
        )
    return replace(s, engine_version=assumed, engine_version_requested=c.engine_version, notes=notes)
