"""Rate limits at the edge: per API key, else per client address, before the handler runs.

Each rule of ``Settings.rate_limit_rules()`` is a token bucket per caller, implemented as
GCRA (the generic cell rate algorithm: one stored number per bucket, the "theoretical arrival
time" ``tat``). A request costs one emission interval ``T = 60 / per_minute`` seconds; it is
allowed when ``tat + T - burst * T <= now`` and then moves ``tat`` to ``max(tat, now) + T``.
``Retry-After`` is the wait until that holds.

Where buckets live:

- **Redis** (``Settings.redis_url``): one key per (rule, caller), updated by one Lua script
  (atomic, Redis's own clock), so every worker process and replica shares the budget. Keys
  expire when their bucket is full again. Should Redis fail, the request is judged by the
  in-process buckets instead (logged, counted in ``gpu_advisor_rate_limit_backend_errors_total``):
  a Redis outage neither blocks the API nor lifts the limits.
- **process memory** otherwise (one process; with several workers each has its own).

Never the database: a limit must not cost a write per request.

A refused request gets ``429`` problem+json with ``Retry-After`` and never reaches the
handler, so it changes nothing; an allowed request is never refused afterwards, so a write
that was acknowledged is never lost to a limit.

The caller is the API key when the request carries a valid one (looked up once per process,
then remembered by the key's hash), else the client address (``client_address``; IPv6 by
/64).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.routing import compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.client_address import TrustedProxies, bucket_of, client_address
from service.api.problems import problem_response
from service.settings import RateLimitRule

log = logging.getLogger("gpu_advisor.ratelimit")


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    retry_after_s: float  # 0 when allowed
    remaining: int  # requests still allowed back to back


# ---- rules -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompiledRule:
    name: str
    rule: RateLimitRule
    patterns: tuple[Any, ...]  # compiled route regexes

    @property
    def interval_s(self) -> float:
        return 60.0 / self.rule.per_minute


class RuleTable:
    """Request -> the first rule that covers it (method, route template, page size)."""

    def __init__(self, rules: Mapping[str, RateLimitRule]) -> None:
        self.rules = tuple(
            CompiledRule(name, r, tuple(compile_path(p)[0] for p in r.paths)) for name, r in rules.items()
        )

    def match(self, method: str, path: str, query_string: bytes = b"") -> CompiledRule | None:
        for c in self.rules:
            if method not in c.rule.methods or not any(p.match(path) for p in c.patterns):
                continue
            if c.rule.above_page_size is not None and _page_size(query_string) <= c.rule.above_page_size:
                continue
            return c
        return None

    def for_operation(self, method: str, template: str) -> CompiledRule | None:
        """The rule an OpenAPI operation falls under (its path template matched as a path)."""
        return next(
            (
                c
                for c in self.rules
                if method.upper() in c.rule.methods and any(p.match(template) for p in c.patterns)
            ),
            None,
        )


def _page_size(query_string: bytes) -> int:
    """The largest page any ``limit`` of the query asks for, however written (``500.0``, a
    second ``limit``): the rule cannot be bypassed by a form the route would refuse anyway."""
    largest = 0.0
    for k, v in parse_qsl(query_string.decode("latin-1")):
        if k == "limit":
            try:
                size = float(v)
            except ValueError:
                continue  # the route's validation answers 422
            if math.isfinite(size):
                largest = max(largest, size)
    return math.ceil(largest)


# ---- buckets -----------------------------------------------------------------------------------


def _micros(seconds: float) -> int:
    """Seconds as whole microseconds (the buckets' integer time)."""
    return round(seconds * 1_000_000)


class MemoryLimiter:
    """GCRA buckets in this process's memory (bounded: full buckets are forgotten first).

    Times are whole microseconds: GCRA adds and compares intervals, and in floating point a
    sum can round up by an ulp -- enough, at some clock readings, for a bucket to refuse a
    request its burst allows (a burst-1 rule refused a fresh bucket's first request)."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic, max_buckets: int = 100_000) -> None:
        self.clock = clock
        self.max_buckets = max_buckets
        self.tat: OrderedDict[str, int] = OrderedDict()  # theoretical arrival time, µs
        self.lock = threading.Lock()

    def hit(self, key: str, interval_s: float, burst: int) -> Decision:
        interval = _micros(interval_s)
        with self.lock:
            now = _micros(self.clock())
            tat = max(self.tat.get(key, now), now)
            allow_at = tat - (burst - 1) * interval
            if now < allow_at:
                return Decision(False, (allow_at - now) / 1e6, 0)
            self.tat[key] = tat + interval
            self.tat.move_to_end(key)
            if len(self.tat) > self.max_buckets:
                self._sweep(now)
            return Decision(True, 0.0, (now - allow_at) // interval)

    def _sweep(self, now: int) -> None:
        for k in [k for k, t in self.tat.items() if t <= now]:
            del self.tat[k]
        while len(self.tat) > self.max_buckets:
            self.tat.popitem(last=False)


# KEYS[1] bucket; ARGV[1] interval (whole µs), ARGV[2] burst. Returns {allowed, retry_after_ms,
# remaining}. Redis's clock (TIME) is the one clock of every replica. Times are whole microseconds,
# exact in Lua's doubles (< 2^53), as in MemoryLimiter: no rounding can refuse what the burst allows.
GCRA_LUA = """
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if tat == nil or tat < now then tat = now end
local allow_at = tat - (burst - 1) * interval
if now < allow_at then
  return {0, tostring((allow_at - now) / 1000), 0}
end
local new_tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1000)
return {1, '0', math.floor((now - allow_at) / interval)}
"""


class RedisLimiter:
    """GCRA buckets in Redis, shared by every process and replica. One client per event loop
    (opened on first use, closed by :meth:`aclose` at shutdown)."""

    def __init__(
        self, url: str, *, fallback: MemoryLimiter, on_error: Callable[[], None] = lambda: None
    ) -> None:
        self.url = url
        self.fallback = fallback
        self.on_error = on_error
        self._client: Any = None
        self._script: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last_warning = 0.0
        self._skip_until = 0.0
        """After a failure Redis is not asked again for ``BACKOFF_S``: a hung Redis costs one
        timeout per process per back-off, not 0.25 s on every limited request."""

    def _ensure(self) -> Any:
        import redis.asyncio as aioredis

        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = aioredis.Redis.from_url(
                self.url, socket_timeout=0.25, socket_connect_timeout=0.25, health_check_interval=30
            )
            self._script = self._client.register_script(GCRA_LUA)
            self._loop = loop
        return self._script

    BACKOFF_S = 5.0

    async def hit(self, key: str, interval_s: float, burst: int) -> Decision:
        if time.monotonic() < self._skip_until:
            self.on_error()
            return self.fallback.hit(key, interval_s, burst)
        try:
            script = self._ensure()
            allowed, retry_ms, remaining = await script(keys=[key], args=[_micros(interval_s), burst])
            return Decision(bool(int(allowed)), float(retry_ms) / 1000.0, int(remaining))
        except Exception as exc:  # Redis down or slow: judge by this process's buckets
            self.on_error()
            now = time.monotonic()
            self._skip_until = now + self.BACKOFF_S
            if now - self._last_warning > 30:
                self._last_warning = now
                log.warning("rate-limit backend failed (%s); using in-process buckets", type(exc).__name__)
            return self.fallback.hit(key, interval_s, burst)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client, self._loop = self._client, None, None
            with contextlib.suppress(Exception):  # closing a broken connection
                await client.aclose()


class Limiter:
    """The buckets of one app: Redis when configured, else process memory."""

    def __init__(self, redis_url: str | None, prefix: str) -> None:
        self.prefix = prefix
        self.memory = MemoryLimiter()
        self.on_backend_error: Callable[[], None] = lambda: None
        self.redis = (
            RedisLimiter(redis_url, fallback=self.memory, on_error=lambda: self.on_backend_error())
            if redis_url
            else None
        )

    async def hit(self, rule: CompiledRule, caller: str) -> Decision:
        key = f"{self.prefix}{rule.name}:{caller}"
        if self.redis is not None:
            return await self.redis.hit(key, rule.interval_s, rule.rule.burst)
        return self.memory.hit(key, rule.interval_s, rule.rule.burst)

    async def aclose(self) -> None:
        if self.redis is not None:
            await self.redis.aclose()


# ---- callers -----------------------------------------------------------------------------------


class KeyIdentities:
    """API key secret (by its SHA-256) -> key id, for keys that authenticated in this process.

    ``lookup`` is the slow path (one indexed read through the same ``authenticate`` the routes
    use). A credential that fails it is remembered as such for ``negative_ttl_s``, so a flood of
    made-up keys costs no database read per request; its requests are limited by address.
    Entries expire so that a revoked key stops naming a bucket after a while (its requests
    are 401s anyway) and a new key is recognised."""

    def __init__(
        self,
        lookup: Callable[[str], int | None],
        *,
        ttl_s: float = 300.0,
        negative_ttl_s: float = 60.0,
        size: int = 10_000,
        run: Callable[..., Awaitable[int | None]] | None = None,
    ) -> None:
        self.lookup = lookup
        self.run = run
        """Runs ``lookup`` in a thread (the app's bounded key checks); else anyio's pool."""
        self.ttl_s = ttl_s
        self.negative_ttl_s = negative_ttl_s
        self.size = size
        self.known: OrderedDict[str, tuple[int | None, float]] = OrderedDict()
        self.lock = threading.Lock()

    async def key_id(self, authorization: str) -> int | None:
        digest = hashlib.sha256(authorization.encode()).hexdigest()
        now = time.monotonic()
        with self.lock:
            hit = self.known.get(digest)
        if hit is not None and now - hit[1] < (self.ttl_s if hit[0] is not None else self.negative_ttl_s):
            return hit[0]
        from anyio import to_thread

        try:
            if self.run is not None:
                kid = await self.run(self.lookup, authorization)
            else:
                kid = await to_thread.run_sync(self.lookup, authorization)
        except Exception:  # the database is down: the route will answer that; limit by address
            return None
        with self.lock:
            self.known[digest] = (kid, now)
            self.known.move_to_end(digest)
            while len(self.known) > self.size:
                self.known.popitem(last=False)
        return kid


# ---- middleware --------------------------------------------------------------------------------


class RateLimitMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        *,
        table: RuleTable,
        limiter: Limiter,
        identities: KeyIdentities,
        trusted: TrustedProxies,
        on_limited: Callable[[str], None] = lambda rule: None,
    ) -> None:
        self.app = app
        self.table = table
        self.limiter = limiter
        self.identities = identities
        self.trusted = trusted
        self.on_limited = on_limited

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rule = self.table.match(scope["method"], scope["path"], scope.get("query_string", b""))
        if rule is None:
            await self.app(scope, receive, send)
            return
        caller, what = await self._caller(scope)
        decision = await self.limiter.hit(rule, caller)
        if decision.allowed:
            await self.app(scope, receive, send)
            return
        self.on_limited(rule.name)
        retry = max(1, math.ceil(decision.retry_after_s))
        r = rule.rule
        resp = problem_response(
            429,
            "rate-limited",
            "Too many requests",
            f"rate limit {rule.name!r} ({r.per_minute:g} per minute, bursts of {r.burst}) reached for this {what}; "
            f"retry after {retry} s",
            None,
            headers={"Retry-After": str(retry)},
            instance=scope["path"],
            rule=rule.name,
            retry_after_s=retry,
        )
        await resp(scope, receive, send)

    async def _caller(self, scope: Scope) -> tuple[str, str]:
        authorization = _header(scope, b"authorization")
        if authorization and authorization[:7].lower() == "bearer ":
            kid = await self.identities.key_id(authorization)
            if kid is not None:
                return f"key:{kid}", "API key"
        return f"addr:{bucket_of(client_address(scope, self.trusted))}", "client address"


def _header(scope: Scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", []):
        if k == name:
            return str(v.decode("latin-1"))
    return None
