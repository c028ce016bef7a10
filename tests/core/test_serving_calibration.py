"""The continuous-batching class's calibration on the published TensorRT-LLM tables."""

from __future__ import annotations

import math

from service.catalog.loader import load_shipped
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.estimation.serving import CONTINUOUS_EFFICIENCIES, CONTINUOUS_SPEC
from service.core.estimation.serving_calibration import (
    CALIBRATION_TABLES,
    FIT_FIELDS,
    fit_engine,
    predict,
    published_points,
)

GPUS = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}


def test_published_points_cover_five_catalogued_gpus_and_say_what_was_skipped() -> None:
    pts, skipped = published_points(GPUS)
    assert {p.gpu.slug for p in pts} == {
        "nvidia-h200-sxm",
        "nvidia-h100-sxm",
        "nvidia-a100-sxm4-80gb",
        "nvidia-a100-pcie-80gb",
        "nvidia-l40s",
    }
    kinds = {p.kind for p in pts}
    assert kinds == {"offline", "static", "ttft", "online_ttft", "online_itl", "online_rps"}
    assert skipped["GPU not catalogued (or variant not stated)"] > 0  # v0.9 "A100", GH200
    assert all(p.value > 0 for p in pts)
    # the engine class is the C++ runtime's: v1.0's PyTorch-backend NVFP4 table is a transfer source
    assert {p.table_id for p in pts} == CALIBRATION_TABLES
    assert "trtllm-perf-overview-v1.0" not in CALIBRATION_TABLES


def test_committed_efficiencies_are_the_fit_of_the_published_tables() -> None:
    """Refining from the committed figures stays put: the tables and the physics still give
    CONTINUOUS_EFFICIENCIES (refit with ``benchmarks/validate_serving.py`` and commit if not)."""
    pts, _ = published_points(GPUS)
    fit = fit_engine(pts, init=CONTINUOUS_EFFICIENCIES, iters=60)
    for name in FIT_FIELDS:
        got, want = getattr(fit.efficiencies, name), getattr(CONTINUOUS_EFFICIENCIES, name)
        assert math.isclose(got, want, rel_tol=0.02), (name, got, want)
    assert fit.fit_mape["offline"] < 0.15
    # fractions of datasheet figures stay physical
    e = CONTINUOUS_EFFICIENCIES
    assert 0 < e.mm8 < 1 and 0 < e.mm16 < 1 and 0 < e.bw < 1 and 0 < e.comm < 1 and 0 < e.attn < 1


def test_fit_is_better_than_the_spec_defaults() -> None:
    pts, _ = published_points(GPUS)
    offline = [p for p in pts if p.kind == "offline"]
    spec = sum(abs(predict(p, CONTINUOUS_SPEC) / p.value - 1) for p in offline) / len(offline)
    fitted = sum(abs(predict(p, CONTINUOUS_EFFICIENCIES) / p.value - 1) for p in offline) / len(offline)
    assert fitted < spec
