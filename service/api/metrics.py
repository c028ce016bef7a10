"""Prometheus metrics.

What is counted:

- ``gpu_advisor_http_requests_total{method, route, status}`` and the latency histogram
  ``gpu_advisor_http_request_duration_seconds{method, route}``, by route *template*;
- ``gpu_advisor_rate_limited_total{rule}``, ``gpu_advisor_rate_limit_backend_errors_total``;
- benchmark ingestion: ``gpu_advisor_benchmark_runs_total{outcome}`` (stored | replayed),
  ``gpu_advisor_benchmark_results_ingested_total``, ``..._quarantined_total{reason}`` (at
  ingestion), ``..._pending_total`` (stored for a GPU the catalog does not know);
- ``gpu_advisor_answers_total{endpoint, part, provenance}``: every memory / time / serving
  figure answered, by its provenance (measured, interpolated, transferred, spec ...);
- ``gpu_advisor_watermark{kind="catalog"|"measurement"}``, read from the database at scrape time.

:class:`Metrics` is the interface: anything holding the app (a route, a future use-case hook)
may call its methods. Today they are fed by :class:`MetricsMiddleware`, which reads the JSON
answers of the routes in :data:`OBSERVED` -- so no use case or route changes to be counted. A
new answer (``POST /v1/recommend``) is counted by adding one line there.

Several worker processes: ``gpu-advisor serve --workers N`` sets ``PROMETHEUS_MULTIPROC_DIR``
(prometheus_client's multiprocess mode) before the workers start; every process writes its
samples there and a scrape of any worker sums them all (:func:`exposition`). One process:
the app's own registry.

Who may read ``/metrics`` is ``Settings.metrics_access``: an admin key (default), anyone, or
nobody on the API port, the figures being served on a separate port
(:func:`start_metrics_server`).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy import Engine
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.api.deps import SettingsDep
from service.db.uow import UnitOfWork, read_watermarks
from service.usecases.errors import NotFound
from service.usecases.keys import authenticate

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


def multiprocess_dir() -> str | None:
    return os.environ.get(MULTIPROC_ENV) or None


class DataVersionCollector(Collector):
    """``gpu_advisor_watermark`` (catalog and measurement) from the database, read when
    scraped (absent when the database does not answer: metrics must answer anyway)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        try:
            # the request path's read: outside any transaction (on SQLite no BEGIN IMMEDIATE, so a
            # scrape never waits for the write lock)
            marks = read_watermarks(self.engine)
        except Exception:
            return
        g = GaugeMetricFamily(
            "gpu_advisor_watermark",
            "current watermark of the catalog and of the measurements",
            labels=["kind"],
        )
        g.add_metric(["catalog"], float(marks.catalog))
        g.add_metric(["measurement"], float(marks.measurement))
        yield g


