"""Structured logs: one JSON object per line, a request id on every line logged while a request
is handled, and no secrets.

- :class:`RequestContextMiddleware` takes the request id from ``X-Request-ID`` when it is sane
  (1-128 characters of ``A-Z a-z 0-9 . _ : -``; a reverse proxy's id passes), else makes one,
  echoes it in the ``X-Request-ID`` response header, and writes one access line per request
  (method, path without the query string, route template, status, duration, client address).
  Headers are never logged, and neither is the query string or the body.
- :class:`JsonFormatter` renders records as JSON and masks anything shaped like an API key
  (``gpa_<prefix>_<secret>``) or a bearer credential, whatever logged it (defence in depth:
  nothing here logs them in the first place).
- :func:`logging_config` is the ``logging.config.dictConfig`` for ``gpu-advisor serve``
  (uvicorn's loggers included; its access log is replaced by ours).
"""

from __future__ import annotations

import contextvars
import datetime as dt
import json
import logging
import re
import time
import uuid
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.client_address import TrustedProxies, client_address

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

_SANE_ID = re.compile(r"[A-Za-z0-9._:\-]{1,128}")
_SECRETS = (
    (re.compile(r"gpa_([0-9A-Za-z]{1,16})_[0-9A-Za-z_\-]+"), r"gpa_\1_***"),
    (re.compile(r"(?i)\b(bearer)\s+[^\s,;\"']+"), r"\1 ***"),
)
# (uvicorn adds an ANSI-coloured copy of its message as color_message: not for JSON)
_STD_ATTRS = frozenset(vars(logging.makeLogRecord({})).keys()) | {
    "message",
    "asctime",
    "request_id",
    "color_message",
}

access_log = logging.getLogger("gpu_advisor.access")


def redact(text: str) -> str:
    for pattern, repl in _SECRETS:
        text = pattern.sub(repl, text)
    return text


class RequestIdFilter(logging.Filter):
    """Puts the current request id (if any) on every record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "request_id", None):
            record.request_id = request_id_var.get()
        return True


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "msg", "request_id"?, ...extra fields, "exc"?}``, redacted."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        rid = getattr(record, "request_id", None) or request_id_var.get()
        if rid:
            out["request_id"] = rid
        for k, v in vars(record).items():
            if k not in _STD_ATTRS and not k.startswith("_"):
                out[k] = v
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(out, default=str, ensure_ascii=False))


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def logging_config(log_format: str = "json", level: str = "info") -> dict[str, Any]:
    lvl = level.upper()
    formatter = (
        {"()": "service.api.logs.JsonFormatter"}
        if log_format == "json"
        else {
            "()": "service.api.logs.TextFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s",
        }
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "service.api.logs.RequestIdFilter"}},
        "formatters": {"default": formatter},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "default",
                "filters": ["request_id"],
            }
        },
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": lvl, "propagate": False},
            "uvicorn.error": {"handlers": ["stderr"], "level": lvl, "propagate": False},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            "gpu_advisor": {"handlers": ["stderr"], "level": lvl, "propagate": False},
        },
        "root": {"handlers": ["stderr"], "level": "WARNING"},
    }


def _incoming_id(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"x-request-id":
            v = value.decode("latin-1").strip()
            return v if _SANE_ID.fullmatch(v) else None
    return None


class RequestContextMiddleware:
    """Outermost middleware: request id in, request id out, one access line per request."""

    def __init__(self, app: ASGIApp, trusted: TrustedProxies) -> None:
        self.app = app
        self.trusted = trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = _incoming_id(scope) or uuid.uuid4().hex
        # each request runs in its own task (its own copy of the context), so the id is not
        # reset afterwards: the server's own line about an unhandled error still carries it
        request_id_var.set(rid)
        scope.setdefault("state", {})["request_id"] = rid
        start = time.perf_counter()
        status = 500
        size = 0

        async def send_with_id(msg: Message) -> None:
            nonlocal status, size
            if msg["type"] == "http.response.start":
                status = msg["status"]
                msg["headers"] = [*msg.get("headers", []), (b"x-request-id", rid.encode())]
            elif msg["type"] == "http.response.body":
                size += len(msg.get("body", b""))
            await send(msg)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            route = scope.get("route")
            access_log.log(
                logging.WARNING if status >= 500 else logging.INFO,
                "request",
                extra={
                    "request_id": rid,
                    "method": scope["method"],
                    "path": scope["path"],
                    "route": getattr(route, "path", None),
                    "status": status,
                    "duration_ms": round((time.perf_counter() - start) * 1000, 2),
                    "response_bytes": size,
                    "client": client_address(scope, self.trusted),
                },
            )
