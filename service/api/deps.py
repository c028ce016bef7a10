"""Request dependencies: settings, the unit of work, authentication."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated

from fastapi import Depends, Header, Request
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.orm import Session, sessionmaker

from service.api.admission import KeyChecks, WriteGate
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import Principal, authenticate
from service.usecases.read_model import ReadModel


async def get_settings(request: Request) -> Settings:
    s: Settings = request.app.state.settings
    return s


WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@asynccontextmanager
async def _uow(request: Request, *, write: bool) -> AsyncIterator[RequestUnitOfWork]:
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
    uow = RequestUnitOfWork(
        factory, stack_window=state.settings.measurement_window, gate=state.write_gate if write else None
    )
    reader = getattr(state, "watermark_reader", None)
    try:
        if not write and reader is not None and reads_snapshot(request):
            uow.use_watermarks(await reader.read())
        yield uow
    finally:
        if uow.session.in_transaction():
            await run_in_threadpool(uow.end)
        else:
            uow.end()


class RequestUnitOfWork(UnitOfWork):
    """A request's unit of work; a write request's carries the app's write gate, which its
    handler passes before its one thread call (``service.api.routing``)."""

    def __init__(self, factory: sessionmaker[Session], *, stack_window: int, gate: WriteGate | None) -> None:
        super().__init__(factory, stack_window=stack_window)
        self.gate = gate


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


async def get_uow(request: Request) -> AsyncIterator[RequestUnitOfWork]:
    """One unit of work per request: a write transaction for POST/PUT/PATCH/DELETE (SQLite:
    ``BEGIN IMMEDIATE``), a read transaction otherwise (SQLite: deferred, never waiting for a
    writer). Opening it does no I/O: the transaction begins at the handler's first statement,
    inside its one thread call, which also ends it (``service.api.routing``; a write use case
    commits when it returns, ``usecases.transaction.commits``, and rolls back when it fails).
    This only closes (a safety net for a handler that did not end it)."""
    async with _uow(request, write=request.method.upper() in WRITE_METHODS) as uow:
        yield uow


async def get_read_uow(request: Request) -> AsyncIterator[RequestUnitOfWork]:
    """A read transaction for the POST routes that only read (estimates, dry runs, parsing)."""
    async with _uow(request, write=False) as uow:
        yield uow


async def get_read_model(request: Request) -> ReadModel:
    c: ReadModel = request.app.state.read_model
    return c


SettingsDep = Annotated[Settings, Depends(get_settings)]
UowDep = Annotated[RequestUnitOfWork, Depends(get_uow)]
ReadUowDep = Annotated[RequestUnitOfWork, Depends(get_read_uow)]
ReadDep = Annotated[ReadModel, Depends(get_read_model)]
AcceptLanguage = Annotated[
    str | None,
    Header(description="the language of the warnings' sentences: en (default) or zh, q-values honoured"),
]


def check_key(factory: sessionmaker[Session], authorization: str | None, scope: str) -> Principal:
    """The key check in a short read transaction of its own, begun and ended in this one call:
    no write transaction, lock or connection is held while a request waits for anything
    (before, the write transaction the check opened was held while the handler waited for a
    thread; 40 such requests held every thread and stalled the service)."""
    with UnitOfWork(factory) as uow:
        return authenticate(uow, authorization, scope)


async def checked_key(request: Request, authorization: str | None, scope: str) -> Principal:
    """:func:`check_key` through the app's bounded key-check threads (``KeyChecks``)."""
    checks: KeyChecks = request.app.state.key_checks
    return await checks.run(check_key, request.app.state.read_session_factory, authorization, scope)


def require(scope: str) -> Callable[..., Awaitable[Principal | None]]:
    async def dep(
        request: Request, authorization: Annotated[str | None, Header(include_in_schema=False)] = None
    ) -> Principal | None:
        return await checked_key(request, authorization, scope)

    dep.required_scope = scope  # type: ignore[attr-defined]  # read by api.openapi_ops.document_security
    return dep


async def require_read(
    request: Request, authorization: Annotated[str | None, Header(include_in_schema=False)] = None
) -> Principal | None:
    """Read scope: nothing to check unless reads need a key (``read_requires_key``), then the key
    is looked up in a read transaction of its own. Taking only the request (no unit of work or
    settings as sub-dependencies) keeps the hot read routes' dependency graph small: each node
    costs FastAPI parameter analysis on every request."""
    if not request.app.state.settings.read_requires_key:
        return None
    return await checked_key(request, authorization, "read")


require_read.required_scope = "read"  # type: ignore[attr-defined]  # read by api.openapi_ops.document_security
ReadAuth = Annotated[Principal | None, Depends(require_read)]


async def optional_principal(
    request: Request,
    settings: SettingsDep,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal | None:
    """The caller's key when one is sent (an invalid one is 401), else None -- or 401 when
    reads need a key. Looked up in a read transaction of its own (:func:`check_key`)."""
    if authorization is None and not settings.read_requires_key:
        return None
    return await checked_key(request, authorization, "read")


OptionalPrincipal = Annotated[Principal | None, Depends(optional_principal)]
SubmitAuth = Annotated[Principal, Depends(require("submit"))]
AdminAuth = Annotated[Principal, Depends(require("admin"))]
