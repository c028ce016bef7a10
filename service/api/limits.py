"""Pure ASGI middleware for request bodies: size and time limits, decided before the app runs.

A request that carries a body (``Content-Length`` > 0 or ``Transfer-Encoding``) is read here
in full before the app sees it:

- more than its route's limit (:data:`ROUTE_BODY_LIMITS`, sized to the largest legitimate
  body of each route, and never more than ``max_body_bytes``) -> ``413`` problem+json, whether
  announced by ``Content-Length`` (refused before reading a byte) or discovered while reading a
  chunked body;
- not complete within ``body_read_timeout_s`` of the app being called (just after the
  headers) -> ``408`` problem+json; a client that sends less than its ``Content-Length``, or
  trickles, cannot hold a worker's connection for longer than that.

Both answers carry ``Connection: close`` (the rest of the body is not read). The app then gets
the buffered body as one message; the framework would have buffered it anyway. Reading it
here, rather than failing inside the framework's own body parsing, is what makes the answer a
413 or 408 instead of a generic 400.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.problems import problem_response

KIB, MIB = 1024, 2**20
ROUTE_BODY_LIMITS: tuple[tuple[str, str, int], ...] = (
    # a run of 10,000 results (the schema's cap): ~1.3 MiB of ResNet-50 results, ~10 MiB of
    # LLM-training results with every parameter and metric spelled out
    ("POST", "/v1/benchmark-runs", 12 * MIB),
    ("POST", "/v1/benchmark-runs/validate", 12 * MIB),
    # 256 configurations, each of which may carry a config.json (a few KiB)
    ("POST", "/v1/estimate/batch", 2 * MIB),
    # one configuration, one question, one config.json, one GPU document: a few KiB each
    ("POST", "/v1/estimate", 256 * KIB),
    ("POST", "/v1/recommend", 256 * KIB),
    ("POST", "/v1/models/parse", 256 * KIB),
    ("POST", "/v1/gpus", 256 * KIB),
    ("PATCH", "/v1/gpus/{slug}", 256 * KIB),
)
"""Body limit per route (method, template, bytes); any other body: :data:`DEFAULT_BODY_LIMIT`."""
DEFAULT_BODY_LIMIT = 64 * KIB
"""Prices, FX rates, reasons, mappings: well under 1 KiB each."""


class BodyLimits:
    """The body limit of a request: its route's, capped by the deployment's ``max_body_bytes``."""

    def __init__(self, max_body_bytes: int) -> None:
        self.cap = max_body_bytes
        self.routes = tuple((m, compile_path(t)[0], n) for m, t, n in ROUTE_BODY_LIMITS)

    def for_request(self, method: str, path: str) -> int:
        for m, pattern, n in self.routes:
            if m == method and pattern.match(path):
                return min(n, self.cap)
        return min(DEFAULT_BODY_LIMIT, self.cap)

    def for_operation(self, method: str, template: str) -> int:
        return self.for_request(method.upper(), template)


class _TooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int, body_read_timeout_s: float = 30.0) -> None:
        self.app = app
        self.limits = BodyLimits(max_body_bytes)
        self.timeout = body_read_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length: int | None = None
        chunked = False
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = None
            elif name == b"transfer-encoding":
                chunked = True
        if not chunked and not length:
            await self.app(scope, receive, send)
            return
        limit = self.limits.for_request(scope["method"], scope["path"])
        if length is not None and length > limit:
            await self._too_large(scope, receive, send, limit)
            return
        try:
            body = await asyncio.wait_for(self._read(receive, limit), self.timeout)
        except _TooLarge:
            await self._too_large(scope, receive, send, limit)
            return
        except TimeoutError:
            await self._timeout(scope, receive, send)
            return
        except _Disconnected:
            return  # the client went away; nobody to answer

        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read(self, receive: Receive, limit: int) -> bytes:
        chunks: list[bytes] = []
        seen = 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                raise _Disconnected
            chunk = msg.get("body", b"")
            seen += len(chunk)
            if seen > limit:
                raise _TooLarge
            if chunk:
                chunks.append(chunk)
            if not msg.get("more_body", False):
                return b"".join(chunks)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send, limit: int) -> None:
        await self._problem(
            scope,
            receive,
            send,
            413,
            "payload-too-large",
            "Payload too large",
            f"bodies of {scope['method']} {scope['path']} are limited to {limit} bytes; split the submission",
            max_body_bytes=limit,
        )

    async def _timeout(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._problem(
            scope,
            receive,
            send,
            408,
            "request-timeout",
            "Request timeout",
            f"the request body did not arrive within {self.timeout:g} s",
            body_read_timeout_s=self.timeout,
        )

    @staticmethod
    async def _problem(
        scope: Scope,
        receive: Receive,
        send: Send,
        status: int,
        code: str,
        title: str,
        detail: str,
        **extra: Any,
    ) -> None:
        resp = problem_response(
            status,
            code,
            title,
            detail,
            None,
            headers={"Connection": "close"},
            instance=scope.get("path"),
            **extra,
        )
        await resp(scope, receive, send)
