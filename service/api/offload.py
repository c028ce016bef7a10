"""The one rule for the event loop: blocking work -- SQL, calibration fits, ingestion -- never
runs on it.

An ``async`` route that answers from the read model hands its (synchronous) use case to
:func:`answer_from`, which runs it

- on the loop only when nothing in it can block: the request's watermarks were read already
  (asynchronously, ``db.watermark_reader``) and the read model is loaded at them (and, for a
  route that needs calibrations, the first fit is done) -- then the use case is computation
  on memory, cheaper than a thread hop;
- otherwise in the request thread pool, whose size the reliability limits set
  (``request_threads``): no new pool, no unbounded queue of threads.

Waiting for the first calibration fit after a cold start holds no thread: the snapshot is
loaded in one short thread call (which starts the fit on the read model's refit thread), then
the request waits on the loop (:meth:`ReadModel.first_fit`). Meanwhile ``/healthz`` and the
catalog routes, which need no calibrations, answer at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from fastapi.concurrency import run_in_threadpool

from service.db.uow import UnitOfWork
from service.usecases.read_model import ReadModel

T = TypeVar("T")


def _ended(uow: UnitOfWork, fn: Callable[[], T]) -> T:
    """``fn`` in a thread, its read transaction ended before the thread is given back."""
    try:
        return fn()
    finally:
        if uow.session.in_transaction():
            uow.end()


def _load(uow: UnitOfWork, read: ReadModel) -> None:
    read.snapshot(uow, calibrated=False)


async def answer_from(
    uow: UnitOfWork, read: ReadModel, fn: Callable[[], T], *, calibrated: bool = True, queries: bool = False
) -> T:
    """``fn()`` (a use case reading ``read`` through ``uow``) by the rule above; ``queries``: it
    also reads tables of its own (the measurement plan's stored questions), so it always runs in
    the thread pool."""
    if calibrated and not read.warmed:
        await run_in_threadpool(_ended, uow, lambda: _load(uow, read))
        await read.first_fit()
    marks = uow.known_watermarks()
    if not queries and marks is not None and read.current(marks, calibrated=calibrated):
        return fn()
    return await run_in_threadpool(_ended, uow, fn)
