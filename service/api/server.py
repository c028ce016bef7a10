"""The HTTP/1.1 server edge: uvicorn's httptools protocol with limits on the request head.

uvicorn bounds neither the size nor the number of header fields (a single 64 MiB header was
read, parsed and answered; eight at once took 545 MiB) nor the time a client may take to send
them (500 clients trickling headers held their connections 40 s). :class:`EdgeProtocol` adds:

- ``max_header_bytes``: the request line and header fields together; past it the head is
  refused with ``431 Request Header Fields Too Large`` and the connection closed, before more
  is buffered (checked as bytes arrive -- at most one socket read past the limit -- and, for a
  head that came whole in one read, as its fields are parsed);
- ``max_header_count``: field lines per request, also ``431``;
- ``header_read_timeout_s``: from a connection's first byte (or its opening, for one that sends
  nothing) to the end of the head; past it ``408 Request Timeout`` and close. (uvicorn's own
  keep-alive timeout covers the idle time between requests; the body has its own limit,
  ``service.api.limits``.)

``gpu-advisor serve`` runs uvicorn with ``http="service.api.server:EdgeProtocol"``; the limits
come from the settings (:func:`configure`, also called by each worker process through
``service.api.asgi``). The RFC 9112 framing refusals (duplicate ``Host``, unknown transfer
codings) are an ASGI middleware, ``service.api.framing``, so they hold under any server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from service.settings import Settings


class EdgeProtocol(HttpToolsProtocol):
    max_header_bytes: int = 32_768
    max_header_count: int = 100
    header_read_timeout_s: float = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._head_fields = 0
        self._head_parsed = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._refusal: tuple[int, str] | None = None

    # ---- the head's clock ----

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_read_timeout_s, self._head_timed_out)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._in_head and not self.transport.is_closing():
            self._refuse(408, f"the request head did not arrive within {self.header_read_timeout_s:g} s")

    # ---- counting the head ----

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            self._head_bytes += len(data)
            self._arm()
        super().data_received(data)
        if self._in_head and self._head_bytes > self.max_header_bytes and not self.transport.is_closing():
            self._refuse(431, f"the request line and header fields exceed {self.max_header_bytes} bytes")

    def on_url(self, url: bytes) -> None:
        self._head_parsed += len(url)
        self._check_parsed()
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._head_fields += 1
        self._head_parsed += len(name) + len(value) + 4
        if self._head_fields > self.max_header_count:
            self._refusal = (431, f"more than {self.max_header_count} header fields")
            raise _HeadTooLarge
        self._check_parsed()
        super().on_header(name, value)

    def _check_parsed(self) -> None:
        """A head that arrived whole in one read is counted as it is parsed."""
        if self._head_parsed > self.max_header_bytes:
            self._refusal = (431, f"the request line and header fields exceed {self.max_header_bytes} bytes")
            # httptools stops parsing (HttpParserCallbackError, an HttpParserError) and uvicorn
            # answers with send_400_response, which sends this refusal instead
            raise _HeadTooLarge

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._in_head, self._head_bytes, self._head_fields, self._head_parsed = True, 0, 0, 0

    # ---- refusing ----

    def send_400_response(self, msg: str) -> None:
        if self._refusal is not None:
            self._refuse(*self._refusal)
            return
        super().send_400_response(msg)

    def _refuse(self, status: int, detail: str) -> None:
        title = {408: "Request Timeout", 431: "Request Header Fields Too Large"}.get(status, "Bad Request")
        code = {408: "request-timeout", 431: "header-fields-too-large"}.get(status, "bad-request")
        body = json.dumps(
            {
                "type": f"https://gpu-advisor.dev/problems/{code}",
                "title": title,
                "status": status,
                "detail": detail,
            }
        ).encode()
        head = (
            f"HTTP/1.1 {status} {title}\r\ncontent-type: application/problem+json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode()
        self.logger.info("refused a request head: %s", detail)
        self.transport.write(head + body)
        self.transport.close()


class _HeadTooLarge(Exception):
    pass


def configure(settings: Settings) -> None:
    """Set this process's head limits from the settings (before the server accepts)."""
    EdgeProtocol.max_header_bytes = settings.max_header_bytes
    EdgeProtocol.max_header_count = settings.max_header_count
    EdgeProtocol.header_read_timeout_s = settings.header_read_timeout_s


PROTOCOL = "service.api.server:EdgeProtocol"
