"""The time part of an estimate: calibrated training step, eager and continuous-batching
serving, encoder/CNN inference, with provenance, bands and stated accuracy."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from service.core.catalog.models import (
    EncoderSpec,
)
from service.core.catalog.precision import PEAK_KEY
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.accuracy import Accuracy, accuracy_for
from service.core.estimation.band import Band
from service.core.estimation.calibration import Calibration
from service.core.estimation.efficiencies import Efficiencies
from service.core.estimation.estimate_answers import (
    RateAnswer,
    ServingAnswer,
    TimeAnswer,
)
from service.core.estimation.estimate_disagg import disaggregated_answer
from service.core.estimation.estimate_inputs import (
    ServingQuestion,
)
from service.core.estimation.memory import (
    BatchInferenceConfig,
    InferenceConfig,
    TrainConfig,
)
from service.core.estimation.performance import SPEC_DEFAULTS, step_summary, time_shares
from service.core.estimation.serving import (
    CONTINUOUS_BAND,
    CONTINUOUS_EFFICIENCIES,
    ENGINE_CLASSES,
    TRANSFERRED_ENGINE_BAND_FACTOR,
    Workload,
    capacity_at_slo,
    concurrency_cap,
    decode_bound,
    deployment,
    offline_throughput,
    serve_at_rate,
    serve_concurrency,
)
from service.core.estimation.serving import (
    estimate_batch_inference as batch_inference_time,
)
from service.core.estimation.serving_engines import Deployment, EngineClass, EngineEfficiencies
from service.core.estimation.serving_queue import RateEstimate, fraction_for_one_request
from service.core.estimation.serving_record import engine_record
from service.core.estimation.serving_steps import prefill_time_share
from service.core.estimation.source_anchor import SourceAnchor, anchor_factor
from service.core.estimation.stacks import STACK_EFFECTS, stack_note
from service.core.estimation.transfer import arch_key
from service.core.estimation.transfer_accuracy import loso_note
from service.core.evidence.aggregate import CellView
from service.core.evidence.provenance import weakest
from service.core.evidence.published_serving import anchor, published_models, serving_matches


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


def _with_loso(notes: tuple[str, ...], workload: str) -> tuple[str, ...]:
    """A figure for a GPU nobody measured here says how cross-GPU ratios of its family held on
    published sources left out of the fit (issue 27)."""
    note = loso_note(workload)
    return notes if note is None else (*notes, note)


def _time(
    c: TrainConfig,
    gpu: GpuSpec,
    cal: Calibration | None,
    tokens: float | None,
    cell: CellView | None,
    workload: str = "*",
    anchor: SourceAnchor | None = None,
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
        band, prov, notes = _derived_band(c, gpu, e, step, band, prov, notes)
        if cal is not None:  # the user's machine is none of those that measured
            band = band.widened(*host_spread_s(step * st.shares[3], cal.host_range))
        if anchor is not None:  # the source GPU measured this configuration: its level, our ratio
            f, note = anchor_factor(
                step, step_summary(c, anchor.gpu, anchor.efficiencies).step_time_s, anchor
            )
            step, band, notes = step * f, band.scaled(f), (*notes, note)
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
    if prov != "measured" and scope != "same-gpu":
        notes = _with_loso(notes, workload)
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


def host_spread_s(
    host_s: float, host_range: tuple[float, float], gpu_s: float | None = None
) -> tuple[float, float]:
    """Seconds a step whose host part takes ``host_s`` here may lose and gain on the fastest and
    slowest of the machines that measured (``host_range`` over the one used): added to the GPU's
    time, or inside ``max(GPU, host)`` where the GPU's ``gpu_s`` is given (an encoder's forward)."""
    lo, hi = host_range
    if gpu_s is None:
        return host_s * max(0.0, 1.0 - lo), host_s * max(0.0, hi - 1.0)
    here = max(gpu_s, host_s)
    return here - max(gpu_s, host_s * lo), max(gpu_s, host_s * hi) - here


def _derived_band(
    c: TrainConfig,
    gpu: GpuSpec,
    e: Efficiencies,
    step: float,
    band: Band,
    prov: str,
    notes: tuple[str, ...],
) -> tuple[Band, str, tuple[str, ...]]:
    """Widen the step-time band over a derived spec's two published values (e.g. an SXM/PCIe
    clock span), so the band covers either; the provenance is then at best ``derived``."""
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
    return band, prov, notes


VALIDATED_UTILISATION = 0.85
"""The queueing model was validated (means of fixed-length runs) up to this utilisation; above
it the published finite runs never reach a steady state to compare with."""

QUEUEING_NOTE = (
    "p50 from Poisson arrivals split over the replicas, a state-dependent processor-sharing "
    "batch scheduler and an M/G/c admission queue (service.core.estimation.serving); validated on means "
    "of NVIDIA's TensorRT-LLM 0.14 online runs at 2-32 QPS on H100/H200 up to "
    f"{VALIDATED_UTILISATION:.0%} utilisation; p90/p99 are not validated and not answered"
)


LORA_NOTE = (
    "multi-LoRA: max_loras adapter slots (16-bit, every linear outside the routed experts) taken from the "
    "KV cache; each iteration adds the tokens' LoRA FLOPs and one read of every distinct adapter in the "
    "batch; a batch holds at most max_loras distinct adapters, and a request whose adapter is not "
    "resident waits for its copy over PCIe (service.core.estimation.serving_lora); no published "
    "multi-LoRA table calibrates it"
)


def continuous_answer(
    c: InferenceConfig, gpu: GpuSpec, q: ServingQuestion | None, cell: CellView | None = None
) -> ServingAnswer:
    """A continuous-batching engine's answer: disaggregated pools, or one pool of replicas."""
    if c.disaggregated is not None:
        return disaggregated_answer(c, gpu, q)
    return _continuous(c, gpu, q, cell)


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
    notes = _continuous_notes(c, eng, d)
    cap = _kv_capacity(c, gpu, d, w, e)
    lo_t, hi_t = (x * k for x in CONTINUOUS_BAND["ttft"])
    lo_p, hi_p = (x * k for x in CONTINUOUS_BAND["tpot"])
    rate: RateAnswer | None = None
    if q is not None and q.requests_per_s is not None:
        r = serve_at_rate(c, gpu, q.requests_per_s, w, e, d)
        rate = _rate_answer(c, gpu, q, w, e, d, r)
        ttft, tpot, conc, bound = r.ttft_s, r.tpot_s, round(r.in_flight), r.bound
        out_tps = q.requests_per_s * w.output_len if r.stable else 0.0
    else:
        ttft, tpot, conc, out_tps, bound = _at_concurrency(c, gpu, q, e, d, cap, notes)
    offline = q is not None and q.offline
    prov = eng.provenance
    measured = _measured_latency(cell) if rate is None and not offline else None
    measured_ttft, measured_tpot = measured if measured is not None else (None, None)
    sources: tuple[str, ...] = ()
    if cell is not None and measured is not None:
        ttft, tpot, prov = measured[0], measured[1], "measured"
        out_tps = c.batch_size / tpot * c.replicas
        lo_t = hi_t = lo_p = hi_p = 0.05
        notes.append(f"median of {cell.count} measured results for this exact configuration and engine")
    elif c.model.id in published_models():
        pub = None
        if rate is None and math.isfinite(tpot) and out_tps > 0:
            pub = _published(
                c, gpu, conc if offline else (q.concurrency if q and q.concurrency else c.batch_size), out_tps
            )
            notes.extend(pub.notes if pub is not None else ())
        if pub is not None and pub.per_gpu is not None:
            tpot, out_tps = tpot * out_tps / (pub.per_gpu * c.gpu_count), pub.per_gpu * c.gpu_count
            prov, sources, lo_p, hi_p = "published", pub.tables, PUBLISHED_TPOT_BAND, PUBLISHED_TPOT_BAND
        elif (record := engine_record(c, gpu)) is not None:
            notes.append(record.note(c.engine))
            lo_p, hi_p = _covering(lo_p, hi_p, record.median_ratio)
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
        sources=sources,
        engine=c.engine,
        tensor_parallel=c.tensor_parallel,
        replicas=c.replicas,
        concurrency_per_replica=conc,
        max_concurrency_per_replica=cap,
        rate=rate,
        notes=tuple(notes),
        prefill_time_share=prefill_time_share(d, e, float(max(conc, 1)), w.input_len, w.output_len),
        input_tokens_per_s=out_tps * w.input_len / w.output_len,
    )


