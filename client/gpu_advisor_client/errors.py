"""problem+json answers (RFC 9457) as typed exceptions."""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    """An error answer: ``status``, the problem's ``type`` / ``title`` / ``detail``, the fields at
    fault (``errors``: ``loc`` + ``msg``) and the whole problem document."""

    def __init__(self, status: int, problem: dict[str, Any], retry_after_s: float | None = None) -> None:
        self.status = status
        self.problem = problem
        self.type = str(problem.get("type", ""))
        self.title = str(problem.get("title", ""))
        self.detail = str(problem.get("detail", ""))
        self.errors: list[dict[str, Any]] = list(problem.get("errors") or [])
        self.retry_after_s = retry_after_s
        super().__init__(f"{status} {self.title}: {self.detail}".strip())


class BadRequest(ApiError):
    """400"""


class Unauthorized(ApiError):
    """401: a missing or invalid API key."""


class Forbidden(ApiError):
    """403: the key's scope does not allow this."""


class NotFound(ApiError):
    """404 (also: an answer asked with another key, or pruned)."""


class Conflict(ApiError):
    """409: e.g. an idempotency key reused with another body."""


class ValidationFailed(ApiError):
    """422: ``errors[].loc`` names each field at fault."""


class RateLimited(ApiError):
    """429, after the client's retries: ``retry_after_s`` says when to try again."""


class Unavailable(ApiError):
    """503, after the client's retries (the database is busy or down)."""


class ServerError(ApiError):
    """Any other 5xx."""


BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    422: ValidationFailed,
    429: RateLimited,
    503: Unavailable,
}


def error_for(status: int, problem: dict[str, Any], retry_after_s: float | None) -> ApiError:
    cls = BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    return cls(status, problem, retry_after_s)
