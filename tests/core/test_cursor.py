"""Opaque pagination cursors: round trip, and refusal of anything this API did not issue."""

from __future__ import annotations

import pytest

from service.core.access.cursor import InvalidCursor, decode_cursor, encode_cursor


def test_round_trip_is_url_safe_without_padding() -> None:
    payload = {"sort": "-bandwidth_gb_per_s", "after": "nvidia-h100-sxm", "pos": 14}
    c = encode_cursor(payload)
    assert "=" not in c and "+" not in c and "/" not in c
    assert decode_cursor(c) == payload


@pytest.mark.parametrize("bad", ["!!!", "WzFd", "bm90IGpzb24", "", "é"])
def test_anything_else_names_the_field(bad: str) -> None:
    with pytest.raises(InvalidCursor) as exc:
        decode_cursor(bad, field="after")
    assert exc.value.field == "after"
    assert (
        exc.value.detail == "the cursor is not valid" and exc.value.message == "not a cursor this API issued"
    )
