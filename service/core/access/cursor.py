"""Opaque pagination cursors: a small JSON object, URL-safe base64 without padding.

Every listing issues and reads its cursors here; what the object holds (a sort order, the last
key seen, a position) is the listing's business. Keyset pages carry ``{"before": <id>}`` -- the
last id of the page, the next page being the ids below it. A cursor this API did not issue is
refused with :class:`InvalidCursor`, which names the field (``cursor``) and says what was
expected.

Pure: no web, DB or clock.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

NOT_ISSUED = "not a cursor this API issued"


class InvalidCursor(ValueError):
    """A cursor that does not decode, or decodes to the wrong kind: ``field`` names the input
    it came in, ``message`` what is wrong with it."""

    detail = "the cursor is not valid"

    def __init__(self, field: str = "cursor", message: str = NOT_ISSUED) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def encode_cursor(payload: Mapping[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(payload, separators=(",", ":")).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, field: str = "cursor") -> dict[str, Any]:
    """The JSON object inside ``cursor``; :class:`InvalidCursor` if there is none."""
    try:
        pad = "=" * (-len(cursor) % 4)
        data = json.loads(base64.urlsafe_b64decode(cursor + pad))
    except (ValueError, binascii.Error):
        raise InvalidCursor(field) from None
    if not isinstance(data, dict):
        raise InvalidCursor(field)
    return data


def encode_before(last_id: int) -> str:
    """The cursor of the page after one whose last (smallest) id is ``last_id``."""
    return encode_cursor({"before": last_id})


def decode_before(cursor: str, kind: str, field: str = "cursor") -> int:
    """The ``before`` id of a keyset cursor; ``kind`` completes the refusal ("not a results
    cursor") when the cursor decodes but is not one of ours."""
    before = decode_cursor(cursor, field).get("before")
    if not isinstance(before, int) or isinstance(before, bool):
        raise InvalidCursor(field, f"not {kind}")
    return before
