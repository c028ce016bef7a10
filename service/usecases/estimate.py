"""``/v1/estimate``: memory and time for one configuration, calibrated by the latest measured
data, with provenance and bands.

Calibration (``service.core.calibration``) is fitted per (GPU, workload, precision family) on
the best-populated fingerprint's (newest on ties) non-quarantined, non-retracted ``ok``
single-GPU results, and cached by
``data_version`` (one cheap query per request keeps replicas current). A GPU without its own
calibration borrows one: same architecture first (``transferred``, band x1.5), else across
architectures (wider band); with nothing measured the datasheet roofline with the spec
defaults answers (``spec``). A request that matches a measured cell exactly on that GPU
answers with the measured median (``measured``: results from >= 2 hosts or a trusted agent).
"""

from __future__ import annotations

import datetime as dt
import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select

from service.core.calibration import (
    WORKLOAD_FIT_GROUPS,
    Calibration,
    TimedPoint,
    fit_time,
    precision_family,
    timed_points_from_result,
    transfer,
)
from service.core.memory import (
    Band,
    InferenceConfig,
    InvalidConfiguration,
    MemoryEstimate,
    TrainConfig,
    estimate_inference,
    estimate_training,
    fewest_gpus,
    largest_context,
    largest_micro_batch,
    most_concurrent_sequences,
)
from service.core.models import CnnSpec, DecoderSpec, EncoderSpec, ModelNotFound, ModelSpec
from service.core.performance import (
    PerfSpec,
    estimate_serving,
    estimate_step,
    perf_spec_from_gpu,
)
from service.core.specs import GpuSpec, gpu_spec_from_doc
from service.core.vocabulary import VocabularyError, canonical_parameters, parameters_hash
from service.db.models import ApiKey, BenchmarkResult, BenchmarkRun, Gpu
from service.db.uow import UnitOfWork
from service.schemas.estimate import (
    BandOut,
    EstimateRequest,
    EstimateResponse,
    MemoryOut,
    ServingOut,
    SolveOut,
    TimeOut,
    WarningOut,
)
from service.usecases.catalog import AliasIndexCache, resolve_gpu
from service.usecases.errors import Ambiguous, FieldError, Invalid, NotFound, UseCaseError
from service.usecases.models import resolve_model_input

ESTIMATOR_VERSION = "1.0.0"
CALIBRATED_WORKLOADS = ("llm-train", "llm-infer", "bert-large-train", "resnet50-train")


def _band(b: Band, k: float = 1.0) -> BandOut:
    return BandOut(low=b.low * k, mid=b.mid * k, high=b.high * k)


# ---- calibration cache ---------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationSet:
    """Fitted calibrations keyed by (gpu slug, workload, precision family)."""

    version: int
    by_key: Mapping[tuple[str, str, str], Calibration]
    architectures: Mapping[str, str]


class CalibrationCache:
    def __init__(self) -> None:
        self._set: CalibrationSet | None = None

    def get(self, uow: UnitOfWork) -> CalibrationSet:
        v = uow.data_version()
        if self._set is None or self._set.version != v:
            self._set = _fit_all(uow, v)
        return self._set


def _perf(gpu: GpuSpec) -> PerfSpec:
    if not gpu.usable_memory_bytes and gpu.memory_bytes:
        gpu = replace(gpu, usable_memory_bytes=gpu.memory_bytes)
    return perf_spec_from_gpu(gpu)


