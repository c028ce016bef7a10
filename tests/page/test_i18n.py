"""zh: every user-visible string the page's code asks for exists in English and Chinese (issue 29,
zh). The keys come from the shipped module as the browser loads it; the keys used are every
``t("...")`` in the page's scripts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.page.conftest import Served

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
