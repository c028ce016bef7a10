"""The submission client against a fake service (httpx.MockTransport): every failure path."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.agent.client import AgentClient, encode, split_run
from service.agent.spool import Spool

BASE = "http://advisor.test"


def make_run(n: int = 4, run_id: str = "host-20261202T000000Z-abc123-tf32") -> dict[str, Any]:
    return {
        "run_id": run_id,
        "suite_version": "1.0.0",
        "host": "node-1",
        "gpu": {"name": "NVIDIA H200", "pci_device_id": "0x2335", "memory_total_bytes": 150754820096},
        "gpu_count": 1,
        "fingerprint": {"suite_version": "1.0.0"},
        "results": [
            {
                "workload": "gemm",
                "parameters": {"precision": "bf16", "n": 1024 * (i + 1)},
                "status": "ok",
                "metrics": {"tflops": {"value": 700.0 + i, "unit": "TFLOP/s"}},
            }
            for i in range(n)
        ],
    }


class FakeService:
    """The submit contract: 201 new, 200 replay (same body), 409 same id + other body, 413 over
    ``max_results``; ``script`` injects failures (status codes or exceptions) before that."""

    def __init__(self, *, max_results: int = 10_000, script: list[Any] | None = None) -> None:
        self.stored: dict[str, str] = {}
        self.results: dict[str, int] = {}
        self.max_results = max_results
        self.script = list(script or [])
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.script:
            step = self.script.pop(0)
            if isinstance(step, Exception):
                raise step
            if callable(step):
                return step(request)
            if isinstance(step, httpx.Response):
                return step
        body = request.content
        run = json.loads(body)
        if request.headers.get("Authorization") != "Bearer k-submit":
            return httpx.Response(401, json={"title": "unauthorised"})
        if len(run["results"]) > self.max_results:
            return httpx.Response(413, json={"title": "too many results"})
        key = request.headers["Idempotency-Key"]
        assert key == run["run_id"]
        digest = hashlib.sha256(body).hexdigest()
        if key in self.stored:
            if self.stored[key] != digest:
                return httpx.Response(
                    409,
                    json={"title": "conflict", "detail": "run_id reused with another body"},
                    headers={"Content-Type": "application/problem+json"},
                )
            return httpx.Response(
                200, json={"run_id": key, "state": "accepted", "result_count": self.results[key]}
            )
        self.stored[key] = digest
        self.results[key] = len(run["results"])
        return httpx.Response(
            201, json={"run_id": key, "state": "accepted", "result_count": len(run["results"])}
        )


@pytest.fixture()
def sleeps() -> list[float]:
    return []


def client_for(
    service: Callable[[httpx.Request], httpx.Response], tmp_path: Path, sleeps: list[float], **kw: Any
) -> AgentClient:
    return AgentClient(
        BASE,
        "k-submit",
        spool=Spool(tmp_path / "spool"),
        transport=httpx.MockTransport(service),
        sleep=sleeps.append,
        jitter=lambda: 1.0,
        **kw,
    )


def test_accepted_then_replayed_never_duplicates(tmp_path: Path, sleeps: list[float]) -> None:
    svc = FakeService()
    c = client_for(svc, tmp_path, sleeps)
    run = make_run()
    (d,) = c.submit(run)
    assert (d.outcome, d.status_code) == ("accepted", 201)
    req = svc.requests[0]
    assert req.url.path == "/v1/benchmark-runs"
    assert req.headers["Idempotency-Key"] == run["run_id"]
    assert req.headers["Authorization"] == "Bearer k-submit"
    assert req.content == encode(run)  # canonical bytes
    (d,) = c.submit(json.loads(json.dumps(run)))  # same run rebuilt from disk: same bytes
    assert (d.outcome, d.status_code) == ("replayed", 200)
    assert len(svc.stored) == 1 and sleeps == []


def test_5xx_then_success_backs_off_exponentially(tmp_path: Path, sleeps: list[float]) -> None:
    svc = FakeService(script=[httpx.Response(503), httpx.Response(502), httpx.Response(500)])
    (d,) = client_for(svc, tmp_path, sleeps, backoff_base_s=0.5).submit(make_run())
    assert d.outcome == "accepted"
    assert sleeps == [0.5, 1.0, 2.0]  # base * 2^(attempt-1) x jitter(=1)
    assert len(svc.requests) == 4


def test_timeouts_exhaust_retries_then_spool_then_flush(tmp_path: Path, sleeps: list[float]) -> None:
    svc = FakeService(script=[httpx.ReadTimeout("slow")] * 3)
    c = client_for(svc, tmp_path, sleeps, max_attempts=3)
    run = make_run()
    (d,) = c.submit(run)
    assert d.outcome == "spooled" and "ReadTimeout" in (d.detail or "")
    assert len(sleeps) == 2
    (item,) = c.spool.pending()
    assert item.run_id == run["run_id"] and item.body() == encode(run)
    deliveries = c.flush()  # service is back
    assert [x.outcome for x in deliveries] == ["accepted"]
    assert c.spool.pending() == [] and len(svc.stored) == 1


def test_unreachable_spools_and_flush_keeps_order_and_stops_when_still_down(
    tmp_path: Path, sleeps: list[float]
) -> None:
    down = FakeService(script=[httpx.ConnectError("refused")] * 100)
    c = client_for(down, tmp_path, sleeps, max_attempts=2)
    a, b = make_run(run_id="aaaa-run-0001"), make_run(run_id="bbbb-run-0002")
    assert [d.outcome for d in c.submit(a) + c.submit(b)] == ["spooled", "spooled"]
    assert [d.outcome for d in c.flush()] == ["spooled"]  # first still unreachable: stop there
    assert len(c.spool.pending()) == 2
    up = FakeService()
    c2 = client_for(up, tmp_path, sleeps)
    assert [(d.run_id, d.outcome) for d in c2.flush()] == [
        ("aaaa-run-0001", "accepted"),
        ("bbbb-run-0002", "accepted"),
    ]
    assert c2.spool.pending() == []
    assert [d.outcome for d in c2.flush()] == []


def test_429_honours_retry_after(tmp_path: Path, sleeps: list[float]) -> None:
    svc = FakeService(
        script=[
            httpx.Response(429, headers={"Retry-After": "7"}),
            httpx.Response(429, headers={"Retry-After": "100000"}),
        ]
    )
    (d,) = client_for(svc, tmp_path, sleeps, max_retry_after_s=30).submit(make_run())
    assert d.outcome == "accepted"
    assert sleeps == [7.0, 30.0]  # honoured, capped


def test_409_goes_to_dead_letter_with_problem_text(tmp_path: Path, sleeps: list[float]) -> None:
    svc = FakeService()
    c = client_for(svc, tmp_path, sleeps)
    run = make_run()
    c.submit(run)
    changed = make_run()
    changed["results"][0]["metrics"]["tflops"]["value"] = 1.0
    (d,) = c.submit(changed)
    assert (d.outcome, d.status_code) == ("dead_letter", 409)
    (item,) = c.spool.dead()
    assert item.body() == encode(changed)
    problem = json.loads((c.spool.dead_dir / f"{run['run_id']}.problem.json").read_text())
    assert problem["status_code"] == 409 and "another body" in problem["problem"]["detail"]
    assert c.spool.pending() == []


def test_422_goes_to_dead_letter(tmp_path: Path, sleeps: list[float]) -> None:
    problem = {
        "title": "Unprocessable",
        "errors": [{"loc": ["results", 0, "metrics", "tflops", "unit"], "msg": "must be 'TFLOP/s'"}],
    }
    svc = FakeService(script=[httpx.Response(422, json=problem)])
    c = client_for(svc, tmp_path, sleeps)
    (d,) = c.submit(make_run())
    assert (d.outcome, d.status_code) == ("dead_letter", 422)
    saved = json.loads(next(c.spool.dead_dir.glob("*.problem.json")).read_text())
    assert saved["problem"]["errors"][0]["loc"][-1] == "unit"
    assert sleeps == [] and len(svc.requests) == 1  # permanent: no retry


def test_401_is_spooled_not_dead_lettered(tmp_path: Path, sleeps: list[float]) -> None:
    svc = FakeService()
    c = AgentClient(
        BASE,
        "wrong-key",
        spool=Spool(tmp_path / "spool"),
        transport=httpx.MockTransport(svc),
        sleep=sleeps.append,
    )
    (d,) = c.submit(make_run())
    assert (d.outcome, d.status_code) == ("spooled", 401) and "API key" in (d.detail or "")
    fixed = client_for(svc, tmp_path, sleeps)
    assert [x.outcome for x in fixed.flush()] == ["accepted"]


def test_413_splits_deterministically_and_replays_identically(tmp_path: Path, sleeps: list[float]) -> None:
    svc = FakeService(max_results=2)
    c = client_for(svc, tmp_path, sleeps)
    run = make_run(n=7)
    first = c.submit(run)
    ids = [d.run_id for d in first]
    assert ids == [
        f"{run['run_id']}.p1.p1",
        f"{run['run_id']}.p1.p2",
        f"{run['run_id']}.p2.p1",
        f"{run['run_id']}.p2.p2",
    ]
    assert all(d.outcome == "accepted" for d in first)
    assert sum(svc.results.values()) == 7  # every result exactly once
    again = c.submit(run)  # e.g. after a crash before the agent recorded success
    assert [d.run_id for d in again] == ids and all(d.outcome == "replayed" for d in again)
    assert sum(svc.results.values()) == 7


def test_runs_over_10000_results_are_split_before_sending(tmp_path: Path, sleeps: list[float]) -> None:
    svc = FakeService()
    run = make_run(n=10_001)
    out = client_for(svc, tmp_path, sleeps).submit(run)
    assert [d.run_id for d in out] == [f"{run['run_id']}.p1", f"{run['run_id']}.p2"]
    assert sorted(svc.results.values()) == [5000, 5001]


def test_split_run_is_contiguous_and_complete() -> None:
    run = make_run(n=5)
    parts = split_run(run, 2)
    assert [p["run_id"][-3:] for p in parts] == [".p1", ".p2"]
    assert [r for p in parts for r in p["results"]] == run["results"]
    with pytest.raises(ValueError):
        split_run(make_run(n=1), 2)
