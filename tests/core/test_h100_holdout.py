"""The pre-registered H100 SXM answers (``data/holdout/``, ``benchmarks/h100_holdout.py``): each
asks exactly the benchmark cell the agent measures, and the scoring pairs them with measurements
and the datasheet baseline as its docstring says."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from service.core.estimation.benchmark_cells import benchmark_cell
from service.core.estimation.estimate_inputs import build_job
from service.schemas.estimate import EstimateRequest
from tests.benchmark_scripts import load_benchmark

holdout = load_benchmark("h100_holdout.py", "h100_holdout")
PREDICTED = json.loads(Path(holdout.DEFAULT_OUT).read_text())


def test_every_pre_registered_request_asks_the_exact_cell_the_agent_measures() -> None:
    rows = PREDICTED["rows"]
    assert len(rows) == 148 and PREDICTED["gpu"] == "nvidia-h100-sxm"
    for row in rows:
        job = build_job(EstimateRequest.model_validate(row["request"]).to_core())
        cell = benchmark_cell(job)
        assert cell is not None, row["request"]
        assert (cell[0], cell[2]) == (row["workload"], row["hash"]), row["request"]
        assert row["status"] == 200 and row["answer"]["peak_allocated_bytes"] > 0


def _run(slug: str, results: list[dict]) -> list[dict]:
    return [{"gpu": {"slug": slug}, "results": results}]


def test_scoring_pairs_a_measurement_with_the_answer_and_the_datasheet_baseline(tmp_path: Path) -> None:
    row = next(r for r in PREDICTED["rows"] if r["workload"] == "llm-train" and r["answer"]["fits"])
    measured = row["answer"]["step_time_s"] * 1.25  # the answer 20 % under the measurement
    res = {
        "workload": "llm-train",
        "parameters": row["parameters"],
        "status": "ok",
        "peak_allocated_bytes": row["answer"]["peak_allocated_bytes"] * 2,
        "metrics": {"step_time_s": {"value": measured}},
    }
    path = tmp_path / "h100.json"
    path.write_text(json.dumps(_run(holdout.TARGET, [res])))
    rep = holdout.score(holdout.DEFAULT_OUT, [str(path)], say=lambda *_: None)
    time = rep["per"]["llm-train step_time_s"]
    assert time["n"] == 1 and time["mape"] == pytest.approx(0.2)
    # the baseline: the H200's measurement of the cell scaled by the datasheets (H200 / H100:
    # equal dense peaks, 4.8 / 3.35 TB/s)
    h200 = holdout._measured(sorted((holdout.ROOT / "data" / "benchmarks").glob("*.json")), holdout.SOURCE)
    src = h200[row["hash"]]["metrics"]["step_time_s"]
    ratio = math.sqrt(4800 / 3350)
    assert time["baseline"] == pytest.approx(abs(src * ratio / measured - 1), rel=0.02)
    assert rep["per"]["llm-train memory"]["mape"] == pytest.approx(0.5)
    assert rep["oom"] == {"agree": 1, "missed": 0, "false": 0}


def test_an_oom_the_answer_said_would_fit_is_counted_missed(tmp_path: Path) -> None:
    row = next(r for r in PREDICTED["rows"] if r["answer"]["fits"])
    res = {"workload": row["workload"], "parameters": row["parameters"], "status": "oom"}
    path = tmp_path / "h100.json"
    path.write_text(json.dumps(_run(holdout.TARGET, [res])))
    rep = holdout.score(holdout.DEFAULT_OUT, [str(path)], say=lambda *_: None)
    assert rep["oom"] == {"agree": 0, "missed": 1, "false": 0} and rep["per"] == {}
