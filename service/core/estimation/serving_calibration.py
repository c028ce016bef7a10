"""Calibrate the continuous-batching engine class on published tables, and check it GPU by GPU.

Inputs are the published TensorRT-LLM tables of :mod:`service.core.evidence.published` (NVIDIA's own
numbers, each with its source and stack) and the GPU specs of the catalog (the caller passes
them: the core does no I/O). Nothing here is ``measured``: an engine-class figure is
``published`` (fitted on published tables of that engine) or ``transferred`` (applied to
another engine of the class, vLLM).

Points (:func:`published_points`):

* ``offline`` -- ``trtllm-bench throughput`` output tokens/s of one TP group, every request
  queued at once (v0.14, v0.17 tables): :func:`~service.core.estimation.serving.offline_throughput`;
* ``static`` -- ``gptSessionBenchmark`` output tokens/s per GPU at a fixed static batch (v0.9):
  :func:`~service.core.estimation.serving.static_batch`;
* ``ttft`` -- first-token latency of a batch-1 request (v0.9);
* ``online_ttft`` / ``online_itl`` / ``online_rps`` -- mean TTFT, mean inter-token latency and
  achieved requests/s at a fixed offered QPS (v0.14 Triton backend, H100/H200 only): the
  queueing model's validation set, never used by :func:`fit_engine`.

Rows a preset cannot represent (GPT-J, Falcon, Mixtral-8x22B), rows without a catalogued GPU
(the v0.9 "A100" of unstated variant, GH200) are skipped and counted. Duplicate rows of the
same architecture in one table (``llama3-70b`` and ``llama3.1-70b`` share a shape) keep one.

Fitting (:func:`fit_engine`): multipliers on the fields of
:data:`~service.core.estimation.serving.CONTINUOUS_SPEC`, searched in log space by Nelder-Mead on the mean
squared log error (each point kind weighted equally in total), with a weak prior toward the
spec defaults. Every multiplier scales a datasheet figure identically on every GPU: a fitted
constant cannot make a faster GPU slower.

Leave one GPU out (:func:`leave_one_gpu_out`): for each catalogued GPU, fit on every other
GPU's rows and predict this GPU's; the datasheet baseline predicts each row from the same
configuration on the other GPUs scaled by ``sqrt(peak ratio x bandwidth ratio)`` (dense peak of
each row's precision), geometric mean over those GPUs. Both are scored on the same rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Final, Literal

from service.core.catalog.models import DecoderSpec, ModelNotFound, get_model
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.calibration_fit import _nelder_mead
from service.core.estimation.memory import InferenceConfig
from service.core.estimation.serving import (
    CONTINUOUS_SPEC,
    Deployment,
    EngineEfficiencies,
    Workload,
    concurrency_cap,
    deployment,
    iteration_s,
    mean_iteration_s,
    serve_at_rate,
)
from service.core.evidence.published import TABLES, PublishedRow, PublishedTable

__all__ = [
    "FIT_FIELDS",
    "EngineFit",
    "LooResult",
    "ServingPoint",
    "fit_engine",
    "leave_one_gpu_out",
    "predict",
    "published_points",
]

PointKind = Literal["offline", "static", "ttft", "online_ttft", "online_itl", "online_rps"]
FIT_KINDS: tuple[str, ...] = ("offline", "static", "ttft")
ONLINE_KINDS: tuple[str, ...] = ("online_ttft", "online_itl", "online_rps")

FIT_FIELDS: tuple[str, ...] = (
    "mm16",
    "mm8",
    "attn",
    "bw",
    "step_s",
    "request_s",
    "allreduce_s",
    "comm",
    "reserve_gib",
)
"""Fields of :class:`~service.core.estimation.serving.EngineEfficiencies` the published tables inform."""

_CAPPED = {"mm16", "mm8", "attn", "bw", "comm"}
PRIOR_WEIGHT = 0.01


@dataclass(frozen=True, slots=True)
class ServingPoint:
    """One published figure turned into a configuration the model predicts. ``value`` in SI:
    tokens/s (the whole TP group for ``offline``, per GPU for ``static``), seconds, requests/s."""

    table_id: str
    kind: PointKind
    config: InferenceConfig
    gpu: GpuSpec
    value: float
    request_rate: float | None = None
    deploy: Deployment | None = field(default=None, compare=False, repr=False)
    cap: tuple[int, int] = (0, 0)

    @property
    def label(self) -> str:
        c = self.config
        rate = f" qps{self.request_rate:g}" if self.request_rate else ""
        batch = f" b{c.batch_size}" if self.kind == "static" else ""
        return (
            f"{self.table_id} {self.kind} {c.model.id} {c.precision} tp{c.tensor_parallel} "
            f"{c.input_len}/{c.output_len}{batch}{rate}"
        )


def _config(r: PublishedRow, model: DecoderSpec, **kw: int) -> InferenceConfig:
    fp8 = r.precision == "fp8"
    kv = 1.0 if r.kv_cache_dtype == "fp8" else 0.0
    return InferenceConfig(
        model=model,
        precision="fp8" if fp8 else ("fp16" if r.precision == "fp16" else "bf16"),
        batch_size=kw.get("batch", 1),
        input_len=r.input_len or 1,
        output_len=kw.get("out", r.output_len or 1),
        engine="tensorrt-llm",
        tensor_parallel=r.tp,
        kv_cache_bytes_per_element=kv,
    )


CALIBRATION_TABLES: Final = frozenset(
    {
        "trtllm-perf-overview-v0.9",
        "trtllm-perf-overview-v0.14",
        "trtllm-perf-overview-v0.17",
        "trtllm-online-serving-v0.14",
    }
)
"""The TensorRT-LLM tables of the engine class (C++ runtime, FP8 / 16-bit engines). The v1.0
Perf Overview ran the PyTorch backend with NVFP4 checkpoints, which the class's weight formats
do not describe: it is a cross-GPU transfer source (``transfer_sources``) only."""


def published_points(
    gpus: Mapping[str, GpuSpec],
    tables: Iterable[PublishedTable] = TABLES,
) -> tuple[list[ServingPoint], dict[str, int]]:
    """Serving points of the published TensorRT-LLM tables (module docstring), and the count of
    rows skipped by reason."""
    points: list[ServingPoint] = []
    skipped: dict[str, int] = {}
    seen: set[tuple[object, ...]] = set()
    for t in tables:
        if t.kind != "serving" or t.id not in CALIBRATION_TABLES:
            continue
        points.extend(_table_points(t, gpus, seen, skipped))
    return _deployed(points, skipped), skipped


def _skip(skipped: dict[str, int], reason: str) -> None:
    skipped[reason] = skipped.get(reason, 0) + 1


def _table_points(
    t: PublishedTable, gpus: Mapping[str, GpuSpec], seen: set[tuple[object, ...]], skipped: dict[str, int]
) -> list[ServingPoint]:
    """One table's points: its rows on catalogued GPUs and preset decoders, a configuration seen
    in an earlier row or table once; the online rows (one metric a row) gathered per request
    rate and turned into points after the others (:func:`_online_points`)."""
    points: list[ServingPoint] = []
    online: dict[tuple[object, ...], dict[str, float]] = {}
    for r in t.rows:
        if r.slug is None or r.slug not in gpus:
            _skip(skipped, "GPU not catalogued (or variant not stated)")
            continue
        try:
            m = get_model(r.model)
        except ModelNotFound:
            _skip(skipped, f"model not a preset ({r.model})")
            continue
        if not isinstance(m, DecoderSpec):
            continue
        if r.workload == "llm-serve-online":
            key = (r.slug, m.id, r.tp, r.input_len, r.output_len, r.request_rate)
            online.setdefault(key, {})[r.metric] = r.value
            continue
        sig = (
            t.id,
            r.slug,
            r.precision,
            m.describe(),
            r.tp,
            r.input_len,
            r.output_len,
            r.metric,
            r.batch_size,
        )
        if sig in seen:
            _skip(skipped, "same architecture, same configuration (duplicate row)")
            continue
        seen.add(sig)
        p = _row_point(t, r, m, gpus[r.slug], skipped)
        if p is not None:
            points.append(p)
    points.extend(_online_points(t, online, gpus))
    return points


def _row_point(
    t: PublishedTable, r: PublishedRow, m: DecoderSpec, gpu: GpuSpec, skipped: dict[str, int]
) -> ServingPoint | None:
    """An offline, static-batch or time-to-first-token row as a point; None (counted) for a
    metric the serving model does not predict or a configuration it refuses."""
    try:
        if r.workload == "llm-serve-offline" and r.metric == "output_tokens_per_s":
            return ServingPoint(t.id, "offline", _config(r, m), gpu, r.value)
        if r.workload == "llm-serve-static-batch" and r.metric == "output_tokens_per_s_per_gpu":
            return ServingPoint(t.id, "static", _config(r, m, batch=r.batch_size or 1), gpu, r.value)
        if r.workload == "llm-serve-static-batch" and r.metric == "ttft_ms":
            return ServingPoint(t.id, "ttft", _config(r, m, out=1), gpu, r.value / 1e3)
    except InvalidConfiguration:
        _skip(skipped, "configuration the model refuses")
        return None
    _skip(skipped, f"metric not modelled ({r.workload}/{r.metric})")
    return None


def _online_points(
    t: PublishedTable, online: Mapping[tuple[object, ...], Mapping[str, float]], gpus: Mapping[str, GpuSpec]
) -> list[ServingPoint]:
    """The online rows of one table: the saturated request rate (no rate stated), or the TTFT
    and inter-token latency measured at a stated rate."""
    points: list[ServingPoint] = []
    for (slug, mid, tp, isl, osl, rate), metrics in online.items():
        m = get_model(str(mid))
        assert isinstance(m, DecoderSpec)
        cfg = InferenceConfig(
            model=m,
            precision="bf16",
            input_len=int(str(isl)),
            output_len=int(str(osl)),
            engine="tensorrt-llm",
            tensor_parallel=int(str(tp)),
        )
        gpu = gpus[str(slug)]
        rr = float(str(rate)) if rate is not None else None
        if rr is None:
            points.append(ServingPoint(t.id, "online_rps", cfg, gpu, metrics["requests_per_s"], None))
            continue
        points.append(ServingPoint(t.id, "online_ttft", cfg, gpu, metrics["ttft_ms"] / 1e3, rr))
        points.append(ServingPoint(t.id, "online_itl", cfg, gpu, metrics["itl_ms"] / 1e3, rr))
    return points


def _deployed(points: list[ServingPoint], skipped: dict[str, int]) -> list[ServingPoint]:
    """Each point with its deployment and concurrency cap; a configuration the model refuses, or
    an offline point whose model leaves no KV cache, is counted and dropped."""
    out: list[ServingPoint] = []
    for p in points:
        try:
            d = deployment(p.config, p.gpu)
        except (InvalidConfiguration, MissingFigure):
            _skip(skipped, "configuration the model refuses")
            continue
        offline = p.kind in ("offline", "online_rps")
        cap = concurrency_cap(d, float(p.config.input_len), float(p.config.output_len), offline=offline)
        if p.kind in ("offline", "online_rps") and cap[0] < 1:
            _skip(skipped, "no KV cache left after the weights (model does not fit)")
            continue
        out.append(replace(p, deploy=d, cap=cap))
    return out


def predict(p: ServingPoint, e: EngineEfficiencies, harness_s: float = 0.0) -> float:
    """The model's value for ``p`` under ``e`` (same unit as ``p.value``); ``harness_s`` adds a
    fixed latency per request for the online tables (the Triton / HTTP front end)."""
    d = p.deploy or deployment(p.config, p.gpu)
    c = p.config
    n_in, n_out = float(c.input_len), float(max(c.output_len, 1))
    if p.kind in ("offline", "online_rps"):
        n, budget = concurrency_cap(d, n_in, n_out, offline=True, reserve_gib=e.reserve_gib)
        if n < 1:
            return 0.0
        t = mean_iteration_s(d, e, float(n), n_in + n_out / 2.0, n / n_out, n_in, budget)
        return n / t if p.kind == "offline" else n / (n_out * t)
    if p.kind == "static":
        b = float(c.batch_size)
        ttft = iteration_s(d, e, 0.0, 0.0, b * n_in, n_in / 2.0, b) + e.request_s
        tpot = iteration_s(d, e, b, n_in + n_out / 2.0)
        return b * n_out / (ttft + (n_out - 1.0) * tpot) / c.tensor_parallel
    if p.kind == "ttft":
        return iteration_s(d, e, 0.0, 0.0, n_in, n_in / 2.0, 1.0) + e.request_s
    assert p.request_rate is not None
    r = serve_at_rate(
        c, p.gpu, p.request_rate, Workload(n_in, n_out), replace(e, request_s=e.request_s + harness_s), d
    )
    if p.kind == "online_ttft":
        return r.ttft_mean_s
    return r.tpot_mean_s


def _apply(
    base: EngineEfficiencies, names: Sequence[str], x: Sequence[float], source: str
) -> EngineEfficiencies:
    changes: dict[str, float | str] = {"source": source}
    for n, v in zip(names, x, strict=True):
        val = float(getattr(base, n)) * math.exp(v)
        changes[n] = min(val, 0.98) if n in _CAPPED else val
    return replace(base, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class EngineFit:
    efficiencies: EngineEfficiencies
    multipliers: Mapping[str, float]
    n_points: int
    fit_mape: Mapping[str, float]
    source_gpus: tuple[str, ...]


def _err(p: ServingPoint, e: EngineEfficiencies) -> float:
    pred = predict(p, e)
    if not (pred > 0 and math.isfinite(pred)):
        return 4.0
    return math.log(pred / p.value)


def fit_engine(
    points: Sequence[ServingPoint],
    base: EngineEfficiencies = CONTINUOUS_SPEC,
    names: Sequence[str] = FIT_FIELDS,
    prior_weight: float = PRIOR_WEIGHT,
    iters: int = 600,
    init: EngineEfficiencies | None = None,
) -> EngineFit:
    """Fit multipliers of ``names`` on the ``offline``/``static``/``ttft`` points (module
    docstring). Deterministic: a fixed start and a fixed number of simplex iterations. ``init``
    starts the simplex there (a refinement only: the drift test restarts from the committed
    figures)."""
    pts = [p for p in points if p.kind in FIT_KINDS]
    if not pts:
        raise ValueError("no published serving points to fit")
    kinds = {p.kind for p in pts}
    per_kind = {k: sum(1 for p in pts if p.kind == k) for k in kinds}
    weights = [1.0 / per_kind[p.kind] / len(kinds) for p in pts]

    def objective(x: list[float]) -> float:
        e = _apply(base, names, x, "fitting")
        s = 0.0
        for p, wt in zip(pts, weights, strict=True):
            r = _err(p, e)
            s += wt * r * r
        return s + prior_weight * sum(v * v for v in x)

    start = (
        [math.log(float(getattr(init, n)) / float(getattr(base, n))) for n in names]
        if init
        else [0.0] * len(names)
    )
    x = start if init else _nelder_mead(objective, start, step=0.4, iters=iters, tol=1e-9)
    x = _nelder_mead(objective, x, step=0.1, iters=iters // 2, tol=1e-10)
    e = _apply(base, names, x, "published")
    mape: dict[str, float] = {}
    for k in sorted(kinds):
        errs = [abs(predict(p, e) / p.value - 1.0) for p in pts if p.kind == k]
        mape[k] = sum(errs) / len(errs)
    return EngineFit(
        e,
        {n: math.exp(v) for n, v in zip(names, x, strict=True)},
        len(pts),
        mape,
        tuple(sorted({p.gpu.slug for p in pts})),
    )


# --------------------------------------------------------------------------------------------
# Leave one GPU out, with the datasheet baseline on the same rows
# --------------------------------------------------------------------------------------------


def _peak_of(p: ServingPoint) -> float:
    key = "fp8" if p.config.weight_format == "fp8" else ("fp16" if p.config.precision == "fp16" else "bf16")
    return p.gpu.require_peak(key)


def _config_key(p: ServingPoint) -> tuple[object, ...]:
    c = p.config
    return (
        p.table_id,
        p.kind,
        c.model.describe(),
        c.tensor_parallel,
        c.input_len,
        c.output_len,
        p.request_rate,
    )


def datasheet_baseline(target: ServingPoint, others: Sequence[ServingPoint]) -> float | None:
    """``value_other x sqrt(peak ratio x bandwidth ratio)`` (inverted for latencies), geometric
    mean over the other GPUs' points of the same configuration; None without a partner."""
    key = _config_key(target)
    logs = []
    latency = target.kind in ("ttft", "online_ttft", "online_itl")
    for o in others:
        if o.gpu.slug == target.gpu.slug or _config_key(o) != key:
            continue
        ratio = math.sqrt(
            _peak_of(target) / _peak_of(o) * target.gpu.require_bandwidth() / o.gpu.require_bandwidth()
        )
        logs.append(math.log(o.value / ratio if latency else o.value * ratio))
    if not logs:
        return None
    return math.exp(sum(logs) / len(logs))


