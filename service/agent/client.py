"""Submitting runs to ``POST /v1/benchmark-runs`` without losing or duplicating anything.

Contract (issue 3): ``Authorization: Bearer <key>`` (scope ``submit``), ``Idempotency-Key:
<run_id>``, JSON body = ``BenchmarkRunIn``. 201 accepted (or pending), 200 replay of a stored
run, 409 same run id with a different body, 413 body or result count over the limit, 422
schema/unit error (problem+json), 401/403 auth, 429 with ``Retry-After``, 5xx.

What the client does with each answer:

- connection errors, timeouts, 5xx and 429: retried up to ``max_attempts`` times with
  exponential backoff and full jitter (``Retry-After`` honoured for 429/503, capped); still
  failing -> the exact body goes to the spool and ``agent flush`` resends it later;
- 401/403: the body is fine, the credentials are not -> spooled (flush after fixing the key);
- 413: the run is split in two halves with deterministic ids ``<run_id>.p1``/``.p2`` (each
  half split again the same way if needed), so a replay after a crash sends the same parts;
  runs with more than 10,000 results are split before sending;
- any other 4xx (422, 409, 400, ...): dead letter -- the body plus the server's problem text.

Bodies are serialised canonically (sorted keys, no spaces) and spooled byte for byte, so a
replay is identical and the service answers 200 with the stored response, never a duplicate.
"""

from __future__ import annotations

import email.utils
import itertools
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import httpx
from gpu_advisor_client import Client

from service.agent.spool import Spool
from service.core.catalog.vocabulary import SUITE_VERSION
from service.schemas.benchmarks import MAX_RESULTS_PER_RUN

Outcome = Literal["accepted", "replayed", "spooled", "dead_letter"]
MAX_RUN_ID = 128


@dataclass(frozen=True, slots=True)
class Delivery:
    run_id: str
    outcome: Outcome
    status_code: int | None
    response: Any = None
    detail: str | None = None


