"""The cross-GPU transfer: its data, its physics, its held-out accuracy against the datasheet
baseline, and the property that no fitted constant makes a faster GPU slower."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import get_model
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.estimation import transfer as xfer
from service.core.estimation.calibration import TimedPoint, fit_time, transfer
from service.core.estimation.memory import TrainConfig
from service.core.estimation.performance import H200_SXM, estimate_step
from service.core.evidence.published import TABLES
from service.core.evidence.published.gpus import CATALOGUED, TABLE_ONLY, figures_for

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("slug", sorted(CATALOGUED))
def test_catalogued_figures_equal_the_catalog(slug: str) -> None:
    """The fit's copies of catalog figures are the catalog's (a corrected figure must be copied)."""
    mine, cat = CATALOGUED[slug], CATALOG[slug]
    assert mine.compute_capability == cat.compute_capability
    assert mine.bandwidth_gb_per_s == cat.bandwidth_gb_per_s and mine.tdp_w == cat.tdp_w
    for key in ("fp32", "tf32", "fp16", "bf16"):
        assert mine.peak_for(key) == cat.peak_for(key), key


def test_table_only_gpus_are_not_catalog_slugs() -> None:
    assert not set(TABLE_ONLY) & set(CATALOG), "catalogued now: move the figures to CATALOGUED"
    for g in TABLE_ONLY.values():
        assert (
            g.compute_capability
            and g.tdp_w
            and g.bandwidth_gb_per_s
            and g.peak_for("fp16")
            and g.peak_for("fp32")
        )


def test_fit_points_cover_every_sourced_single_gpu_training_figure() -> None:
    pts = xfer.fit_points()
    assert {p.table_id for p in pts} == {
        "lambda-pytorch-train-ngc2210",
        "lambda-pytorch-train-ngc2001",
        "lambda-pytorch-train-ngc2010",
        "dle-tf-resnet50-ngc2006",
        "dle-pt-resnet50-ngc2103",
    }
    assert {t.id for t in TABLES} >= xfer.ANSWER_TABLES
    expected = [
        r
        for t in TABLES
        if t.kind == "training" and t.id in xfer.ANSWER_TABLES
        for r in t.rows
        if r.gpu_count == 1
        and r.workload in ("resnet50-train", "bert-large-squad-finetune", "bert-base-squad-finetune")
        and figures_for(r) is not None
    ]
    assert len(pts) == len(expected) > 150
    assert not any("1080" in p.gpu_name for p in pts)  # Pascal: no tensor cores, no peak to scale
    # the batch of each figure is the table's own (Lambda's fp32 runs used their own batch sizes)
    a100 = [
        p
        for p in pts
        if p.gpu.slug == "nvidia-a100-sxm4-80gb"
        and p.table_id.endswith("ngc2210")
        and p.workload == "resnet50-train"
    ]
    assert sorted(p.batch_size for p in a100) == [640, 1280]
    for p in pts:
        pr = p.profile
        assert pr.compute_s > 0 and pr.memory_s > 0 and pr.other_s >= 0


def test_profile_splits_the_step() -> None:
    c = TrainConfig(model=get_model("bert-large"), precision="amp_fp16", batch_size=32, seq_len=384)
    pr = xfer.profile(c, H200_SXM)
    assert pr.total_s == pytest.approx(estimate_step(c, H200_SXM).step_time_s, rel=1e-9)
    slower = replace(H200_SXM, peaks={k: v / 2 for k, v in H200_SXM.peaks.items()})
    assert xfer.profile(c, slower).compute_s == pytest.approx(2 * pr.compute_s, rel=0.05)


# --------------------------------------------------------------------------------------------
# Physics
# --------------------------------------------------------------------------------------------


def test_power_cap_clock() -> None:
    assert xfer.CLOCK_EXPONENT < 1.0  # a higher peak can never make a capped GPU slower
    m = xfer.published_model()
    pcie, sxm = CATALOG["nvidia-a100-pcie-40gb"], CATALOG["nvidia-a100-sxm4-40gb"]
    assert m.clock(pcie) < m.clock(sxm) <= 1.0  # 250 W vs 400 W at the same peaks
    f = m.factors(sxm, pcie, "fp16/bf16")
    assert f.scope == "same-architecture" and f.compute < 1.0 and f.memory == 1.0
    assert xfer.clock_factor(replace(sxm, tdp_w=None), 5.0) == 1.0  # unknown power: no cap claimed
    for gpu in CATALOG.values():
        assert 0.0 < m.clock(gpu) <= 1.0


def test_architecture_keys() -> None:
    assert xfer.arch_key(CATALOG["nvidia-a100-sxm4-80gb"]) == "sm80"
    assert xfer.arch_key(CATALOG["nvidia-a10"]) == "sm86"  # GA10x, not GA100
    assert xfer.arch_key(CATALOG["amd-mi300x"]) == "cdna3"
    m = xfer.published_model()
    assert {"sm70", "sm75", "sm80", "sm86", "sm89", "sm90"} <= set(m.compute)
    assert not m.knows(CATALOG["nvidia-b200"]) and not m.knows(CATALOG["amd-mi300x"])
    f = m.factors(H200_SXM, CATALOG["nvidia-b200"], "fp16/bf16")
    assert f.scope == "unseen-architecture" and f.identity


def test_no_per_gpu_constants() -> None:
    """Every fitted constant belongs to an architecture, a precision family, a workload or a
    table's stack -- never to one GPU."""
    m = xfer.published_model()
    archs = set(m.gpus)
    assert set(m.compute) <= archs and set(m.memory) <= archs and set(m.energy) <= archs
    assert {a for a, _ in m.compute_family} <= archs
    assert all(f in xfer.FAMILIES for _, f in m.compute_family)
    assert all(len(v) >= 2 for v in m.gpus.values())  # each architecture fitted on several GPUs


