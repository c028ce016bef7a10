"""The cross-source fit's per-architecture factors, as answers apply them (issue 27)."""

from __future__ import annotations

import math

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.estimation import transfer_sources as ts
from service.core.estimation.transfer import EPS0_W_PER_TFLOP, clock_factor
from service.core.estimation.transfer_architectures import (
    FACTOR_ENVELOPE,
    arch_factors,
    cross_source_factors,
    engine_arch_factors,
    fitted_on,
)
from service.core.evidence.published import TABLES
from service.core.evidence.published.gpus import _NAMES, FIGURES
from tests.benchmark_scripts import load_benchmark


def _gpus() -> dict[str, GpuSpec]:
    return {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}


def test_shipped_factors_are_the_final_fit_of_the_shipped_sources() -> None:
    """``transfer_accuracy.json``'s architectures are what fitting every shipped source gives
    (re-run ``benchmarks/validate_transfer.py --write-accuracy`` after a source or model change)."""
    figs = _gpus()
    for k, v in FIGURES.items():
        figs.setdefault(k, v)
    model = ts.fit_classes(ts.points_from(TABLES, figs, _NAMES))
    for arch in ("cdna3", "sm100", "sm90"):
        f = arch_factors(arch)
        assert f is not None
        # the agent's H200 ResNet-50 sweep also enters the shipped fit (host term only): within 2 %
        assert f.memory == pytest.approx(math.exp(model.memory[arch]), rel=0.02)
        assert f.compute == pytest.approx(math.exp(model.compute[arch]), rel=0.02)


def test_factors_are_the_ratio_of_the_two_architectures_and_their_clocks() -> None:
    g = _gpus()
    h200, mi300x, h100 = g["nvidia-h200-sxm"], g["amd-mi300x"], g["nvidia-h100-sxm"]
    f = cross_source_factors(h200, mi300x, "fp8")
    a, b = arch_factors("cdna3"), arch_factors("sm90")
    assert f is not None and a is not None and b is not None
    clocks = clock_factor(mi300x, EPS0_W_PER_TFLOP) / clock_factor(h200, EPS0_W_PER_TFLOP)
    fitted = a.compute_for("fp8") / b.compute_for("fp8") * clocks
    # MLPerf Inference runs the MI300X's FP8 well below its datasheet's share of the H200's; the
    # envelope keeps a faster datasheet from being overturned by more than about 10 %
    assert fitted < 1.0 / FACTOR_ENVELOPE
    assert f.compute == pytest.approx(1.0 / FACTOR_ENVELOPE)
    assert f.memory == pytest.approx(max(1.0 / FACTOR_ENVELOPE, a.memory / b.memory)) and f.memory < 1.0
    # same architecture: only the clocks differ
    same = cross_source_factors(h200, h100, "bf16")
    assert same is not None and same.memory == pytest.approx(1.0)
    assert same.compute == pytest.approx(
        clock_factor(h100, EPS0_W_PER_TFLOP) / clock_factor(h200, EPS0_W_PER_TFLOP)
    )


def test_compute_factors_are_per_stack_kind_and_answers_pick_their_own() -> None:
    """A training table's rows ran a training framework's kernels and carry ``fp8/train``-style
    factor keys, an inference table's (and a training table's inference rows: DeepLearningExamples'
    ResNet-50 inference) the plain family; a training question takes the training factors, a
    serving one the inference factors (``STACK_KINDS``)."""
    figs = _gpus()
    for k, v in FIGURES.items():
        figs.setdefault(k, v)
    points = ts.points_from(TABLES, figs, _NAMES)
    kinds = {(p.source.split("-")[0], p.cls, p.stack) for p in points}
    assert ("mlperf", "llm-train", "train") in kinds and ("mlperf", "llm-serve", "infer") in kinds
    assert ("dle", "cnn-infer", "infer") in kinds and ("dle", "cnn-train", "train") in kinds
    assert {p.stack for p in points} == set(ts.STACK_KINDS)
    train = next(p for p in points if p.stack == "train")
    assert train.family_key == f"{train.peak_family}/train"
    model = ts.fit_classes(points)
    assert ("sm100", "fp8/train") in model.compute_family and ("sm100", "fp8") in model.compute_family
    g = _gpus()
    h200, b200 = g["nvidia-h200-sxm"], g["nvidia-b200"]
    a, b = arch_factors("sm100"), arch_factors("sm90")
    assert a is not None and b is not None
    clocks = clock_factor(b200, EPS0_W_PER_TFLOP) / clock_factor(h200, EPS0_W_PER_TFLOP)
    for stack, fam in (("infer", "fp8"), ("train", "fp8/train")):
        f = cross_source_factors(h200, b200, "fp8", stack)
        assert f is not None
        want = a.compute_for(fam) / b.compute_for(fam) * clocks
        assert f.compute == pytest.approx(min(FACTOR_ENVELOPE, max(1.0 / FACTOR_ENVELOPE, want)))
    served = cross_source_factors(h200, b200, "fp8")
    trained = cross_source_factors(h200, b200, "fp8", "train")
    assert served is not None and trained is not None and served.compute != trained.compute


