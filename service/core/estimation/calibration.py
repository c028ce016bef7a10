"""Fit efficiencies from measured results, transfer them to unmeasured GPUs, label provenance.

Inputs are plain values (no database): :class:`TimedPoint` (a configuration, the GPU it ran
on and a measured time) and :class:`MemoryPoint` (a configuration and its measured peak
allocated bytes or OOM). Outputs are :class:`Calibration` objects holding fitted
:class:`~service.core.estimation.performance.Efficiencies` and the relative 80 % band measured on their
own residuals.

Fitting: each fitted quantity is a multiplier on a group of efficiency fields (``mm`` scales
every matmul efficiency, ``attn``, ``bw``, ``dispatch``, ``conv``, ``step``), searched in log
space by Nelder-Mead on the squared log error of the predicted time, with a weak prior pulling
every multiplier toward 1 (the spec default) so sparse data cannot push a field anywhere
absurd. The band is the 10th-90th percentile of the log residuals, widened for small samples
(``sqrt(1 + 2/n)``), with a floor of +/-8 %.

Transfer (DESIGN "Provenance"): efficiencies fitted on one GPU reach another through
:mod:`service.core.estimation.transfer` -- compute efficiencies scaled by the ratio of the two GPUs'
per-architecture compute factors and sustained clocks under their power caps, bandwidth
efficiency by the ratio of their memory factors, all fitted jointly on the shipped published
training tables (no per-GPU factor). Within one architecture only the clock can differ; an
architecture without published data gets no correction. The band combines the calibration's own
band with the held-out error of that kind of transfer for the target's architecture
(:mod:`service.core.estimation.accuracy`), in quadrature in log space. Where no measurement fits a
(workload, precision family) at all but a shipped table holds it, :func:`published_calibration`
anchors the efficiencies on that table (provenance ``published``, the table named).

Provenance labels (ranked in :mod:`service.core.evidence.provenance`): ``measured`` (exact cell),
``interpolated`` (same GPU and workload, fitted efficiencies), ``transferred`` (fitted on another
GPU -- named -- and carried over without a published input: within the architecture at the same
peaks and power, or to an architecture the tables do not hold), ``published`` (the answer leans
on the published tables, which are named: the cross-GPU ratio comes from their fit -- across
architectures, or within one at another power cap -- or the efficiencies are anchored on a
table), ``derived`` (depends on a catalog figure derived from a sibling; set by the estimator),
``spec`` (datasheet roofline with :data:`~service.core.estimation.performance.SPEC_DEFAULTS`). An answer is
labelled by its weakest input (issue 13: answers that lean on the published tables say so).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from service.core.catalog.models import DecoderSpec, ModelNotFound, get_model
from service.core.catalog.precision import precision_family
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.calibration_fit import (  # noqa: F401
    _SEQUENCE_CONFIGS,
    BAND_FLOOR,
    CROSS_ARCH_BAND,
    FIT_GROUPS,
    OUT_OF_RANGE_BAND_FACTOR,
    PRIOR_SCALE,
    PRIOR_SCALE_MIN_POINTS,
    PRIOR_WEIGHT,
    SAME_ARCH_BAND_FACTOR,
    UNSEEN_MODEL_BAND_FACTOR,
    WORKLOAD_FIT_GROUPS,
    Calibration,
    MemoryCalibration,
    MemoryPoint,
    TimedPoint,
    _nelder_mead,
    _prior_center,
    _quantile,
    _shape_of,
    apply_multipliers,
    band_from_log_residuals,
    fit_time,
    predict_time,
)
from service.core.estimation.calibration_transfer import (  # noqa: F401
    PUBLISHED_WORKLOADS,
    STREAMING_WORKLOADS,
    _combine,
    _scale_efficiencies,
    provenance_for,
    published_calibration,
    transfer,
)
from service.core.estimation.memory import (
    BatchInferenceConfig,
    InferenceConfig,
    TrainConfig,
    estimate_training,
)
from service.core.estimation.serving import HostProfile
from service.core.estimation.transfer import published_model
from service.core.evidence.provenance import PROVENANCES, Provenance

__all__ = [
    "PROVENANCES",
    "PUBLISHED_WORKLOADS",
    "WORKLOAD_FIT_GROUPS",
    "Calibration",
    "CalibrationSet",
    "CellMeasurement",
    "MemoryCalibration",
    "MemoryPoint",
    "Provenance",
    "TimedPoint",
    "apply_multipliers",
    "config_from_benchmark",
    "fit_calibrations",
    "fit_memory",
    "fit_time",
    "predict_time",
    "provenance_for",
    "published_calibration",
    "timed_points_from_result",
    "transfer",
]


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------


def fit_memory(points: Sequence[MemoryPoint]) -> MemoryCalibration:
    """Median ratio measured/predicted of peak allocated memory over ``ok`` points, and the
    band of the residuals around it. The analytic model is meant to need no correction; a
    scale far from 1 flags a loop that differs from the reference loop."""
    ratios = [
        p.peak_allocated_bytes / estimate_training(p.config).peak_allocated_bytes
        for p in points
        if p.status == "ok" and p.peak_allocated_bytes
    ]
    if not ratios:
        return MemoryCalibration(1.0, (0.03, 0.03), 0, 0.0)
    scale = _quantile(ratios, 0.5)
    logs = [math.log(r / scale) for r in ratios]
    band = band_from_log_residuals(logs, floor=0.02)
    mape = sum(abs(1.0 / r - 1.0) for r in ratios) / len(ratios)
    return MemoryCalibration(scale, band, len(ratios), mape)


# --------------------------------------------------------------------------------------------
# From benchmark results (vocabulary parameters) to core inputs
# --------------------------------------------------------------------------------------------


def config_from_benchmark(
    workload: str,
    params: Mapping[str, object],
) -> TrainConfig | InferenceConfig | BatchInferenceConfig | None:
    """The core configuration a benchmark cell measures (canonical vocabulary parameters), or
    ``None`` for workloads the estimator does not model (``gemm``, ``memory-bandwidth``,
    ``collective``). Raises ``ModelNotFound`` / ``InvalidConfiguration`` for parameters it
    cannot represent."""
    from service.core.catalog.models import CnnSpec, EncoderSpec
    from service.core.estimation.memory import train_config_from_parameters

    def num(key: str, default: int) -> int:
        v = params.get(key, default)
        return int(v) if isinstance(v, int | float | str) else default

    if workload == "llm-train":
        return train_config_from_parameters(params)
    if workload == "bert-large-train":
        return TrainConfig(
            model=get_model("bert-large"),
            precision=str(params["precision"]),
            batch_size=num("batch_size", 1),
            seq_len=num("seq_len", 512),
        )
    if workload == "resnet50-train":
        return TrainConfig(
            model=get_model("resnet50"),
            precision=str(params["precision"]),
            batch_size=num("batch_size", 1),
            seq_len=1,
            optimizer="sgd",
        )
    if workload == "bert-large-infer":
        enc = get_model("bert-large")
        assert isinstance(enc, EncoderSpec)
        return BatchInferenceConfig(
            model=enc,
            precision=str(params["precision"]),
            batch_size=num("batch_size", 1),
            seq_len=num("seq_len", 512),
        )
    if workload == "resnet50-infer":
        cnn = get_model("resnet50")
        assert isinstance(cnn, CnnSpec)
        return BatchInferenceConfig(
            model=cnn, precision=str(params["precision"]), batch_size=num("batch_size", 1), seq_len=1
        )
    if workload == "llm-infer":
        m = get_model(str(params["model"]))
        if not isinstance(m, DecoderSpec):
            return None
        return InferenceConfig(
            model=m,
            precision=str(params.get("precision", "bf16")),
            quant_method=str(params.get("quant_method", "none")),
            batch_size=num("batch_size", 1),
            input_len=num("input_len", 1),
            output_len=num("output_len", 1),
            engine=str(params.get("engine", "hf-transformers")),
        )
    return None


def timed_points_from_result(
    workload: str,
    params: Mapping[str, object],
    gpu: GpuSpec,
    step_time_s: float | None,
    metrics: Mapping[str, float],
) -> list[TimedPoint]:
    """Calibration points from one measured result: the step time for training workloads,
    TTFT and TPOT (p50, ms in the vocabulary) for ``llm-infer``."""
    cfg = config_from_benchmark(workload, params)
    if cfg is None:
        return []
    if isinstance(cfg, TrainConfig | BatchInferenceConfig):
        return [TimedPoint(cfg, gpu, float(step_time_s))] if step_time_s else []
    out = []
    for metric, key in (("ttft_s", "ttft_ms_p50"), ("tpot_s", "tpot_ms_p50")):
        if key in metrics and metrics[key] > 0:
            out.append(TimedPoint(cfg, gpu, float(metrics[key]) / 1e3, metric=metric))
    return out


# --------------------------------------------------------------------------------------------
# The service's calibration set: one fit per (GPU, workload, precision family)
# --------------------------------------------------------------------------------------------

TIMED_WORKLOADS: tuple[str, ...] = (
    "llm-train",
    "llm-infer",
    "bert-large-train",
    "resnet50-train",
    "bert-large-infer",
    "resnet50-infer",
)
CALIBRATED_WORKLOADS: tuple[str, ...] = (*TIMED_WORKLOADS, "gemm")
"""Workloads whose cells calibration reads: the timed workloads it fits (training, eager
``llm-infer``, encoder/CNN batch inference), and ``gemm``, whose measured TFLOP/s per precision
transfer a fit to a precision without points (:func:`transfer_precision`)."""
MIN_POINTS_TO_FIT = 3
PRECISION_TRANSFER_BAND_FACTOR = 1.5
"""Band widening for a fit carried to another precision by the measured GEMM ratio (one step
from the data, like a same-architecture GPU transfer)."""


def transfer_precision(
    cal: Calibration, gpu: GpuSpec, precision: str, gemm_tflops: Mapping[str, float]
) -> Calibration | None:
    """``cal`` (fitted on another precision family of ``gpu``) carried to ``precision``: the
    compute-bound groups (matmuls, attention, convolutions) scaled by the GEMM rate the agent
    measured on this GPU for the two precisions, ``gemm[target] / gemm[source]``; the
    memory-bound phases keep their bandwidth efficiency (the model already counts their bytes
    per element for the precision); host costs unchanged. ``None`` without both GEMM rates or
    datasheet peaks. Provenance ``transferred``, naming the source precision."""
    from service.core.catalog.precision import PEAK_KEY

    source_key = {"16bit": "bf16", "fp32": "tf32", "8bit": "fp8"}.get(cal.family)
    target_key = PEAK_KEY.get(precision, precision)
    if source_key is None or source_key == target_key:
        return None
    g_s, g_t = gemm_tflops.get(source_key), gemm_tflops.get(target_key)
    p_s, p_t = gpu.peak_for(source_key), gpu.peak_for(target_key)
    if not (g_s and g_t and p_s and p_t):
        return None

    def scaled(eff_s: float, peak_s: float, peak_t: float) -> float:
        """Efficiency against ``peak_t`` whose time is the source time with its GEMM-rate part
        scaled: a group reaching a fraction ``r = eff_s x peak_s / g_s`` of the measured GEMM
        rate spends ``r`` of its time in tensor math (scales by ``g_s / g_t``) and ``1 - r``
        in what does not (memory, latency; kept)."""
        r = min(1.0, eff_s * peak_s / g_s)
        return min(0.98, eff_s * peak_s / peak_t / (r * g_s / g_t + (1.0 - r)))

    e = cal.efficiencies
    mm = dict(e.mm)
    mm[target_key] = scaled(float(e.mm.get(source_key, e.mm_for(source_key))), p_s, p_t)
    # attention runs against the 16-bit peak in the step model, convolutions against the
    # precision's own peak
    p16 = gpu.peak_for("bf16") or p_s
    attn = scaled(e.attn, p16, p16)
    conv = scaled(e.conv, p_s, p_t)
    eff = replace(e, mm=mm, attn=attn, conv=conv, source="transferred")
    lo, hi = cal.band
    k = PRECISION_TRANSFER_BAND_FACTOR
    return replace(
        cal,
        efficiencies=eff,
        band=(min(0.9, lo * k), hi * k),
        provenance="transferred",
        family=precision_family(precision),
        notes=(
            *cal.notes,
            f"transferred from {source_key} on {gpu.slug}: compute scaled by the measured GEMM "
            f"ratio {target_key}/{source_key} = {g_t:.0f}/{g_s:.0f} TFLOP/s",
        ),
    )


@dataclass(frozen=True, slots=True)
class CellMeasurement:
    """One measured benchmark cell as calibration sees it: the GPU, the workload, its
    canonical parameters and the cell's latest-measured medians (DESIGN's one rule: each cell
    contributes its chosen fingerprint's median, never a pooled mix of stacks)."""

    gpu: GpuSpec
    workload: str
    params: Mapping[str, object]
    medians: Mapping[str, float]  # metric name -> median (step_time_s, ttft_ms_p50, tpot_ms_p50)


