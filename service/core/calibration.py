"""Fit efficiencies from measured results, transfer them to unmeasured GPUs, label provenance.

Inputs are plain values (no database): :class:`TimedPoint` (a configuration, the GPU it ran
on and a measured time) and :class:`MemoryPoint` (a configuration and its measured peak
allocated bytes or OOM). Outputs are :class:`Calibration` objects holding fitted
:class:`~service.core.performance.Efficiencies` and the relative 80 % band measured on their
own residuals.

Fitting: each fitted quantity is a multiplier on a group of efficiency fields (``mm`` scales
every matmul efficiency, ``attn``, ``bw``, ``dispatch``, ``conv``, ``step``), searched in log
space by Nelder-Mead on the squared log error of the predicted time, with a weak prior pulling
every multiplier toward 1 (the spec default) so sparse data cannot push a field anywhere
absurd. The band is the 10th-90th percentile of the log residuals, widened for small samples
(``sqrt(1 + 2/n)``), with a floor of +/-8 %.

Transfer (DESIGN "Provenance"): the same efficiencies apply to another GPU of the **same
architecture** (same kernels, same fractions of peak) with a band 1.5x as wide; across
architectures the fitted multipliers are halved in log space toward the spec defaults and the
band is at least +/-35 %. :func:`published_leave_one_out` checks the cross-GPU model against a
published table (``core/published``): each GPU in turn is predicted from the others, by the
roofline with efficiencies fitted on the remaining GPUs (per-architecture correction when the
architecture is represented) and, as the baseline, by datasheet peak ratios.

Provenance labels: ``measured`` (exact cell), ``interpolated`` (same GPU and workload, fitted
efficiencies), ``transferred`` (fitted on other GPUs; the source GPUs are named),
``published`` (an imported external result), ``spec`` (datasheet roofline with
:data:`~service.core.performance.SPEC_DEFAULTS`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal

from service.core.errors import InvalidConfiguration
from service.core.memory import BatchInferenceConfig, InferenceConfig, TrainConfig, estimate_training
from service.core.models import ModelNotFound, get_model
from service.core.performance import (
    SPEC_BAND,
    SPEC_DEFAULTS,
    Efficiencies,
    estimate_step,
)
from service.core.precision import precision_family
from service.core.serving import HostProfile, estimate_batch_inference, estimate_serving
from service.core.specs import GpuSpec

__all__ = [
    "PROVENANCES",
    "WORKLOAD_FIT_GROUPS",
    "Calibration",
    "CalibrationSet",
    "CellMeasurement",
    "MemoryCalibration",
    "MemoryPoint",
    "TimedPoint",
    "apply_multipliers",
    "config_from_benchmark",
    "fit_calibrations",
    "fit_memory",
    "fit_time",
    "predict_time",
    "provenance_for",
    "published_leave_one_out",
    "timed_points_from_result",
    "transfer",
]

Provenance = Literal["measured", "interpolated", "transferred", "published", "spec"]
PROVENANCES: tuple[str, ...] = ("measured", "interpolated", "transferred", "published", "spec")

FIT_GROUPS: dict[str, tuple[str, ...]] = {
    "mm": ("mm",),
    "attn": ("attn",),
    "bw": ("bw",),
    "dispatch": ("dispatch_s",),
    "conv": ("conv",),
    "step": ("step_s",),
}
"""Fitted multipliers and the :class:`Efficiencies` fields each one scales."""

WORKLOAD_FIT_GROUPS: dict[str, tuple[str, ...]] = {
    "llm-train": ("mm", "attn", "bw", "dispatch"),
    "bert-large-train": ("mm", "bw", "dispatch"),
    "resnet50-train": ("conv", "bw", "dispatch"),
    "llm-infer": ("mm", "attn", "bw", "dispatch"),
    "bert-large-infer": ("mm", "attn", "bw", "dispatch"),
    "resnet50-infer": ("conv", "bw", "dispatch"),
}
"""Which multipliers each benchmark workload's points can inform (CNNs: convolutions, not
matmuls; BERT at these lengths: no attention-bound configuration)."""

PRIOR_SCALE: dict[str, float] = {"dispatch": 0.1}
"""Per-group scale of the prior toward the spec default. The host's per-kernel launch cost
is a property of the host CPU and the Python stack, not of the GPU's datasheet: its spec
default (6 us) is a weak guess -- the H200 host's probe measured ~15 us per backward kernel --
so the few launch-bound points must be able to move it (changed after seeing the H200
small-model points, which the default prior held at ~2/3 of their measured time). Applied
from :data:`PRIOR_SCALE_MIN_POINTS` points on: a handful cannot pin a host cost."""
PRIOR_SCALE_MIN_POINTS = 20

BAND_FLOOR = 0.08
UNSEEN_MODEL_BAND_FACTOR = 1.5
"""Band widening for a model shape absent from the calibration points (same as a transfer to
another GPU of the same architecture: one step away from the data)."""
OUT_OF_RANGE_BAND_FACTOR = 1.25
"""Band widening for a sequence length or tokens per step outside the calibrated range."""
SAME_ARCH_BAND_FACTOR = 1.5
CROSS_ARCH_BAND = (0.35, 0.45)
PRIOR_WEIGHT = 0.02


@dataclass(frozen=True, slots=True)
class TimedPoint:
    """A measured time: ``metric`` is ``step_time_s`` (training), ``ttft_s`` or ``tpot_s``."""

    config: TrainConfig | InferenceConfig | BatchInferenceConfig
    gpu: GpuSpec
    value_s: float
    metric: str = "step_time_s"
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class MemoryPoint:
    """A measured peak (``torch.cuda.max_memory_allocated``) or an OOM (``peak`` None)."""

    config: TrainConfig
    peak_allocated_bytes: int | None
    status: str = "ok"


@dataclass(frozen=True, slots=True)
class Calibration:
    """Fitted efficiencies with their band, where they came from and how well they fit."""

    efficiencies: Efficiencies
    band: tuple[float, float]
    multipliers: Mapping[str, float]
    source_gpus: tuple[str, ...]
    architecture: str
    n_points: int
    fit_mape: float
    provenance: str = "interpolated"
    notes: tuple[str, ...] = ()
    family: str = "16bit"
    models: frozenset[str] = frozenset()
    seq_range: tuple[int, int] = (0, 0)
    tokens_range: tuple[int, int] = (0, 0)

    def applies_to(self, precision: str) -> bool:
        """Efficiencies fitted on one precision family say nothing about another (different
        kernels: tensor-core 16-bit vs FP32/TF32 vs 8-bit)."""
        return precision_family(precision) == self.family

    def band_for(self, config: TrainConfig | InferenceConfig | BatchInferenceConfig) -> tuple[float, float]:
        """The band widened with distance from the calibration data (DESIGN "Estimation"):
        x :data:`UNSEEN_MODEL_BAND_FACTOR` for a model (size/shape) not among the calibration
        points, x :data:`OUT_OF_RANGE_BAND_FACTOR` for a sequence length or a token count per
        step outside the calibrated range, at most x2."""
        lo, hi = self.band
        k = 1.0
        model_id, seq, tokens = _shape_of(config)
        if self.models and model_id not in self.models:
            k *= UNSEEN_MODEL_BAND_FACTOR
        if self.seq_range[1] and not (self.seq_range[0] <= seq <= self.seq_range[1]):
            k *= OUT_OF_RANGE_BAND_FACTOR
        if self.tokens_range[1] and not (self.tokens_range[0] <= tokens <= self.tokens_range[1]):
            k *= OUT_OF_RANGE_BAND_FACTOR
        k = min(k, 2.0)
        return (min(0.9, lo * k), hi * k)


@dataclass(frozen=True, slots=True)
class MemoryCalibration:
    """Multiplicative correction of the analytic peak and the band of its residuals."""

    scale: float
    band: tuple[float, float]
    n_points: int
    mape: float


def _shape_of(config: TrainConfig | InferenceConfig | BatchInferenceConfig) -> tuple[str, int, int]:
    """(model id, sequence length, tokens per step) of a configuration."""
    if isinstance(config, TrainConfig | BatchInferenceConfig):
        return config.model.id, config.seq_len, config.batch_size * config.seq_len
    return config.model.id, config.input_len, config.batch_size * config.input_len


# --------------------------------------------------------------------------------------------
# Prediction
# --------------------------------------------------------------------------------------------


def predict_time(p: TimedPoint, e: Efficiencies) -> float:
    """The model's value for ``p.metric`` under efficiencies ``e`` (seconds)."""
    if isinstance(p.config, TrainConfig):
        return estimate_step(p.config, p.gpu, e).step_time_s
    if isinstance(p.config, BatchInferenceConfig):
        return estimate_batch_inference(p.config, p.gpu, e).step_time_s
    s = estimate_serving(p.config, p.gpu, e)
    return s.ttft_s if p.metric == "ttft_s" else s.tpot_s


