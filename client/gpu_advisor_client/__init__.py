"""Typed client for the GPU Advisor API: :class:`Client` (sync) and :class:`AsyncClient`, on
httpx; wire models in :mod:`gpu_advisor_client.models` (generated from the OpenAPI document);
problem+json errors as :mod:`gpu_advisor_client.errors`."""

from gpu_advisor_client import models
from gpu_advisor_client._client import AsyncClient, Client, retry_after_s
from gpu_advisor_client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    RateLimited,
    ServerError,
    Unauthorized,
    Unavailable,
    ValidationFailed,
)

__all__ = [
    "ApiError",
    "AsyncClient",
    "BadRequest",
    "Client",
    "Conflict",
    "Forbidden",
    "NotFound",
    "RateLimited",
    "ServerError",
    "Unauthorized",
    "Unavailable",
    "ValidationFailed",
    "models",
    "retry_after_s",
]
