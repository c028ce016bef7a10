"""The write gate: at most N write handlers of this process run at once; the rest wait in line
on the event loop -- holding no thread, no database connection and no lock -- for at most
``write_queue_timeout_s``, then get ``503`` with ``Retry-After`` (``database-busy``).

Why a gate: a write handler holds a database connection (PostgreSQL) or the write lock
(SQLite) for its whole transaction, inside a thread of the request thread pool. Unbounded,
a burst of writes took every thread and every pooled connection, so reads queued behind them
and writes timed out on the pool or the lock (a 500 each). With the gate, writes never hold
more than N threads and connections (N < the pool size), and reads keep the rest. SQLite
serialises writers anyway, so N = 1 there by default: the queue is on the event loop rather
than in threads sleeping on the lock.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from anyio import CapacityLimiter, to_thread

from service.db.errors import Outage, OutageError

T = TypeVar("T")


class WriteGate:
    """One per app. The semaphore is made per event loop (test clients each run their own)."""

    def __init__(self, slots: int, wait_s: float) -> None:
        self.slots = slots
        self.wait_s = wait_s
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        self.waiting = 0
        """Writes waiting for a slot now (a gauge for /metrics)."""
        self.refused = 0
        """Writes answered 503 because no slot came free in time."""
        self.storage_memory_s = 60.0
        self._storage_failure: tuple[float, Outage] | None = None

    # ---- the last write refused for lack of storage, for /readyz ----

    def note(self, outage: Outage) -> None:
        """A request failed with ``outage``: a full or read-only disk is remembered (``/readyz``
        answers not ready until a write succeeds again, or ``storage_memory_s`` have passed,
        so that a load balancer stops sending writes to a replica that cannot store them)."""
        if outage.blocks_writes_only:
            self._storage_failure = (time.monotonic(), outage)

    def note_success(self) -> None:
        self._storage_failure = None

    def write_blocked(self) -> Outage | None:
        last = self._storage_failure
        if last is None or time.monotonic() - last[0] > self.storage_memory_s:
            return None
        return last[1]

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._by_loop.get(loop)
        if sem is None:
            sem = self._by_loop[loop] = asyncio.Semaphore(self.slots)
        return sem

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        sem = self._semaphore()
        self.waiting += 1
        try:
            async with asyncio.timeout(self.wait_s):
                await sem.acquire()
        except TimeoutError:
            self.refused += 1
            raise OutageError(
                Outage(
                    "busy",
                    f"too many writes at once: this one waited {self.wait_s:g} s for one of "
                    f"{self.slots} write slot(s)",
                )
            ) from None
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            sem.release()


class KeyChecks:
    """At most ``slots`` API-key lookups of this process at once, in threads of their own (the
    rest wait on the event loop): a flood of requests with made-up keys -- each a lookup in
    the database -- cannot take the request threads or the pooled connections that reads and
    writes need. A lookup is one indexed read (a millisecond or two); 4 at once answer hundreds per second."""

    def __init__(self, slots: int = 4) -> None:
        self.slots = slots
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, CapacityLimiter] = (
            weakref.WeakKeyDictionary()
        )

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        limiter = self._by_loop.get(loop)
        if limiter is None:
            limiter = self._by_loop[loop] = CapacityLimiter(self.slots)
        return await to_thread.run_sync(fn, *args, limiter=limiter)
