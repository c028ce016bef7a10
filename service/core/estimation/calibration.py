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
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from service.core.catalog.models import DecoderSpec, ModelNotFound, get_model
from service.core.catalog.precision import precision_family
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.accuracy import accuracy_for
from service.core.estimation.memory import (
    BatchInferenceConfig,
    InferenceConfig,
    TrainConfig,
    estimate_training,
)
from service.core.estimation.performance import (
    HOST_DISPATCH_MEASURED_S,
    SPEC_BAND,
    SPEC_DEFAULTS,
    Efficiencies,
    estimate_step,
)
from service.core.estimation.serving import HostProfile, estimate_batch_inference, estimate_serving
from service.core.estimation.transfer import arch_key, arch_name, published_model, transfer_family
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
    scope: str = "same-gpu"
    """How the efficiencies reach the GPU they are applied to: ``same-gpu``,
    ``same-architecture``, ``cross-architecture``, ``unseen-architecture`` (a transfer) or
    ``published-anchor``; with the provenance and the GPU's architecture it keys the accuracy
    table."""
    sources: tuple[str, ...] = ()
    """Published tables the efficiencies lean on (ids of ``service.core.evidence.published``)."""
    source: GpuSpec | None = field(default=None, compare=False, repr=False)
    """The GPU the efficiencies were fitted on (the one with most points), for transfers."""

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


_SEQUENCE_CONFIGS = (TrainConfig, BatchInferenceConfig)
"""Configurations with a ``seq_len`` (a tuple for ``isinstance``: ``A | B`` builds a union per call)."""


@dataclass(frozen=True, slots=True)
class MemoryCalibration:
    """Multiplicative correction of the analytic peak and the band of its residuals."""

    scale: float
    band: tuple[float, float]
    n_points: int
    mape: float


def _shape_of(config: TrainConfig | InferenceConfig | BatchInferenceConfig) -> tuple[str, int, int]:
    """(model id, sequence length, tokens per step) of a configuration."""
    if isinstance(config, _SEQUENCE_CONFIGS):
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


def _nelder_mead(
    f: Callable[[list[float]], float], x0: list[float], step: float = 0.3, iters: int = 250, tol: float = 1e-7
) -> list[float]:
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


def band_from_log_residuals(
    residuals: Sequence[float], floor: float = BAND_FLOOR, n_params: int = 0
) -> tuple[float, float]:
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


def fit_time(
    points: Sequence[TimedPoint],
    base: Efficiencies = SPEC_DEFAULTS,
    groups: Iterable[str] = ("mm", "attn", "bw", "dispatch"),
    prior_weight: float = PRIOR_WEIGHT,
) -> Calibration:
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
    center = _prior_center(pts, base)
    c0 = [center.get(n, 0.0) for n in names]

    def objective(x: list[float]) -> float:
        e = apply_multipliers(base, {n: math.exp(v) for n, v in zip(names, x, strict=True)})
        err = 0.0
        for p in pts:
            r = math.log(predict_time(p, e) / p.value_s)
            err += p.weight * r * r
        return err / wsum + prior_weight * sum(
            scale.get(n, 1.0) * (v - c) ** 2 for n, v, c in zip(names, x, c0, strict=True)
        )

    # The host-dispatch floor enters through max(GPU, host): from the spec start it may not bind
    # anywhere, and the simplex never finds it. Start also from dispatch x e and x e^2.
    starts = [list(c0)]
    if "dispatch" in names:
        i = names.index("dispatch")
        for v in (1.0, 2.0):
            x0 = list(c0)
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
    counts: dict[str, int] = {}
    for p in pts:
        counts[p.gpu.slug] = counts.get(p.gpu.slug, 0) + 1
    main = max(gpus, key=lambda g: (counts[g], g))
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
        source=next(p.gpu for p in pts if p.gpu.slug == main),
    )


def _prior_center(pts: Sequence[TimedPoint], base: Efficiencies) -> dict[str, float]:
    """Log multipliers the prior pulls toward: 0 (the spec default), except the host's dispatch
    cost for decoder training points, whose prior centre is the host time per kernel measured
    on the H200 host (:data:`~service.core.estimation.performance.HOST_DISPATCH_MEASURED_S`): a
    fit whose points are not launch-bound cannot pin it, and 6 us is far from any host measured."""
    if all(isinstance(p.config, TrainConfig) and isinstance(p.config.model, DecoderSpec) for p in pts):
        return {"dispatch": math.log(HOST_DISPATCH_MEASURED_S / base.dispatch_s)}
    return {}


