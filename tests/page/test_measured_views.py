"""Measured data shown as measured (issue 29, item 9): the Data view's "main metric" is the
workload's main metric (throughput for llm-train, as GET /v1/workloads names it), and Compare's
llm-train view shows every configuration the API answers, without asking to pick the workload
that is already picked. Both against the shipped H200 measurements."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.page.conftest import Served, assert_accessible
from tests.page.test_views import open_view


def test_the_data_views_main_metric_is_the_workloads_throughput(page: Any, served: Served) -> None:
    vocabulary = httpx.get(f"{served.url}/v1/workloads", timeout=30).json()["items"]
    metric = next(w["main_metric"] for w in vocabulary if w["name"] == "llm-train")
    assert metric == "throughput"
    api = httpx.get(
        f"{served.url}/v1/benchmark-results",
        params={"gpu": "nvidia-h200-sxm", "workload": "llm-train", "limit": 20},
        timeout=30,
    ).json()["items"]
    open_view(page, served, "#/data")
    page.locator('button.cell-button[data-gpu="nvidia-h200-sxm"][data-workload="llm-train"]').click()
    page.wait_for_selector("table.results")
    header = page.locator("table.results thead th").all_inner_texts()
    assert "Main metric" in header
    shown = page.locator("table.results td.main-metric").all_inner_texts()
    expected = [
        f"throughput {r['metrics']['throughput']['value']:,.0f} {r['metrics']['throughput']['unit']}"
        if "throughput" in r["metrics"]
        else "—"
        for r in api
    ]
    assert shown == expected
    assert any(s.endswith("tokens/s") for s in shown)
    assert not any("avg_power_w" in s for s in shown)
    assert_accessible(page)


def _groups(results: list[dict[str, Any]]) -> dict[str, list[int | None]]:
    """The page's grouping: parameters other than the batch size (and a global batch that only
    follows it), the batch sizes of each."""
    groups: dict[str, list[int | None]] = {}
    for row in results:
        p = dict(row["parameters"])
        bs = p.pop("batch_size", None)
        if bs is not None and p.get("global_batch") == bs * p.get("gpu_count", 1):
            p.pop("global_batch")
        groups.setdefault(json.dumps([row["workload"], row["metric"], p], sort_keys=True), []).append(bs)
    return groups


def test_compare_llm_train_shows_every_configuration(page: Any, served: Served) -> None:
    query = {"gpus": "nvidia-h200-sxm,nvidia-l40", "currency": "USD", "workload": "llm-train"}
    api = httpx.get(f"{served.url}/v1/compare", params=query, timeout=30).json()
    results = api["results"]
    assert len(results) > 100  # the shipped H200 llm-train matrix
    open_view(page, served, "#/compare?" + "&".join(f"{k}={v}" for k, v in query.items()))
    page.wait_for_selector("table.compare-results")
    assert page.get_by_label("Workload").input_value() == "llm-train"
    # every configuration is a row: one per batch size under its chart, the rest in one table
    assert page.locator("table.compare-results tbody tr").count() == len(results)
    assert page.locator(".configs-shown").inner_text() == f"{len(results)} measured configurations."
    assert "pick a workload" not in page.locator("main").inner_text()
    charts = [g for g in _groups(results).values() if len(g) > 1]
    assert page.locator(".result-group svg").count() == len(charts)
    singles = sum(len(g) for g in _groups(results).values() if len(g) == 1)
    caption = page.locator(".result-singles h4").inner_text()
    assert caption == f"llm-train — {singles} configurations at one batch size — throughput (tokens/s)"
    # what every configuration shares is said once, not in each title
    assert page.locator(".common-params").inner_text().startswith("Every configuration has: ")
    assert_accessible(page)


def test_compare_without_a_workload_says_how_many_charts_it_drew(page: Any, served: Served) -> None:
    query = {"gpus": "nvidia-h200-sxm,nvidia-l40", "currency": "USD"}
    api = httpx.get(f"{served.url}/v1/compare", params=query, timeout=30).json()
    open_view(page, served, "#/compare?" + "&".join(f"{k}={v}" for k, v in query.items()))
    page.wait_for_selector("table.compare-results")
    charts = [g for g in _groups(api["results"]).values() if len(g) > 1 and None not in g]
    assert len(charts) > 12
    note = page.locator(".configs-shown").inner_text()
    assert note == (
        f"{len(api['results'])} measured configurations. 12 of {len(charts)} charts drawn: "
        "pick a workload to see them all."
    )
    assert page.locator(".result-group svg").count() == 12
