"""A GPU's page reads as words (issue 29, item 13): each figure under its section with a label,
not the API's JSON key, its unit and its source; the GPU's rental prices; links that compare it
and estimate a job on it. Checked against GET /v1/gpus/{slug} and its prices."""

from __future__ import annotations

import re
from typing import Any

import httpx

from tests.page.conftest import PageProblems, Served, assert_accessible, new_page
from tests.page.test_views import open_view

GIB = 2**30


def _one(x: float) -> str:  # Intl.NumberFormat("en", {maximumFractionDigits: 1})
    return f"{x:,.1f}".removesuffix(".0")


def _rows(page: Any) -> dict[str, str]:
    return {
        r.locator("th").inner_text(): r.locator("td").first.inner_text()
        for r in page.locator("table.spec tbody tr").all()
    }


def test_a_gpu_page_has_words_units_prices_and_links(page: Any, served: Served) -> None:
    g = httpx.get(f"{served.url}/v1/gpus/nvidia-l40", timeout=30).json()
    prices = httpx.get(f"{served.url}/v1/gpus/nvidia-l40/prices", timeout=30).json()["items"]
    assert prices, "the shipped price snapshot has L40 rows"
    open_view(page, served, "#/gpus/nvidia-l40")
    sections = page.locator(".spec-section h2").all_inner_texts()
    assert sections == [
        "Memory",
        "Compute units",
        "Peak throughput (dense)",
        "Supported precisions",
        "Power",
        "Identity",
        "Interconnect",
    ]
    rows = _rows(page)
    # labels are words: no JSON key (snake_case or dotted path) is shown as a label
    assert not [k for k in rows if re.search(r"[a-z0-9]_[a-z0-9]|[a-z]\.[a-z]", k)], list(rows)
    usable = g["memory"]["usable_memory_bytes"]
    assert rows["Usable memory"] == f"{_one(usable / GIB)} GiB ({usable:,} B)"
    assert rows["Memory bandwidth"] == f"{_one(g['memory']['bandwidth_gb_per_s'])} GB/s"
    assert rows["BF16 tensor"] == f"{_one(g['peaks']['bf16_tflops'])} TFLOP/s"
    assert rows["Board power (TDP)"] == f"{g['power']['tdp_w']:,.0f} W"
    assert rows["PCI device ids"] == ", ".join(g["identity"]["pci_device_ids"])
    assert rows["FP8"] == "yes" and rows["PCIe generation"] == str(g["interconnect"]["pcie"]["gen"])
    # every price the API has, cheapest first and marked
    cells = page.locator("table.gpu-prices tbody tr")
    assert cells.count() == len(prices)
    usd = sorted(float(p["per_gpu_hour"]) for p in prices if p["currency"] == "USD")
    assert page.locator("table.gpu-prices td.best").first.inner_text() == f"{usd[0]:,.2f} USD"
    assert cells.first.locator("th").inner_text() in {p["provider"] for p in prices}
    assert_accessible(page)
    # a link compares it with two peers, another estimates a job on it
    page.locator('a[data-action="compare"]').click()
    page.wait_for_selector("main:not([aria-busy]) ul.compare-gpus")
    assert page.locator("ul.compare-gpus li").first.inner_text().startswith("NVIDIA L40")
    assert page.locator("ul.compare-gpus li").count() == 3
    page.go_back()
    page.wait_for_selector("main:not([aria-busy]) table.spec")
    page.locator('a[data-action="estimate"]').click()
    page.wait_for_selector("main:not([aria-busy]) .estimate-result")
    assert page.get_by_label("GPU (any name the catalog resolves)").input_value() == "nvidia-l40"
    assert "NVIDIA L40" in page.locator(".estimate-result .lede").inner_text()


def test_every_listed_gpu_opens_and_gaudi_3_is_itself(page: Any, served: Served) -> None:
    """The list links each GPU by slug; intel-gaudi3 (a slug that reads like the family "Gaudi 3")
    opens its own page rather than an error."""
    open_view(page, served, "#/gpus?q=gaudi")
    page.locator('tr[data-slug="intel-gaudi3"] a').click()
    page.wait_for_selector("main:not([aria-busy]) table.spec")
    name = httpx.get(f"{served.url}/v1/gpus/intel-gaudi3", timeout=30).json()["name"]
    assert page.locator("main h1").inner_text() == name


def test_a_gpu_page_speaks_chinese(browser: Any, served: Served) -> None:
    problems = PageProblems()
    page = new_page(browser, problems, locale="zh-CN")
    try:
        open_view(page, served, "#/gpus/nvidia-l40")
        rows = _rows(page)
        assert "可用显存" in rows and "显存带宽" in rows and rows["FP8"] == "是"
        assert page.locator('a[data-action="compare"]').inner_text() == "与其他 GPU 对比"
    finally:
        page.context.close()
    assert problems.errors == []