def _h200_calibration() -> object:
    pts = []
    for name in ("gt-llama-350m", "gt-llama-1b-v32k", "gt-llama-3b"):
        for b, s in ((2, 1024), (4, 2048), (8, 512)):
            c = TrainConfig(model=get_model(name), batch_size=b, seq_len=s)
            pts.append(TimedPoint(c, H200_SXM, estimate_step(c, H200_SXM).step_time_s * 1.2))
    return fit_time(pts)


CONFIG = TrainConfig(model=get_model("llama3-8b"), precision="amp_bf16", batch_size=2, seq_len=2048)


def _phases(cal: object, gpu: GpuSpec) -> xfer.Profile:
    """The compute- and memory-bound seconds of a step on ``gpu`` with the H200 fit transferred."""
    from service.core.estimation.calibration import Calibration

    assert isinstance(cal, Calibration)
    return xfer.profile(CONFIG, gpu, transfer(cal, gpu, CONFIG.precision).efficiencies)


TIMED = [g for g in CATALOG.values() if g.bandwidth_gb_per_s and g.peak_for("bf16")]


@pytest.mark.parametrize("gpu", TIMED, ids=lambda g: g.slug)
def test_more_peak_bandwidth_or_power_is_never_slower(gpu: GpuSpec) -> None:
    """Property over the catalog: raising a GPU's dense peaks (or its board power) never slows its
    compute-bound phase; raising its bandwidth never slows its memory-bound phase."""
    cal = _h200_calibration()
    base = _phases(cal, gpu)
    for k in (1.1, 1.5, 3.0):
        faster = replace(gpu, peaks={p: v * k for p, v in gpu.peaks.items()})
        assert _phases(cal, faster).compute_s <= base.compute_s * (1 + 1e-9), k
        wider = replace(gpu, bandwidth_gb_per_s=float(gpu.bandwidth_gb_per_s or 0) * k)
        assert _phases(cal, wider).memory_s <= base.memory_s * (1 + 1e-9), k
        if gpu.tdp_w:
            stronger = replace(gpu, tdp_w=gpu.tdp_w * k)
            assert _phases(cal, stronger).compute_s <= base.compute_s * (1 + 1e-9), k


