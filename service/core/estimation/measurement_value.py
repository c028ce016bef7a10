"""What measuring one benchmark cell would do to one answer's band (issue 27: the
measurement plan).

For a job on a GPU, :func:`band_gain` runs the one estimator twice: as the data stand now (the
cell's latest-measured view, if any) and as if the exact cell had been measured at today's
central estimate with no spread between repeats -- the narrowest band a measurement can give.
That band is the estimator's own measured-cell floor (:mod:`service.core.estimation.estimate_time`:
step time +-3 %, serving TTFT/TPOT +-5 %); a measurement whose repeats spread wider widens it to
their p10-p90. So the "after" width is a lower bound, labelled as such by the callers.

The band compared is the one the answer's time rests on: the step time for training and batch
inference, the time per output token for serving (its decode rate; TTFT's band moves the same
way). Widths are relative: ``(high - low) / mid`` in percent.

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.band import Band
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.estimate import Estimate, Job, estimate
from service.core.evidence.aggregate import CellView, Summary

__all__ = ["BandGain", "band_gain", "relative_width_pct"]


@dataclass(frozen=True, slots=True)
class BandGain:
    """One answer's band now and after its exact cell is measured."""

    metric: str  # "step_time_s" | "tpot_s"
    provenance: str  # the time figure's provenance now
    now_pct: float  # (high - low) / mid now, %
    after_pct: float  # the same once measured (a lower bound: repeats that spread widen it)


def relative_width_pct(b: Band) -> float:
    return (b.high - b.low) / b.mid * 100.0 if b.mid > 0 else 0.0


def _time_band(e: Estimate) -> tuple[str, Band, str] | None:
    if e.time is not None:
        return "step_time_s", e.time.step_time_band, e.time.provenance
    if e.serving is not None:
        return "tpot_s", e.serving.tpot_band, e.serving.provenance
    return None


def _point(value: float) -> Summary:
    return Summary(count=1, median=value, p10=value, p90=value, min=value, max=value)


def _as_if_measured(metric: str, e: Estimate) -> CellView:
    """A cell measured at the answer's central figures with no spread, on evidence that counts."""
    if metric == "step_time_s":
        assert e.time is not None
        metrics = {"step_time_s": _point(e.time.step_time_s)}
    else:
        assert e.serving is not None
        metrics = {
            "ttft_ms_p50": _point(e.serving.ttft_s * 1e3),
            "tpot_ms_p50": _point(e.serving.tpot_s * 1e3),
        }
    return CellView(
        fingerprint_hash="hypothetical",
        thin=False,
        count=1,
        metrics=metrics,
        memory={},
        status_counts={"ok": 1},
        quarantined_count=0,
        oom_count_all_fingerprints=0,
        newest_measured_at=None,
        host_count=1,
        trusted_agent=True,
        provenance="measured",
        provenance_code="trusted_agent",
        provenance_reason="hypothetical measurement (measurement plan)",
        other_fingerprints=(),
    )


def band_gain(
    gpu: GpuSpec, job: Job, calibrations: CalibrationSet, measured: CellView | None
) -> BandGain | None:
    """The band of ``job`` on ``gpu`` now and once its exact cell is measured; None when the
    estimator gives no time figure (a refusal, no bandwidth, a serving rate question) or the
    cell runs out of memory there (its run would record an OOM, not narrow a time band)."""
    try:
        now = estimate(gpu, job, calibrations, measured)
        if not now.memory.fits:
            return None
        found = _time_band(now)
        if found is None:
            return None
        metric, band, provenance = found
        if provenance == "measured":
            width = relative_width_pct(band)
            return BandGain(metric, provenance, width, width)
        after = _time_band(estimate(gpu, job, calibrations, _as_if_measured(metric, now)))
    except (InvalidConfiguration, MissingFigure):
        return None
    if after is None:
        return None
    return BandGain(metric, provenance, relative_width_pct(band), relative_width_pct(after[1]))
