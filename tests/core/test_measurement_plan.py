"""The measurement plan's pure parts: an answer's band now and once its cell is measured (the
estimator run twice), and the ranking with its staleness rules."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.specs import gpu_spec_from_doc
from service.core.estimation.calibration import CalibrationSet
from service.core.estimation.estimate import JobSpec, build_job, estimate
from service.core.estimation.measurement_value import band_gain
from service.core.evidence.measurement_plan import (
    Demand,
    LastMeasurement,
    rank_cells,
    stale_reasons,
    version_key,
)

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}
T0 = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def _demand(gpu: str, params_hash: str, now: float, after: float, qid: str = "q1") -> Demand:
    return Demand(
        question_id=qid,
        asker_key_id=None,
        asked_at=T0,
        gpu_slug=gpu,
        workload="llm-train",
        parameters={"batch_size": 1},
        parameters_hash=params_hash,
        metric="step_time_s",
        provenance="transferred",
        band_now_pct=now,
        band_after_pct=after,
    )


def _last(params_hash: str, suite: str | None = "1.0.0", days: int = 0, **engines: str) -> LastMeasurement:
    return LastMeasurement(
        gpu_slug="g",
        workload="llm-infer",
        parameters={},
        parameters_hash=params_hash,
        measured_at=T0 + dt.timedelta(days=days),
        suite_version=suite,
        engine_versions=engines,
    )


@pytest.mark.parametrize(
    ("spec", "metric"),
    [
        (JobSpec(model="gt-llama-350m", batch_size=4, seq_len=1024), "step_time_s"),
        (JobSpec(model="llama3-8b", mode="inference", batch_size=8, input_len=512, output_len=128), "tpot_s"),
        (JobSpec(model="resnet50", mode="inference", batch_size=64), "step_time_s"),
    ],
)
def test_a_measurement_narrows_an_unmeasured_answer_to_the_measured_floor(spec: JobSpec, metric: str) -> None:
    gain = band_gain(CATALOG["nvidia-l40s"], build_job(spec), CalibrationSet(by_key={}), None)
    assert gain is not None and gain.metric == metric and gain.provenance == "spec"
    # the estimator's measured-cell floor: +-3 % of step time, +-5 % of TTFT / TPOT
    assert gain.after_pct == pytest.approx(6.0 if metric == "step_time_s" else 10.0)
    assert gain.now_pct > gain.after_pct


def test_a_cell_that_runs_out_of_memory_is_not_a_measurement_to_plan() -> None:
    """Llama-3-8B LoRA at 4,096 tokens without checkpointing does not fit an L20 (a 48 GB card
    with no room for the activations): its run would record an OOM, not narrow a time band; one
    sequence with checkpointing fits and is worth measuring."""
    spec = JobSpec(model="llama3-8b", mode="fine-tuning", batch_size=4, seq_len=4096)
    job = build_job(spec)
    gpu = CATALOG["nvidia-l20"]
    assert not estimate(gpu, job, CalibrationSet(by_key={}), None).memory.fits
    assert band_gain(gpu, job, CalibrationSet(by_key={}), None) is None
    fits = build_job(
        JobSpec(
            model="llama3-8b", mode="fine-tuning", batch_size=1, seq_len=4096, gradient_checkpointing=True
        )
    )
    assert estimate(gpu, fits, CalibrationSet(by_key={}), None).memory.fits
    assert band_gain(gpu, fits, CalibrationSet(by_key={}), None) is not None


def test_narrowing_sums_over_answers_and_ranks_before_staleness() -> None:
    demands = [
        _demand("g", "a", 40.0, 6.0, "q1"),
        _demand("g", "b", 30.0, 6.0, "q1"),
        _demand("g", "b", 30.0, 6.0, "q2"),  # b narrows two answers: 48 points against a's 34
        _demand("g", "c", 6.0, 6.0, "q3"),  # already measured: nothing to gain, not on the plan
    ]
    stale = _last("s", suite="0.9.0")
    cells = rank_cells(demands, [stale], suite_version="1.0.0")
    assert [c.parameters_hash for c in cells] == ["b", "a", "s"]
    assert cells[0].narrowing_pct == pytest.approx(48.0) and cells[0].reasons == ("narrows",)
    assert [d.question_id for d in cells[0].demands] == ["q1", "q2"]
    assert cells[2].reasons == ("stale",) and cells[2].demands == ()


def test_stale_by_suite_or_by_an_engine_measured_newer_since() -> None:
    old, new = _last("x", **{"hf-transformers": "4.46.0"}), _last("y", **{"hf-transformers": "4.57.1+cu12"})
    engines = {"hf-transformers": "4.57.1+cu12"}
    assert stale_reasons(new, "1.0.0", engines) == ()
    assert stale_reasons(old, "1.0.0", engines) == (
        "last measured with hf-transformers 4.46.0; hf-transformers 4.57.1+cu12 has been measured since",
    )
    assert stale_reasons(_last("z", suite=None), "1.0.0", {}) == (
        "last measured with suite unknown; the suite is 1.0.0 now",
    )
    # only-stale cells: the oldest measurement first
    cells = rank_cells(
        [], [_last("late", "0.9", days=5), _last("early", "0.9", days=1), new], suite_version="1.0.0"
    )
    assert [c.parameters_hash for c in cells] == ["early", "late"]


@pytest.mark.parametrize(
    ("text", "key"),
    [("2.5.1+cu121", (2, 5, 1)), ("4.46.0", (4, 46, 0)), ("0.8rc1", (0, 8)), ("v1", ()), ("10.0", (10, 0))],
)
def test_version_key(text: str, key: tuple[Any, ...]) -> None:
    assert version_key(text) == key
