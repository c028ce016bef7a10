"""RFC 9457 problem+json: exception handlers and the OpenAPI declarations for every operation."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from service.usecases.errors import AppError

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


def install(app: FastAPI) -> None:
    @app.exception_handler(AppError)
    async def _app_error(request: Request, exc: AppError) -> JSONResponse:
        headers = None
        if exc.status == 401:
            headers = {"WWW-Authenticate": "Bearer"}
        extra = dict(exc.extra)
        extra.pop("scheme", None)
        return problem_response(
            exc.status, exc.code, exc.title, exc.detail, request, errors=exc.errors, headers=headers, **extra
        )

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = _jsonable_errors(exc.errors())
        first = errors[0] if errors else None
        detail = (
            f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}" if first else "the request is invalid"
        )
        return problem_response(422, "validation-error", "Request validation failed", detail, request, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not-found", 405: "method-not-allowed", 413: "payload-too-large"}.get(exc.status_code, "http-error")
        return problem_response(
            exc.status_code, code, str(exc.detail) if exc.detail else "Error", None, request,
            headers=dict(exc.headers) if exc.headers else None,
        )

    @app.exception_handler(Exception)
    async def _unhandled(request: Request, exc: Exception) -> JSONResponse:
        return problem_response(500, "internal-error", "Internal server error", "an unexpected error occurred", request)


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
