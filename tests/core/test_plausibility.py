"""The plausibility bounds (``service.core.evidence.plausibility``) quarantine nonsense and
nothing real: every committed H200 result and every published row (mapped to the benchmark
workload it measures) is inside its bounds; extreme values of every metric of every workload
are outside them, on every catalog GPU."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.specs import GpuSpec, gpu_spec_from_doc
from service.core.catalog.vocabulary import WORKLOADS
from service.core.evidence.plausibility import bound, implausible
from service.core.evidence.published import TABLES, PublishedRow

REPO = Path(__file__).resolve().parents[2]
SPECS = {s.slug: s for s in (gpu_spec_from_doc(d) for d in load_shipped().gpus)}
POISON = (1e308, 1e30, 5e-324, 1e-300)


def committed() -> list[tuple[str, dict[str, Any], dict[str, float], int]]:
    out = []
    for path in sorted((REPO / "data" / "benchmarks").glob("*.json")):
        doc = json.loads(path.read_text())
        runs = doc if isinstance(doc, list) else doc.get("runs", [doc])
        for run in runs:
            for r in run.get("results", []):
                if r.get("status") == "ok":
                    metrics = {k: float(v["value"]) for k, v in r["metrics"].items()}
                    out.append((r["workload"], r["parameters"], metrics, int(run.get("gpu_count") or 1)))
    return out


def test_no_committed_h200_result_is_implausible() -> None:
    rows = committed()
    assert len(rows) > 300
    found = [
        (w, p, x.detail)
        for w, p, m, n in rows
        for x in implausible(w, p, m, SPECS["nvidia-h200-sxm"], gpu_count=n)
    ]
    assert not found, found[:5]


def _as_benchmark(r: PublishedRow) -> tuple[str, str, dict[str, Any], float, int] | None:
    """(workload, metric, parameters, value, GPUs) of the benchmark result a published row
    corresponds to, or None for a figure the benchmark vocabulary has no metric for."""
    n = r.gpu_count
    batch = r.batch_size or r.concurrency or 100_000  # unknown: continuous batching, unbounded
    llm = {"model": r.model, "precision": r.precision, "batch_size": batch}
    llm |= {"input_len": r.input_len or 1, "output_len": r.output_len or 1}
    table: dict[tuple[str, str], tuple[str, str, dict[str, Any], float]] = {
        ("resnet50-train", "images_per_s"): ("resnet50-train", "throughput", {}, r.value),
        ("resnet50-infer", "images_per_s"): ("resnet50-infer", "throughput", {}, r.value),
        ("resnet50-infer", "latency_ms"): ("resnet50-infer", "step_time_s", {}, r.value / 1e3),
        ("bert-large-squad-finetune", "sequences_per_s"): (
            "bert-large-train",
            "throughput",
            {"seq_len": r.seq_len or 384},
            r.value,
        ),
        ("llm-serve-offline", "output_tokens_per_s"): ("llm-infer", "output_tokens_per_s", llm, r.value),
        ("llm-serve-static-batch", "output_tokens_per_s_per_gpu"): (
            "llm-infer",
            "output_tokens_per_s",
            llm,
            r.value * n,
        ),
        ("llm-serve-static-batch", "ttft_ms"): ("llm-infer", "ttft_ms_p50", llm, r.value),
        ("llm-serve-online", "ttft_ms"): ("llm-infer", "ttft_ms_p50", llm, r.value),
        ("llm-serve-online", "itl_ms"): ("llm-infer", "tpot_ms_p50", llm, r.value),
        ("llm-serve-online", "output_tokens_per_s"): ("llm-infer", "output_tokens_per_s", llm, r.value),
        ("llm-pretrain", "tokens_per_s_per_gpu"): (
            "llm-train",
            "throughput",
            {"model": r.model, "gpu_count": n},
            r.value * n,
        ),
    }
    found = table.get((r.workload, r.metric))
    return None if found is None else (*found, n)


def test_no_published_row_is_implausible() -> None:
    checked, outside = 0, []
    for t in TABLES:
        for r in t.rows:
            mapped = _as_benchmark(r)
            if mapped is None or r.slug not in SPECS:
                continue
            workload, metric, params, value, n = mapped
            unit = next(m.unit for m in WORKLOADS[workload].metrics if m.name == metric)
            b = bound(workload, metric, unit, params, SPECS[r.slug], gpu_count=n)
            checked += 1
            if not b.low <= value <= b.high:
                outside.append((t.id, r.gpu_name, r.model, r.metric, value, b))
    assert checked > 1500, checked
    assert not outside, outside[:5]


@pytest.mark.parametrize("slug", sorted(SPECS))
def test_extreme_values_of_every_metric_are_implausible_on_every_gpu(slug: str) -> None:
    spec: GpuSpec = SPECS[slug]
    params = {w: p for w, p, _m, _n in committed()}
    for w in WORKLOADS.values():
        for m in w.metrics:
            for value in POISON:
                found = implausible(w.name, params[w.name], {m.name: value}, spec)
                if m.name == "busbw_gb_per_s" and value < 1:
                    continue  # a one-GPU all-reduce's bus bandwidth is 0: no floor to break
                if m.name == "optimizer_step_peak_allocated_bytes" and value < 1:
                    continue  # a byte count has no floor above 0
                assert [x.metric for x in found] == [m.name], (w.name, m.name, value, found)
