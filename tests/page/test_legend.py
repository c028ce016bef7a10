"""One legend for provenance and band words (issue 29, item 4), reachable from every chip:
every label the API can put on a number is explained, in English and Chinese, and a chip
leads to its own entry."""

from __future__ import annotations

import typing
from typing import Any

import httpx

from service.core.evidence.provenance import PROVENANCES
from service.schemas.compare import FigureProvenance
from tests.page.conftest import PageProblems, Served, assert_accessible, new_page
from tests.page.test_views import open_view

EVERY_LABEL = [*PROVENANCES, "measured (thin)", *typing.get_args(FigureProvenance), "80% band", "≈ best"]


def test_the_legend_explains_every_label_the_api_uses(page: Any, served: Served, browser: Any) -> None:
    open_view(page, served, "#/legend")
    terms = page.locator("dl.legend-terms dt").all_inner_texts()
    assert set(EVERY_LABEL) <= set(terms), set(EVERY_LABEL) - set(terms)
    for dd in page.locator("dl.legend-terms dd").all_inner_texts():
        assert len(dd) > 20
    assert_accessible(page)
    problems = PageProblems()
    zh = new_page(browser, problems, locale="zh-CN")
    try:
        open_view(zh, served, "#/legend")
        assert set(EVERY_LABEL) <= set(zh.locator("dl.legend-terms dt").all_inner_texts())
        assert zh.locator("main h1").inner_text() == "标签的含义"
    finally:
        zh.context.close()
    assert problems.errors == []


def test_a_chip_leads_to_its_entry(page: Any, served: Served) -> None:
    open_view(page, served, "#/estimate")
    page.get_by_label("Model (preset or Hugging Face id)").fill("llama3-8b")
    page.get_by_label("GPU (any name the catalog resolves)").fill("L40")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_selector(".estimate-result")
    chip = page.locator(".result-block.time a.prov").first
    term = chip.inner_text()
    api = httpx.post(
        f"{served.url}/v1/estimate", json={"model": "llama3-8b", "gpu": "L40"}, timeout=60
    ).json()
    assert term == api["time"]["provenance"]
    chip.click()
    page.wait_for_selector("section.view-legend")
    wanted = page.locator("dl.legend-terms dt.wanted")
    assert wanted.count() == 1 and wanted.inner_text() == term
    assert wanted.is_visible()