def _at_concurrency(
    c: InferenceConfig,
    gpu: GpuSpec,
    q: ServingQuestion | None,
    e: EngineEfficiencies,
    d: Deployment,
    cap: int,
    notes: list[str],
) -> tuple[float, float, int, float, str]:
    """(TTFT, TPOT, sequences per replica, output tokens/s of all replicas, decode bound) at a
    fixed concurrency per replica, or for an offline batch at what the engine admits with every
    request queued (its offline scheduler limits: vLLM's ``LLM`` class, ``trtllm-bench``)."""
    if q is not None and q.offline:
        pt = offline_throughput(c, gpu, e, d)
        notes.append(
            f"offline batch: every request queued at once; {int(pt.n)} sequences in flight per "
            "replica (the scheduler's offline limit and the KV cache)"
        )
    else:
        pt = serve_concurrency(c, gpu, e, q.concurrency if q is not None else None, d)
        if (q.concurrency if q is not None and q.concurrency else c.batch_size) > cap:
            notes.append(f"concurrency capped at {cap} sequences per replica (scheduler and KV cache)")
    return pt.ttft_s, pt.tpot_s, int(pt.n), pt.output_tokens_per_s * c.replicas, decode_bound(d, e, pt.n)


PUBLISHED_TPOT_BAND = 0.10
"""Half-width of the TPOT band of an answer anchored on a published run: one run of the same
configuration and engine, on another host, engine build and date. Of the 54 configurations
InferenceX ran on more than one date, 41 differ by at most 10 % (median 0.9 %; engine releases
moved a few by 18-73 %): ``python benchmarks/import_inferencex.py --reruns``."""


