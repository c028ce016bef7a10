"""The Compare view in a real browser against GET /v1/compare on the real app."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.benchmark_fixtures import fingerprint, result, run
from tests.page.conftest import PageProblems, Served, assert_accessible
from tests.page.test_views import L40_PCI, L40_USABLE, open_view

L20_PCI = "0x26ba"


@pytest.fixture(scope="module")
def measured_l40_l20(served: Served) -> None:
    """ResNet-50 training measured on both cards by a trusted agent; the L20 runs out of memory
    at batch 256 (test data in the test's own database)."""
    for pci, name, rates in (
        (L40_PCI, "NVIDIA L40", {64: 1400.0, 128: 1500.0, 256: 1550.0}),
        (L20_PCI, "NVIDIA L20", {64: 1000.0, 128: 1080.0, 256: None}),
    ):
        results = []
        for bs, v in rates.items():
            params = {"precision": "amp_bf16", "batch_size": bs}
            results += (
                [result("resnet50-train", params, status="oom")] * 3
                if v is None
                else [result("resnet50-train", params, {"throughput": v * f}) for f in (0.99, 1.0, 1.01)]
            )
        body = run(
            results,
            host=f"page-{name[-3:]}",
            pci=pci,
            gpu_name=name,
            memory_total=L40_USABLE,
            fp=fingerprint(pci, host_id=f"mid-page-{pci}", power_limit_w=300),
        )
        r = served.post("/v1/benchmark-runs", body, served.submit_key)
        assert r.status_code in (200, 201), r.text


def cell(page: Any, key: str, gpu: str) -> Any:
    return page.locator(f'table.compare-specs tr[data-key="{key}"] td[data-gpu="{gpu}"]')


def test_default_compare_view_loads_the_seeds_three_gpus(
    page: Any, served: Served, measured_l40_l20: None
) -> None:
    open_view(page, served, "#/compare")
    page.wait_for_selector("table.compare-specs")
    heads = page.locator("table.compare-specs thead th").all_inner_texts()
    assert heads[1:] == ["NVIDIA L40", "NVIDIA L20", "NVIDIA A100 80GB SXM4"]
    assert page.locator("main .problem").count() == 0


def test_l40_vs_l20_shows_the_right_figures(page: Any, served: Served, measured_l40_l20: None) -> None:
    open_view(page, served, "#/compare?gpus=L40,L20")
    page.wait_for_selector("table.compare-specs")
    l40, l20 = "nvidia-l40", "nvidia-l20"
    # 48 GB and 864 GB/s on both (the seed posts' "24 GB at 576 GB/s" L20 is wrong)
    assert cell(page, "memory_gib", l40).locator(".value").inner_text() == "48 GiB"
    assert cell(page, "memory_gib", l20).locator(".value").inner_text() == "48 GiB"
    assert cell(page, "bandwidth_gb_per_s", l40).locator(".value").inner_text() == "864 GB/s"
    assert cell(page, "bandwidth_gb_per_s", l20).locator(".value").inner_text() == "864 GB/s"
    assert "×1" in cell(page, "bandwidth_gb_per_s", l20).inner_text()
    # the L40's higher tensor peak, marked best, the L20's ratio to it
    assert cell(page, "bf16_tflops", l40).locator(".value").inner_text() == "181.1 TFLOP/s"
    assert cell(page, "bf16_tflops", l20).locator(".value").inner_text() == "119.5 TFLOP/s"
    assert "best" in (cell(page, "bf16_tflops", l40).get_attribute("class") or "")
    assert "×0.66" in cell(page, "bf16_tflops", l20).inner_text()
    # provenance marks
    assert cell(page, "bandwidth_gb_per_s", l20).locator(".prov").inner_text() == "datasheet"
    assert cell(page, "usable_memory_gib", l20).locator(".prov").inner_text() == "measured"
    # measured results: a chart of throughput by batch size, the L20's OOM marked on it and in the table
    group = page.locator('section.result-group[data-workload="resnet50-train"]').first
    svg = group.locator("svg")
    assert svg.locator("circle").count() >= 5
    marks = svg.locator(".oom-mark")
    assert marks.count() == 1 and "OOM" in (marks.text_content() or "")
    assert "NVIDIA L20 @ 256" in (marks.locator("title").text_content() or "")
    rows = {r.locator("th").inner_text(): r for r in group.locator("table.compare-results tbody tr").all()}
    assert rows["256"].locator(f'td[data-gpu="{l20}"]').inner_text().startswith("OOM")
    assert rows["64"].locator(f'td[data-gpu="{l40}"]').inner_text().startswith("1,400")
    # prices per provider, per GPU-hour
    assert page.locator(f'table.compare-prices tr[data-gpu="{l40}"]').count() >= 1
    assert "USD" in page.locator("table.compare-prices caption").inner_text()
    assert_accessible(page)


def test_a_memory_published_only_as_marketed_shows_the_datasheets_words(page: Any, served: Served) -> None:
    open_view(page, served, "#/compare?gpus=nvidia-h200-sxm,nvidia-h100-sxm")
    page.wait_for_selector("table.compare-specs")
    assert cell(page, "memory_gib", "nvidia-h200-sxm").locator(".value").inner_text() == "— (141 GB HBM3e)"
    assert cell(page, "memory_gib", "nvidia-h100-sxm").locator(".value").inner_text() == "80 GiB"


def test_compare_refuses_with_the_apis_problem_next_to_the_field(
    page: Any, served: Served, measured_l40_l20: None, problems: Any
) -> None:
    problems.expect_status(404, 422, 300)
    open_view(page, served, "#/compare?gpus=nvidia-l40")
    answer = httpx.get(f"{served.url}/v1/compare", params={"gpus": "nvidia-l40"}, timeout=30)
    assert answer.status_code == 422
    err = page.locator('[data-field="gpus"] .field-error')
    err.wait_for()
    assert err.inner_text() == answer.json()["errors"][0]["msg"]


def test_an_ambiguous_name_offers_the_apis_candidates(
    page: Any, served: Served, problems: PageProblems
) -> None:
    """Issue 29, item 8: "A100" names four GPUs; the API's 300 lists them, and so does the page,
    as a choice that compares the picked one."""
    problems.expect_status(300)
    api = httpx.get(f"{served.url}/v1/compare", params={"gpus": "L40,A100"}, timeout=30)
    assert api.status_code == 300
    candidates = api.json()["candidates"]
    page.goto(f"{served.url}/#/compare?gpus=L40,A100")
    page.wait_for_selector(".ambiguous")
    buttons = page.locator(".ambiguous ul.candidates button")
    assert [b.get_attribute("data-slug") for b in buttons.all()] == [c["slug"] for c in candidates]
    assert len(candidates) == 4
    default = api.json()["default"]
    assert "the default" in page.locator(f'.ambiguous li:has(button[data-slug="{default}"])').inner_text()
    assert_accessible(page)
    page.locator('.ambiguous button[data-slug="nvidia-a100-sxm4-80gb"]').click()
    page.wait_for_selector(".compare-specs")
    assert page.get_by_label("GPUs to compare (2–8, comma-separated, any catalog name)").input_value() == (
        "L40,nvidia-a100-sxm4-80gb"
    )
    assert "NVIDIA A100 80GB SXM4" in page.locator("ul.compare-gpus").inner_text()
