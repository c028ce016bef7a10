"""Plausibility bounds on a benchmark result: what a GPU (or ``gpu_count`` of them) can do at
all, from its catalog peak and memory bandwidth and the workload's arithmetic.

A rate above ``GENEROUS`` times the roofline bound, or more than ``SPAN`` below it, a time
shorter than the roofline allows (divided by ``GENEROUS``) or longer than a day, is
*implausible*: the result is kept but quarantined with the reason ``implausible`` and the
bound it broke, never aggregated. The bounds are deliberately loose -- they catch nonsense
(``1e308`` or ``5e-324`` tokens/s, a one-picosecond step), not slow hardware or a catalog
figure a few percent off: ``GENEROUS`` = 4 covers a catalog peak quoted with sparsity, an
MFU convention, a kernel beating a datasheet; ``SPAN`` = 10^6 covers a memory-bound batch-1
decode (~10^3 below the compute roof) with three orders to spare.

The minimal work per unit of a rate (so the *upper* bound is safe):

- ResNet-50 at 224x224: 4.1 GMAC forward = 8.2 GFLOP; inference >= 4e9, training >= 12e9
  FLOPs per image (He et al. 2016, table 1; training ~ 3x the forward pass);
- BERT-large (335M parameters): >= N x seq_len FLOPs per sequence for inference (the rule
  is 2N per token), >= 2 N x seq_len for training (6N per token);
- a decoder LLM: >= 2 N FLOPs per token (the forward pass alone; N = weights multiplied per
  token, ``ModelSpec.matmul_params_per_token``) and, decoding, every step reads the active
  weights at least once at 4 bits (0.5 B) each, shared by ``batch_size`` sequences;
- a GEMM: its precision's dense peak; a copy: the memory bandwidth; a collective: the memory
  bandwidth (no link is faster than local HBM).

Where a figure is unknown (no sourced peak or bandwidth, a model the catalog does not know)
the per-unit caps in :data:`ABSOLUTE` still apply. Pure: no DB, web or clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from service.core.catalog.models import ModelNotFound, get_model
from service.core.catalog.specs import GpuSpec
from service.core.catalog.vocabulary import VocabularyError, get_workload

GENEROUS = 4.0
SPAN = 1e6
DAY_S = 86_400.0

RESNET50_FLOPS_PER_IMAGE = {"infer": 4e9, "train": 12e9}
BERT_LARGE_PARAMS = 335e6
BYTES_PER_WEIGHT_MIN = 0.5  # 4-bit weights

ABSOLUTE: dict[str, tuple[float, float]] = {
    # per GPU, for a metric no physics bound applies to (unknown figures)
    "images/s": (1e-6, 1e8),
    "samples/s": (1e-6, 1e8),
    "tokens/s": (1e-6, 1e9),
    "TFLOP/s": (1e-6, 1e5),
    "TOP/s": (1e-6, 1e5),
    "GB/s": (1e-9, 1e6),
    "s": (1e-7, DAY_S),
    "ms": (1e-4, DAY_S * 1e3),
    "W": (1.0, 5_000.0),
    "J": (1e-6, 1e9),
    "ratio": (1e-7, 1.0),
    "B": (0.0, 1e15),
}
"""Per-unit (low, high) caps, per GPU: the outer fence for every metric."""


@dataclass(frozen=True, slots=True)
class Bound:
    low: float
    high: float
    basis: str  # how the bound was derived, for the quarantine detail


def _gpus(params: Mapping[str, Any], gpu_count: int) -> int:
    try:
        n = int(params.get("gpu_count") or 1)
    except (TypeError, ValueError):
        n = 1
    return max(1, n, gpu_count)


def _compute_roof(spec: GpuSpec) -> float | None:
    """The GPU's highest sourced dense peak, FLOP/s (or OP/s): no kernel does more."""
    peaks = [float(v) for v in spec.peaks.values() if v and v > 0]
    return max(peaks) * 1e12 if peaks else None


def _bandwidth(spec: GpuSpec) -> float | None:
    return float(spec.bandwidth_gb_per_s) * 1e9 if spec.bandwidth_gb_per_s else None


def _llm(params: Mapping[str, Any]) -> tuple[float, float] | None:
    """(weights multiplied per token, active weights) of the run's model, if the catalog knows it."""
    name = params.get("model")
    if not isinstance(name, str):
        return None
    try:
        m = get_model(name)
    except ModelNotFound:
        return None
    matmul = getattr(m, "matmul_params_per_token", None)
    active = getattr(m, "active_params", None)
    if not matmul or not active:  # not a decoder
        return None
    return float(matmul), float(active)


def _int(params: Mapping[str, Any], key: str, default: int = 1) -> int:
    try:
        return max(1, int(params.get(key) or default))
    except (TypeError, ValueError):
        return default


def _rate_roof(workload: str, params: Mapping[str, Any], spec: GpuSpec) -> tuple[float, str] | None:
    """Units per second one GPU cannot exceed for a throughput-like metric of ``workload``."""
    roof, bw = _compute_roof(spec), _bandwidth(spec)
    if workload.startswith("resnet50-") and roof:
        w = RESNET50_FLOPS_PER_IMAGE["train" if workload.endswith("train") else "infer"]
        return roof / w, f"{w:g} FLOPs per image at the {roof / 1e12:g} TFLOP/s peak"
    if workload.startswith("bert-large-") and roof:
        per = (2.0 if workload.endswith("train") else 1.0) * BERT_LARGE_PARAMS * _int(params, "seq_len", 128)
        return roof / per, f"{per:g} FLOPs per sequence at the {roof / 1e12:g} TFLOP/s peak"
    llm = _llm(params) if workload in ("llm-train", "llm-infer") else None
    if llm is None:
        return None
    matmul, active = llm
    found: list[tuple[float, str]] = []
    if roof:
        found.append(
            (roof / (2 * matmul), f"2 x {matmul:.3g} FLOPs per token at the {roof / 1e12:g} TFLOP/s peak")
        )
    if workload == "llm-infer" and bw:
        batch = _int(params, "batch_size")
        found.append(
            (
                batch * bw / (BYTES_PER_WEIGHT_MIN * active),
                f"{batch} token(s) per read of {active:.3g} weights at {bw / 1e9:g} GB/s",
            )
        )
    return min(found) if found else None


