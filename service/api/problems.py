"""RFC 9457 problem+json: exception handlers and the OpenAPI declarations for every operation."""

from __future__ import annotations

import logging
import sqlite3
from typing import Any

import psycopg
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from sqlalchemy.exc import SQLAlchemyError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.presenters.gpus import candidate_json
from service.core.access.cursor import InvalidCursor
from service.core.catalog.records import GpuCandidate
from service.db.errors import Outage, OutageError, OutageKind, outage_of
from service.usecases.errors import (
    Ambiguous,
    Conflict,
    FieldError,
    Forbidden,
    Gone,
    IdempotencyConflict,
    Invalid,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    PreconditionRequired,
    RunIdTaken,
    Unauthorized,
    UseCaseError,
)

PROBLEM_TYPE_BASE = "https://gpu-advisor.dev/problems/"
PROBLEM_MEDIA_TYPE = "application/problem+json"


def problem_response(
    status: int,
    code: str,
    title: str,
    detail: str | None,
    request: Request | None = None,
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body: dict[str, Any] = {"type": PROBLEM_TYPE_BASE + code, "title": title, "status": status}
    if detail:
        body["detail"] = detail
    if request is not None:
        body["instance"] = request.url.path
    if errors:
        body["errors"] = errors
    body.update({k: v for k, v in extra.items() if v is not None})
    return JSONResponse(body, status_code=status, media_type=PROBLEM_MEDIA_TYPE, headers=headers)


def _jsonable_errors(errs: Any) -> list[dict[str, Any]]:
    out = []
    for e in errs:
        out.append({"loc": list(e.get("loc", [])), "msg": str(e.get("msg", "")), "type": e.get("type")})
    return out


STATUS_AND_TITLE: dict[type[UseCaseError], tuple[int, str]] = {
    NotFound: (404, "Not found"),
    Gone: (410, "Gone"),
    Conflict: (409, "Conflict"),
    IdempotencyConflict: (409, "Idempotency key reused with a different body"),
    RunIdTaken: (409, "Run id already in use"),
    PreconditionFailed: (412, "Precondition failed"),
    PreconditionRequired: (428, "Precondition required"),
    Unauthorized: (401, "Unauthorized"),
    Forbidden: (403, "Forbidden"),
    Invalid: (422, "Request validation failed"),
    PayloadTooLarge: (413, "Payload too large"),
    Ambiguous: (300, "Ambiguous name"),
}
"""The one place a use-case refusal becomes an HTTP status."""


def status_of(exc: UseCaseError) -> tuple[int, str]:
    for cls in type(exc).__mro__:
        if cls in STATUS_AND_TITLE:
            return STATUS_AND_TITLE[cls]
    return 400, "Bad request"


def default_location(method: str) -> str:
    """Where a field named by a use case lives when it does not say: the body of a write,
    the query string of a read."""
    return "body" if method.upper() in ("POST", "PUT", "PATCH") else "query"


def field_errors(fields: tuple[FieldError, ...], method: str) -> list[dict[str, Any]]:
    where = default_location(method)
    out: list[dict[str, Any]] = []
    for f in fields:
        e: dict[str, Any] = {"loc": [f.location or where, *f.path], "msg": f.msg}
        if f.type:
            e["type"] = f.type
        out.append(e)
    return out


def extra_json(value: Any) -> Any:
    """A refusal's extra member as JSON: core values a use case attaches (the candidates of
    an ambiguous GPU name, with their URLs) become their wire form."""
    if isinstance(value, GpuCandidate):
        return candidate_json(value)
    if isinstance(value, list | tuple):
        return [extra_json(v) for v in value]
    return value


def ambiguous_body(exc: Ambiguous) -> dict[str, Any]:
    """The 300 answer for a name that matches several GPUs (one shape everywhere)."""
    return {
        "query": exc.extra.get("query"),
        "detail": exc.detail,
        "candidates": extra_json(exc.extra.get("candidates", [])),
        "default": exc.extra.get("default"),
    }


def invalid_cursor(exc: InvalidCursor) -> Invalid:
    """A cursor the core could not read, as the refusal naming its query parameter."""
    return Invalid(exc.detail, fields=[FieldError((exc.field,), exc.message)])


def problem_for(exc: UseCaseError, request: Request | None, method: str = "GET") -> JSONResponse:
    status, title = status_of(exc)
    if isinstance(exc, Ambiguous) and status == 300:
        return JSONResponse(ambiguous_body(exc), status_code=300)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    extra = {k: extra_json(v) for k, v in exc.extra.items() if k not in ("scheme", "query")}
    return problem_response(
        status,
        exc.kind,
        title,
        exc.detail,
        request,
        errors=field_errors(exc.fields, method) or None,
        headers=headers,
        **extra,
    )


OUTAGE_PROBLEMS: dict[OutageKind, tuple[int, str, str]] = {
    "unavailable": (503, "database-unavailable", "Database unavailable"),
    "busy": (503, "database-busy", "Database busy"),
    "read_only": (503, "database-read-only", "Database read-only"),
    "storage_full": (507, "storage-full", "Insufficient storage"),
}
"""The one place a database outage becomes an HTTP status (``service.db.errors``): the
client can do nothing but wait, so ``Retry-After`` says how long; never a 500."""

outage_log = logging.getLogger("gpu_advisor.outages")


def outage_problem(outage: Outage, scope: Scope) -> JSONResponse:
    status, code, title = OUTAGE_PROBLEMS[outage.kind]
    retry = outage.retry_after_s
    return problem_response(
        status,
        code,
        title,
        f"{outage.detail}; retry after {retry} s",
        None,
        headers={"Retry-After": str(retry)},
        instance=scope.get("path"),
        retry_after_s=retry,
    )


def answer_outage(exc: BaseException, scope: Scope) -> JSONResponse | None:
    """The 503/507 answer for a database outage (logged as one line, remembered for
    ``/readyz``), or None when ``exc`` is not one."""
    outage = outage_of(exc)
    if outage is None:
        return None
    outage_log.warning(
        "%s %s: database %s: %s (%s)",
        scope.get("method"),
        scope.get("path"),
        outage.kind,
        outage.detail,
        type(exc).__name__,
    )
    gate = getattr(getattr(scope.get("app"), "state", None), "write_gate", None)
    if gate is not None:
        gate.note(outage)
    return outage_problem(outage, scope)


def install(app: FastAPI) -> None:
    async def _database(request: Request, exc: Exception) -> JSONResponse:
        answer = answer_outage(exc, request.scope)
        if answer is not None:
            return answer
        error_log.error("unhandled error in %s %s", request.method, request.url.path, exc_info=exc)
        return _internal_error(request, request_id=False)  # inside the middleware, which adds it

    for database_error in (SQLAlchemyError, sqlite3.Error, psycopg.Error, OutageError):
        app.add_exception_handler(database_error, _database)

    @app.exception_handler(UseCaseError)
    async def _use_case_error(request: Request, exc: UseCaseError) -> JSONResponse:
        return problem_for(exc, request, request.method)

    @app.exception_handler(InvalidCursor)
    async def _cursor(request: Request, exc: InvalidCursor) -> JSONResponse:
        return problem_for(invalid_cursor(exc), request, request.method)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _jsonable_errors(exc.errors())
        first = errors[0] if errors else None
        detail = (
            f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}" if first else "the request is invalid"
        )
        return problem_response(
            422, "validation-error", "Request validation failed", detail, request, errors=errors
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not-found", 405: "method-not-allowed", 413: "payload-too-large"}.get(
            exc.status_code, "http-error"
        )
        headers = dict(exc.headers) if exc.headers else {}
        title, detail = str(exc.detail) if exc.detail else "Error", None
        if exc.status_code == 405:
            # Starlette names only the first route that matched the path; the path's methods
            # are spread over several routes (GET, PATCH and DELETE of /v1/gpus/{slug})
            headers["Allow"] = ", ".join(sorted({*allowed_methods(request.app, request.scope), "OPTIONS"}))
            detail = f"{request.method} is not allowed here; allowed: {headers['Allow']}"
        elif exc.status_code == 400:
            # FastAPI's answer to a body that is not JSON text (not UTF-8, too deeply nested)
            code, title = "malformed-body", "Malformed request body"
            detail = (
                "the request body is not JSON text this API can read (UTF-8, nested at most ~1000 levels)"
            )
        return problem_response(exc.status_code, code, title, detail, request, headers=headers or None)

    @app.exception_handler(Exception)
    async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
        return answer_outage(exc, request.scope) or _internal_error(request, request_id=True)


