"""Every reason code of the recommender has a sentence in English and in Chinese, and every
sentence renders -- with its parameters missing too (an older stored answer may lack one)."""

from __future__ import annotations

import pytest

from service.api.presenters.recommend import EN, ZH, sentence
from service.core.recommend.search import REASON_CODES


def test_both_languages_cover_exactly_the_reason_codes() -> None:
    assert set(EN) == set(REASON_CODES), set(EN) ^ set(REASON_CODES)
    assert set(ZH) == set(REASON_CODES), set(ZH) ^ set(REASON_CODES)


@pytest.mark.parametrize("code", REASON_CODES)
def test_every_sentence_renders_even_without_its_parameters(code: str) -> None:
    en, zh = sentence(code, {}, "en"), sentence(code, {}, "zh")
    assert en and zh and en != code and zh != code
    assert zh != en


def test_every_code_the_recommender_writes_is_listed() -> None:
    """A code written in core/recommend/ but missing from REASON_CODES would reach users as
    its bare code (no sentence) -- the list is checked against the source."""
    import re
    from pathlib import Path

    import service.core.recommend.search as rec

    written = {
        code
        for f in Path(rec.__file__).parent.glob("*.py")
        for code in re.findall(r'Reason\(\s*"([A-Z_]+)"', f.read_text(encoding="utf-8"))
    }
    assert len(written) > 20
    assert written <= set(REASON_CODES), written - set(REASON_CODES)
