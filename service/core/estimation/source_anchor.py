"""A transferred answer (training, encoder / CNN batch inference, eager serving) anchored on the source GPU's
measurement of the same configuration.

A GPU nobody measured gets efficiencies carried over from the GPU its calibration was fitted on
(:func:`~service.core.estimation.calibration.CalibrationSet.pick`). Where that source GPU has a
measurement of *this exact configuration*, the answer is that measurement times the modelled
ratio of the two GPUs, not the model's absolute time: the H200's measured 55,003 tokens/s on a
configuration its own calibration put at 68,900 would otherwise leave the H100 -- same tensor
peak, less bandwidth -- estimated faster than the H200 measured. Only the cross-GPU ratio comes
from the model, so no fitted constant can make the datasheet-faster GPU slower than the ratio
says, and the source's measurement fixes the level."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from service.core.catalog.precision import precision_family
from service.core.catalog.specs import GpuSpec
from service.core.estimation.calibration import Calibration, CalibrationSet
from service.core.estimation.efficiencies import Efficiencies
from service.core.evidence.aggregate import CellView

__all__ = ["ServingAnchor", "SourceAnchor", "anchor_factor", "serving_anchor", "source_anchor"]


@dataclass(frozen=True, slots=True)
class SourceAnchor:
    """The measured step of the exact configuration on the calibration's source GPU, and that
    GPU's own efficiencies (to model the same step there)."""

    gpu: GpuSpec
    efficiencies: Efficiencies
    step_time_s: float
    count: int


def source_anchor(
    cal: Calibration | None,
    calibrations: CalibrationSet,
    workload: str,
    precision: str,
    measured_on: Callable[[str], CellView | None] | None,
) -> SourceAnchor | None:
    """The anchor of a transferred calibration: its source GPU's measured cell of the same
    configuration (``measured_on``: slug -> the latest-measured view) and the source's own fit."""
    found = _source_cell(cal, calibrations, workload, precision, measured_on)
    if found is None:
        return None
    source, own, cell = found
    summary = cell.metrics.get("step_time_s")
    if summary is None or summary.median <= 0:
        return None
    return SourceAnchor(source, own, float(summary.median), cell.count)


def _source_cell(
    cal: Calibration | None,
    calibrations: CalibrationSet,
    workload: str,
    precision: str,
    measured_on: Callable[[str], CellView | None] | None,
) -> tuple[GpuSpec, Efficiencies, CellView] | None:
    """The GPU a transferred calibration is anchored on, that GPU's own fitted efficiencies and
    its measured cell of the configuration; None where any is missing (or nothing was
    transferred). The reference host's GPU (:meth:`~.CalibrationSet.reference_host`) comes
    first where it measured the configuration: every GPU nobody measured then takes its level
    from one machine, and only the model's ratios order them (anchored on their nearest
    sources, an A100 took the H100 machine's faster launches and came out above the H200's
    measurement at ResNet-50 batch 16); else the calibration's own source."""
    if cal is None or measured_on is None or cal.source is None or cal.scope == "same-gpu":
        return None
    ref = calibrations.reference_host(workload, precision_family(precision))
    for source in (ref.source if ref is not None else None, cal.source):
        if source is None:
            continue
        cell = measured_on(source.slug)
        own = calibrations.pick(source, workload, precision)
        if cell is not None and cell.provenance == "measured" and own is not None and own.scope == "same-gpu":
            return source, own.efficiencies, cell
    return None


def anchor_factor(model_step_s: float, modelled: float, anchor: SourceAnchor) -> tuple[float, str]:
    """How much the source's measurement moves this GPU's modelled step (``modelled``: the same
    step modelled on the source at its own efficiencies), and the note that says so."""
    k = anchor.step_time_s / modelled if modelled > 0 else 1.0
    name = anchor.gpu.name or anchor.gpu.slug
    note = (
        f"anchored on {name}'s measurement of this exact configuration (median of {anchor.count}): "
        f"{anchor.step_time_s * 1e3:.4g} ms a step there against {modelled * 1e3:.4g} ms modelled, so "
        f"this GPU's modelled {model_step_s * 1e3:.4g} ms is scaled by x{k:.3f} -- the cross-GPU ratio "
        "is the model's, the level the measurement's"
    )
    return k, note


@dataclass(frozen=True, slots=True)
class ServingAnchor:
    """The measured TTFT and TPOT (medians, s) of the exact eager-serving configuration on the
    calibration's source GPU, and that GPU's own efficiencies."""

    gpu: GpuSpec
    efficiencies: Efficiencies
    ttft_s: float
    tpot_s: float
    count: int
    output_tokens_per_s: float | None = None
    """The measured end-to-end rate (``batch x output_len / total``), where the cell has it: a
    mean over the steps, which the TPOT median does not give."""


def serving_anchor(
    cal: Calibration | None,
    calibrations: CalibrationSet,
    workload: str,
    precision: str,
    measured_on: Callable[[str], CellView | None] | None,
) -> ServingAnchor | None:
    """As :func:`source_anchor`, for a serving cell: its TTFT and TPOT medians."""
    found = _source_cell(cal, calibrations, workload, precision, measured_on)
    if found is None:
        return None
    source, own, cell = found
    ttft_ms, tpot_ms = cell.median("ttft_ms_p50"), cell.median("tpot_ms_p50")
    if not ttft_ms or not tpot_ms:
        return None
    tps = cell.median("output_tokens_per_s")
    return ServingAnchor(source, own, ttft_ms / 1e3, tpot_ms / 1e3, cell.count, tps)
