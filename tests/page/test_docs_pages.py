"""``/docs`` and ``/redoc`` in a real browser: they render the operations with every request
kept on this origin (the machine has no network; a CDN script would leave them blank) and no
console error, so no CSP violation either."""

from __future__ import annotations

from typing import Any

import pytest

from tests.page.conftest import Served


@pytest.mark.parametrize(
    "path, ready, operation",
    [
        ("/docs", ".opblock-summary-path", "/v1/recommend"),
        ("/redoc", "[data-section-id]", "Ranked, explained, priced GPU choices"),
    ],
)
def test_api_reference_renders_offline_from_this_origin(
    page: Any, served: Served, path: str, ready: str, operation: str
) -> None:
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(served.url + path)
    page.wait_for_selector(ready, timeout=30_000)
    assert operation in page.locator("body").inner_text()
    outside = [u for u in requested if not u.startswith((served.url, "data:", "blob:"))]
    assert outside == []
    # the page fixture fails the test on any console error (a refused script or style is one)
