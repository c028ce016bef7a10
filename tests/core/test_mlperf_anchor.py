"""LLM training on an architecture the training tables do not hold, anchored on MLPerf Training's
Llama-2-70B LoRA runs (:mod:`service.core.estimation.mlperf_anchor`): the factor is the measured
per-GPU ratio over the dense peak ratio, read from the shipped tables."""

from __future__ import annotations

import math
import statistics

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.estimation.mlperf_anchor import BENCHMARK, training_anchor
from service.core.evidence.published import get_table

C = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}


def _per_gpu(table: str, slug: str) -> float:
    rows = [
        r.value / r.gpu_count
        for r in get_table(table).rows
        if r.slug == slug
        and r.workload == BENCHMARK
        and r.metric == "train_samples_per_s"
        and r.gpu_count == 8
        and "fp4" not in r.precision
    ]
    return statistics.median(rows)


def test_the_mi300x_factor_is_its_measured_ratio_over_its_peak_ratio() -> None:
    a = training_anchor(C["nvidia-h200-sxm"], C["amd-mi300x"])
    assert a is not None and a.tables == ("mlperf-training-v5.0", "mlperf-training-v5.1")
    logs = [math.log(_per_gpu(t, "amd-mi300x") / _per_gpu(t, "nvidia-h200-sxm")) for t in a.tables]
    assert a.measured_ratio == pytest.approx(math.exp(sum(logs) / len(logs)))
    assert a.peak_ratio == pytest.approx(1307.4 / 989.5)
    assert a.factor == pytest.approx(a.measured_ratio / a.peak_ratio)
    assert 0.75 < a.measured_ratio < 0.85  # MI300X trained slower per GPU than the H200


def test_nvfp4_runs_do_not_anchor_and_a_gpu_without_runs_has_none() -> None:
    """GB300 ran Llama-2-70B LoRA only in NVFP4 (v5.1): no 16-bit-comparable run, no anchor."""
    assert training_anchor(C["nvidia-h200-sxm"], C["nvidia-gb300"]) is None
    assert training_anchor(C["nvidia-h200-sxm"], C["nvidia-l4"]) is None
    only = training_anchor(C["nvidia-h200-sxm"], C["amd-mi300x"], ("mlperf-training-v5.0",))
    assert only is not None and only.tables == ("mlperf-training-v5.0",)