def _internal_error(request: Request, *, request_id: bool) -> JSONResponse:
    # answered outside the middleware stack, the answer carries the request id itself (it is
    # on the server's log line about the error)
    rid = request.scope.get("state", {}).get("request_id") if request_id else None
    return problem_response(
        500,
        "internal-error",
        "Internal server error",
        "an unexpected error occurred",
        request,
        headers={"X-Request-ID": rid} if rid else None,
    )


def allowed_methods(app: Any, scope: Scope) -> list[str]:
    """Every method the routes matching this path accept, for ``Allow`` (a route that serves
    ``HEAD`` names it; the API's routes do not)."""
    path = scope.get("path", "")
    methods: set[str] = set()
    for context in iter_route_contexts(app.routes):
        fmt = context.path_format
        if fmt and compile_path(fmt)[0].match(path):
            methods |= set(getattr(context.original_route, "methods", None) or ())
    return sorted(methods)


class UnhandledErrors:
    """Innermost middleware: an exception a route did not handle is logged with its traceback
    and answered as a bare problem+json 500 -- and not re-raised, so the server keeps the
    keep-alive connection (uvicorn closes a connection whose application raised) and the
    middleware around it (request id, access line, metrics) sees an ordinary 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(msg: Message) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if started:  # half an answer is out: nothing to do but let the server drop it
                raise
            response = answer_outage(exc, scope)
            if response is None:
                error_log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
                response = problem_response(
                    500,
                    "internal-error",
                    "Internal server error",
                    "an unexpected error occurred",
                    Request(scope),
                )
            await response(scope, receive, send)


error_log = logging.getLogger("gpu_advisor.errors")

PROBLEM_SCHEMA_REF = {"$ref": "#/components/schemas/Problem"}
STANDARD_PROBLEMS: dict[str, str] = {
    "401": "Missing or invalid API key",
    "403": "API key lacks the scope this operation needs",
    "413": "Request body over the size limit",
    "422": "Validation failed; `errors[].loc` names each field at fault",
    "429": "Too many requests; honour Retry-After",
    "500": "Unexpected server error",
}


def declare_problems(schema: dict[str, Any]) -> dict[str, Any]:
    """Declare problem+json responses on every operation, replacing FastAPI's default 422."""
    for path_item in schema.get("paths", {}).values():
        for op in path_item.values():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            responses = op["responses"]
            for status, desc in STANDARD_PROBLEMS.items():
                existing = responses.get(status, {})
                responses[status] = {
                    "description": existing.get("description") if status != "422" and existing else desc,
                    "content": {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_SCHEMA_REF}},
                }
            for status, resp in responses.items():
                if status.startswith(("4", "5")) and status not in STANDARD_PROBLEMS:
                    resp["content"] = {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_SCHEMA_REF}}
    comps = schema.setdefault("components", {}).setdefault("schemas", {})
    comps.pop("HTTPValidationError", None)
    comps.pop("ValidationError", None)
    return schema
