"""The client: one request description per operation, run by a sync or an async transport with
the same retry policy (429 and 503 are retried after their ``Retry-After``; every operation here
is safe to repeat: reads, answers keyed by their question, and benchmark runs keyed by run_id)."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

import httpx
from pydantic import BaseModel

from gpu_advisor_client import models as m
from gpu_advisor_client.errors import ApiError, error_for

T = TypeVar("T", bound=BaseModel)
RETRY_STATUSES = frozenset({429, 503})
Target = Literal["kubernetes", "skypilot", "slurm"]


@dataclass(frozen=True)
class _Call(Generic[T]):
    method: str
    path: str
    model: type[T]
    params: Mapping[str, Any] = field(default_factory=dict)
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)


def _body(value: BaseModel | Mapping[str, Any]) -> Any:
    """A model as the wire wants it (only the fields set), or a plain mapping as given."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return dict(value)


def _params(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}


def retry_after_s(response: httpx.Response) -> float | None:
    """``Retry-After`` as seconds (delta-seconds or an HTTP date), None when absent or bad."""
    raw = response.headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        when = email.utils.parsedate_to_datetime(raw) if raw else None
        return max(0.0, when.timestamp() - time.time()) if when is not None else None


def _error(response: httpx.Response) -> ApiError:
    try:
        problem = response.json()
    except ValueError:
        problem = {"title": response.reason_phrase, "detail": response.text[:500]}
    if not isinstance(problem, dict):
        problem = {"detail": str(problem)}
    return error_for(response.status_code, problem, retry_after_s(response))


class _Base:
    def __init__(self, max_retries: int, max_wait_s: float) -> None:
        self.max_retries = max_retries
        self.max_wait_s = max_wait_s

    def _wait_s(self, response: httpx.Response, attempt: int) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        if response.status_code not in RETRY_STATUSES or attempt >= self.max_retries:
            return None
        hinted = retry_after_s(response)
        return min(self.max_wait_s, hinted if hinted is not None else 0.5 * 2**attempt)

    @staticmethod
    def _parse(call: _Call[T], response: httpx.Response) -> T:
        if response.status_code >= 400:
            raise _error(response)
        return call.model.model_validate(response.json())

    # ---- operations: each returns the request to make ------------------------------------

    @staticmethod
    def _recommend(request: m.RecommendRequest | Mapping[str, Any]) -> _Call[m.RecommendResponse]:
        return _Call("POST", "/v1/recommend", m.RecommendResponse, body=_body(request))

    @staticmethod
    def _recommendation(rec_id: str) -> _Call[m.RecommendResponse]:
        return _Call("GET", f"/v1/recommendations/{rec_id}", m.RecommendResponse)

    @staticmethod
    def _artifact(rec_id: str, target: Target, option: int) -> _Call[m.ArtifactOut]:
        params = {"target": target, "option": option}
        return _Call("GET", f"/v1/recommendations/{rec_id}/artifacts", m.ArtifactOut, params=params)

    @staticmethod
    def _estimate(request: m.EstimateRequest | Mapping[str, Any]) -> _Call[m.EstimateResponse]:
        return _Call("POST", "/v1/estimate", m.EstimateResponse, body=_body(request))

    @staticmethod
    def _compare(gpus: list[str], workload: str | None, currency: str | None) -> _Call[m.CompareOut]:
        params = _params(gpus=",".join(gpus), workload=workload, currency=currency)
        return _Call("GET", "/v1/compare", m.CompareOut, params=params)

    @staticmethod
    def _gpus(cursor: str | None, limit: int | None, filters: Mapping[str, Any]) -> _Call[m.GpuList]:
        return _Call("GET", "/v1/gpus", m.GpuList, params=_params(cursor=cursor, limit=limit, **filters))

    @staticmethod
    def _gpu(ident: str) -> _Call[m.GpuAnswer]:
        return _Call("GET", f"/v1/gpus/{ident}", m.GpuAnswer)

    @staticmethod
    def _prices(ident: str) -> _Call[m.PriceList]:
        return _Call("GET", f"/v1/gpus/{ident}/prices", m.PriceList)

    @staticmethod
    def _submit(run: m.BenchmarkRunIn | Mapping[str, Any]) -> _Call[m.BenchmarkRunAccepted]:
        body = _body(run)
        key = str(body.get("run_id") or "")
        headers = {"Idempotency-Key": key} if key else {}
        return _Call("POST", "/v1/benchmark-runs", m.BenchmarkRunAccepted, body=body, headers=headers)

    @staticmethod
    def _results(cursor: str | None, limit: int | None, filters: Mapping[str, Any]) -> _Call[m.ResultList]:
        params = _params(cursor=cursor, limit=limit, **filters)
        return _Call("GET", "/v1/benchmark-results", m.ResultList, params=params)

    @staticmethod
    def _plan(
        cursor: str | None, limit: int | None, filters: Mapping[str, Any]
    ) -> _Call[m.MeasurementPlanOut]:
        params = _params(cursor=cursor, limit=limit, **filters)
        return _Call("GET", "/v1/measurement-plan", m.MeasurementPlanOut, params=params)


def _headers(api_key: str | None, language: str | None, user_agent: str | None = None) -> dict[str, str]:
    h = {"Accept": "application/json", "User-Agent": user_agent or "gpu-advisor-client/0.1.0"}
    if api_key:
        h["Authorization"] = f"Bearer {api_key}"
    if language:
        h["Accept-Language"] = language
    return h