def _fit_all(uow: UnitOfWork, version: int) -> CalibrationSet:
    q = (
        select(BenchmarkResult, Gpu.slug, Gpu.spec)
        .join(Gpu, Gpu.id == BenchmarkResult.gpu_id)
        .where(
            BenchmarkResult.workload.in_(CALIBRATED_WORKLOADS),
            BenchmarkResult.status == "ok",
            BenchmarkResult.quarantined.is_(False),
            BenchmarkResult.retracted.is_(False),
            Gpu.deleted.is_(False),
        )
    )
    groups: dict[tuple[str, str, str], dict[str, list[BenchmarkResult]]] = defaultdict(lambda: defaultdict(list))
    specs: dict[str, PerfSpec] = {}
    for r, slug, doc in uow.session.execute(q):
        if int(r.params.get("gpu_count", 1) or 1) != 1:
            continue
        fam = precision_family(str(r.params.get("precision", "bf16")))
        groups[(slug, r.workload, fam)][r.fingerprint_hash].append(r)
        if slug not in specs:
            try:
                specs[slug] = _perf(gpu_spec_from_doc(doc))
            except ValueError:
                continue
    out: dict[tuple[str, str, str], Calibration] = {}
    for key, by_fp in groups.items():
        slug = key[0]
        if slug not in specs:
            continue
        # the best-populated stack, newest on ties: calibrations never mix stacks
        newest = max(by_fp.values(), key=lambda rs: (len(rs), max(r.measured_at for r in rs)))
        points: list[TimedPoint] = []
        for r in newest:
            try:
                points.extend(
                    timed_points_from_result(r.workload, r.params, specs[slug], r.step_time_s, r.metrics)
                )
            except (InvalidConfiguration, ModelNotFound, KeyError, ValueError):
                continue
        if key[1] == "llm-infer":
            points = [p for p in points if p.metric == "tpot_s"] + [p for p in points if p.metric == "ttft_s"]
        if len(points) < 3:
            continue
        try:
            out[key] = fit_time(points, groups=WORKLOAD_FIT_GROUPS[key[1]])
        except (ValueError, KeyError):
            continue
    return CalibrationSet(version=version, by_key=out, architectures={s: p.architecture for s, p in specs.items()})


def _workload_for(model: ModelSpec, inference: bool) -> str:
    if inference:
        return "llm-infer"
    if isinstance(model, EncoderSpec):
        return "bert-large-train"
    if isinstance(model, CnnSpec):
        return "resnet50-train"
    return "llm-train"


def _pick_calibration(
    cals: CalibrationSet, target: PerfSpec, slug: str, workload: str, precision: str
) -> Calibration | None:
    fam = precision_family(precision)
    own = cals.by_key.get((slug, workload, fam))
    if own is not None:
        return own
    candidates = [(k, c) for k, c in cals.by_key.items() if k[1] == workload and k[2] == fam]
    if not candidates:
        return None
    same = [c for k, c in candidates if cals.architectures.get(k[0]) == target.architecture]
    chosen = max(same or [c for _, c in candidates], key=lambda c: c.n_points)
    return transfer(chosen, target)


# ---- exact measured cells ------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredCell:
    step_time_s: float | None
    p10: float | None
    p90: float | None
    peak_allocated_bytes: int | None
    ttft_ms: float | None
    tpot_ms: float | None
    status: str
    counts_as_measured: bool
    n: int


def _measured_cell(uow: UnitOfWork, gpu_slug: str, workload: str, params: Mapping[str, Any]) -> MeasuredCell | None:
    try:
        canon = canonical_parameters(workload, params)
    except VocabularyError:
        return None
    h = parameters_hash(workload, canon)
    q = (
        select(BenchmarkResult, BenchmarkRun.host, ApiKey.trusted)
        .join(Gpu, Gpu.id == BenchmarkResult.gpu_id)
        .join(BenchmarkRun, BenchmarkRun.id == BenchmarkResult.run_pk)
        .outerjoin(ApiKey, ApiKey.id == BenchmarkRun.api_key_id)
        .where(
            Gpu.slug == gpu_slug,
            BenchmarkResult.workload == workload,
            BenchmarkResult.params_hash == h,
            BenchmarkResult.quarantined.is_(False),
            BenchmarkResult.retracted.is_(False),
        )
    )
    rows = list(uow.session.execute(q))
    if not rows:
        return None
    by_fp: dict[str, list[tuple[BenchmarkResult, str, bool | None]]] = defaultdict(list)
    for r, host, trusted in rows:
        by_fp[r.fingerprint_hash].append((r, host, trusted))
    newest = max(by_fp.values(), key=lambda rs: max(x[0].measured_at for x in rs))
    ok = [x for x in newest if x[0].status == "ok"]
    hosts = {x[1] for x in newest}
    trusted = any(bool(x[2]) for x in newest)
    if not ok:
        return MeasuredCell(None, None, None, None, None, None, newest[0][0].status, len(hosts) >= 2 or trusted, len(newest))
    times = sorted(x[0].step_time_s for x in ok if x[0].step_time_s)
    peaks = sorted(x[0].peak_allocated_bytes for x in ok if x[0].peak_allocated_bytes)

    def metric(name: str) -> float | None:
        vals = [float(x[0].metrics[name]) for x in ok if name in x[0].metrics]
        return statistics.median(vals) if vals else None

    return MeasuredCell(
        step_time_s=statistics.median(times) if times else None,
        p10=times[0] if times else None,
        p90=times[-1] if times else None,
        peak_allocated_bytes=int(statistics.median(peaks)) if peaks else None,
        ttft_ms=metric("ttft_ms_p50"),
        tpot_ms=metric("tpot_ms_p50"),
        status="ok",
        counts_as_measured=len(hosts) >= 2 or trusted,
        n=len(ok),
    )