def _covering(lo: float, hi: float, ratio: float) -> tuple[float, float]:
    """TPOT band half-widths widened to cover a measured / modelled throughput ``ratio``."""
    if ratio < 1.0:
        return lo, max(hi, 1.0 / ratio - 1.0)
    return max(lo, 1.0 - 1.0 / ratio), hi


@dataclass(frozen=True, slots=True)
class _Published:
    per_gpu: float | None  # the same engine's published output tokens/s per GPU (None: another engine's only)
    tables: tuple[str, ...]
    notes: tuple[str, ...]


def _published(c: InferenceConfig, gpu: GpuSpec, concurrency: int, out_tps: float) -> _Published | None:
    """Published runs of this exact configuration (:mod:`service.core.evidence.published_serving`):
    the same engine's anchors the answer's throughput, the others are named. A configuration the
    sources do not run as asked (speculative decoding, LoRA, prefix hits, expert parallelism)
    has none."""
    if c.speculative or c.lora is not None or c.prefix_cache_hit_rate or c.expert_parallel:
        return None
    lengths = (c.input_len, c.output_len)
    runs = serving_matches(
        c.model.id, gpu.slug, c.weight_format, c.precision, c.tensor_parallel, lengths, concurrency
    )
    if not runs:
        return None
    model_per_gpu = out_tps / c.gpu_count
    same = anchor(runs, c.engine)
    notes = tuple(
        f"published: {r.source_engine} on {r.system.split(' on ', 1)[-1]} ({r.table_id}, {r.ran_on}) measured "
        f"{r.output_tokens_per_s_per_gpu:.4g} output tokens/s per GPU at this model, weight format, tensor "
        f"parallelism, nominal lengths and concurrency; the model says {model_per_gpu:.4g} for {c.engine}"
        for r in runs
    )
    if same is None:
        return _Published(None, (), notes)
    per_gpu, used = same
    anchored = (
        f"throughput and TPOT anchored on the published {c.engine} run(s) of this configuration "
        f"({per_gpu:.4g} output tokens/s per GPU, the model alone {model_per_gpu:.4g}: x{model_per_gpu / per_gpu:.2f}); "
        "TTFT and memory are the model's"
    )
    return _Published(per_gpu, tuple(sorted({r.table_id for r in used})), (*notes, anchored))


