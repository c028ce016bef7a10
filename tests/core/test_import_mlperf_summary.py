"""The MLPerf Inference v6.1 importer (benchmarks/import_mlperf_summary.py): the transcription's
own checks, the selection (closed division, throughput scenarios, one accelerator type, measured
not inferred), and that the shipped table is what the importer writes from the shipped copy."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from benchmarks import import_mlperf_summary as ms
from service.core.evidence.published import get_table


def _rec(**kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "page": 0,
        "Organization": "Acme",
        "Availability": "available",
        "Division": "closed",
        "SystemType": "datacenter",
        "SystemName": "Acme 8x B300",
        "Platform": "ACME_B300x8_TRT",
        "Model": "llama2-70b-99.9",
        "MlperfModel": "llama2-70b-99.9",
        "Scenario": "Offline",
        "Result": "100000.0",
        "number_of_nodes": "1",
        "host_processor_model_name": "Intel(R) Xeon(R) 6767P",
        "accelerator_model_name": "NVIDIA B300-SXM-270GB",
        "accelerators_per_node": "8",
        "total_accelerators": "8",
        "Location": "./closed/Acme/results/ACME_B300x8_TRT/llama2-70b-99.9/Offline/performance/run_1",
        "framework": "TensorRT 10.14, CUDA 13.1",
        "version": "v6.1",
        "inferred": "0",
        "Units": "Tokens/s",
        "weight_data_types": "fp4",
    }
    base.update(kw)
    return base


def test_selection_keeps_measured_closed_throughput_rows_of_one_accelerator_type() -> None:
    rows, skipped = ms.select(
        [
            _rec(),
            _rec(inferred="1"),
            _rec(Division="open"),
            _rec(Scenario="SingleStream", Units="Latency (ms)"),
            _rec(accelerator_model_name="N/A"),
            _rec(accelerator_model_name="NVIDIA H200-SXM-141GB + AMD Instinct MI350X 288GB HBM3e"),
            _rec(weight_data_types="unknown"),
        ]
    )
    assert len(rows) == 1 and sum(skipped.values()) == 6
    r = rows[0]
    assert (r.slug, r.model, r.workload, r.precision, r.gpu_count) == (
        "nvidia-b300",
        "mlperf/llama2-70b-99.9",
        "mlperf-infer-offline",
        "fp4",
        8,
    )
    assert r.value == 100000.0 and "Acme" in r.system and "TensorRT 10.14" in r.system
    assert skipped["inferred from another scenario"] == 1


def test_a_submitters_own_spelling_of_a_model_falls_back_to_the_benchmark_id() -> None:
    rows, _ = ms.select([_rec(Model="llama3_1-8b", MlperfModel="llama3.1-8b")])
    assert [r.model for r in rows] == ["mlperf/llama3.1-8b"]


def test_the_check_finds_a_misplaced_record_and_a_disagreeing_copy() -> None:
    good = _rec()
    assert ms.check([good], [dict(good)]) == []
    assert ms.check([_rec(Scenario="Server")])  # its Location says Offline
    slip = ms.check([good], [_rec(Result="100001.0")])
    assert slip == ["record 0 Result: '100000.0' != '100001.0'"]


def test_the_shipped_table_is_the_importers_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "table.py"
    monkeypatch.setattr(ms, "OUT", out)
    monkeypatch.setattr(ms, "ROOT", tmp_path)
    assert ms.main([]) == 0
    spec = importlib.util.spec_from_file_location("generated_mlperf_v6_1", out)
    assert spec and spec.loader
    generated = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generated)
    t = get_table("mlperf-inference-v6.1")
    assert t == generated.TABLE  # the shipped module is the importer's output (formatted)
    assert t.publisher == "MLCommons" and t.files[0].commit == ms.COMMIT
    recs = ms.records()
    assert len(recs) == 492 and ms.check(recs) == []
    assert len(t.rows) == len(ms.select(recs)[0]) > 300
    catalogued = {r.slug for r in t.rows if r.slug}
    assert {"nvidia-b300", "amd-mi355x", "amd-mi350x", "nvidia-rtx-pro-6000-blackwell-server"} <= catalogued