# ---- the estimate ---------------------------------------------------------------------------


def _invalid(exc: InvalidConfiguration) -> Invalid:
    return Invalid(exc.message, fields=[FieldError((exc.field,), exc.message)])


def _train_config(req: EstimateRequest, model: ModelSpec) -> TrainConfig:
    finetune = req.finetune or ("lora" if req.mode == "fine-tuning" else "full")
    sharding = req.sharding or ("none" if req.gpu_count == 1 else "ddp")
    precision = req.precision or "amp_bf16"
    kwargs: dict[str, Any] = {}
    if req.lora_targets:
        kwargs["lora_targets"] = tuple(req.lora_targets)
    if isinstance(model, CnnSpec):
        kwargs["seq_len"] = 1
        kwargs["optimizer"] = req.optimizer if req.optimizer != "adamw" else "sgd"
    else:
        kwargs["seq_len"] = req.seq_len
        kwargs["optimizer"] = req.optimizer
    try:
        return TrainConfig(
            model=model,
            precision=precision,
            batch_size=req.batch_size,
            gradient_checkpointing=req.gradient_checkpointing,
            finetune=finetune,
            lora_rank=req.lora_rank,
            attention=req.attention,
            sharding=sharding,
            gpu_count=req.gpu_count,
            tensor_parallel=req.tensor_parallel,
            global_batch=req.global_batch,
            **kwargs,
        )
    except InvalidConfiguration as exc:
        raise _invalid(exc) from None


def _infer_config(req: EstimateRequest, model: ModelSpec) -> InferenceConfig:
    if not isinstance(model, DecoderSpec):
        raise Invalid(
            "inference estimates are modelled for decoder-only models",
            fields=[FieldError(("mode",), "inference needs a decoder-only model")],
        )
    try:
        return InferenceConfig(
            model=model,
            precision=req.precision or "bf16",
            quant_method=req.quant_method,
            batch_size=req.batch_size,
            input_len=req.input_len,
            output_len=req.output_len,
            engine=req.engine,
            tensor_parallel=max(req.tensor_parallel, 1) if req.gpu_count > 1 else 1,
            kv_cache_bytes_per_element=1.0 if req.kv_cache_dtype == "fp8" else 0.0,
        )
    except InvalidConfiguration as exc:
        raise _invalid(exc) from None


def _memory_out(m: MemoryEstimate, usable: int, provenance: str, measured: int | None) -> MemoryOut:
    return MemoryOut(
        components={k: int(v) for k, v in m.components.items()},
        peak_phase=m.peak_phase,
        peak_allocated_bytes=m.peak_allocated_bytes,
        peak_allocated_band=_band(m.peak_allocated_band),
        device_memory_needed_bytes=m.device_memory_needed_bytes,
        device_memory_band=_band(m.device_memory_band),
        usable_memory_bytes=usable,
        fits=m.fits(usable),
        headroom_bytes=m.headroom_bytes(usable),
        provenance=provenance,
        measured_peak_allocated_bytes=measured,
        assumptions=list(m.assumptions),
    )