GroupKey = tuple[str, str, str]  # (gpu slug, workload, precision family)


def group_of(m: CellMeasurement) -> GroupKey | None:
    """The calibration a cell feeds, or None (multi-GPU cells, untimed workloads such as ``gemm``
    and ``llm-infer`` cells of engines other than hf-transformers feed none: a measured vLLM cell
    answers its own configuration as ``measured``, it does not move the eager model)."""
    if m.workload not in TIMED_WORKLOADS:
        return None
    try:
        n = int(str(m.params.get("gpu_count", 1) or 1))
    except ValueError:
        return None
    if n != 1:
        return None
    if m.workload == "llm-infer" and str(m.params.get("engine", "hf-transformers")) != "hf-transformers":
        return None  # a continuous-batching engine's cells calibrate nothing of the eager model
    return (m.gpu.slug, m.workload, precision_family(str(m.params.get("precision", "bf16"))))


def fit_group(cells: Sequence[CellMeasurement]) -> Calibration | None:
    """Fit one (GPU, workload, family) group; None with fewer than three usable points."""
    if not cells:
        return None
    workload = cells[0].workload
    points: list[TimedPoint] = []
    for m in cells:
        try:
            points.extend(
                timed_points_from_result(m.workload, m.params, m.gpu, m.medians.get("step_time_s"), m.medians)
            )
        except (InvalidConfiguration, ModelNotFound, KeyError, ValueError):
            continue
    if workload == "llm-infer":
        points = [p for p in points if p.metric == "tpot_s"] + [p for p in points if p.metric == "ttft_s"]
    if len(points) < MIN_POINTS_TO_FIT:
        return None
    try:
        return fit_time(points, groups=WORKLOAD_FIT_GROUPS[workload])
    except (ValueError, KeyError):
        return None