class Metrics:
    def __init__(self, engine: Engine | None = None) -> None:
        self.registry = CollectorRegistry()
        self.engine = engine
        r = self.registry
        self.requests = Counter(
            "gpu_advisor_http_requests_total", "HTTP requests", ["method", "route", "status"], registry=r
        )
        self.latency = Histogram(
            "gpu_advisor_http_request_duration_seconds",
            "HTTP request latency",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.rate_limited = Counter(
            "gpu_advisor_rate_limited_total", "requests refused by a rate limit", ["rule"], registry=r
        )
        self.rate_limit_backend_errors = Counter(
            "gpu_advisor_rate_limit_backend_errors_total",
            "rate-limit decisions taken in process because Redis failed",
            registry=r,
        )
        self.runs = Counter(
            "gpu_advisor_benchmark_runs_total", "benchmark runs answered", ["outcome"], registry=r
        )
        self.results_ingested = Counter(
            "gpu_advisor_benchmark_results_ingested_total", "benchmark results stored", registry=r
        )
        self.results_quarantined = Counter(
            "gpu_advisor_benchmark_results_quarantined_total",
            "benchmark results quarantined when stored",
            ["reason"],
            registry=r,
        )
        self.results_pending = Counter(
            "gpu_advisor_benchmark_results_pending_total",
            "benchmark results stored for a GPU the catalog does not know (pending an admin mapping)",
            registry=r,
        )
        self.answers = Counter(
            "gpu_advisor_answers_total",
            "figures answered, by endpoint, part (memory/time/serving) and provenance",
            ["endpoint", "part", "provenance"],
            registry=r,
        )
        if engine is not None:
            self.registry.register(DataVersionCollector(engine))

    # -- the interface ------------------------------------------------------------------------

    def run_stored(self, *, results: int, quarantined: Mapping[str, int], pending: bool) -> None:
        self.runs.labels("stored").inc()
        self.results_ingested.inc(results)
        for reason, n in quarantined.items():
            self.results_quarantined.labels(reason).inc(n)
        if pending:
            self.results_pending.inc(results)

    def run_replayed(self) -> None:
        self.runs.labels("replayed").inc()

    def answered(self, endpoint: str, part: str, provenance: str) -> None:
        self.answers.labels(endpoint, part, provenance).inc()

    # -- answer readers (the routes' JSON, as sent) ----------------------------------------------

    def observe_submission(self, status: int, body: Mapping[str, Any]) -> None:
        if status == 200:
            self.run_replayed()
        elif status == 201:
            quarantined: dict[str, int] = {}
            for o in body.get("results", []):
                if o.get("quarantined"):
                    reason = str(o.get("quarantine_reason") or "unknown")
                    quarantined[reason] = quarantined.get(reason, 0) + 1
            self.run_stored(
                results=int(body.get("result_count", 0)),
                quarantined=quarantined,
                pending=body.get("state") == "pending",
            )

    def observe_estimate(self, status: int, body: Mapping[str, Any], endpoint: str = "estimate") -> None:
        if status != 200:
            return
        for part in ("memory", "time", "serving"):
            figure = body.get(part)
            if isinstance(figure, Mapping) and figure.get("provenance"):
                self.answered(endpoint, part, str(figure["provenance"]))

    def observe_batch(self, status: int, body: Mapping[str, Any]) -> None:
        if status != 200:
            return
        for item in body.get("items", []):
            if item.get("status") == 200 and isinstance(item.get("result"), Mapping):
                self.observe_estimate(200, item["result"], "estimate_batch")


Observer = Callable[[Metrics, int, Mapping[str, Any]], None]
OBSERVED: dict[tuple[str, str], Observer] = {
    ("POST", "/v1/benchmark-runs"): Metrics.observe_submission,
    ("POST", "/v1/estimate"): Metrics.observe_estimate,
    ("POST", "/v1/estimate/batch"): Metrics.observe_batch,
}
"""(method, route template) -> reader of its JSON answer."""


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
        observer: Observer | None = None
        captured: list[bytes] = []

        async def send_wrapper(msg: Message) -> None:
            nonlocal status, observer
            if msg["type"] == "http.response.start":
                status = msg["status"]
                route = scope.get("route")
                if 200 <= status < 300 and route is not None:
                    observer = OBSERVED.get((scope["method"], getattr(route, "path", "")))
            elif msg["type"] == "http.response.body" and observer is not None:
                captured.append(msg.get("body", b""))
            await send(msg)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = _route_template(scope)
            self.metrics.requests.labels(scope["method"], route, str(status)).inc()
            self.metrics.latency.labels(scope["method"], route).observe(time.perf_counter() - start)
        if observer is not None and captured:
            try:
                body = json.loads(b"".join(captured))
            except ValueError:
                return
            if isinstance(body, Mapping):
                observer(self.metrics, status, body)


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


# ---- exposition ----------------------------------------------------------------------------------


def scrape_registry(metrics: Metrics | None, engine: Engine | None) -> CollectorRegistry:
    """What a scrape reads: every process's samples in multiprocess mode, else this app's."""
    if multiprocess_dir():
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        if engine is not None:
            registry.register(DataVersionCollector(engine))
        return registry
    assert metrics is not None, "single-process metrics need the app's registry"
    return metrics.registry


def exposition(metrics: Metrics | None, engine: Engine | None) -> bytes:
    return bytes(generate_latest(scrape_registry(metrics, engine)))


def start_metrics_server(host: str, port: int, registry: CollectorRegistry) -> None:
    """Serve ``registry`` on ``host:port`` from a daemon thread (metrics_access = port)."""
    from prometheus_client import start_http_server

    start_http_server(port, addr=host, registry=registry)


def metrics_guard(
    request: Request,
    settings: SettingsDep,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> None:
    if settings.metrics_access == "port":
        raise NotFound("metrics are served on a separate port")
    if settings.metrics_access == "admin":
        # its own short unit of work, closed before the scrape reads the database (on SQLite a
        # transaction left open would hold the write lock the scrape then waits for)
        with UnitOfWork(request.app.state.read_session_factory) as uow:
            authenticate(uow, authorization, "admin")


router = APIRouter(tags=["health"])


@router.get(
    "/metrics",
    operation_id="metrics",
    summary="Prometheus metrics (admin key, open, or only on a separate port: GPU_ADVISOR_METRICS_ACCESS)",
    response_class=Response,
    responses={404: {"description": "metrics are served on a separate port"}},
)
def metrics(request: Request, _guard: Annotated[None, Depends(metrics_guard)]) -> Response:
    return Response(
        exposition(request.app.state.metrics, request.app.state.engine), media_type=CONTENT_TYPE_LATEST
    )
