"""Presenter of ``/v1/estimate`` (and the CLI's ``estimate``): a core
:class:`~service.core.estimation.estimate.Estimate` -> the wire model, figures in the units
the API states (milliseconds for serving latencies, ``null`` for an infinite one)."""

from __future__ import annotations

import datetime as dt
import math

from service.api.presenters.notice_words import notice_text
from service.core.estimation.band import Band
from service.core.estimation.estimate import (
    Estimate,
    MemoryAnswer,
    Notice,
    ServingAnswer,
    SolveAnswer,
    TimeAnswer,
)
from service.core.estimation.estimate_answers import DisaggAnswer
from service.core.pricing.token_cost import TokenCosts
from service.schemas.estimate import (
    AccuracyOut,
    BandOut,
    DisaggregatedOut,
    EstimateResponse,
    MemoryOut,
    RateOut,
    ServingOut,
    SolveOut,
    TimeOut,
    TokenCostOut,
    WarningOut,
)


def estimate_out(
    est: Estimate,
    *,
    warnings: tuple[Notice, ...],
    as_of: dt.datetime,
    data_version: str,
    estimator_version: str,
    calibration_watermark: int | None = None,
    token_costs: TokenCosts | None = None,
    lang: str = "en",
) -> EstimateResponse:
    m, g, mem = est.job.model, est.gpu, est.memory
    return EstimateResponse(
        model={
            "id": m.id,
            "kind": m.kind,
            "total_params": m.total_params,
            "active_params": m.active_params,
            "description": m.describe(),
        },
        gpu={
            "slug": g.slug,
            "name": g.name,
            "usable_memory_bytes": mem.usable_memory_bytes,
            "architecture": g.architecture,
        },
        mode=est.job.mode,
        configuration=dict(est.configuration),
        memory=_memory_out(mem),
        time=None if est.time is None else _time_out(est.time),
        serving=None if est.serving is None else _serving_out(est.serving, token_costs),
        solve=None if est.solve is None else _solve_out(est.solve),
        warnings=[
            WarningOut(code=w.code, message=notice_text(w.code, w.message, w.params, lang)) for w in warnings
        ],
        as_of=as_of,
        data_version=data_version,
        estimator_version=estimator_version,
        calibration_watermark=calibration_watermark,
    )


def _memory_out(mem: MemoryAnswer) -> MemoryOut:
    return MemoryOut(
        components={k: int(v) for k, v in mem.estimate.components.items()},
        peak_phase=mem.estimate.peak_phase,
        peak_allocated_bytes=mem.estimate.peak_allocated_bytes,
        peak_allocated_band=BandOut.of(mem.estimate.peak_allocated_band),
        device_memory_needed_bytes=mem.estimate.device_memory_needed_bytes,
        device_memory_band=BandOut.of(mem.estimate.device_memory_band),
        usable_memory_bytes=mem.usable_memory_bytes,
        fits=mem.fits,
        fit_bytes=int(mem.estimate.fit_bytes),
        headroom_bytes=mem.headroom_bytes,
        provenance=mem.provenance,
        measured_peak_allocated_bytes=mem.measured_peak_allocated_bytes,
        assumptions=list(mem.estimate.assumptions),
    )


def _time_out(t: TimeAnswer) -> TimeOut:
    return TimeOut(
        step_time_s=t.step_time_s,
        step_time_band=BandOut.of(t.step_time_band),
        accumulation_steps=t.accumulation_steps,
        tokens_per_s=t.tokens_per_s,
        tokens_per_s_per_gpu=t.tokens_per_s_per_gpu,
        samples_per_s=t.samples_per_s,
        mfu=t.mfu,
        bound=t.bound,
        time_shares=dict(t.time_shares),
        stack=t.stack,
        network=t.network,
        time_to_train_s=t.time_to_train_s,
        time_to_train_band=BandOut.of(t.time_to_train_band) if t.time_to_train_band else None,
        provenance=t.provenance,
        source_gpus=list(t.source_gpus),
        calibration_points=t.calibration_points,
        measured_step_time_s=t.measured_step_time_s,
        notes=list(t.notes),
        sources=list(t.sources),
        accuracy=AccuracyOut.of(t.accuracy),
    )