def test_notes_name_the_compute_sources_of_the_questions_kind_of_stack() -> None:
    """An answer names the sources its factors were fitted on: the target architecture's compute
    factor for the question's kind of stack on that kind's sources only (CDNA 3's training compute
    on MLPerf Training, its inference compute on MLPerf Inference), its bandwidth on every source
    holding it; an architecture no source of that kind holds says so."""
    g = _gpus()
    h200 = g["nvidia-h200-sxm"]
    cdna3 = arch_factors("cdna3")
    assert cdna3 is not None and set(cdna3.compute_sources) == {"infer", "train"}
    train, infer = fitted_on(h200, g["amd-mi300x"], "train"), fitted_on(h200, g["amd-mi300x"], "infer")
    compute_train = train.split(", its bandwidth")[0]
    compute_infer = infer.split(", its bandwidth")[0]
    assert compute_train.startswith("CDNA 3 compute on training stacks fitted on mlperf-training-")
    assert "mlperf-inference" not in compute_train and "mlperf-inference-v5.1" in train
    assert compute_infer.startswith("CDNA 3 compute on inference stacks fitted on mlperf-inference-")
    assert "mlperf-training" not in compute_infer and "mlperf-training-v5.1" in infer
    assert set(cdna3.compute_sources["train"]) | set(cdna3.compute_sources["infer"]) == set(cdna3.sources)
    assert "Hopper's factors on" in train
    # Gaudi 2 appears in training sources only: its inference compute is the average part's
    assert "no source holds it" in fitted_on(h200, g["intel-gaudi2"], "infer")
    served = engine_arch_factors(g["amd-mi300x"], "fp8")
    assert served is not None and "CDNA 3 compute on inference stacks" in served.note


def test_the_replication_yardstick_reads_another_sources_measurement_of_the_same_question() -> None:
    """``validate_transfer.py --replication``: a pair counts only where another source measured
    the same question; a source republished under another name replicates it exactly (0 %), and
    the model's held-out error is reported on the same pairs."""
    from dataclasses import replace

    vt = load_benchmark("validate_transfer.py", "validate_transfer_script")
    figs = _gpus()
    for k, v in FIGURES.items():
        figs.setdefault(k, v)
    points = [p for p in ts.points_from(TABLES, figs, _NAMES) if p.source == "trtllm-perf-overview-v0.20"]
    copy = [replace(p, source="copy", group=(p.group[0], "copy", *p.group[2:])) for p in points]
    lines: list[str] = []
    alone = vt.replication(points, lines.append)
    assert alone["n"] == 0  # no other source asked these questions
    both = vt.replication(points + copy, lines.append)
    pairs = sum(len(m) * (len(m) - 1) for m in vt.by_group(points).values())
    assert both["n"] == 2 * pairs and both["replication_mape"] == pytest.approx(0.0, abs=1e-12)
    assert 0.0 < both["model_loso_mape"] < 1.0
    assert "another source also measured" in lines[-1]


def test_the_agents_own_h100_h200_pairs_are_a_held_out_check() -> None:
    """``validate_transfer.py``: every configuration the agent ran on both the H200 SXM and the
    H100 SXM is one pair, predicted by the fit on the published sources alone (it is never
    fitted on). LLM training transfers better than the datasheet ratio there (4.9 % against
    8.9 % when written); the pairs are reported, not pooled."""
    vt = load_benchmark("validate_transfer.py", "validate_transfer_script")
    figs = vt.figures()
    points = vt.agent_points(figs)
    groups = vt.by_group(points)
    assert len(groups) >= 80
    assert all(sorted(p.slug for p in m) == ["nvidia-h100-sxm", "nvidia-h200-sxm"] for m in groups.values())
    assert not any(p.source == vt.AGENT_SOURCE for p in vt.all_points())  # not a fitted source
    model = ts.fit_classes(vt.all_points())
    llm = [p for p in vt.pairs_of(model, points, lambda a, b: True) if p.cls == "llm-train"]
    assert len(llm) >= 100
    mape = sum(p.error for p in llm) / len(llm)
    baseline = sum(p.baseline_error for p in llm) / len(llm)
    assert mape < 0.8 * baseline, (mape, baseline)
