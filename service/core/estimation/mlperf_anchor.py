"""LLM training on an architecture the training transfer has no data for, anchored on MLPerf
Training (the transfer's ``unseen-architecture`` case).

The training transfer (:mod:`.transfer`) is fitted on single-GPU ResNet-50 and BERT tables: for
an architecture they do not hold (CDNA 3 and 4, Blackwell, Gaudi) it assumes the same fractions
of the datasheet peaks as the source GPU. MLPerf Training's Llama-2-70B LoRA benchmark runs the
same model, data and convergence target on every vendor's 8-GPU systems, and the source GPU (the
H200) submitted beside them: the per-GPU work rate of the target over the source's, divided by
their dense 16-bit peak ratio, is how far the target's LLM-training stack reaches below (or
above) the fraction of peak the source's does. That factor scales the transferred compute
efficiencies (it is measured, not fitted: a factor under 1 says the published runs were slower
than the datasheets promise, as MI300X's were).

Runs marked NVFP4 (``precision`` ``submitter-nvfp4``: NVIDIA's Blackwell submissions from v5.1)
are left out: the others trained in FP8 or BF16 on every vendor, and each vendor's FP8 peak is
twice its 16-bit one, so the 16-bit peak ratio is the ratio those runs were bound by. Pure: no I/O.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Final

from service.core.catalog.specs import GpuSpec

__all__ = ["ANCHOR_TABLES", "BENCHMARK", "SYSTEM_GPUS", "TrainingAnchor", "per_gpu_rates", "training_anchor"]

ANCHOR_TABLES: Final[tuple[str, ...]] = (
    "mlperf-training-v4.0",
    "mlperf-training-v4.1",
    "mlperf-training-v5.0",
    "mlperf-training-v5.1",
)
"""MLPerf Training rounds the anchor reads (``benchmarks/validate_mlperf_anchor.py`` leaves each out
in turn)."""

BENCHMARK: Final = "mlperf-train-llama2_70b_lora"
SYSTEM_GPUS: Final = 8
"""One 8-GPU system per submission: the size every vendor submitted, so the ratio holds the
scale-out fixed."""


@dataclass(frozen=True, slots=True)
class TrainingAnchor:
    """The target's LLM-training compute factor relative to the source, and its evidence."""

    factor: float  # measured per-GPU ratio / dense 16-bit peak ratio
    measured_ratio: float  # target / source work rate per GPU (geometric mean over rounds)
    peak_ratio: float
    tables: tuple[str, ...]


def training_anchor(
    source: GpuSpec, target: GpuSpec, tables: tuple[str, ...] = ANCHOR_TABLES
) -> TrainingAnchor | None:
    """The anchor for ``target`` from ``source`` on the rounds ``tables`` (None without a round
    holding both, or a missing 16-bit peak)."""
    ps, pt = source.peak_for("bf16"), target.peak_for("bf16")
    if not ps or not pt:
        return None
    found = _measured_ratio(source.slug, target.slug, tables)
    if found is None:
        return None
    ratio, tables = found
    return TrainingAnchor(ratio / (pt / ps), ratio, pt / ps, tables)


@functools.cache
def _measured_ratio(
    source: str, target: str, rounds: tuple[str, ...]
) -> tuple[float, tuple[str, ...]] | None:
    """Geometric mean over the rounds holding both GPUs of the median per-GPU work rate ratio."""
    from service.core.evidence.published import get_table

    logs: list[float] = []
    tables: list[str] = []
    for tid in rounds:
        rate = per_gpu_rates(get_table(tid).rows)
        if source in rate and target in rate:
            logs.append(math.log(statistics.median(rate[target]) / statistics.median(rate[source])))
            tables.append(tid)
    if not logs:
        return None
    return math.exp(sum(logs) / len(logs)), tuple(tables)


def per_gpu_rates(rows: object) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in rows:  # type: ignore[attr-defined]
        if (
            r.workload == BENCHMARK
            and r.metric == "train_samples_per_s"
            and r.gpu_count == SYSTEM_GPUS
            and r.slug
            and r.value > 0
            and "fp4" not in r.precision
        ):
            out.setdefault(r.slug, []).append(r.value / r.gpu_count)
    return out
