"""Typed errors with their HTTP status; the API turns them into RFC 9457 problem+json."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class AppError(Exception):
    status: int = 400
    code: str = "bad-request"
    title: str = "Bad request"

    def __init__(self, detail: str, *, errors: Sequence[dict[str, Any]] | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = list(errors) if errors else None
        self.extra = extra


class NotFound(AppError):
    status, code, title = 404, "not-found", "Not found"


class Gone(AppError):
    status, code, title = 410, "gone", "Gone"


class Conflict(AppError):
    status, code, title = 409, "conflict", "Conflict"


class IdempotencyConflict(AppError):
    status, code, title = 409, "idempotency-conflict", "Idempotency key reused with a different body"


class PreconditionFailed(AppError):
    status, code, title = 412, "precondition-failed", "Precondition failed"


class PreconditionRequired(AppError):
    status, code, title = 428, "precondition-required", "Precondition required"


class Unauthorized(AppError):
    status, code, title = 401, "unauthorized", "Unauthorized"


class Forbidden(AppError):
    status, code, title = 403, "forbidden", "Forbidden"


class Unprocessable(AppError):
    status, code, title = 422, "validation-error", "Request validation failed"


class PayloadTooLarge(AppError):
    status, code, title = 413, "payload-too-large", "Payload too large"


class Ambiguous(AppError):
    status, code, title = 300, "ambiguous", "Ambiguous name"