def datasheet_distance(source: GpuSpec | None, target: GpuSpec) -> float:
    """How far a transfer from ``source`` to ``target`` reaches: the sum of the absolute log
    ratios of their dense 16-bit peaks and of their bandwidths (a source without figures is
    furthest). Each transfer carries the modelled ratio's error, which grows with the ratio, so
    a GPU is answered from the nearest measured one: the H800 from the H100 (the same figures),
    the B200 from the H200."""
    if source is None:
        return math.inf
    ps, pt = (
        source.peak_for("bf16") or source.peak_for("fp16"),
        target.peak_for("bf16") or target.peak_for("fp16"),
    )
    bs, bt = source.bandwidth_gb_per_s, target.bandwidth_gb_per_s
    if not ps or not pt or not bs or not bt:
        return math.inf
    return abs(math.log(pt / ps)) + abs(math.log(bt / bs))


@dataclass(frozen=True, slots=True)
class CalibrationSet:
    """Fitted calibrations keyed by (gpu slug, workload, precision family), and the
    architecture family of every GPU that has one."""

    by_key: Mapping[GroupKey, Calibration] = field(default_factory=dict)
    families: Mapping[str, str] = field(default_factory=dict)
    gemm_tflops: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Measured large-GEMM rate per GPU slug and precision key (``bf16``, ``tf32``, ``fp32``...),
    from the agent's ``gemm`` results: what :func:`transfer_precision` scales by."""
    _picked: dict[tuple[str, str, str, str], Calibration | None] = field(
        default_factory=dict, compare=False, repr=False
    )

    def pick(self, gpu: GpuSpec, workload: str, precision: str) -> Calibration | None:
        """This GPU's own fit for the precision family; else another family's fit on this GPU
        carried over by the measured GEMM ratio (:func:`transfer_precision`); else the
        nearest fit (:func:`datasheet_distance`; then the best-populated) of the same architecture,
        else of any architecture, transferred
        (:func:`transfer`); else a published anchor (:func:`published_calibration`). Memoised
        per (GPU, workload, precision): the set is immutable, so the answer is too."""
        fam = precision_family(precision)
        memo = (gpu.slug, gpu.family, workload, precision)
        if memo in self._picked:
            return self._picked[memo]
        own = self.by_key.get((gpu.slug, workload, fam))
        chosen: Calibration | None = own
        if own is None and gpu.slug in self.gemm_tflops:
            others = [c for k, c in self.by_key.items() if k[0] == gpu.slug and k[1] == workload]
            for source in sorted(others, key=lambda c: -c.n_points):
                chosen = transfer_precision(source, gpu, precision, self.gemm_tflops[gpu.slug])
                if chosen is not None:
                    break
        if chosen is None:
            candidates = self._fits(workload, fam)
            if candidates:
                same = [c for k, c in candidates if self.families.get(k[0]) == gpu.family]
                pool = same or [c for _, c in candidates]
                best = min(
                    pool, key=lambda c: (datasheet_distance(c.source, gpu), -c.n_points, c.source_gpus)
                )
                chosen = self._on_reference_host(transfer(best, gpu, precision, workload), workload, fam)
            else:
                chosen = published_calibration(gpu, workload, precision)
        self._picked[memo] = chosen
        return chosen

    def _fits(self, workload: str, family: str) -> list[tuple[GroupKey, Calibration]]:
        """Every GPU's fit of ``workload`` in the precision ``family``."""
        return [(k, c) for k, c in self.by_key.items() if k[1] == workload and k[2] == family]

    def reference_host(self, workload: str, family: str) -> Calibration | None:
        """The fit whose host every transferred answer of ``workload`` is timed on: the
        best-populated one of the precision family (ties by slug). Each measured GPU ran on its
        own machine, and two machines of one GPU model launch the same eager step up to 1.5x
        apart (``data/probes/h100-host-variance-2026-12-07.json``), so a transfer that kept its
        nearest source's host would rank the GPUs nobody measured by their sources' machines."""
        fits = self._fits(workload, family)
        return max(fits, key=lambda kc: (kc[1].n_points, kc[0][0]))[1] if fits else None

    def _on_reference_host(self, cal: Calibration, workload: str, family: str) -> Calibration:
        """``cal`` (a transfer) with the host side -- per-op dispatch and per-step cost, which no
        GPU figure scales -- of :meth:`reference_host` in place of its source's, and the range of
        every measuring machine's dispatch over it (:attr:`~.Calibration.host_range`)."""
        ref = self.reference_host(workload, family)
        if ref is None:
            return cal
        r = ref.efficiencies
        hosts = [c.efficiencies.dispatch_s / r.dispatch_s for _, c in self._fits(workload, family)]
        out = (
            replace(cal, host_range=(min(hosts), max(hosts))) if len(hosts) > 1 and r.dispatch_s > 0 else cal
        )
        e = cal.efficiencies
        same_host = (e.dispatch_s, e.step_s) == (r.dispatch_s, r.step_s)
        if same_host or set(ref.source_gpus) == set(cal.source_gpus):
            return out
        note = (
            f"host side (launch {r.dispatch_s * 1e6:.3g} us an op, {r.step_s * 1e3:.3g} ms a step) from the "
            f"machine of {', '.join(ref.source_gpus)}, the one every transferred answer shares; "
            f"{', '.join(cal.source_gpus)}'s machine measured {e.dispatch_s * 1e6:.3g} us and {e.step_s * 1e3:.3g} ms"
        )
        eff = replace(e, dispatch_s=r.dispatch_s, step_s=r.step_s)
        return replace(out, efficiencies=eff, notes=(*cal.notes, note))

    def host_profile(self, workload: str, precision: str) -> HostProfile | None:
        """The host side of eager PyTorch for ``workload`` (``dispatch_s``, ``step_s``) from
        :meth:`reference_host`, untransferred: a property of the engine and the host that
        measured it, applied to every GPU alike (DESIGN "Estimation"), never scaled by GPU
        architecture. None without a fit."""
        best = self.reference_host(workload, precision_family(precision))
        if best is None:
            return None
        e = best.efficiencies
        return HostProfile(
            e.dispatch_s, e.step_s, f"eager PyTorch on the host of {', '.join(best.source_gpus)}"
        )

    def refitted(self, groups: Mapping[GroupKey, Sequence[CellMeasurement]]) -> CalibrationSet:
        """A copy with the given groups refitted (a group that no longer fits is dropped)."""
        by_key = dict(self.by_key)
        families = dict(self.families)
        for key, cells in groups.items():
            cal = fit_group(cells)
            if cal is None:
                by_key.pop(key, None)
            else:
                by_key[key] = cal
            if cells:
                families[key[0]] = cells[0].gpu.family
        return CalibrationSet(by_key=by_key, families=families, gemm_tflops=self.gemm_tflops)


