"""The published figures of issue 28 (``benchmarks/serving_published_28.py``): they load, every
scored figure names its source, and the MLA / large-MoE and FP4 features each carry at least 3
relative-error figures, at least 3 of them within the issue's 20 % (its target); so does prefix
caching (the vLLM PR threads)."""

from __future__ import annotations

import itertools
import re

import pytest

from benchmarks.serving_published_28 import ALL_FIGURES, SCORED, THROUGHPUT_FIGURES, predict
from service.catalog.loader import load_shipped
from service.core.catalog.specs import gpu_spec_from_doc

CATALOG = {d["slug"]: gpu_spec_from_doc(d) for d in load_shipped().gpus}

SOURCE = re.compile(r"https?://|commit [0-9a-f]{40}|arXiv:")
"""A source is a URL, a repository file at a commit, or a paper."""


def test_every_scored_figure_names_a_source_and_a_date() -> None:
    assert ALL_FIGURES
    for p in ALL_FIGURES:
        assert SOURCE.search(p.source), p.claim
        if p.kind in ("offline_tokens_per_gpu", "concurrency_tokens_per_gpu"):
            assert "read 2026-12-04" in p.source, p.claim
            assert p.setup["gpu"] in CATALOG and float(p.value or 0) > 0, p.claim
        if p.feature == "prefix caching" and p.kind in SCORED:
            assert "read 2026-12-04" in p.source and 0.0 < p.setup["hit_rate"] < 1.0, p.claim


def test_throughput_rows_cover_both_sources_and_every_perf_overview_model() -> None:
    perf = [p for p in THROUGHPUT_FIGURES if p.kind == "offline_tokens_per_gpu"]
    fixed = [p for p in THROUGHPUT_FIGURES if p.kind == "concurrency_tokens_per_gpu"]
    assert {p.setup["model"] for p in perf} == {
        "deepseek-r1",
        "gpt-oss-120b",
        "gpt-oss-20b",
        "llama3.1-70b",
        "llama4-maverick",
        "qwen3-235b-a22b",
        "qwen3-30b-a3b",
    }
    assert all("InferenceX/actions/runs/" in p.source for p in fixed) and len(fixed) >= 10


@pytest.mark.parametrize("feature", ["MLA/large MoE", "FP4", "prefix caching"])
def test_feature_has_three_relative_error_figures_within_20_percent(feature: str) -> None:
    scored = [p for p in ALL_FIGURES if p.feature == feature and p.kind in SCORED]
    assert len(scored) >= 3
    errors = []
    for p in scored:
        got = predict(p, CATALOG)
        if isinstance(got, float):
            errors.append(got / float(p.value or 1) - 1)
    assert len(errors) >= 3
    assert sum(abs(e) <= 0.20 for e in errors) >= 3, sorted(round(e, 2) for e in errors)


def test_concurrency_rows_answer_more_per_gpu_at_more_clients() -> None:
    """Within one InferenceX run series (same GPU, engine, format), the model's output per GPU
    grows with the concurrency, as every measured series does."""
    series: dict[tuple[str, str, str], list[tuple[int, float, float]]] = {}
    for p in THROUGHPUT_FIGURES:
        if p.kind != "concurrency_tokens_per_gpu":
            continue
        got = predict(p, CATALOG)
        assert isinstance(got, float)
        key = (p.setup["gpu"], p.setup["engine"], p.setup["quant"])
        series.setdefault(key, []).append((p.setup["concurrency"], got, float(p.value or 0)))
    for rows in series.values():
        rows.sort()
        assert all(a[1] < b[1] and a[2] < b[2] for a, b in itertools.pairwise(rows))
