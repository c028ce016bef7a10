"""Pure ASGI middleware for request bodies: size and time limits, decided before the app runs.

A request that carries a body (``Content-Length`` > 0 or ``Transfer-Encoding``) is read here
in full before the app sees it:

- more than ``max_body_bytes`` -> ``413`` problem+json, whether announced by ``Content-Length``
  (refused before reading a byte) or discovered while reading a chunked body;
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

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.problems import problem_response


class _TooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, max_body_bytes: int, body_read_timeout_s: float = 30.0) -> None:
        self.app = app
        self.max = max_body_bytes
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
        if length is not None and length > self.max:
            await self._too_large(scope, receive, send)
            return
        try:
            body = await asyncio.wait_for(self._read(receive), self.timeout)
        except _TooLarge:
            await self._too_large(scope, receive, send)
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

    async def _read(self, receive: Receive) -> bytes:
        chunks: list[bytes] = []
        seen = 0
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                raise _Disconnected
            chunk = msg.get("body", b"")
            seen += len(chunk)
            if seen > self.max:
                raise _TooLarge
            if chunk:
                chunks.append(chunk)
            if not msg.get("more_body", False):
                return b"".join(chunks)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._problem(
            scope,
            receive,
            send,
            413,
            "payload-too-large",
            "Payload too large",
            f"request bodies are limited to {self.max} bytes; split the submission",
            max_body_bytes=self.max,
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