def gemm_rates(cells: Sequence[CellMeasurement]) -> dict[str, dict[str, float]]:
    """Measured GEMM TFLOP/s (TOP/s for integers) per GPU slug and precision, from ``gemm``
    cells (their latest-measured medians)."""
    out: dict[str, dict[str, float]] = {}
    for m in cells:
        if m.workload != "gemm":
            continue
        rate = m.medians.get("tflops") or m.medians.get("tops")
        if rate and rate > 0:
            out.setdefault(m.gpu.slug, {})[str(m.params.get("precision"))] = float(rate)
    return out


def fit_calibrations(cells: Sequence[CellMeasurement]) -> CalibrationSet:
    """Every group the cells feed, fitted; the GEMM rates of ``gemm`` cells kept for
    precision transfer. Also fits the published transfer model (once per process, cached) so
    that the first estimate that needs it does not pay for it."""
    published_model()
    groups: dict[GroupKey, list[CellMeasurement]] = {}
    for m in cells:
        key = group_of(m)
        if key is not None:
            groups.setdefault(key, []).append(m)
    base = CalibrationSet(gemm_tflops=gemm_rates(cells))
    return base.refitted({k: sorted(v, key=_cell_order) for k, v in groups.items()})


def _cell_order(m: CellMeasurement) -> str:
    return json.dumps(m.params, sort_keys=True, default=str)
