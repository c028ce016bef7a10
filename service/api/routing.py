"""The route class of every API router: one rule for a handler's transaction.

A synchronous handler runs in one call of the request thread pool, and its unit of work's
transaction begins and ends inside that call: the wrapper below ends it (rolls back whatever
the handler left open, e.g. after an error; a write use case has committed already) before the
thread is given back. Nothing is left holding a connection or SQLite's write lock while the
request waits on the event loop for the next step -- the cause of the write-storm stall
(issue 26: a write transaction opened by the key check waited for a second thread).

A handler that takes a write unit of work (``UowDep`` on POST/PUT/PATCH/DELETE) first waits,
on the event loop, for a slot of the app's write gate (``service.api.admission``), after every
dependency (the key check, body validation) has run: a request with a made-up key never queues.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Any

from fastapi.concurrency import run_in_threadpool
from fastapi.params import Depends
from fastapi.routing import APIRoute

from service.api.deps import RequestUnitOfWork, get_uow
from service.db.uow import UnitOfWork

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _ending_transactions(call: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(call)
    def run(**kwargs: Any) -> Any:
        try:
            return call(**kwargs)
        finally:
            for value in kwargs.values():
                if isinstance(value, UnitOfWork) and value.session.in_transaction():
                    value.end()

    return run


def _gated(call: Callable[..., Any]) -> Callable[..., Any]:
    run = _ending_transactions(call)

    @functools.wraps(call)
    async def gated(**kwargs: Any) -> Any:
        gate = next(
            (v.gate for v in kwargs.values() if isinstance(v, RequestUnitOfWork) and v.gate is not None),
            None,
        )
        if gate is None:
            return await run_in_threadpool(run, **kwargs)
        async with gate.slot():
            result = await run_in_threadpool(run, **kwargs)
        gate.note_success()
        return result

    return gated


def takes_request_uow(endpoint: Callable[..., Any]) -> bool:
    """Whether the endpoint declares ``UowDep`` (a parameter depending on :func:`get_uow`)."""
    hints = typing.get_type_hints(endpoint, include_extras=True)
    for name in inspect.signature(endpoint).parameters:
        meta = getattr(hints.get(name), "__metadata__", ())
        if any(isinstance(m, Depends) and m.dependency is get_uow for m in meta):
            return True
    return False


class UnitOfWorkRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            writes = bool(set(kwargs.get("methods") or ()) & WRITE_METHODS)
            endpoint = (
                _gated(endpoint) if writes and takes_request_uow(endpoint) else _ending_transactions(endpoint)
            )
        super().__init__(path, endpoint, **kwargs)
