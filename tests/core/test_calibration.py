"""Calibration: recovering known efficiencies, bands, transfer rules, provenance, the published
cross-GPU table (leave one GPU out beats datasheet ratios)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from service.core.calibration import (
    CROSS_ARCH_BAND,
    MemoryPoint,
    TimedPoint,
    apply_multipliers,
    band_from_log_residuals,
    fit_memory,
    fit_time,
    predict_time,
    provenance_for,
    published_leave_one_out,
    transfer,
)
from service.core.memory import TrainConfig, estimate_training
from service.core.models import get_model
from service.core.performance import H200_SXM, SPEC_DEFAULTS, PerfSpec, estimate_step

H100_SXM = replace(H200_SXM, name="nvidia-h100-sxm", bandwidth_gb_per_s=3350.0)
A100 = PerfSpec(name="nvidia-a100-sxm4-80gb", architecture="ampere",
                peak_tflops={"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0},
                bandwidth_gb_per_s=2039.0, usable_memory_bytes=80 * 10**9)


def _grid() -> list[TrainConfig]:
    out = []
    for model in ("gt-llama-110m", "gt-llama-350m", "gt-llama-1b-v32k", "gt-llama-3b"):
        for b, s in ((1, 512), (4, 1024), (8, 2048)):
            out.append(TrainConfig(model=get_model(model), precision="amp_bf16", batch_size=b, seq_len=s))
    out.append(TrainConfig(model=get_model("gt-llama-1b-v32k"), precision="amp_bf16", batch_size=2,
                           seq_len=2048, attention="eager"))
    return out


def test_fit_recovers_known_multipliers() -> None:
    truth = {"mm": 0.8, "attn": 1.2, "bw": 0.7, "dispatch": 2.5}
    e_true = apply_multipliers(SPEC_DEFAULTS, truth)
    pts = [TimedPoint(c, H200_SXM, estimate_step(c, H200_SXM, e_true).step_time_s) for c in _grid()]
    cal = fit_time(pts, prior_weight=0.0)
    for k, v in truth.items():
        assert cal.multipliers[k] == pytest.approx(v, rel=0.08), k
    assert cal.fit_mape < 0.01
    assert cal.provenance == "interpolated" and cal.source_gpus == (H200_SXM.name,)
    assert cal.band == (0.08, 0.08)  # residuals ~0: the floor


def test_fit_is_robust_to_noise_and_reports_band() -> None:
    e_true = apply_multipliers(SPEC_DEFAULTS, {"mm": 0.9, "dispatch": 2.0})
    pts = []
    for i, c in enumerate(_grid()):
        noise = math.exp(0.1 * math.sin(7 * i))  # deterministic +/-10 %
        pts.append(TimedPoint(c, H200_SXM, estimate_step(c, H200_SXM, e_true).step_time_s * noise))
    cal = fit_time(pts)
    lo, hi = cal.band
    assert 0.08 <= lo < 0.25 and 0.08 <= hi < 0.25
    inside = sum(1 for p in pts if (1 - lo) <= p.value_s / predict_time(p, cal.efficiencies) * 1 <= (1 + hi))
    assert inside / len(pts) >= 0.8


def test_band_from_residuals() -> None:
    assert band_from_log_residuals([]) == (0.30, 0.45)
    lo, hi = band_from_log_residuals([math.log(1.2)] * 10 + [math.log(0.9)] * 10)
    assert hi > 0.19 and lo > 0.09
    assert band_from_log_residuals([0.0] * 50) == (0.08, 0.08)


def test_transfer_rules() -> None:
    pts = [TimedPoint(c, H200_SXM, estimate_step(c, H200_SXM).step_time_s * 1.3) for c in _grid()]
    cal = fit_time(pts)
    assert transfer(cal, H200_SXM) is cal
    same = transfer(cal, H100_SXM)
    assert same.provenance == "transferred"
    assert same.efficiencies.mm == cal.efficiencies.mm
    assert same.band[1] == pytest.approx(cal.band[1] * 1.5)
    cross = transfer(cal, A100)
    assert cross.band[0] >= CROSS_ARCH_BAND[0] and cross.band[1] >= CROSS_ARCH_BAND[1]
    for k, v in cal.multipliers.items():
        assert cross.multipliers[k] == pytest.approx(math.sqrt(v))
    assert any("across architectures" in n for n in cross.notes)


def test_provenance_labels() -> None:
    pts = [TimedPoint(c, H200_SXM, estimate_step(c, H200_SXM).step_time_s) for c in _grid()[:4]]
    cal = fit_time(pts)
    assert provenance_for(H200_SXM, cal, exact_cell_measured=True) == "measured"
    assert provenance_for(H200_SXM, cal) == "interpolated"
    assert provenance_for(H100_SXM, cal) == "transferred"
    assert provenance_for(A100, None) == "spec"


def test_fit_memory_scale() -> None:
    cfgs = _grid()[:6]
    pts = [MemoryPoint(c, int(estimate_training(c).peak_allocated_bytes * 1.02)) for c in cfgs]
    pts.append(MemoryPoint(cfgs[0], None, status="oom"))
    mc = fit_memory(pts)
    assert mc.scale == pytest.approx(1.02, rel=1e-3)
    assert mc.n_points == 6
    assert mc.band == (0.02, 0.02)


def test_published_transfer_beats_datasheet_ratios() -> None:
    """Lambda's table, BERT-base SQuAD fine-tuning under AMP: predicting each of 12 GPUs from
    the other 11. The roofline (compute vs memory split, fitted on the others, corrected within
    the architecture) must beat plain datasheet peak ratios."""
    rep = published_leave_one_out(workloads=("bert_base_squad",), precisions=("fp16",))
    assert len(rep.rows) == 12
    assert rep.transfer_mape < 0.8 * rep.baseline_mape
    assert rep.transfer_worst < rep.baseline_worst
    hopper = [r for r in rep.rows if r.architecture == "hopper"]
    assert all(r.method == "same-architecture" for r in hopper)
    assert all(abs(r.transfer / r.measured - 1) < abs(r.baseline / r.measured - 1) for r in hopper)