def _time_floor(
    workload: str, metric: str, params: Mapping[str, Any], spec: GpuSpec
) -> tuple[float, str] | None:
    """Seconds a latency cannot undercut on one GPU (serving: a first token needs the prompt's
    prefill; a next token, one read of the weights)."""
    llm = _llm(params) if workload == "llm-infer" else None
    if llm is None:
        return None
    matmul, active = llm
    roof, bw = _compute_roof(spec), _bandwidth(spec)
    if metric.startswith("ttft") and roof:
        flops = 2 * matmul * _int(params, "input_len")
        return flops / roof, f"a prefill of {flops:.3g} FLOPs at the {roof / 1e12:g} TFLOP/s peak"
    if metric.startswith("tpot") and bw:
        size = BYTES_PER_WEIGHT_MIN * active
        return size / bw, f"one read of {size:.3g} B of weights at {bw / 1e9:g} GB/s"
    return None


def bound(
    workload: str, metric: str, unit: str, params: Mapping[str, Any], spec: GpuSpec, *, gpu_count: int = 1
) -> Bound:
    """The plausible range of one metric of one result on ``gpu_count`` GPUs of ``spec``."""
    n = _gpus(params, gpu_count)
    low, high = ABSOLUTE.get(unit, (0.0, float("inf")))
    basis = f"the {unit} fence"
    if unit in ("images/s", "samples/s", "tokens/s", "TFLOP/s", "TOP/s", "GB/s", "W", "J"):
        high *= n
    if workload == "collective":
        # a tiny message is latency-bound (its rate has no floor; busbw is 0 on one GPU), and
        # one rank's all-reduce moves nothing (its algbw has no ceiling but the fence)
        if unit == "GB/s":  # the message moved within a day at the least
            moved = float(params.get("message_bytes") or 0) / (DAY_S * 1e9)
            low = 0.0 if metric.startswith("busbw") and n == 1 else moved
        roof = _rate_ceiling(workload, metric, unit, params, spec) if n > 1 else None
        if roof is not None:
            high, basis = min(high, GENEROUS * roof[0] * n), roof[1]
    elif (roof := _rate_ceiling(workload, metric, unit, params, spec)) is not None:
        value, why = roof
        value *= n
        high, low, basis = min(high, GENEROUS * value), max(low, value / SPAN), why
    floor = _time_floor(workload, metric, params, spec) if unit in ("s", "ms") else None
    if floor is not None:
        seconds, why = floor
        low, basis = max(low, seconds * (1e3 if unit == "ms" else 1.0) / GENEROUS / n), why
    if unit == "W" and spec.tdp_w:
        high, basis = min(high, GENEROUS * float(spec.tdp_w) * n), f"{spec.tdp_w:g} W TDP"
    if unit == "B" and spec.usable_memory_bytes:  # per GPU
        high, basis = min(high, float(spec.usable_memory_bytes)), "usable memory"
    return Bound(low, high, basis)


def _rate_ceiling(
    workload: str, metric: str, unit: str, params: Mapping[str, Any], spec: GpuSpec
) -> tuple[float, str] | None:
    """The roofline rate (per GPU, in the metric's unit) a rate metric cannot exceed."""
    if unit in ("images/s", "samples/s", "tokens/s"):
        return _rate_roof(workload, params, spec)
    if unit in ("TFLOP/s", "TOP/s"):
        peak = spec.peak_for(str(params.get("precision", "")))
        roof = _compute_roof(spec)
        if peak is not None:
            return peak, f"the {peak:g} {unit} dense peak"
        return (roof / 1e12, f"the {roof / 1e12:g} {unit} highest peak") if roof else None
    if unit == "GB/s" and spec.bandwidth_gb_per_s:
        return float(spec.bandwidth_gb_per_s), f"the {spec.bandwidth_gb_per_s:g} GB/s memory bandwidth"
    return None


@dataclass(frozen=True, slots=True)
class Implausible:
    metric: str
    value: float
    bound: Bound

    @property
    def detail(self) -> str:
        side = "above" if self.value > self.bound.high else "below"
        edge = self.bound.high if side == "above" else self.bound.low
        return f"{self.metric} {self.value:g} is {side} the plausible {edge:.4g} ({self.bound.basis})"


def implausible(
    workload: str,
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    spec: GpuSpec,
    *,
    gpu_count: int = 1,
) -> list[Implausible]:
    """Every metric of one result outside its plausible range."""
    try:
        units = {m.name: m.unit for m in get_workload(workload).metrics}
    except VocabularyError:
        return []
    out: list[Implausible] = []
    for name, value in metrics.items():
        unit = units.get(name)
        if unit is None:
            continue
        b = bound(workload, name, unit, params, spec, gpu_count=gpu_count)
        if not b.low <= value <= b.high:
            out.append(Implausible(name, value, b))
    return out