@dataclass(frozen=True, slots=True)
class LooRow:
    point: ServingPoint
    predicted: float
    baseline: float | None

    @property
    def error(self) -> float:
        return self.predicted / self.point.value - 1.0

    @property
    def baseline_error(self) -> float | None:
        return None if self.baseline is None else self.baseline / self.point.value - 1.0


@dataclass(frozen=True, slots=True)
class LooResult:
    rows: tuple[LooRow, ...]
    fits: Mapping[str, EngineFit]
    harness_s: Mapping[str, float] = field(default_factory=dict)

    def summary(self, group: str = "family") -> dict[tuple[str, str], tuple[float, float | None, int, int]]:
        """(group value, metric) -> (model MAPE, baseline MAPE on the rows with a partner, n rows, n
        rows with a partner). ``group``: ``family`` (GPU architecture) or ``gpu``."""
        out: dict[tuple[str, str], tuple[float, float | None, int, int]] = {}
        keys: dict[tuple[str, str], list[LooRow]] = {}
        for r in self.rows:
            g = r.point.gpu.family if group == "family" else r.point.gpu.slug
            keys.setdefault((g, _metric(r.point)), []).append(r)
        for k, rows in sorted(keys.items()):
            paired = [r for r in rows if r.baseline is not None]
            m_all = sum(abs(r.error) for r in rows) / len(rows)
            b = sum(abs(r.baseline_error or 0.0) for r in paired) / len(paired) if paired else None
            out[k] = (m_all, b, len(rows), len(paired))
        return out