def _solve_out(so: SolveAnswer) -> SolveOut:
    return SolveOut(
        target=so.target,
        value=so.value,
        detail=so.detail,
        replicas=so.replicas,
        tensor_parallel=so.tensor_parallel,
        ttft_ms=_ms(so.ttft_s),
        tpot_ms=_ms(so.tpot_s),
        headroom=so.headroom,
    )


def _ms(s: float | None) -> float | None:
    """Seconds to milliseconds; None (JSON null) for a missing or infinite value."""
    return None if s is None or not math.isfinite(s) else s * 1e3


def _band_ms(b: Band) -> BandOut | None:
    return BandOut.of(b, 1e3) if math.isfinite(b.high) else None


def _disagg_out(a: DisaggAnswer | None) -> DisaggregatedOut | None:
    if a is None:
        return None
    return DisaggregatedOut(
        prefill_gpus=a.prefill_gpus,
        decode_gpus=a.decode_gpus,
        prefill_replicas=a.prefill_replicas,
        decode_replicas=a.decode_replicas,
        kv_transfer_ms=a.kv_transfer_s * 1e3,
        kv_link=a.kv_link,
        prefill_ms=a.prefill_s * 1e3,
        prefill_wait_ms=_ms(a.prefill_wait_s),
        prefill_utilisation=a.prefill_utilisation,
        layout=a.layout,
    )


def _cost_out(c: TokenCosts | None) -> TokenCostOut | None:
    if c is None:
        return None
    return TokenCostOut(
        per_million_input=c.per_million_input,
        per_million_output=c.per_million_output,
        per_million_blended=c.per_million_blended,
        blend_input_per_output=c.blend_input_per_output,
    )


def _serving_out(sv: ServingAnswer, costs: TokenCosts | None = None) -> ServingOut:
    r = sv.rate
    return ServingOut(
        disaggregated=_disagg_out(sv.disaggregated),
        cost=_cost_out(costs),
        input_tokens_per_s=sv.input_tokens_per_s,
        time_to_generate_h=BandOut.of(sv.time_to_generate, 1 / 3600.0) if sv.time_to_generate else None,
        ttft_ms=_ms(sv.ttft_s),
        ttft_band_ms=_band_ms(sv.ttft_band),
        tpot_ms=_ms(sv.tpot_s),
        tpot_band_ms=_band_ms(sv.tpot_band),
        output_tokens_per_s=sv.output_tokens_per_s,
        prefill_bound=sv.prefill_bound,
        decode_bound=sv.decode_bound,
        provenance=sv.provenance,
        source_gpus=list(sv.source_gpus),
        measured_ttft_ms=_ms(sv.measured_ttft_s),
        measured_tpot_ms=_ms(sv.measured_tpot_s),
        engine=sv.engine,
        engine_version=sv.engine_version,
        engine_version_requested=sv.engine_version_requested,
        prefill_time_share=sv.prefill_time_share,
        tensor_parallel=sv.tensor_parallel,
        replicas=sv.replicas,
        concurrency_per_replica=sv.concurrency_per_replica,
        max_concurrency_per_replica=sv.max_concurrency_per_replica,
        notes=list(sv.notes),
        sources=list(sv.sources),
        accuracy=AccuracyOut.of(sv.accuracy),
        rate=None
        if r is None
        else RateOut(
            requests_per_s=r.requests_per_s,
            stable=r.stable,
            ttft_p50_ms=_ms(r.ttft_p50_s),
            tpot_p50_ms=_ms(r.tpot_p50_s),
            ttft_mean_ms=_ms(r.ttft_mean_s),
            in_flight_per_replica=r.in_flight_per_replica,
            utilisation=r.utilisation if math.isfinite(r.utilisation) else None,
            queue_wait_ms=_ms(r.queue_wait_s),
            capacity_requests_per_s=r.capacity_requests_per_s,
            headroom=r.headroom if math.isfinite(r.headroom) else 0.0,
            meets_ttft=r.meets_ttft,
            meets_tpot=r.meets_tpot,
            validated=r.validated,
            note=r.note,
        ),
    )
