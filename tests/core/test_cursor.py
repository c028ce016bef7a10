"""Pagination cursors: their grammar (stated in the API document), round trips, and that every
cursor the grammar allows means something -- no cursor the schema accepts is refused later."""

from __future__ import annotations

import re

import pytest

from service.core.access.cursor import (
    CATALOG_PATTERN,
    INT64_MAX,
    KEYSET_PATTERN,
    POSITION_PATTERN,
    InvalidCursor,
    decode_before,
    decode_position,
    encode_before,
    encode_position,
)


def test_round_trips_are_url_safe() -> None:
    assert decode_before(encode_before(1234), "a results cursor") == 1234
    assert decode_position(encode_position(40)) == (40, None)
    c = encode_position(14, "nvidia-h100-sxm")
    assert c == "p14~nvidia-h100-sxm" and re.fullmatch(r"[A-Za-z0-9~._-]+", c)
    assert decode_position(c, catalog=True) == (14, "nvidia-h100-sxm")


@pytest.mark.parametrize(
    ("pattern", "good"),
    [
        (KEYSET_PATTERN, ["b1", "b9223372036854775807", "b9999999999999999999"]),
        (POSITION_PATTERN, ["p0", "p500"]),
        (CATALOG_PATTERN, ["p0", "p50~nvidia-l40", "p7~amd-mi300x", "p3~gone-gpu-2.5"]),
    ],
)
def test_every_cursor_of_the_grammar_decodes(pattern: str, good: list[str]) -> None:
    for c in good:
        assert re.fullmatch(pattern, c)
        if pattern == KEYSET_PATTERN:
            assert 1 <= decode_before(c, "x") <= INT64_MAX
        else:
            decode_position(c, catalog=pattern == CATALOG_PATTERN)


@pytest.mark.parametrize("bad", ["!!!", "0", "b0", "b-1", "p", "p01", "", "é", "eyJiZWZvcmUiOiAxfQ"])
def test_anything_else_names_the_field(bad: str) -> None:
    with pytest.raises(InvalidCursor) as exc:
        decode_before(bad, "a results cursor", field="cursor")
    assert exc.value.field == "cursor" and exc.value.detail == "the cursor is not valid"
    if not bad.startswith("p") or bad in ("p", "p01"):
        with pytest.raises(InvalidCursor):
            decode_position(bad)
