"""The GPUs view offers the API's filters and sort, kept in the URL (issue 29, item 13): what
the page lists is what GET /v1/gpus answers for the same query, in the same order, and a link
restores the same view."""

from __future__ import annotations

from typing import Any

import httpx

from tests.page.conftest import Served, assert_accessible
from tests.page.test_views import open_view


def _api(served: Served, **query: Any) -> list[str]:
    items = httpx.get(f"{served.url}/v1/gpus", params={"limit": 500, **query}, timeout=30).json()["items"]
    return [g["slug"] for g in items]


def _rows(page: Any) -> list[str]:
    return [r.get_attribute("data-slug") for r in page.locator("table.gpu-list tbody tr:not([hidden])").all()]


def test_filters_and_sort_ask_the_api_and_live_in_the_url(page: Any, served: Served) -> None:
    open_view(page, served, "#/gpus?vendor=amd&sort=-usable_memory_bytes")
    assert page.get_by_label("Vendor").input_value() == "amd"
    assert _rows(page) == _api(served, vendor="amd", sort="-usable_memory_bytes")
    assert page.locator(".gpu-count").inner_text() == f"{len(_rows(page))} GPUs"
    # another sort: the URL changes and the rows follow the API's order
    page.get_by_label("Sort by").select_option("-bandwidth_gb_per_s")
    page.wait_for_function("() => location.hash.includes('sort=-bandwidth_gb_per_s')")
    page.wait_for_selector("main:not([aria-busy]) table.gpu-list")
    assert _rows(page) == _api(served, vendor="amd", sort="-bandwidth_gb_per_s")
    # any vendor, FP8 and at least 80 GiB usable
    page.get_by_label("Vendor").select_option("")
    page.wait_for_function("() => !location.hash.includes('vendor=')")
    page.wait_for_selector("main:not([aria-busy]) table.gpu-list")
    page.get_by_label("Supports FP8").check()
    page.wait_for_function("() => location.hash.includes('supports=fp8')")
    page.wait_for_selector("main:not([aria-busy]) table.gpu-list")
    page.get_by_label("At least this usable memory (GiB)").fill("80")
    page.get_by_label("At least this usable memory (GiB)").press("Tab")
    page.wait_for_function("() => location.hash.includes('min_usable_memory_gib=80')")
    page.wait_for_selector("main:not([aria-busy]) table.gpu-list")
    expected = _api(served, supports="fp8", min_usable_memory_gib=80, sort="-bandwidth_gb_per_s")
    assert _rows(page) == expected and 0 < len(expected) < len(_api(served))
    # the text filter narrows what is shown and is kept in the link
    page.get_by_label("Filter by name, slug or architecture").fill("h200")
    page.wait_for_function("() => location.hash.includes('q=h200')")
    assert _rows(page) and all("h200" in s for s in _rows(page))
    link = page.url
    page.goto("about:blank")
    page.goto(link)
    page.wait_for_selector("main:not([aria-busy]) table.gpu-list")
    assert page.get_by_label("Supports FP8").is_checked() and all("h200" in s for s in _rows(page))
    assert_accessible(page)
