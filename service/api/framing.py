"""Request framing that RFC 9112 says to reject, rejected before anything else runs.

Behind a proxy that reads an ambiguous message differently, ambiguity is request smuggling:
the proxy sees one request where the service sees two. So the outermost middleware refuses,
with ``Connection: close``:

- no ``Host`` on HTTP/1.1, or more than one ``Host`` field line: ``400`` (RFC 9112 section 3.2:
  "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request message
  that lacks a Host header field and to any request message that contains more than one Host
  header field line");
- a transfer coding other than ``chunked`` alone -- ``identity, chunked``, ``gzip, chunked``,
  ``chunked, chunked`` -- ``501`` (section 6.1: a server that receives a transfer coding it does
  not understand ought to respond 501); the server implements none but chunked;
- ``Transfer-Encoding`` together with ``Content-Length``: ``400`` (section 6.1: "ought to be
  handled as an error"; section 6.3 lets the server reject it);
- ``Content-Length`` field lines that disagree, or one that is not a decimal number: ``400``
  (section 6.3, item 5; identical repeats are accepted).

Valid variants pass: ``chunked`` in any letter case and spacing, a repeated identical
``Content-Length``, a ``Host`` with a port.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.problems import problem_response


class FramingGuard:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = framing_problem(scope)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, code, detail = refusal
        title = "Not implemented" if status == 501 else "Bad request"
        resp = problem_response(
            status, code, title, detail, None, headers={"Connection": "close"}, instance=scope.get("path")
        )
        await resp(scope, receive, send)


def framing_problem(scope: Scope) -> tuple[int, str, str] | None:
    """(status, problem code, detail) for a request to refuse, else None."""
    hosts: list[bytes] = []
    codings: list[str] = []
    lengths: set[bytes] = set()
    for name, value in scope.get("headers", []):
        if name == b"host":
            hosts.append(value)
        elif name == b"transfer-encoding":
            codings += [c.strip().lower() for c in value.decode("latin-1").split(",")]
        elif name == b"content-length":
            lengths.add(value.strip())
    if len(hosts) > 1:
        return 400, "bad-framing", "more than one Host header field (RFC 9112 section 3.2)"
    if not hosts and scope.get("http_version") == "1.1":
        return 400, "bad-framing", "an HTTP/1.1 request needs a Host header field (RFC 9112 section 3.2)"
    if codings and codings != ["chunked"]:
        return (
            501,
            "unsupported-transfer-coding",
            f"transfer coding {', '.join(codings)!r} is not implemented: only 'chunked' is (RFC 9112 section 6.1)",
        )
    if codings and lengths:
        return 400, "bad-framing", "Transfer-Encoding and Content-Length together (RFC 9112 section 6.1)"
    if len(lengths) > 1 or any(not v.isdigit() for v in lengths):
        return (
            400,
            "bad-framing",
            "Content-Length field lines that are not one decimal number (RFC 9112 section 6.3)",
        )
    return None
