"""FastAPI app factory. Settings are passed in; nothing global."""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from anyio import to_thread
from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from sqlalchemy import Engine

from service import __version__
from service.api import problems
from service.api.admission import KeyChecks, WriteGate
from service.api.client_address import TrustedProxies
from service.api.framing import FramingGuard
from service.api.limits import BodyLimitMiddleware
from service.api.logs import RequestContextMiddleware
from service.api.metrics import Metrics, MetricsMiddleware
from service.api.metrics import router as metrics_router
from service.api.openapi_ops import document_bodies, document_operations, document_security, refer_safe_json
from service.api.options import OptionsAnswer
from service.api.ratelimit import KeyIdentities, Limiter, RateLimitMiddleware, RuleTable
from service.api.routes import benchmarks, gpus, health
from service.api.routes import compare as compare_routes
from service.api.routes import deploy as deploy_routes
from service.api.routes import docs as docs_routes
from service.api.routes import estimate as estimate_routes
from service.api.routes import models as models_routes
from service.api.routes import page as page_routes
from service.api.routes import recommend as recommend_routes
from service.db.engine import EngineLimits, make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.db.watermark_reader import AsyncWatermarkReader, conninfo_for
from service.schemas.benchmarks import BenchmarkRunIn
from service.schemas.common import SAFE_JSON_SCHEMA, SAFE_JSON_VALUE, Problem
from service.schemas.estimate import BatchRequest
from service.schemas.gpus import GpuDocument
from service.settings import Settings
from service.usecases.errors import UseCaseError
from service.usecases.keys import authenticate
from service.usecases.read_model import ReadModel

DESCRIPTION = """GPU Advisor: which GPU, how many, how long and at what cost for a deep-learning job,
from datasheet-correct specs and the latest measured benchmark results.

Errors are RFC 9457 `application/problem+json`; `errors[].loc` names the field at fault.
Writes need `Authorization: Bearer <key>` with the right scope (read < submit < admin)."""


def _warm(app: FastAPI) -> None:
    """Start-up warm-up of the read model (off the request path; a failure only logs: requests
    then fit on first use, as without the warm-up)."""
    try:
        with UnitOfWork(app.state.read_session_factory) as uow:
            app.state.read_model.warm(uow)
    except Exception:  # a database that is down at start-up: /readyz says so
        logging.getLogger("gpu_advisor").warning("read model warm-up failed", exc_info=True)
    settle_heap()


def settle_heap() -> None:
    """Collect once, then move everything alive after start-up (modules, the app, the read
    model's snapshot and fits) to the collector's permanent generation: later full collections
    scan only what requests created. Without it every full collection walked the whole start-up
    heap, a ~50 ms pause that landed on whichever request allocated at that moment
    (``benchmarks/recommend_speed.py``: max 64 ms against a p90 of 6 ms)."""
    gc.collect()
    gc.freeze()


