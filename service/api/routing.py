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
from dataclasses import dataclass
from typing import Any

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.params import Depends as DependsParam
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
        if any(isinstance(m, DependsParam) and m.dependency is get_uow for m in meta):
            return True
    return False


def _is_sequence(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    return any(_is_sequence(a) for a in typing.get_args(annotation)) if origin is not None else False


QUERY_PREFIXES = "x-query-prefixes"
"""``openapi_extra`` key: the name prefixes of a route's free-form query filters."""
_QUERY = "gpu_advisor_query"


@dataclass(frozen=True, slots=True)
class _QueryNames:
    """A route's declared query parameters: all names, those taking one value, and the
    prefixes of its free-form filters (read once per route, from its dependency tree)."""

    names: frozenset[str]
    scalars: frozenset[str]
    prefixes: tuple[str, ...]

    def unknown(self, name: str) -> bool:
        return name not in self.names and not any(
            name.startswith(p) and len(name) > len(p) for p in self.prefixes
        )


def _query_names(route: Any) -> _QueryNames:
    known: _QueryNames | None = getattr(route, _QUERY, None)
    if known is None:
        fields = []
        stack = [route.dependant]
        while stack:
            d = stack.pop()
            fields += d.query_params
            stack.extend(d.dependencies)
        known = _QueryNames(
            names=frozenset(f.alias for f in fields),
            scalars=frozenset(f.alias for f in fields if not _is_sequence(f.field_info.annotation)),
            prefixes=tuple((getattr(route, "openapi_extra", None) or {}).get(QUERY_PREFIXES) or ()),
        )
        setattr(route, _QUERY, known)
    return known


async def one_value_each(request: Request) -> None:
    """A query parameter the route does not declare is refused (422 naming it: a misspelt
    filter would otherwise be ignored and answer a different question), and one that takes one
    value, given twice, too: otherwise the framework reads the last and a rate rule may have
    read the first (``?limit=1&limit=500``)."""
    route = request.scope.get("route")
    if route is None or not request.scope.get("query_string"):
        return
    params = request.query_params
    declared = _query_names(route)
    errors = [
        {"type": "value_error", "loc": ("query", n), "msg": "unknown query parameter", "input": None}
        for n in sorted({k for k in params if declared.unknown(k)})
    ]
    repeated = [n for n in declared.scalars if len(params.getlist(n)) > 1]
    errors += [
        {"type": "value_error", "loc": ("query", n), "msg": "give this parameter once", "input": None}
        for n in sorted(repeated)
    ]
    if errors:
        raise RequestValidationError(errors)


class UnitOfWorkRoute(APIRoute):
    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        if not inspect.iscoroutinefunction(endpoint):
            writes = bool(set(kwargs.get("methods") or ()) & WRITE_METHODS)
            endpoint = (
                _gated(endpoint) if writes and takes_request_uow(endpoint) else _ending_transactions(endpoint)
            )
        kwargs["dependencies"] = [Depends(one_value_each), *(kwargs.get("dependencies") or ())]
        super().__init__(path, endpoint, **kwargs)
