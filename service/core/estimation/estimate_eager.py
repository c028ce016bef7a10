"""The serving answer of eager ``generate`` (hf-transformers, static batch): measured, anchored on
the source GPU's measurement of the same configuration, or modelled.

A GPU nobody measured takes the model's TTFT and TPOT. Where the GPU its calibration was carried
from measured this exact configuration, the answer is that measurement times the modelled ratio
of the two GPUs (:mod:`.source_anchor`, as training and batch inference are): the H200's
measured Llama-3-8B batch of 8 decoded at 42 ms a token while the model put the H100 at 23 ms,
so the H100 -- same host, less bandwidth -- was shown 1.7x faster than the H200 measured."""

from __future__ import annotations

from service.core.catalog.specs import GpuSpec
from service.core.estimation.band import Band
from service.core.estimation.calibration import Calibration
from service.core.estimation.estimate_answers import ServingAnswer
from service.core.estimation.estimate_time import _accuracy, _derived_span, _with_loso
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.performance import SPEC_DEFAULTS
from service.core.estimation.serving import (
    HostProfile,
    ServingEstimate,
    estimate_serving,
    static_batch_tokens_per_s,
)
from service.core.estimation.source_anchor import ServingAnchor, serving_anchor
from service.core.evidence.aggregate import CellView
from service.core.evidence.provenance import weakest

__all__ = ["eager_answer", "serving_anchor"]  # serving_anchor: built by the caller


def _measured(
    c: InferenceConfig, sv: ServingEstimate, cell: CellView, sources: tuple[str, ...], notes: tuple[str, ...]
) -> ServingAnswer | None:
    """This GPU's own measurement of the configuration (TTFT and TPOT medians), if it has one."""
    ttft_ms, tpot_ms = cell.median("ttft_ms_p50"), cell.median("tpot_ms_p50")
    if not (ttft_ms and tpot_ms):
        return None
    ttft, tpot = ttft_ms / 1e3, tpot_ms / 1e3
    return ServingAnswer(  # TTFT by position: > 15 keywords would build a dict per call
        ttft,
        ttft_band=Band(ttft * 0.95, ttft, ttft * 1.05),
        tpot_s=tpot,
        tpot_band=Band(tpot * 0.95, tpot, tpot * 1.05),
        output_tokens_per_s=cell.median("output_tokens_per_s") or static_batch_tokens_per_s(c, ttft, tpot),
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


def _anchored(
    c: InferenceConfig, sv: ServingEstimate, host: HostProfile | None, anchor: ServingAnchor
) -> tuple[ServingEstimate, str]:
    """``sv`` scaled by the source's measured / modelled TTFT and TPOT (and end-to-end rate):
    the level the measurement's, the cross-GPU ratio the model's."""
    src = estimate_serving(c, anchor.gpu, anchor.efficiencies, host=host)
    k_ttft = anchor.ttft_s / src.ttft_s if src.ttft_s > 0 else 1.0
    k_tpot = anchor.tpot_s / src.tpot_s if src.tpot_s > 0 else 1.0
    ttft, tpot = sv.ttft_s * k_ttft, sv.tpot_s * k_tpot
    name = anchor.gpu.name or anchor.gpu.slug
    note = (
        f"anchored on {name}'s measurement of this exact configuration (median of {anchor.count}): "
        f"TTFT {anchor.ttft_s * 1e3:.4g} ms and TPOT {anchor.tpot_s * 1e3:.4g} ms there against "
        f"{src.ttft_s * 1e3:.4g} and {src.tpot_s * 1e3:.4g} ms modelled, so this GPU's modelled "
        f"figures are scaled by x{k_ttft:.3f} and x{k_tpot:.3f} -- the cross-GPU ratio is the "
        "model's, the level the measurement's"
    )
    scaled = ServingEstimate(
        ttft_s=ttft,
        ttft_band=Band(sv.ttft_band.low * k_ttft, ttft, sv.ttft_band.high * k_ttft),
        tpot_s=tpot,
        tpot_band=Band(sv.tpot_band.low * k_tpot, tpot, sv.tpot_band.high * k_tpot),
        output_tokens_per_s=(
            anchor.output_tokens_per_s * sv.output_tokens_per_s / src.output_tokens_per_s
            if anchor.output_tokens_per_s and src.output_tokens_per_s > 0
            else static_batch_tokens_per_s(c, ttft, tpot)
        ),
        prefill_bound=sv.prefill_bound,
        decode_bound=sv.decode_bound,
        provenance=sv.provenance,
        notes=sv.notes,
    )
    return scaled, note


def eager_answer(
    c: InferenceConfig,
    gpu: GpuSpec,
    cal: Calibration | None,
    cell: CellView | None,
    host: HostProfile | None,
    workload: str = "llm-infer",
    anchor: ServingAnchor | None = None,
) -> ServingAnswer:
    """hf-transformers (eager, static batch): the GPU-side efficiencies come from this GPU's
    calibration (or a transfer, anchored where its source measured the configuration); the host
    floor from the engine and host that measured it, the same for every GPU
    (:class:`~service.core.estimation.serving.HostProfile`)."""
    notes: tuple[str, ...] = ()
    if host is not None:
        notes = (
            f"host floor of eager generate: {host.dispatch_s * 1e6:.1f} us per op, measured with "
            f"{host.source} (a property of engine and host, applied to every GPU alike)",
        )
    if cal is not None:
        e = cal.efficiencies
        b_ttft, b_tpot = cal.band_for(c, "ttft_s"), cal.band_for(c, "tpot_s")
        sv = estimate_serving(c, gpu, e, band=b_ttft, provenance=cal.provenance, host=host, tpot_band=b_tpot)
        prov, sources, scope, tables = cal.provenance, tuple(cal.source_gpus), cal.scope, cal.sources
        notes = (*notes, *cal.notes)
    else:
        e = SPEC_DEFAULTS
        sv = estimate_serving(c, gpu, host=host)
        prov, sources, scope, tables = "spec", (), "spec-default", ()
    notes = (*notes, *sv.notes)
    own = _measured(c, sv, cell, sources, notes) if cell is not None else None
    if own is not None:
        return own
    accuracy = _accuracy(scope, gpu, workload)
    if scope != "same-gpu":
        notes = _with_loso(notes, workload)
    k_ttft = k_tpot = 1.0
    if anchor is not None:
        model_ttft, model_tpot = sv.ttft_s, sv.tpot_s
        sv, note = _anchored(c, sv, host, anchor)
        k_ttft, k_tpot = sv.ttft_s / model_ttft, sv.tpot_s / model_tpot
        notes = (*notes, note)
    ttft_band, tpot_band = sv.ttft_band, sv.tpot_band
    span = _derived_span(gpu, "fp32" if c.precision == "fp32" else "bf16")
    if span is not None:
        lo, hi = estimate_serving(c, span[1], e, host=host), estimate_serving(c, span[0], e, host=host)
        if abs(hi.ttft_s - lo.ttft_s) + abs(hi.tpot_s - lo.tpot_s) > 1e-12:
            lo_ttft, hi_ttft = lo.ttft_s * k_ttft, hi.ttft_s * k_ttft
            lo_tpot, hi_tpot = lo.tpot_s * k_tpot, hi.tpot_s * k_tpot
            ttft_band = Band(min(ttft_band.low, lo_ttft), sv.ttft_s, max(ttft_band.high, hi_ttft))
            tpot_band = Band(min(tpot_band.low, lo_tpot), sv.tpot_s, max(tpot_band.high, hi_tpot))
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