def create_app(settings: Settings | None = None, *, engine: Engine | None = None) -> FastAPI:
    settings = settings or Settings()
    engine = engine or make_engine(settings.database_url, limits=EngineLimits.of(settings))
    limiter = Limiter(settings.redis_url, settings.rate_limit_key_prefix)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # the request thread pool of this event loop: database connections are sized to it
        to_thread.current_default_thread_limiter().total_tokens = settings.request_threads
        if settings.warm_read_model:
            app.state.warm_up = threading.Thread(
                target=_warm, args=(app,), name="warm-read-model", daemon=True
            )
            app.state.warm_up.start()
        conninfo = conninfo_for(engine, connect_timeout_s=settings.db_connect_timeout_s)
        app.state.watermark_reader = (
            AsyncWatermarkReader(conninfo, timeout_s=settings.db_statement_timeout_s) if conninfo else None
        )
        try:
            yield
        finally:
            reader, app.state.watermark_reader = app.state.watermark_reader, None
            if reader is not None:
                await reader.aclose()
            await limiter.aclose()

    app = FastAPI(
        title="GPU Advisor",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        docs_url=None,  # /docs and /redoc: service.api.routes.docs (no CDN)
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.session_factory = make_session_factory(engine)
    app.state.read_session_factory = make_session_factory(engine, write=False)
    app.state.warm_up = None
    app.state.write_gate = WriteGate(settings.write_slots(), settings.write_queue_timeout_s)
    app.state.key_checks = KeyChecks()
    app.state.watermark_reader = None  # PostgreSQL: made per event loop by the lifespan
    app.state.read_model = ReadModel(
        min_points=settings.measurements_min_points, window=settings.measurement_window
    )
    problems.install(app)
    _include_routers(app)
    table = _add_middleware(app, settings, engine, limiter)
    app.openapi = _openapi_builder(app, settings, table)  # type: ignore[method-assign]
    return app


def _include_routers(app: FastAPI) -> None:
    """Every route of the service, in the order the OpenAPI document lists them."""
    app.include_router(health.router)
    app.include_router(metrics_router)
    app.include_router(gpus.router)
    app.include_router(benchmarks.router)
    app.include_router(models_routes.router)
    app.include_router(estimate_routes.router)
    app.include_router(recommend_routes.router)
    app.include_router(deploy_routes.router)
    app.include_router(compare_routes.router)
    app.include_router(page_routes.make_router())
    app.include_router(docs_routes.make_router())


def _add_middleware(app: FastAPI, settings: Settings, engine: Engine, limiter: Limiter) -> RuleTable:
    """Wrap the app so a limit is decided before the body is read and before the handler runs.

    Returns the rate-limit rule table, which the OpenAPI document also describes.
    """
    # Middleware, outermost first: request id + access log, metrics, framing (RFC 9112
    # refusals), rate limits, body limits, unhandled errors (a 500 problem, not re-raised).
    # (Starlette wraps in reverse order of addition.)
    trusted = TrustedProxies(settings.trusted_proxies)
    app.state.metrics = metrics = Metrics(engine)
    limiter.on_backend_error = metrics.rate_limit_backend_errors.inc
    app.state.limiter = limiter
    table = RuleTable(settings.rate_limit_rules())

    def key_id(authorization: str) -> int | None:
        with UnitOfWork(app.state.read_session_factory) as uow:
            try:
                return authenticate(uow, authorization, "read").key_id
            except UseCaseError:
                return None

    app.add_middleware(problems.UnhandledErrors)  # innermost: a 500 that keeps the connection
    app.add_middleware(
        BodyLimitMiddleware,
        max_body_bytes=settings.max_body_bytes,
        body_read_timeout_s=settings.body_read_timeout_s,
    )
    if settings.rate_limits_enabled:
        app.add_middleware(
            RateLimitMiddleware,
            table=table,
            limiter=limiter,
            identities=KeyIdentities(key_id, run=app.state.key_checks.run),
            trusted=trusted,
            on_limited=lambda rule: metrics.rate_limited.labels(rule).inc(),
        )
    app.add_middleware(OptionsAnswer)  # OPTIONS: 204 with the path's methods
    app.add_middleware(FramingGuard)  # RFC 9112 framing refusals: before limits, bodies, handlers
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    app.add_middleware(RequestContextMiddleware, trusted=trusted)
    return table


def _openapi_builder(app: FastAPI, settings: Settings, table: RuleTable) -> Callable[[], dict[str, Any]]:
    """The app's OpenAPI document, built once on first use with problems, bodies and security."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        schema.setdefault("components", {}).setdefault("schemas", {})["Problem"] = Problem.model_json_schema(
            ref_template="#/components/schemas/{model}"
        )
        problem_defs = schema["components"]["schemas"]["Problem"].pop("$defs", {})
        schema["components"]["schemas"].update(problem_defs)
        schema["components"]["schemas"][SAFE_JSON_VALUE] = SAFE_JSON_SCHEMA
        document_bodies(
            schema,
            {"GpuDocument": GpuDocument, "BenchmarkRunIn": BenchmarkRunIn, "BatchRequest": BatchRequest},
        )
        document_security(schema, app.routes, settings)
        schema = refer_safe_json(schema)
        app.openapi_schema = document_operations(problems.declare_problems(schema), settings, table)
        return app.openapi_schema

    return openapi