def _benchmark_params(req: EstimateRequest, model: ModelSpec, tc: TrainConfig | None, ic: InferenceConfig | None) -> tuple[str, dict[str, Any]] | None:
    """The benchmark cell this request corresponds to (preset models only)."""
    if req.model is None:
        return None
    if tc is not None and isinstance(model, DecoderSpec):
        return "llm-train", {
            "model": model.id, "precision": tc.precision, "batch_size": tc.batch_size, "seq_len": tc.seq_len,
            "gradient_checkpointing": tc.gradient_checkpointing, "finetune": tc.finetune,
            "lora_rank": tc.lora_rank if tc.finetune != "full" else 0,
            "lora_targets": ",".join(tc.lora_targets) if tc.finetune != "full" else "",
            "attention": tc.attention, "optimizer": tc.optimizer, "sharding": tc.sharding,
            "gpu_count": tc.gpu_count, "global_batch": tc.global_batch,
        }
    if tc is not None and isinstance(model, EncoderSpec) and model.id == "bert-large":
        return "bert-large-train", {"precision": tc.precision, "batch_size": tc.batch_size, "seq_len": tc.seq_len}
    if tc is not None and isinstance(model, CnnSpec):
        return "resnet50-train", {"precision": tc.precision, "batch_size": tc.batch_size}
    if ic is not None:
        return "llm-infer", {
            "model": model.id, "precision": ic.precision, "quant_method": ic.quant_method, "engine": ic.engine,
            "batch_size": ic.batch_size, "input_len": ic.input_len, "output_len": ic.output_len,
        }
    return None


def estimate(
    uow: UnitOfWork, aliases: AliasIndexCache, cals: CalibrationCache, req: EstimateRequest, *, now: dt.datetime
) -> EstimateResponse:
    model, assumed = resolve_model_input(req.model, req.hf_config, req.params_billion)
    try:
        view = resolve_gpu(uow, aliases, req.gpu, use_default=True)
    except (NotFound, Ambiguous) as exc:
        raise Invalid(
            exc.detail, fields=[FieldError(("gpu",), exc.detail)], **{k: v for k, v in exc.extra.items()}
        ) from None
    warnings = [WarningOut(code=w.code, message=w.message) for w in view.warnings]
    spec = view.spec
    usable = spec.usable_memory_bytes
    if usable is None:
        if spec.memory_bytes is None:
            raise Invalid(
                f"{spec.slug} has no sourced memory size; no fit can be computed",
                fields=[FieldError(("gpu",), "GPU memory unknown")],
            )
        usable = spec.memory_bytes
        warnings.append(WarningOut(code="usable_memory_unknown", message=f"{spec.slug}: the driver-reported usable memory is not sourced; physical memory used, so the fit may be optimistic"))
    if assumed:
        warnings.append(WarningOut(code="assumed_shape", message=assumed))
    inference = req.mode == "inference"
    precision = req.precision or ("bf16" if inference else "amp_bf16")
    if spec.support_for(precision) == "no":
        raise Invalid(
            f"{spec.slug} does not support {precision}",
            fields=[FieldError(("precision",), f"{precision} unsupported on {spec.slug}")],
            reason_code="PRECISION_UNSUPPORTED",
        )
    if req.gpu_count > 1 and spec.node.nvlink_topology == "none":
        warnings.append(WarningOut(code="pcie_multi_gpu_unvalidated", message="multi-GPU communication over PCIe is modelled from the datasheet only; no PCIe-only multi-GPU measurement validates it"))
    elif req.gpu_count > 1:
        warnings.append(WarningOut(code="multi_gpu_unvalidated", message="multi-GPU communication is modelled from the node shape; it has not been validated against multi-GPU measurements yet"))
    tc = _train_config(req, model) if not inference else None
    ic = _infer_config(req, model) if inference else None
    mem = estimate_training(tc) if tc is not None else estimate_inference(ic)  # type: ignore[arg-type]
    cell_key = _benchmark_params(req, model, tc, ic)
    cell = _measured_cell(uow, spec.slug, *cell_key) if cell_key else None
    measured_cell = cell is not None and cell.counts_as_measured
    mem_prov = "measured" if measured_cell and cell is not None and cell.peak_allocated_bytes else "spec"
    memory = _memory_out(mem, usable, mem_prov, cell.peak_allocated_bytes if cell else None)
    if measured_cell and cell is not None and cell.status == "oom":
        memory.fits = False
        warnings.append(WarningOut(code="measured_oom", message=f"this exact configuration ran out of memory on {spec.slug} ({cell.n} measured results)"))
    cal_set = cals.get(uow)
    time_out: TimeOut | None = None
    serving_out: ServingOut | None = None
    try:
        perf = _perf(spec)
    except ValueError:
        perf = None
        warnings.append(WarningOut(code="no_time_estimate", message=f"{spec.slug} lacks a sourced bandwidth; no time estimate"))
    if perf is not None:
        workload = _workload_for(model, inference)
        cal = _pick_calibration(cal_set, perf, spec.slug, workload, precision)
        try:
            if tc is not None:
                time_out = _time(tc, perf, cal, req.tokens, cell if measured_cell else None)
            elif ic is not None:
                serving_out = _serving(ic, perf, cal, cell if measured_cell else None)
        except KeyError as exc:
            warnings.append(WarningOut(code="no_time_estimate", message=f"no time estimate: {exc.args[0]}"))
    solve = _solve(req, tc, ic, usable) if req.solve_for else None
    config: dict[str, Any] = {"precision": precision}
    if tc is not None:
        config.update(
            batch_size=tc.batch_size, seq_len=tc.seq_len, gradient_checkpointing=tc.gradient_checkpointing,
            finetune=tc.finetune, lora_rank=tc.lora_rank if tc.finetune != "full" else None,
            attention=tc.attention, optimizer=tc.optimizer, sharding=tc.sharding, gpu_count=tc.gpu_count,
            tensor_parallel=tc.tensor_parallel, global_batch=tc.effective_global_batch,
        )
    elif ic is not None:
        config.update(
            batch_size=ic.batch_size, input_len=ic.input_len, output_len=ic.output_len,
            quant_method=ic.quant_method, engine=ic.engine, kv_cache_bytes_per_element=ic.kv_bytes,
            tensor_parallel=ic.tensor_parallel,
        )
    return EstimateResponse(
        model={"id": model.id, "kind": model.kind, "total_params": model.total_params, "active_params": model.active_params, "description": model.describe()},
        gpu={"slug": spec.slug, "name": spec.name, "usable_memory_bytes": usable, "architecture": spec.architecture},
        mode=req.mode,
        configuration=config,
        memory=memory,
        time=time_out,
        serving=serving_out,
        solve=solve,
        warnings=warnings,
        as_of=now,
        data_version=uow.data_version(),
        estimator_version=ESTIMATOR_VERSION,
    )