class Client(_Base):
    """Synchronous client. ``Client(base_url, api_key=...)``; use as a context manager or call
    :meth:`close`. ``transport`` lets tests pass an httpx transport (e.g. to an ASGI app)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        language: str | None = None,
        timeout_s: float | httpx.Timeout = 60.0,
        max_retries: int = 3,
        max_wait_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        user_agent: str | None = None,
    ) -> None:
        super().__init__(max_retries, max_wait_s)
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers=_headers(api_key, language, user_agent),
            timeout=timeout_s,
            transport=transport,
        )

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _run(self, call: _Call[T]) -> T:
        attempt = 0
        while True:
            r = self._http.request(
                call.method, call.path, params=dict(call.params), json=call.body, headers=dict(call.headers)
            )
            wait = self._wait_s(r, attempt)
            if wait is None:
                return self._parse(call, r)
            time.sleep(wait)
            attempt += 1

    def recommend(self, request: m.RecommendRequest | Mapping[str, Any]) -> m.RecommendResponse:
        return self._run(self._recommend(request))

    def get_recommendation(self, rec_id: str) -> m.RecommendResponse:
        return self._run(self._recommendation(rec_id))

    def artifact(self, rec_id: str, target: Target, option: int = 1) -> m.ArtifactOut:
        return self._run(self._artifact(rec_id, target, option))

    def estimate(self, request: m.EstimateRequest | Mapping[str, Any]) -> m.EstimateResponse:
        return self._run(self._estimate(request))

    def compare(
        self, gpus: list[str], *, workload: str | None = None, currency: str | None = None
    ) -> m.CompareOut:
        return self._run(self._compare(gpus, workload, currency))

    def gpu(self, ident: str) -> m.GpuAnswer:
        return self._run(self._gpu(ident))

    def prices(self, ident: str) -> m.PriceList:
        return self._run(self._prices(ident))

    def gpus(self, *, limit: int | None = None, **filters: Any) -> Iterator[m.GpuOut]:
        """Every GPU matching the filters, page after page (``next_cursor``)."""
        cursor: str | None = None
        while True:
            page = self._run(self._gpus(cursor, limit, filters))
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def benchmark_results(self, *, limit: int | None = None, **filters: Any) -> Iterator[m.ResultOut]:
        cursor: str | None = None
        while True:
            page = self._run(self._results(cursor, limit, filters))
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def measurement_plan(self, *, limit: int | None = None, **filters: Any) -> Iterator[m.PlanCellOut]:
        """The cells to measure next, in plan order, page after page (needs a submit key);
        filters: ``gpu`` (slug, alias or PCI device id), ``workload``, ``since_days``."""
        cursor: str | None = None
        while True:
            page = self._run(self._plan(cursor, limit, filters))
            yield from page.items
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def submit_benchmark_run(self, run: m.BenchmarkRunIn | Mapping[str, Any]) -> m.BenchmarkRunAccepted:
        """Submit a run; its ``run_id`` is the idempotency key, so a retry never duplicates it."""
        return self._run(self._submit(run))

    def post_benchmark_run(self, body: bytes, run_id: str, *, validate: bool = False) -> httpx.Response:
        """One POST of an already-encoded run, answered as it came (no retry, nothing raised):
        for a delivery layer that keeps the exact bytes and decides per status itself (the
        benchmark agent's spool, 413 splitting). ``validate``: the dry run."""
        path = "/v1/benchmark-runs/validate" if validate else "/v1/benchmark-runs"
        headers = {"Idempotency-Key": run_id, "Content-Type": "application/json"}
        return self._http.post(path, content=body, headers=headers)


class AsyncClient(_Base):
    """The same operations, awaited (``async with AsyncClient(...) as c``)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        language: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        max_wait_s: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(max_retries, max_wait_s)
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=_headers(api_key, language), timeout=timeout_s, transport=transport
        )

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _run(self, call: _Call[T]) -> T:
        attempt = 0
        while True:
            r = await self._http.request(
                call.method, call.path, params=dict(call.params), json=call.body, headers=dict(call.headers)
            )
            wait = self._wait_s(r, attempt)
            if wait is None:
                return self._parse(call, r)
            await asyncio.sleep(wait)
            attempt += 1

    async def recommend(self, request: m.RecommendRequest | Mapping[str, Any]) -> m.RecommendResponse:
        return await self._run(self._recommend(request))

    async def get_recommendation(self, rec_id: str) -> m.RecommendResponse:
        return await self._run(self._recommendation(rec_id))

    async def artifact(self, rec_id: str, target: Target, option: int = 1) -> m.ArtifactOut:
        return await self._run(self._artifact(rec_id, target, option))

    async def estimate(self, request: m.EstimateRequest | Mapping[str, Any]) -> m.EstimateResponse:
        return await self._run(self._estimate(request))

    async def compare(
        self, gpus: list[str], *, workload: str | None = None, currency: str | None = None
    ) -> m.CompareOut:
        return await self._run(self._compare(gpus, workload, currency))

    async def gpu(self, ident: str) -> m.GpuAnswer:
        return await self._run(self._gpu(ident))

    async def prices(self, ident: str) -> m.PriceList:
        return await self._run(self._prices(ident))

    async def gpus(self, *, limit: int | None = None, **filters: Any) -> AsyncIterator[m.GpuOut]:
        cursor: str | None = None
        while True:
            page = await self._run(self._gpus(cursor, limit, filters))
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def measurement_plan(
        self, *, limit: int | None = None, **filters: Any
    ) -> AsyncIterator[m.PlanCellOut]:
        cursor: str | None = None
        while True:
            page = await self._run(self._plan(cursor, limit, filters))
            for item in page.items:
                yield item
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def submit_benchmark_run(self, run: m.BenchmarkRunIn | Mapping[str, Any]) -> m.BenchmarkRunAccepted:
        return await self._run(self._submit(run))
