"""Keyset pagination for listings ordered newest first by id: the cursor check and the page
cut, written once (:mod:`service.core.access.cursor` encodes and decodes)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from service.core.access.cursor import InvalidCursor, decode_before, encode_before
from service.usecases.errors import FieldError, Invalid

T = TypeVar("T")


INT32_MAX = 2**31 - 1
"""The largest id of a listing keyed by an ``Integer`` column (runs, alerts)."""


def before_of(cursor: str | None, kind: str, largest: int | None = None) -> int | None:
    """The id a page starts below (None: the first page), at most ``largest + 1`` (a cursor past
    the largest id a column holds reads as "every id": nothing it binds overflows the column).
    A cursor outside the grammar is :class:`Invalid` naming the field; ``kind`` says what was
    expected ("a results cursor")."""
    if not cursor:
        return None
    try:
        before = decode_before(cursor, kind)
        return before if largest is None else min(before, largest)
    except InvalidCursor as exc:
        raise Invalid("the cursor is not valid", fields=[FieldError((exc.field,), exc.message)]) from None


def cut_page(rows: Sequence[T], limit: int, id_of: Callable[[T], int]) -> tuple[tuple[T, ...], str | None]:
    """The page (``rows`` were fetched with ``limit + 1``) and the next page's cursor, None on
    the last page."""
    items = tuple(rows[:limit])
    more = len(rows) > limit
    return items, (encode_before(id_of(items[-1])) if more and items else None)