def _metric(p: ServingPoint) -> str:
    return {
        "offline": "throughput",
        "static": "throughput",
        "online_rps": "throughput",
        "ttft": "ttft",
        "online_ttft": "ttft",
        "online_itl": "tpot",
    }[p.kind]


def fit_harness(points: Sequence[ServingPoint], e: EngineEfficiencies) -> float:
    """The fixed per-request latency of a serving front end (Triton here), from the TTFT of its
    lowest-rate points: median of measured minus predicted (>= 0)."""
    low = [
        p for p in points if p.kind == "online_ttft" and p.request_rate is not None and p.request_rate <= 4
    ]
    diffs = sorted(p.value - predict(p, e) for p in low)
    if not diffs:
        return 0.0
    mid = (
        diffs[len(diffs) // 2]
        if len(diffs) % 2
        else 0.5 * (diffs[len(diffs) // 2 - 1] + diffs[len(diffs) // 2])
    )
    return max(0.0, mid)


def leave_one_gpu_out(
    points: Sequence[ServingPoint], base: EngineEfficiencies = CONTINUOUS_SPEC
) -> LooResult:
    """Each catalogued GPU predicted from an engine fit on the other GPUs' points (and, for the
    online table, a front-end latency fitted on the other GPU's lowest-rate TTFTs)."""
    rows: list[LooRow] = []
    fits: dict[str, EngineFit] = {}
    harness: dict[str, float] = {}
    gpus = sorted({p.gpu.slug for p in points})
    for g in gpus:
        train = [p for p in points if p.gpu.slug != g]
        test = [p for p in points if p.gpu.slug == g]
        if not [p for p in train if p.kind in FIT_KINDS]:
            continue
        fit = fit_engine(train, base)
        fits[g] = fit
        hs = fit_harness([p for p in train if p.kind in ONLINE_KINDS], fit.efficiencies)
        harness[g] = hs
        for p in test:
            pred = predict(p, fit.efficiencies, hs if p.kind in ONLINE_KINDS else 0.0)
            rows.append(LooRow(p, pred, datasheet_baseline(p, train)))
    return LooResult(tuple(rows), fits, harness)


def efficiencies_literal(e: EngineEfficiencies) -> str:
    """``EngineEfficiencies(...)`` source text of ``e`` (4 significant figures), for committing."""
    parts = []
    for f in fields(e):
        v = getattr(e, f.name)
        parts.append(f"{f.name}={v!r}" if isinstance(v, str) else f"{f.name}={float(f'{v:.4g}')!r}")
    return "EngineEfficiencies(" + ", ".join(parts) + ")"