def _scale_efficiencies(e: Efficiencies, compute: float, memory: float, source: str) -> Efficiencies:
    """``e`` with every compute efficiency (matmul, attention, convolution) times ``compute`` and
    the bandwidth efficiency times ``memory``, each capped at 0.98 of the ceiling."""
    return replace(
        e,
        mm={k: min(0.98, v * compute) for k, v in e.mm.items()},
        attn=min(0.98, e.attn * compute),
        conv=min(0.98, e.conv * compute),
        bw=min(0.98, e.bw * memory),
        source=source,
    )


def _combine(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """Two independent relative bands combined in quadrature in log space."""
    lo = math.hypot(-math.log(1.0 - min(a[0], 0.9)), -math.log(1.0 - min(b[0], 0.9)))
    hi = math.hypot(math.log1p(a[1]), math.log1p(b[1]))
    return (min(0.9, 1.0 - math.exp(-lo)), math.expm1(hi))


def transfer(
    cal: Calibration, target: GpuSpec, precision: str | None = None, workload: str = "*"
) -> Calibration:
    """Efficiencies for ``target`` from a calibration made on another GPU.

    Same GPU: unchanged (``interpolated``). Otherwise carried over by the published
    transfer model (:meth:`service.core.estimation.transfer.TransferModel.factors`) for the precision's
    family: within one architecture only the sustained clock under the power cap differs;
    across architectures the fitted compute and memory factors apply (the memory factor at most 1
    for :data:`STREAMING_WORKLOADS`); an architecture without published data is left
    uncorrected. Provenance ``published`` when the published fit supplied a factor (naming the
    tables in ``sources``), else ``transferred``. The band is the calibration's combined with the
    held-out error of that kind of transfer for the target's architecture (at least
    :data:`CROSS_ARCH_BAND` when the architecture is unseen; the old widening rules when no
    accuracy table ships).
    """
    if target.slug in cal.source_gpus and len(cal.source_gpus) == 1:
        return cal
    family = transfer_family(precision) if precision else ("fp32" if cal.family == "fp32" else "fp16/bf16")
    model = published_model()
    source = cal.source
    if source is None:
        f_compute = f_memory = 1.0
        scope = "same-architecture" if target.family == cal.architecture else "unseen-architecture"
        factors = None
    else:
        factors = model.factors(source, target, family)
        f_compute, f_memory, scope = factors.compute, factors.memory, factors.scope
        if scope == "same-gpu":  # a multi-GPU calibration applied to one of its GPUs
            scope = "same-architecture"
    streaming = workload in STREAMING_WORKLOADS and f_memory > 1.0
    if streaming:
        f_memory = 1.0
    ta = arch_key(target)
    acc = accuracy_for(scope, ta, workload)
    lo, hi = cal.band
    if acc is not None:
        band = _combine(cal.band, acc.band())
        if scope == "unseen-architecture":
            band = (max(band[0], CROSS_ARCH_BAND[0]), max(band[1], CROSS_ARCH_BAND[1]))
    elif scope == "same-architecture":
        band = (min(0.9, lo * SAME_ARCH_BAND_FACTOR), hi * SAME_ARCH_BAND_FACTOR)
    else:
        band = (max(CROSS_ARCH_BAND[0], lo * 2), max(CROSS_ARCH_BAND[1], hi * 2))
    src = ", ".join(cal.source_gpus)
    sa = arch_key(source) if source is not None else cal.architecture
    if factors is None:
        note = f"from {src}, efficiencies unchanged ({cal.architecture} -> {target.family})"
        tables: tuple[str, ...] = ()
    elif scope == "unseen-architecture":
        missing = arch_name(ta) if not model.knows(target) else arch_name(sa)
        note = (
            f"from {src}: {missing} has no published training data, so {target.slug} is assumed to "
            f"reach the same fractions of its datasheet peaks and bandwidth as {src} (no correction)"
        )
        tables = ()
    else:
        what = (
            "same architecture"
            if scope == "same-architecture"
            else f"across architectures, {arch_name(sa)} -> {arch_name(ta)}"
        )
        note = (
            f"{what}, from {src}: compute x{f_compute:.2f}, memory x{f_memory:.2f}"
            f" (sustained clock under the power cap {factors.clock_target:.2f} vs {factors.clock_source:.2f}"
            f" of boost; per-architecture factors fitted jointly on the published tables "
            f"{', '.join(model.tables)})"
        )
        if streaming:
            note += (
                "; the memory factor is capped at 1: its gain is cache reuse of CNN/BERT activations, "
                "and this workload streams weights, optimizer state or KV cache far larger than any L2"
            )
        tables = model.tables
    # the answer leans on the published tables whenever their fit supplied a factor (issue 13:
    # such answers say 'published' and name the tables); a transfer within the architecture
    # between GPUs of the same peaks and power (factors within 0.5 % of 1), or to an architecture
    # the tables do not hold, leans on none
    leans = bool(tables) and (
        abs(f_compute - 1.0) > 0.005 or abs(f_memory - 1.0) > 0.005 or scope == "cross-architecture"
    )
    if not leans:
        tables = ()
    else:
        note += "; provenance 'published': the cross-GPU ratio comes from the published tables"
    return replace(
        cal,
        efficiencies=_scale_efficiencies(cal.efficiencies, f_compute, f_memory, "transferred"),
        band=band,
        provenance="published" if leans else "transferred",
        scope=scope,
        sources=tables,
        notes=(*cal.notes, note),
    )


STREAMING_WORKLOADS: tuple[str, ...] = ("llm-train", "llm-infer")
"""Workloads whose memory-bound traffic streams tensors far larger than any on-chip cache
(weights, optimizer state, KV cache): a transferred memory factor above 1 -- effective bandwidth
above the DRAM ratio, which only cache reuse can give -- is capped at 1 for them."""

PUBLISHED_WORKLOADS: dict[str, str] = {
    "resnet50-train": "resnet50-train",
    "bert-large-train": "bert-large-squad-finetune",
}
"""Estimator workload -> the published workload that can anchor it (BERT-Large MLM training
and SQuAD fine-tuning share the encoder; the heads differ by a few per cent of the FLOPs)."""


def published_calibration(gpu: GpuSpec, workload: str, precision: str) -> Calibration | None:
    """Efficiencies anchored on the newest shipped table holding ``workload`` in the
    precision's family, at ``gpu``'s architecture factors (provenance ``published``, the table
    named); None when no table does. Used only where no measurement fits the (workload, family):
    the table's stack (its year's framework) sets the speed, so its band is the held-out error of
    such anchors and the note says which stack it is."""
    from service.core.estimation.transfer import fit_points
    from service.core.evidence.published import get_table

    pw = PUBLISHED_WORKLOADS.get(workload)
    if pw is None:
        return None
    family = transfer_family(precision)
    model = published_model()
    anchor = model.anchor(pw, family)
    if anchor is None:
        return None
    tid, kc, km, kh = anchor
    kc *= math.exp(model.compute_log(gpu, family))
    km *= math.exp(model.memory_log(gpu))
    base = SPEC_DEFAULTS
    e = replace(
        base,
        mm={k: v * kc for k, v in base.mm.items()},
        attn=base.attn * kc,
        conv=base.conv * kc,
        bw=base.bw * km,
        dispatch_s=base.dispatch_s * kh,
        step_s=base.step_s * kh,
        source="published",
    )
    acc = accuracy_for("published-anchor", arch_key(gpu), workload)
    band = acc.band() if acc is not None else CROSS_ARCH_BAND
    band = (max(band[0], BAND_FLOOR), max(band[1], BAND_FLOOR))
    table = get_table(tid)
    gpus = tuple(sorted({p.gpu.slug for p in fit_points() if p.group == (tid, pw, family)}))
    factors = (
        f"at {arch_name(arch_key(gpu))} factors of the joint transfer fit"
        if model.knows(gpu)
        else f"at the average architecture's factors ({arch_name(arch_key(gpu))} has no published data)"
    )
    note = (
        f"anchored on the published table '{table.title}' ({table.date}; {table.engine}): "
        f"{pw} in {family} on {len(gpus)} GPUs, {factors} -- that stack's speed, not today's"
    )
    return Calibration(
        efficiencies=e,
        band=band,
        multipliers={},
        source_gpus=gpus,
        architecture=gpu.family,
        n_points=len(gpus),
        fit_mape=0.0,
        provenance="published",
        family=precision_family(precision),
        notes=(note,),
        scope="published-anchor",
        sources=(tid,),
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
    from service.core.catalog.models import CnnSpec, DecoderSpec, EncoderSpec
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
        best-populated fit of the same architecture, else of any architecture, transferred
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
            candidates = [(k, c) for k, c in self.by_key.items() if k[1] == workload and k[2] == fam]
            if candidates:
                same = [c for k, c in candidates if self.families.get(k[0]) == gpu.family]
                best = max(same or [c for _, c in candidates], key=lambda c: (c.n_points, c.source_gpus))
                chosen = transfer(best, gpu, precision, workload)
            else:
                chosen = published_calibration(gpu, workload, precision)
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