def test_catalog_pairs_keep_the_datasheet_order() -> None:
    """Within an architecture, a GPU with at least the peak and the power of another is not slower
    in the compute-bound phase, and one with at least its bandwidth not slower in the memory-bound
    phase. Across architectures the fitted factors (within about 10 %) may reorder two GPUs whose
    datasheet figures differ by less -- never a 25 % gap. (0.1 % slack: the profile linearises the
    estimator's ``max(compute, weight streaming)`` where a different bandwidth moves it.)"""
    cal = _h200_calibration()
    ph = {g.slug: _phases(cal, g) for g in TIMED}
    for a, b in itertools.permutations(TIMED, 2):
        pa, pb = a.peak_for("bf16") or 0.0, b.peak_for("bf16") or 0.0
        same = xfer.arch_key(a) == xfer.arch_key(b)
        power_ok = (a.tdp_w or 0) >= (b.tdp_w or 0) and b.tdp_w is not None and a.tdp_w is not None
        if pa >= pb * (1.0 if same else 1.25) and (power_ok or not same):
            assert ph[a.slug].compute_s <= ph[b.slug].compute_s * (1 + 1e-3), (a.slug, b.slug)
        bwa, bwb = float(a.bandwidth_gb_per_s or 0), float(b.bandwidth_gb_per_s or 0)
        if bwa >= bwb * (1.0 if same else 1.25):
            assert ph[a.slug].memory_s <= ph[b.slug].memory_s * (1 + 1e-3), (a.slug, b.slug)


# --------------------------------------------------------------------------------------------
# Held-out accuracy (the targets)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loo() -> xfer.LooReport:
    return xfer.leave_one_gpu_out()


def test_leave_one_gpu_out_beats_the_datasheet_baseline(loo: xfer.LooReport) -> None:
    """Pooled over pairs, ratio MAPE <= 0.6x the geometric mean of tensor-peak and bandwidth ratios
    on the same pairs; no precision family worse than its baseline."""
    mape, base, n = loo.summary()
    assert n > 1000
    assert mape <= 0.6 * base
    fams = loo.by_family()
    assert {"fp32", "tf32", "fp16/bf16"} <= set(fams)
    for f, (m, b, k) in fams.items():
        assert m <= b, (f, m, b, k)
    for p in loo.pairs:  # the held-out GPU never helped fit what predicts it
        assert p.target != p.reference


def test_leave_one_gpu_out_refits_without_the_gpu(loo: xfer.LooReport) -> None:
    pts = xfer.fit_points()
    assert set(loo.held_out) == {p.gpu.slug for p in pts}
    assert len(loo.anchors) >= len(pts) - 5  # groups with a single GPU have no level to anchor on
    full = xfer.published_model()
    assert full.n_points == len(pts) and full.rms_log_error < 0.1


def test_accuracy_table_ships_and_matches_the_check(loo: xfer.LooReport) -> None:
    """The shipped table is what the validation script writes from this check (regenerate with
    ``python benchmarks/validate_estimates.py --write-accuracy`` when it drifts)."""
    from service.core.estimation.accuracy import accuracy_for, accuracy_table

    assert accuracy_table().meta.get("generated_by", "").endswith("--write-accuracy")
    cross = [p for p in loo.pairs if p.scope == "cross-architecture"]
    acc = accuracy_for("cross-architecture", "*")
    assert acc is not None and acc.n == len(cross)
    # half a point of slack: a small change to the step model need not block; a real drift does
    assert acc.mape == pytest.approx(sum(p.error for p in cross) / len(cross), abs=0.005)
    assert acc.provenance == "published"  # answers on this path lean on the published tables
    assert accuracy_for("published-anchor", "sm80") is not None
    assert accuracy_for("same-gpu", "sm90", "llm-train") is not None
    assert accuracy_for("spec-default", "sm89", "llm-train") is not None


def test_fit_is_fast_and_cached() -> None:
    import time

    xfer.published_model()
    t0 = time.perf_counter()
    for _ in range(1000):
        xfer.published_model()
    assert time.perf_counter() - t0 < 0.05
    assert math.isfinite(xfer.published_model().rms_log_error)
