"""zh: every user-visible string the page's code asks for exists in English and Chinese (issue 29,
zh). The keys come from the shipped module as the browser loads it; the keys used are every
``t("...")`` in the page's scripts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.page.conftest import PageProblems, Served, new_page
from tests.page.test_views import open_view

STATIC = Path(__file__).resolve().parents[2] / "service" / "web" / "static"


def test_every_ui_string_has_english_and_chinese(page: Any, served: Served) -> None:
    page.goto(served.url + "/")
    keys = page.evaluate(
        """async () => { const m = await import('/static/i18n.js');
             return {en: Object.keys(m.STRINGS.en), zh: Object.keys(m.STRINGS.zh),
                     empty: Object.entries(m.STRINGS.zh).filter(([k, v]) => !String(v).trim()).map(([k]) => k)}; }"""
    )
    en, zh = set(keys["en"]), set(keys["zh"])
    assert en == zh, {"only en": sorted(en - zh), "only zh": sorted(zh - en)}
    assert keys["empty"] == []
    used: set[str] = set()
    for path in STATIC.rglob("*.js"):
        used |= set(re.findall(r"""\bt\(\s*["']([a-z0-9_]+)["']""", path.read_text()))
    used |= {
        f"nav_{v}" for v in re.findall(r'data-view="([a-z]+)"', (STATIC.parent / "index.html").read_text())
    }
    assert used, "the page asks for strings"
    assert used <= en, sorted(used - en)


def test_estimate_warnings_read_in_chinese_not_as_codes(browser: Any, served: Served) -> None:
    """Issue 29, item 11: a zh reader saw ``pcie_multi_gpu_unvalidated``; the page now shows the
    API's sentence, which the API words in the browser's language."""
    problems = PageProblems()
    zh = new_page(browser, problems, locale="zh-CN")
    try:
        query = "model=llama3-8b&gpu=nvidia-l40&gpu_count=2&mode=fine-tuning&batch_size=1&seq_len=2048"
        open_view(zh, served, f"#/estimate?{query}&gradient_checkpointing=true")
        zh.wait_for_selector(".estimate-result ul.warnings li")
        items = zh.locator("ul.warnings li")
        codes = [items.nth(i).get_attribute("data-code") for i in range(items.count())]
        assert "pcie_multi_gpu_unvalidated" in codes
        for text, code in zip(items.all_inner_texts(), codes, strict=True):
            assert re.search(r"[\u4e00-\u9fff]", text) and code not in text, (code, text)
    finally:
        zh.context.close()
    assert problems.errors == []