def _continuous_notes(c: InferenceConfig, eng: EngineClass, d: Deployment) -> list[str]:
    """Where the engine class comes from, what the deployment assumes, and -- for an engine
    without a table of its own -- that the class is borrowed and its band widened."""
    notes: list[str] = [f"{eng.name}: {eng.source}", *d.notes]
    if c.lora is not None:
        notes.append(LORA_NOTE)
    if eng.provenance == "transferred":
        notes.append(
            "continuous-batching class fitted on NVIDIA's published TensorRT-LLM tables, applied with "
            f"{eng.name}'s scheduler and memory defaults (no {eng.name} table calibrates it; band x"
            f"{TRANSFERRED_ENGINE_BAND_FACTOR:g})"
        )
    return notes


def _kv_capacity(c: InferenceConfig, gpu: GpuSpec, d: Deployment, w: Workload, e: EngineEfficiencies) -> int:
    """Sequences per replica the scheduler and the KV cache admit; a deployment whose KV cache
    cannot hold one request is refused (the min_gpus solve still answers it)."""
    cap, _ = concurrency_cap(d, w.input_len, w.output_len, reserve_gib=e.reserve_gib)
    if cap < 1:
        usable_gb = float(gpu.fit_memory_bytes or 0) / 1e9
        raise InvalidConfiguration(
            "tensor_parallel",
            f"{c.model.id} leaves no KV cache for one request on "
            f"{gpu.slug} at tensor_parallel {c.tensor_parallel}: {d.engine.name} takes "
            f"{d.memory_fraction:.0%} of the {usable_gb:.1f} GB for weights, working set and its KV "
            f"pool, and {(d.w_dense + d.w_experts) / 1e9:.1f} GB of weights per GPU leave that pool no "
            f"room (the memory above counts what the sequences need, not the engine's share; "
            f"{_way_to_room(d, w, e)})",
            code="MEMORY_INSUFFICIENT",
        )
    return cap


def _way_to_room(d: Deployment, w: Workload, e: EngineEfficiencies) -> str:
    """What makes room for one request: the smallest memory setting that does, else more GPUs."""
    need = fraction_for_one_request(d, w.input_len, w.output_len, e.reserve_gib)
    if need is None or need > 1.0:
        return "no memory_fraction holds one request: a larger tensor_parallel makes room"
    return (
        f"memory_fraction {math.ceil(need * 1000) / 1000:g} or more holds one, a larger tensor_parallel more"
    )


def _rate_answer(
    c: InferenceConfig,
    gpu: GpuSpec,
    q: ServingQuestion,
    w: Workload,
    e: EngineEfficiencies,
    d: Deployment,
    r: RateEstimate,
) -> RateAnswer:
    """The fleet at a request rate: latency at that load, capacity within the targets, and
    whether the point lies where the queueing model was validated (stable, utilisation at most
    :data:`VALIDATED_UTILISATION`)."""
    assert q.requests_per_s is not None
    per = capacity_at_slo(c, gpu, w, q.ttft_target_s, q.tpot_target_s, e, d)
    fleet = per * c.replicas
    validated = r.stable and r.utilisation <= VALIDATED_UTILISATION
    return RateAnswer(
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


def _measured_latency(cell: CellView | None) -> tuple[float, float] | None:
    """TTFT and TPOT (s): the medians of the agent's measurements of this exact cell at a fixed
    concurrency, when it has both."""
    if cell is None:
        return None
    m_ttft, m_tpot = cell.median("ttft_ms_p50"), cell.median("tpot_ms_p50")
    if not (m_ttft and m_tpot):
        return None
    return m_ttft / 1e3, m_tpot / 1e3


def _batch_time(
    c: BatchInferenceConfig,
    gpu: GpuSpec,
    cal: Calibration | None,
    cell: CellView | None,
    anchor: SourceAnchor | None = None,
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
    else:
        if cal is not None:  # the user's machine is none of those that measured
            ph = est.phases  # an encoder's forward is max(GPU, host), a CNN's their sum
            gpu_s = ph["matmul"] + ph["attention"] + ph["memory"] if "matmul" in ph else None
            band = band.widened(*host_spread_s(ph.get("host_dispatch", 0.0), cal.host_range, gpu_s))
        if anchor is not None:  # the source GPU measured this configuration: its level, our ratio
            source = batch_inference_time(c, anchor.gpu, anchor.efficiencies).step_time_s
            f, note = anchor_factor(step, source, anchor)
            step, band, notes = step * f, band.scaled(f), (*notes, note)
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
