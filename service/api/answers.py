"""The one place that writes ``X-Data-Version``: every advisory answer states the data it was
computed from, in its body (``data_version``) and in this header, and the two are the same
string because both come from here.

A route hands over the body (a wire model, a JSON-ready document, or bytes already encoded)
and the version it read (``uow.data_version()`` or the one a use case put in the answer).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi import Response
from pydantic import BaseModel

DATA_VERSION_HEADER = "X-Data-Version"


def dumps(doc: Mapping[str, Any]) -> str:
    """A JSON-ready document as an answer's body says it: as Starlette's JSONResponse renders
    it (compact, UTF-8, no NaN)."""
    return json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def answer(
    body: BaseModel | Mapping[str, Any] | bytes,
    data_version: str,
    *,
    status_code: int = 200,
    headers: Mapping[str, str] | None = None,
    media_type: str = "application/json",
) -> Response:
    """An answer with its ``X-Data-Version`` header (and any other ``headers``): JSON, or
    ``bytes`` already encoded in ``media_type`` (a rendered artifact)."""
    if isinstance(body, bytes):
        content = body
    else:
        doc = body.model_dump(mode="json") if isinstance(body, BaseModel) else body
        content = dumps(doc).encode()
    h = {DATA_VERSION_HEADER: str(data_version), **(headers or {})}
    return Response(content, status_code=status_code, media_type=media_type, headers=h)
