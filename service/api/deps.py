"""Request dependencies: settings, the unit of work, authentication."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.concurrency import run_in_threadpool

from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import Principal, authenticate
from service.usecases.read_model import ReadModel


async def get_settings(request: Request) -> Settings:
    s: Settings = request.app.state.settings
    return s


WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@asynccontextmanager
async def _uow(request: Request, *, write: bool) -> AsyncIterator[UnitOfWork]:
    """Async, so FastAPI does not hop to the thread pool to open and close it: opening a
    session does no I/O; closing hands the connection back to the pool (a rollback of a read
    transaction, run in the thread pool).

    A context manager, entered with ``async with`` by the dependencies below: FastAPI throws a
    request's error (a 422 of a body refused after the key check, a use case's 404, ...) into
    the dependency at its ``yield``, and ``async with`` passes it on, so the session is closed
    before the error's answer. (Iterating an inner generator -- ``async for uow in gen: yield
    uow`` -- does not: the error leaves the loop and the inner generator is abandoned at its
    ``yield``, its ``finally`` left to the event loop's async-generator finaliser, which runs
    later or, when the loop shuts down, is cancelled. The session -- a reference cycle with its
    transaction -- then kept the pooled connection, and on SQLite the write lock, until the
    cyclic garbage collector freed it: other writers waited, up to the busy timeout.)"""
    state = request.app.state
    factory = state.session_factory if write else state.read_session_factory
    uow = UnitOfWork(factory, stack_window=state.settings.measurement_window)
    reader = getattr(state, "watermark_reader", None)
    try:
        if not write and reader is not None and reads_snapshot(request):
            uow.use_watermarks(await reader.read())
        yield uow
    finally:
        if uow.session.in_transaction():
            await run_in_threadpool(uow.close)
        else:
            uow.close()


_READS_SNAPSHOT = "gpu_advisor_reads_snapshot"
"""Attribute a route carries once :func:`reads_snapshot` has decided for it (on the route itself:
routes are unhashable, and an ``id`` can be reused once an app and its routes are gone)."""


def reads_snapshot(request: Request) -> bool:
    """Whether the matched route reads the read model (it declares ``ReadDep``), and so needs
    the request's watermark read; decided once per route."""
    route = request.scope.get("route")
    dependant = getattr(route, "dependant", None)
    if dependant is None:
        return False
    known: bool | None = getattr(route, _READS_SNAPSHOT, None)
    if known is None:
        stack, known = list(dependant.dependencies), False
        while stack and not known:
            d = stack.pop()
            known = d.call is get_read_model
            stack.extend(d.dependencies)
        setattr(route, _READS_SNAPSHOT, known)
    return known


async def get_uow(request: Request) -> AsyncIterator[UnitOfWork]:
    """One unit of work per request: a write transaction for POST/PUT/PATCH/DELETE (SQLite:
    ``BEGIN IMMEDIATE``), a read transaction otherwise (SQLite: deferred, never waiting for a
    writer). A write use case commits when it returns (``usecases.transaction.commits``),
    before the route builds the response; this only closes (rolling back anything
    uncommitted, e.g. after an error)."""
    async with _uow(request, write=request.method.upper() in WRITE_METHODS) as uow:
        yield uow


async def get_read_uow(request: Request) -> AsyncIterator[UnitOfWork]:
    """A read transaction for the POST routes that only read (estimates, dry runs, parsing)."""
    async with _uow(request, write=False) as uow:
        yield uow


async def get_read_model(request: Request) -> ReadModel:
    c: ReadModel = request.app.state.read_model
    return c


SettingsDep = Annotated[Settings, Depends(get_settings)]
UowDep = Annotated[UnitOfWork, Depends(get_uow)]
ReadUowDep = Annotated[UnitOfWork, Depends(get_read_uow)]
ReadDep = Annotated[ReadModel, Depends(get_read_model)]


def require(scope: str) -> Callable[..., Awaitable[Principal | None]]:
    async def dep(
        uow: UowDep, authorization: Annotated[str | None, Header(include_in_schema=False)] = None
    ) -> Principal | None:
        return await run_in_threadpool(authenticate, uow, authorization, scope)

    dep.required_scope = scope  # type: ignore[attr-defined]  # read by api.openapi_ops.document_security
    return dep


async def require_read(
    request: Request, authorization: Annotated[str | None, Header(include_in_schema=False)] = None
) -> Principal | None:
    """Read scope: nothing to check unless reads need a key (``read_requires_key``), then the key
    is looked up in a read transaction of its own. Taking only the request (no unit of work or
    settings as sub-dependencies) keeps the hot read routes' dependency graph small: each node
    costs FastAPI parameter analysis on every request."""
    state = request.app.state
    if not state.settings.read_requires_key:
        return None

    def check() -> Principal:
        with UnitOfWork(state.read_session_factory) as uow:
            return authenticate(uow, authorization, "read")

    return await run_in_threadpool(check)


require_read.required_scope = "read"  # type: ignore[attr-defined]  # read by api.openapi_ops.document_security
ReadAuth = Annotated[Principal | None, Depends(require_read)]


async def optional_principal(
    uow: ReadUowDep,
    settings: SettingsDep,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal | None:
    """The caller's key when one is sent (an invalid one is 401), else None -- or 401 when
    reads need a key. Looked up in a read transaction: a write request keeps its write lock
    for its own write."""
    if authorization is None and not settings.read_requires_key:
        return None
    return await run_in_threadpool(authenticate, uow, authorization, "read")


OptionalPrincipal = Annotated[Principal | None, Depends(optional_principal)]
SubmitAuth = Annotated[Principal, Depends(require("submit"))]
AdminAuth = Annotated[Principal, Depends(require("admin"))]