def encode(run: dict[str, Any]) -> bytes:
    """Canonical JSON bytes: the same run always serialises to the same body."""
    return json.dumps(run, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def split_run(run: dict[str, Any], parts: int) -> list[dict[str, Any]]:
    """``parts`` contiguous slices of the results with ids ``<run_id>.p1`` ... (deterministic)."""
    results = list(run["results"])
    if parts < 2 or len(results) < 2:
        raise ValueError("nothing to split")
    parts = min(parts, len(results))
    size = -(-len(results) // parts)
    out = []
    for i in range(parts):
        chunk = results[i * size : (i + 1) * size]
        if not chunk:
            continue
        part = dict(run)
        part["run_id"] = f"{run['run_id']}.p{i + 1}"
        part["results"] = chunk
        if len(part["run_id"]) > MAX_RUN_ID:
            raise ValueError(f"split run id would exceed {MAX_RUN_ID} characters: {part['run_id']}")
        out.append(part)
    return out


def presplit(run: dict[str, Any]) -> list[dict[str, Any]]:
    n = len(run.get("results") or [])
    if n <= MAX_RESULTS_PER_RUN:
        return [run]
    return split_run(run, -(-n // MAX_RESULTS_PER_RUN))


def _retry_after(resp: httpx.Response, now: Callable[[], float] = time.time) -> float | None:
    value = resp.headers.get("Retry-After")
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now())


def _problem(resp: httpx.Response) -> Any:
    try:
        return resp.json()
    except ValueError:
        return resp.text[:4000]


class AgentClient:
    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        spool: Spool,
        transport: httpx.BaseTransport | None = None,
        timeout: httpx.Timeout | float = httpx.Timeout(60.0, connect=10.0),
        max_attempts: int = 5,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        max_retry_after_s: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        # the typed client carries the HTTP (base URL, key, idempotency key); the delivery policy
        # below (retries with jitter, spool, 413 splits) stays the agent's
        self._api = Client(
            base_url,
            api_key=api_key,
            timeout_s=timeout,
            transport=transport,
            user_agent=f"gpu-advisor-agent/{SUITE_VERSION}",
        )
        self.spool = spool
        self.max_attempts = max(1, max_attempts)
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.max_retry_after_s = max_retry_after_s
        self.sleep = sleep
        self.jitter = jitter

    def close(self) -> None:
        self._api.close()

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- transport with retries ------------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        """Full jitter: uniform in [0, min(max, base * 2^(attempt-1))]."""
        cap = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
        return float(cap * self.jitter())

    def _post(self, validate: bool, body: bytes, run_id: str) -> tuple[httpx.Response | None, str | None]:
        """POST with bounded retries; (last response, None) or (None, transport error text)."""
        last_error: str | None = None
        resp: httpx.Response | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                resp = self._api.post_benchmark_run(body, run_id, validate=validate)
                last_error = None
            except httpx.TransportError as exc:
                resp, last_error = None, f"{type(exc).__name__}: {exc}"
            retryable = resp is None or resp.status_code == 429 or resp.status_code >= 500
            if not retryable or attempt == self.max_attempts:
                break
            delay = self._backoff(attempt)
            if resp is not None and resp.status_code in (429, 503):
                ra = _retry_after(resp)
                if ra is not None:
                    delay = min(ra, self.max_retry_after_s)
            self.sleep(delay)
        return resp, last_error

    # ---- public API --------------------------------------------------------------------------

    def validate(self, run: dict[str, Any]) -> tuple[bool, int | None, Any]:
        """Dry run (``/validate``): (valid, status code, server answer)."""
        resp, err = self._post(True, encode(run), str(run["run_id"]))
        if resp is None:
            return False, None, err
        return resp.is_success, resp.status_code, _problem(resp)

    def submit(self, run: dict[str, Any]) -> list[Delivery]:
        """Deliver one run (split as needed); every part ends accepted, spooled or dead-lettered."""
        out: list[Delivery] = []
        for part in presplit(run):
            out.extend(self._submit_one(part, encode(part)))
        return out

    def _submit_one(self, run: dict[str, Any], body: bytes) -> list[Delivery]:
        run_id = str(run["run_id"])
        resp, err = self._post(False, body, run_id)
        if resp is None:
            self.spool.put(run_id, body)
            return [Delivery(run_id, "spooled", None, detail=f"service unreachable: {err}")]
        code = resp.status_code
        if code in (200, 201, 202):
            return [Delivery(run_id, "replayed" if code == 200 else "accepted", code, _problem(resp))]
        if code == 429 or code >= 500:
            self.spool.put(run_id, body)
            return [Delivery(run_id, "spooled", code, detail=f"service kept answering {code}")]
        if code in (401, 403):
            self.spool.put(run_id, body)
            return [
                Delivery(
                    run_id,
                    "spooled",
                    code,
                    _problem(resp),
                    detail="credentials refused: fix the API key, then `agent flush`",
                )
            ]
        if code == 413 and len(run.get("results") or []) > 1:
            out: list[Delivery] = []
            for part in split_run(run, 2):
                out.extend(self._submit_one(part, encode(part)))
            return out
        problem = _problem(resp)
        self.spool.dead_letter(run_id, body, code, problem)
        return [Delivery(run_id, "dead_letter", code, problem, detail=f"refused with {code}")]

    def flush(self) -> list[Delivery]:
        """Resend spooled bodies, oldest name first; stop at the first that is still unreachable."""
        out: list[Delivery] = []
        for item in self.spool.pending():
            body = item.body()
            try:
                run = json.loads(body)
            except json.JSONDecodeError as exc:
                self.spool.dead_letter(item.run_id, body, None, f"spooled body is not JSON: {exc}")
                self.spool.remove(item.run_id)
                out.append(Delivery(item.run_id, "dead_letter", None, detail="corrupt spool file"))
                continue
            deliveries = self._submit_one(run, body)
            out.extend(deliveries)
            still_here = any(d.run_id == item.run_id and d.outcome == "spooled" for d in deliveries)
            if not still_here:
                self.spool.remove(item.run_id)
            if any(d.outcome == "spooled" and d.status_code is None for d in deliveries):
                break  # unreachable: keep the rest for the next flush
        return out


def fetch_measurement_plan(
    base_url: str,
    api_key: str | None,
    gpu: str,
    *,
    max_cells: int,
    transport: httpx.BaseTransport | None = None,
) -> list[dict[str, Any]]:
    """The first ``max_cells`` cells of ``GET /v1/measurement-plan`` for ``gpu`` (slug, alias or
    PCI device id), in plan order, through the typed client with the agent's key (submit
    scope). Problems are raised as the client's typed errors."""
    with Client(
        base_url, api_key=api_key, transport=transport, user_agent=f"gpu-advisor-agent/{SUITE_VERSION}"
    ) as api:
        cells = api.measurement_plan(gpu=gpu, limit=min(max_cells, 500))
        return [c.model_dump(mode="json") for c in itertools.islice(cells, max_cells)]
