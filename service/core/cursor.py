"""Opaque pagination cursors: a small JSON object, URL-safe base64 without padding.

Every listing issues and reads its cursors here; what the object holds (a sort order, the
last key seen, a position) is the listing's business. A string that does not decode to a
JSON object raises :class:`InvalidCursor`, which names the query parameter at fault.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any


class InvalidCursor(ValueError):
    """A cursor this API did not issue. ``field`` is the parameter that carried it."""

    detail = "the cursor is not valid"
    message = "not a cursor this API issued"

    def __init__(self, field: str = "cursor") -> None:
        super().__init__(f"{field}: {self.message}")
        self.field = field


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
