"""A memo that starts over past a bound: for caches that live as long as a catalog snapshot while
the questions they remember vary without limit."""

from __future__ import annotations

from typing import Final

__all__ = ["MEMO_ENTRIES", "BoundedMemo"]

MEMO_ENTRIES: Final = 8192
"""Answers remembered before starting over (one recommendation asks a few hundred)."""


class BoundedMemo(dict[tuple[object, ...], object]):
    """A dict that clears itself before it would hold more than ``limit`` entries: a price book
    lives a day and cost assumptions vary per question, so an unbounded memo grows with every
    distinct question (memory, and full garbage collections that scan it)."""

    def __init__(self, limit: int = MEMO_ENTRIES) -> None:
        super().__init__()
        self.limit = limit

    def __setitem__(self, key: tuple[object, ...], value: object) -> None:
        if len(self) >= self.limit and key not in self:
            self.clear()
        super().__setitem__(key, value)
