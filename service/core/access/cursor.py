"""Pagination cursors with a grammar the API document states, so that every cursor the
schema allows means something (issue 26: ``cursor=0`` matched the old pattern and was refused as
"not a cursor this API issued" -- a rule the schema did not state):

- keyset listings, newest first by id (results, runs, alerts): ``b<id>`` -- the page of the
  ids below ``id`` (:data:`KEYSET_PATTERN`);
- positional listings (a GPU's measured cells): ``p<position>`` (:data:`POSITION_PATTERN`);
- the catalog: ``p<position>``, optionally ``~<slug>`` -- the page after that GPU in the
  request's sort order, else from that position when the GPU is gone
  (:data:`CATALOG_PATTERN`).

A cursor outside its grammar is refused by the request's validation (422 naming ``cursor``);
:class:`InvalidCursor` is raised here only for callers that bypass it.

Pure: no web, DB or clock.
"""

from __future__ import annotations

import re

NOT_ISSUED = "not a cursor this API issued"
INT64_MAX = 2**63 - 1

KEYSET_PATTERN = r"^b[1-9][0-9]{0,18}$"
POSITION_PATTERN = r"^p(?:0|[1-9][0-9]{0,8})$"
CATALOG_PATTERN = r"^p(?:0|[1-9][0-9]{0,8})(?:~[a-z0-9]+(?:-[a-z0-9.]+)*)?$"


class InvalidCursor(ValueError):
    """A cursor outside its listing's grammar: ``field`` names the input it came in,
    ``message`` what was expected."""

    detail = "the cursor is not valid"

    def __init__(self, field: str = "cursor", message: str = NOT_ISSUED) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def encode_before(last_id: int) -> str:
    """The cursor of the page after one whose last (smallest) id is ``last_id``."""
    return f"b{last_id}"


def decode_before(cursor: str, kind: str, field: str = "cursor") -> int:
    """The id a keyset page starts below (any id: ids past the largest stored read as it)."""
    if not re.fullmatch(KEYSET_PATTERN, cursor):
        raise InvalidCursor(field, f"not {kind}: b followed by an id, as next_cursor gives it")
    return min(int(cursor[1:]), INT64_MAX)


def encode_position(position: int, after: str | None = None) -> str:
    return f"p{position}" + (f"~{after}" if after else "")


def decode_position(cursor: str, *, catalog: bool = False, field: str = "cursor") -> tuple[int, str | None]:
    """(position, the slug the page follows or None) of a positional cursor."""
    pattern = CATALOG_PATTERN if catalog else POSITION_PATTERN
    if not re.fullmatch(pattern, cursor):
        raise InvalidCursor(field, "p followed by a position, as next_cursor gives it")
    position, _, after = cursor[1:].partition("~")
    return int(position), after or None
