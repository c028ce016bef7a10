"""JSON request bodies parsed and validated off the event loop.

FastAPI decodes and validates a declared body model on the event loop, before the handler's
thread call: for a run of 10,000 results (up to ~10 MiB) that is ~100 ms or more during which
no other request is served. :func:`json_body` makes the body a dependency instead: small
bodies are handled inline (a thread hop would cost more), larger ones in a thread, with the
same answers FastAPI gives -- 422 ``missing``, ``json_invalid`` (with the position),
``model_attributes_type`` for a non-JSON content type or a non-object, each error's ``loc``
starting with ``body``; 400 for text that is not UTF-8 or nests too deep.

The operation states its body with ``openapi_extra=body_schema("Model")`` (the model joins the
document's components through ``x-body-model``, ``service.api.openapi_ops.document_bodies``).
"""

from __future__ import annotations

import email.message
import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException

M = TypeVar("M", bound=BaseModel)
INLINE_BYTES = 64 * 1024
"""Bodies up to this size are parsed on the event loop (well under a millisecond)."""


def body_schema(model: str, **extra: Any) -> dict[str, Any]:
    """``openapi_extra`` of an operation whose body is parsed by :func:`json_body`."""
    return {
        "requestBody": {"required": True, "content": {"application/json": {"schema": {}}}},
        "x-body-model": model,
        **extra,
    }


def _is_json(content_type: str | None) -> bool:
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    if message.get_content_maintype() != "application":
        return False
    subtype = message.get_content_subtype()
    return subtype == "json" or subtype.endswith("+json")


def _not_an_object() -> RequestValidationError:
    return RequestValidationError(
        [
            {
                "type": "model_attributes_type",
                "loc": ("body",),
                "msg": "Input should be a valid dictionary or object to extract fields from",
                "input": None,
            }
        ]
    )


def parse(
    model: type[M], raw: bytes, content_type: str | None, check: Callable[[Any], None] | None = None
) -> M:
    """Decode and validate one body; ``check`` sees the decoded JSON first (a size guard)."""
    if not raw:
        raise RequestValidationError(
            [{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}]
        )
    if not _is_json(content_type):
        raise _not_an_object()
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as e:
        raise RequestValidationError(
            [{"type": "json_invalid", "loc": ("body", e.pos), "msg": "JSON decode error", "input": {}}]
        ) from None
    except (UnicodeDecodeError, RecursionError):
        raise HTTPException(400, "There was an error parsing the body") from None
    if not isinstance(data, dict):
        raise _not_an_object()
    if check is not None:
        check(data)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in exc.errors(include_url=False)]
        ) from None


def json_body(
    model: type[M], *, check: Callable[[Request, Any], None] | None = None
) -> Callable[[Request], Awaitable[M]]:
    """A dependency yielding the validated body (see the module docstring); ``check`` sees the
    request and the decoded JSON before validation."""

    async def body(request: Request) -> M:
        raw = await request.body()
        content_type = request.headers.get("content-type")
        checking = functools.partial(check, request) if check is not None else None
        if len(raw) <= INLINE_BYTES:
            return parse(model, raw, content_type, checking)
        return await run_in_threadpool(parse, model, raw, content_type, checking)

    return body