def _time(tc: TrainConfig, perf: PerfSpec, cal: Calibration | None, tokens: float | None, cell: MeasuredCell | None) -> TimeOut:
    if cal is not None:
        st = estimate_step(tc, perf, cal.efficiencies, band=cal.band_for(tc), provenance=cal.provenance)
        prov, sources, n, notes = cal.provenance, list(cal.source_gpus), cal.n_points, list(cal.notes)
    else:
        st = estimate_step(tc, perf)
        prov, sources, n, notes = "spec", [], 0, ["datasheet roofline with the spec-default efficiencies"]
    step: float = st.step_time_s
    band: Band = st.step_time_band
    measured = None
    if cell is not None and cell.step_time_s:
        measured = cell.step_time_s
        step = cell.step_time_s
        band = Band(min(cell.p10 or step, step * 0.97), step, max(cell.p90 or step, step * 1.03))
        prov = "measured"
        notes = [f"median of {cell.n} measured results for this exact configuration"]
    k = step / st.step_time_s if st.step_time_s else 1.0
    ttt = ttt_band = None
    if tokens:
        per_step = tc.effective_global_batch * tc.seq_len
        steps = -(-int(tokens) // per_step)
        ttt = steps * step
        ttt_band = _band(band, steps)
    return TimeOut(
        step_time_s=step,
        step_time_band=_band(band),
        accumulation_steps=st.accumulation_steps,
        tokens_per_s=st.tokens_per_s / k * tc.data_parallel,
        tokens_per_s_per_gpu=st.tokens_per_s / k,
        samples_per_s=st.samples_per_s / k * tc.data_parallel,
        mfu=st.mfu / k,
        bound=st.bound,
        time_to_train_s=ttt,
        time_to_train_band=ttt_band,
        provenance=prov,
        source_gpus=sources,
        calibration_points=n,
        measured_step_time_s=measured,
        notes=notes,
    )


def _serving(ic: InferenceConfig, perf: PerfSpec, cal: Calibration | None, cell: MeasuredCell | None) -> ServingOut:
    if cal is not None:
        sv = estimate_serving(ic, perf, cal.efficiencies, band=cal.band_for(ic), provenance=cal.provenance)
        prov, sources = cal.provenance, list(cal.source_gpus)
    else:
        sv = estimate_serving(ic, perf)
        prov, sources = "spec", []
    out = ServingOut(
        ttft_ms=sv.ttft_s * 1e3,
        ttft_band_ms=_band(sv.ttft_band, 1e3),
        tpot_ms=sv.tpot_s * 1e3,
        tpot_band_ms=_band(sv.tpot_band, 1e3),
        output_tokens_per_s=sv.output_tokens_per_s,
        prefill_bound=sv.prefill_bound,
        decode_bound=sv.decode_bound,
        provenance=prov,
        source_gpus=sources,
    )
    if cell is not None and cell.ttft_ms and cell.tpot_ms:
        out.measured_ttft_ms, out.measured_tpot_ms = cell.ttft_ms, cell.tpot_ms
        out.ttft_ms, out.tpot_ms = cell.ttft_ms, cell.tpot_ms
        out.ttft_band_ms = BandOut(low=cell.ttft_ms * 0.95, mid=cell.ttft_ms, high=cell.ttft_ms * 1.05)
        out.tpot_band_ms = BandOut(low=cell.tpot_ms * 0.95, mid=cell.tpot_ms, high=cell.tpot_ms * 1.05)
        out.output_tokens_per_s = ic.batch_size / (cell.tpot_ms / 1e3)
        out.provenance = "measured"
    return out


def _solve(req: EstimateRequest, tc: TrainConfig | None, ic: InferenceConfig | None, usable: int) -> SolveOut:
    target = req.solve_for
    assert target is not None
    if target == "max_micro_batch":
        if tc is None:
            raise Invalid("max_micro_batch applies to training", fields=[FieldError(("solve_for",), "use max_concurrency for inference")])
        v = largest_micro_batch(tc, usable)
        return SolveOut(target=target, value=v, detail=f"largest per-GPU micro-batch at seq_len {tc.seq_len} that fits at the band's upper end")
    if target == "max_context":
        c: TrainConfig | InferenceConfig = tc if tc is not None else ic  # type: ignore[assignment]
        v = largest_context(c, usable)
        what = "training seq_len" if tc is not None else f"prompt length with output_len {req.output_len} kept"
        return SolveOut(target=target, value=v, detail=f"longest {what} that fits (multiples of 128)")
    if target == "max_concurrency":
        if ic is None:
            raise Invalid("max_concurrency applies to inference", fields=[FieldError(("solve_for",), "use max_micro_batch for training")])
        v = most_concurrent_sequences(ic, usable)
        return SolveOut(target=target, value=v, detail=f"concurrent sequences of {ic.input_len}+{ic.output_len} tokens that fit")
    if tc is None:
        raise Invalid("min_gpus applies to training", fields=[FieldError(("solve_for",), "training only")])
    found = fewest_gpus(tc, usable)
    if found is None:
        return SolveOut(target=target, value=0, detail="does not fit on any GPU count searched (up to 4096)")
    n, _ = found
    shard = tc.sharding if tc.sharding not in ("none", "ddp") else "fsdp"
    return SolveOut(target=target, value=n, detail=f"fewest GPUs that fit with sharding {shard if n > 1 else tc.sharding}")


def estimate_batch(
    uow: UnitOfWork, aliases: AliasIndexCache, cals: CalibrationCache, items: Sequence[EstimateRequest], *, now: dt.datetime
) -> list[EstimateResponse | UseCaseError]:
    """Each item's answer, or the refusal the single call would give (field paths under
    ``items.<i>``)."""
    out: list[EstimateResponse | UseCaseError] = []
    for i, req in enumerate(items):
        try:
            out.append(estimate(uow, aliases, cals, req, now=now))
        except UseCaseError as exc:
            out.append(exc.at("items", i))
    return out