def apply_multipliers(base: Efficiencies, mult: Mapping[str, float], source: str = "fitted") -> Efficiencies:
    """Scale the fields of each group in ``mult`` (see :data:`FIT_GROUPS`)."""
    changes: dict[str, object] = {"source": source}
    for group, k in mult.items():
        for fname in FIT_GROUPS[group]:
            if fname == "mm":
                changes["mm"] = {key: min(0.98, v * k) for key, v in base.mm.items()}
            else:
                v = float(getattr(base, fname)) * k
                if fname in ("attn", "bw", "conv"):
                    v = min(v, 0.98)
                changes[fname] = v
    return replace(base, **changes)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Fitting
# --------------------------------------------------------------------------------------------


def _nelder_mead(f: Callable[[list[float]], float], x0: list[float], step: float = 0.3,
                 iters: int = 250, tol: float = 1e-7) -> list[float]:
    """Minimise ``f`` from ``x0`` (pure Python Nelder-Mead; standard coefficients)."""
    n = len(x0)
    pts = [list(x0)] + [[x0[j] + (step if j == i else 0.0) for j in range(n)] for i in range(n)]
    vals = [f(p) for p in pts]
    for _ in range(iters):
        order = sorted(range(n + 1), key=lambda i: vals[i])
        pts = [pts[i] for i in order]
        vals = [vals[i] for i in order]
        if abs(vals[-1] - vals[0]) < tol:
            break
        centroid = [sum(p[j] for p in pts[:-1]) / n for j in range(n)]
        worst = pts[-1]
        refl = [centroid[j] + (centroid[j] - worst[j]) for j in range(n)]
        fr = f(refl)
        if fr < vals[0]:
            exp = [centroid[j] + 2.0 * (centroid[j] - worst[j]) for j in range(n)]
            fe = f(exp)
            pts[-1], vals[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < vals[-2]:
            pts[-1], vals[-1] = refl, fr
        else:
            contr = [centroid[j] + 0.5 * (worst[j] - centroid[j]) for j in range(n)]
            fc = f(contr)
            if fc < vals[-1]:
                pts[-1], vals[-1] = contr, fc
            else:
                best = pts[0]
                pts = [best] + [[best[j] + 0.5 * (p[j] - best[j]) for j in range(n)] for p in pts[1:]]
                vals = [vals[0]] + [f(p) for p in pts[1:]]
    return pts[min(range(n + 1), key=lambda i: vals[i])]


def _quantile(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    if not s:
        return 0.0
    pos = q * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def band_from_log_residuals(residuals: Sequence[float], floor: float = BAND_FLOOR,
                            n_params: int = 0) -> tuple[float, float]:
    """Relative (low, high) band covering the 10th-90th percentile of ``log(measured /
    predicted)``, widened for small samples by ``sqrt(1 + 2/n)`` and for the ``n_params``
    fitted quantities by ``sqrt(n / (n - n_params))`` (in-sample residuals understate the
    error), at least ``floor``."""
    n = len(residuals)
    if n == 0:
        return SPEC_BAND
    widen = math.sqrt(1.0 + 2.0 / n) * math.sqrt(n / max(1.0, n - n_params))
    q10 = _quantile(residuals, 0.10) * widen
    q90 = _quantile(residuals, 0.90) * widen
    lo = max(floor, 1.0 - math.exp(min(q10, 0.0)))
    hi = max(floor, math.exp(max(q90, 0.0)) - 1.0)
    return (min(lo, 0.9), hi)


def fit_time(points: Sequence[TimedPoint], base: Efficiencies = SPEC_DEFAULTS,
             groups: Iterable[str] = ("mm", "attn", "bw", "dispatch"),
             prior_weight: float = PRIOR_WEIGHT) -> Calibration:
    """Fit multipliers for ``groups`` on ``points`` (all from one GPU and stack, normally).

    Objective: mean squared ``log(predicted / measured)`` (weighted) plus ``prior_weight``
    times the squared log multipliers. Groups the points cannot inform (e.g. ``attn`` with no
    attention-heavy point) stay near 1 through the prior.
    """
    pts = [p for p in points if p.value_s > 0]
    if not pts:
        raise ValueError("no measured times to fit")
    families = {precision_family(p.config.precision) for p in pts}
    if len(families) > 1:
        raise ValueError(f"points mix precision families {sorted(families)}: fit each family separately")
    names = list(groups)
    wsum = sum(p.weight for p in pts)
    scale = PRIOR_SCALE if len(pts) >= PRIOR_SCALE_MIN_POINTS else {}

    def objective(x: list[float]) -> float:
        e = apply_multipliers(base, {n: math.exp(v) for n, v in zip(names, x, strict=True)})
        err = 0.0
        for p in pts:
            r = math.log(predict_time(p, e) / p.value_s)
            err += p.weight * r * r
        return err / wsum + prior_weight * sum(scale.get(n, 1.0) * v * v for n, v in zip(names, x, strict=True))

    # The host-dispatch floor enters through max(GPU, host): from the spec start it may not bind
    # anywhere, and the simplex never finds it. Start also from dispatch x e and x e^2.
    starts = [[0.0] * len(names)]
    if "dispatch" in names:
        i = names.index("dispatch")
        for v in (1.0, 2.0):
            x0 = [0.0] * len(names)
            x0[i] = v
            starts.append(x0)
    best: list[float] | None = None
    best_f = math.inf
    for x0 in starts:
        x = _nelder_mead(objective, x0, iters=200, tol=1e-6)
        fx = objective(x)
        if fx < best_f:
            best, best_f = x, fx
    assert best is not None
    x = _nelder_mead(objective, best, step=0.1, iters=80, tol=1e-7)
    mult = {n: math.exp(v) for n, v in zip(names, x, strict=True)}
    e = apply_multipliers(base, mult)
    residuals = [math.log(p.value_s / predict_time(p, e)) for p in pts]
    mape = sum(abs(math.exp(-r) - 1.0) for r in residuals) / len(residuals)
    gpus = tuple(sorted({p.gpu.slug for p in pts}))
    archs = {p.gpu.family for p in pts}
    shapes = [_shape_of(p.config) for p in pts]
    return Calibration(
        efficiencies=replace(e, source="interpolated"),
        band=band_from_log_residuals(residuals, n_params=len(names)),
        multipliers=mult,
        source_gpus=gpus,
        architecture=archs.pop() if len(archs) == 1 else "mixed",
        n_points=len(pts),
        fit_mape=mape,
        provenance="interpolated",
        family=families.pop(),
        models=frozenset(x[0] for x in shapes),
        seq_range=(min(x[1] for x in shapes), max(x[1] for x in shapes)),
        tokens_range=(min(x[2] for x in shapes), max(x[2] for x in shapes)),
    )


def transfer(cal: Calibration, target: GpuSpec) -> Calibration:
    """Efficiencies for ``target`` from a calibration made on other GPU(s).

    Same GPU: unchanged (``interpolated``). Same architecture: same efficiencies, band
    x :data:`SAME_ARCH_BAND_FACTOR` (``transferred``). Another architecture: multipliers
    halved in log space toward the spec defaults, band at least :data:`CROSS_ARCH_BAND`.
    """
    if target.slug in cal.source_gpus and len(cal.source_gpus) == 1:
        return cal
    if target.family == cal.architecture:
        lo, hi = cal.band
        return replace(
            cal, efficiencies=replace(cal.efficiencies, source="transferred"),
            band=(min(0.9, lo * SAME_ARCH_BAND_FACTOR), hi * SAME_ARCH_BAND_FACTOR),
            provenance="transferred",
            notes=(*cal.notes, f"same architecture ({cal.architecture}) as {', '.join(cal.source_gpus)}"),
        )
    half = {k: math.sqrt(v) for k, v in cal.multipliers.items()}
    e = apply_multipliers(SPEC_DEFAULTS, half, source="transferred")
    lo, hi = cal.band
    return replace(
        cal, efficiencies=e, multipliers=half,
        band=(max(CROSS_ARCH_BAND[0], lo * 2), max(CROSS_ARCH_BAND[1], hi * 2)),
        provenance="transferred",
        notes=(*cal.notes, f"across architectures: {cal.architecture} -> {target.family}, "
                           f"from {', '.join(cal.source_gpus)}"),
    )


def provenance_for(target: GpuSpec, cal: Calibration | None, exact_cell_measured: bool = False) -> str:
    """The DESIGN provenance label for an estimate on ``target``."""
    if exact_cell_measured:
        return "measured"
    if cal is None:
        return "spec"
    if target.slug in cal.source_gpus and len(cal.source_gpus) == 1:
        return "interpolated"
    return "transferred"


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------


def fit_memory(points: Sequence[MemoryPoint]) -> MemoryCalibration:
    """Median ratio measured/predicted of peak allocated memory over ``ok`` points, and the
    band of the residuals around it. The analytic model is meant to need no correction; a
    scale far from 1 flags a loop that differs from the reference loop."""
    ratios = [p.peak_allocated_bytes / estimate_training(p.config).peak_allocated_bytes
              for p in points if p.status == "ok" and p.peak_allocated_bytes]
    if not ratios:
        return MemoryCalibration(1.0, (0.03, 0.03), 0, 0.0)
    scale = _quantile(ratios, 0.5)
    logs = [math.log(r / scale) for r in ratios]
    band = band_from_log_residuals(logs, floor=0.02)
    mape = sum(abs(1.0 / r - 1.0) for r in ratios) / len(ratios)
    return MemoryCalibration(scale, band, len(ratios), mape)


# --------------------------------------------------------------------------------------------
# Published cross-GPU table: leave one GPU out
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LooRow:
    gpu: str
    architecture: str
    workload: str
    precision: str
    measured: float
    transfer: float
    baseline: float
    method: str


@dataclass(frozen=True, slots=True)
class LooReport:
    rows: tuple[LooRow, ...]
    transfer_mape: float
    baseline_mape: float
    transfer_worst: float
    baseline_worst: float
    by_workload: dict[str, tuple[float, float]] = field(default_factory=dict)


def _published_specs() -> dict[str, GpuSpec]:
    from service.core.published.lambda_pytorch_train import GPUS

    out: dict[str, GpuSpec] = {}
    for name, g in GPUS.items():
        peaks = {"fp16": g["fp16_tflops"], "bf16": g["fp16_tflops"], "fp32": g["fp32_tflops"]}
        peaks["tf32"] = g["tf32_tflops"] if g["tf32_tflops"] is not None else g["fp32_tflops"]
        out[name] = GpuSpec(slug=name, name=name, architecture=g["architecture"], peaks=peaks,
                            bandwidth_gb_per_s=g["bandwidth_gb_per_s"],
                            usable_memory_bytes=g["memory_gb"] * 10**9)
    return out


def _published_points(workload: str, precision: str) -> list[TimedPoint]:
    """Published throughput turned into step times at the published batch size."""
    from service.core.published.lambda_pytorch_train import GPUS, WORKLOADS

    specs = _published_specs()
    w = WORKLOADS[workload]
    model = get_model(str(w["model"]))
    prec = "amp_fp16" if precision == "fp16" else "tf32"
    pts: list[TimedPoint] = []
    for name, g in GPUS.items():
        thr = g["fp16" if precision == "fp16" else "fp32"][workload]
        if thr <= 0:
            continue
        batch = g["batch_fp16"][workload]
        if precision != "fp16":
            batch = max(1, batch // 2)
        seq = int(w["seq_len"]) or 1
        cfg = TrainConfig(model=model, precision=prec, batch_size=batch, seq_len=seq,
                          optimizer="sgd" if workload == "resnet50" else "adamw")
        spec = specs[name]
        if precision != "fp16" and g["tf32_tflops"] is None:
            cfg = replace(cfg, precision="fp32")
        pts.append(TimedPoint(cfg, spec, batch / thr))
    return pts


def published_leave_one_out(workloads: Sequence[str] = ("resnet50", "bert_large_squad", "bert_base_squad"),
                            precisions: Sequence[str] = ("fp16", "fp32"),
                            groups: Sequence[str] = ("mm", "bw", "conv")) -> LooReport:
    """Predict each GPU of the published table from the others, for each workload/precision.

    Transfer: fit ``groups`` multipliers on the other GPUs (all architectures), then correct by
    the geometric-mean residual of the same-architecture GPUs among them when there are any
    (shrunk by ``n/(n+1)``). Baseline: geometric mean over the other GPUs of
    ``throughput_other x peak_target / peak_other`` (dense peak of the precision used).
    Errors are on throughput, absolute percentage.
    """
    rows: list[LooRow] = []
    by_wl: dict[str, tuple[float, float]] = {}
    for wl in workloads:
        for prec in precisions:
            pts = _published_points(wl, prec)
            wl_rows: list[LooRow] = []
            for i, target in enumerate(pts):
                others = pts[:i] + pts[i + 1:]
                cal = fit_time(others, groups=groups, prior_weight=0.01)
                e = cal.efficiencies
                same = [p for p in others if p.gpu.family == target.gpu.family]
                pred_t = predict_time(target, e)
                method = "cross-architecture"
                if same:
                    res = [math.log(p.value_s / predict_time(p, e)) for p in same]
                    k = sum(res) / len(res) * len(res) / (len(res) + 1)
                    pred_t *= math.exp(k)
                    method = "same-architecture"
                batch = target.config.batch_size
                thr_meas = batch / target.value_s
                thr_pred = batch / pred_t
                pk = target.config.precision
                logs = []
                for o in others:
                    ratio = target.gpu.require_peak(pk) / o.gpu.require_peak(o.config.precision)
                    logs.append(math.log(o.config.batch_size / o.value_s * ratio))
                thr_base = math.exp(sum(logs) / len(logs))
                wl_rows.append(LooRow(target.gpu.slug, target.gpu.family, wl, prec,
                                      thr_meas, thr_pred, thr_base, method))
            rows.extend(wl_rows)
            t = sum(abs(r.transfer / r.measured - 1) for r in wl_rows) / len(wl_rows)
            b = sum(abs(r.baseline / r.measured - 1) for r in wl_rows) / len(wl_rows)
            by_wl[f"{wl}/{prec}"] = (t, b)
    te = [abs(r.transfer / r.measured - 1) for r in rows]
    be = [abs(r.baseline / r.measured - 1) for r in rows]
    return LooReport(tuple(rows), sum(te) / len(te), sum(be) / len(be), max(te), max(be), by_wl)


# --------------------------------------------------------------------------------------------
# From benchmark results (vocabulary parameters) to core inputs
# --------------------------------------------------------------------------------------------


def config_from_benchmark(workload: str, params: Mapping[str, object],
                          ) -> TrainConfig | InferenceConfig | BatchInferenceConfig | None:
    """The core configuration a benchmark cell measures (canonical vocabulary parameters), or
    ``None`` for workloads the estimator does not model (``gemm``, ``memory-bandwidth``,
    ``collective``). Raises ``ModelNotFound`` / ``InvalidConfiguration`` for parameters it
    cannot represent."""
    from service.core.memory import train_config_from_parameters
    from service.core.models import CnnSpec, DecoderSpec, EncoderSpec

    def num(key: str, default: int) -> int:
        v = params.get(key, default)
        return int(v) if isinstance(v, int | float | str) else default

    if workload == "llm-train":
        return train_config_from_parameters(params)
    if workload == "bert-large-train":
        return TrainConfig(model=get_model("bert-large"), precision=str(params["precision"]),
                           batch_size=num("batch_size", 1), seq_len=num("seq_len", 512))
    if workload == "resnet50-train":
        return TrainConfig(model=get_model("resnet50"), precision=str(params["precision"]),
                           batch_size=num("batch_size", 1), seq_len=1, optimizer="sgd")
    if workload == "bert-large-infer":
        enc = get_model("bert-large")
        assert isinstance(enc, EncoderSpec)
        return BatchInferenceConfig(model=enc, precision=str(params["precision"]), batch_size=num("batch_size", 1),
                                    seq_len=num("seq_len", 512))
    if workload == "resnet50-infer":
        cnn = get_model("resnet50")
        assert isinstance(cnn, CnnSpec)
        return BatchInferenceConfig(model=cnn, precision=str(params["precision"]), batch_size=num("batch_size", 1),
                                    seq_len=1)
    if workload == "llm-infer":
        m = get_model(str(params["model"]))
        if not isinstance(m, DecoderSpec):
            return None
        return InferenceConfig(model=m, precision=str(params.get("precision", "bf16")),
                               quant_method=str(params.get("quant_method", "none")),
                               batch_size=num("batch_size", 1), input_len=num("input_len", 1),
                               output_len=num("output_len", 1),
                               engine=str(params.get("engine", "hf-transformers")))
    return None


def timed_points_from_result(workload: str, params: Mapping[str, object], gpu: GpuSpec,
                             step_time_s: float | None, metrics: Mapping[str, float]) -> list[TimedPoint]:
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

TIMED_WORKLOADS: tuple[str, ...] = ("llm-train", "llm-infer", "bert-large-train", "resnet50-train",
                                     "bert-large-infer", "resnet50-infer")
CALIBRATED_WORKLOADS: tuple[str, ...] = (*TIMED_WORKLOADS, "gemm")
"""Workloads whose cells calibration reads: the timed workloads it fits (training, eager
``llm-infer``, encoder/CNN batch inference), and ``gemm``, whose measured TFLOP/s per precision
transfer a fit to a precision without points (:func:`transfer_precision`)."""
MIN_POINTS_TO_FIT = 3
PRECISION_TRANSFER_BAND_FACTOR = 1.5
"""Band widening for a fit carried to another precision by the measured GEMM ratio (one step
from the data, like a same-architecture GPU transfer)."""


def transfer_precision(cal: Calibration, gpu: GpuSpec, precision: str,
                       gemm_tflops: Mapping[str, float]) -> Calibration | None:
    """``cal`` (fitted on another precision family of ``gpu``) carried to ``precision``: the
    compute-bound groups (matmuls, attention, convolutions) scaled by the GEMM rate the agent
    measured on this GPU for the two precisions, ``gemm[target] / gemm[source]``; the
    memory-bound phases keep their bandwidth efficiency (the model already counts their bytes
    per element for the precision); host costs unchanged. ``None`` without both GEMM rates or
    datasheet peaks. Provenance ``transferred``, naming the source precision."""
    from service.core.precision import PEAK_KEY

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
        cal, efficiencies=eff, band=(min(0.9, lo * k), hi * k), provenance="transferred",
        family=precision_family(precision),
        notes=(*cal.notes, f"transferred from {source_key} on {gpu.slug}: compute scaled by the measured GEMM "
                           f"ratio {target_key}/{source_key} = {g_t:.0f}/{g_s:.0f} TFLOP/s"),
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
            points.extend(timed_points_from_result(
                m.workload, m.params, m.gpu, m.medians.get("step_time_s"), m.medians))
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
        default_factory=dict, compare=False, repr=False)

    def pick(self, gpu: GpuSpec, workload: str, precision: str) -> Calibration | None:
        """This GPU's own fit for the precision family; else another family's fit on this GPU
        carried over by the measured GEMM ratio (:func:`transfer_precision`); else the
        best-populated fit of the same architecture, else of any architecture, transferred
        (:func:`transfer`). Memoised per (GPU, workload, precision): the set is immutable, so
        the answer is too."""
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
            candidates = [(k, c) for k, c in self.by_key.items() if k[1] == workload and k[2] == fam]
            if candidates:
                same = [c for k, c in candidates if self.families.get(k[0]) == gpu.family]
                chosen = transfer(max(same or [c for _, c in candidates], key=lambda c: c.n_points), gpu)
        self._picked[memo] = chosen
        return chosen

    def host_profile(self, workload: str, precision: str) -> HostProfile | None:
        """The host side of eager PyTorch for ``workload`` (``dispatch_s``, ``step_s``) from the
        best-populated fit of that workload and precision family, untransferred: a property of
        the engine and the host that measured it, applied to every GPU alike (DESIGN
        "Estimation"), never scaled by GPU architecture. None without a fit."""
        fam = precision_family(precision)
        fits = [(k, c) for k, c in self.by_key.items() if k[1] == workload and k[2] == fam]
        if not fits:
            return None
        _, best = max(fits, key=lambda kc: (kc[1].n_points, kc[0][0]))
        e = best.efficiencies
        return HostProfile(e.dispatch_s, e.step_s, f"eager PyTorch on the host of {', '.join(best.source_gpus)}")

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
    precision transfer."""
    groups: dict[GroupKey, list[CellMeasurement]] = {}
    for m in cells:
        key = group_of(m)
        if key is not None:
            groups.setdefault(key, []).append(m)
    base = CalibrationSet(gemm_tflops=gemm_rates(cells))
    return base.refitted({k: sorted(v, key=_cell_order) for k, v in groups.items()})


def _cell_order(m: CellMeasurement) -> str:
    return json.dumps(m.params, sort_keys=True, default=str)
