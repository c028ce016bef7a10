"""Prometheus metrics: request count and latency by route template, method and status, plus
the current data_version. Exposed at ``/metrics`` (text exposition format)."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "gpu_advisor_http_requests_total", "HTTP requests", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "gpu_advisor_http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=self.registry,
        )
        self.data_version = Gauge("gpu_advisor_data_version", "current data_version", registry=self.registry)


class MetricsMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = msg["status"]
            await send(msg)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = _route_template(scope)
            self.metrics.requests.labels(scope["method"], route, str(status)).inc()
            self.metrics.latency.labels(scope["method"], route).observe(time.perf_counter() - start)


def _route_template(scope: Scope) -> str:
    route = scope.get("route")
    if route is not None and getattr(route, "path", None):
        return str(route.path)
    app = scope.get("app")
    router = getattr(app, "router", None)
    for route in getattr(router, "routes", []):
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return str(getattr(route, "path", "unmatched"))
    return "unmatched"


router = APIRouter(tags=["health"])


@router.get("/metrics", operation_id="metrics", summary="Prometheus metrics", response_class=Response)
def metrics(request: Request) -> Response:
    m: Metrics = request.app.state.metrics
    try:
        with request.app.state.engine.connect() as conn:
            from sqlalchemy import text

            m.data_version.set(conn.execute(text("SELECT version FROM data_version WHERE id = 1")).scalar_one())
    except Exception:  # metrics must answer even when the DB does not
        pass
    return Response(generate_latest(m.registry), media_type=CONTENT_TYPE_LATEST)
