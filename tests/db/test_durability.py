"""Durability of acknowledged writes (DESIGN principle 5, "Transactions and consistency").

A real uvicorn server on a fresh PostgreSQL database; concurrent clients submit benchmark runs
with retries; the server is SIGKILLed mid-stream and restarted; clients retry what went
unanswered. Every run that got a 2xx must be stored exactly once with the results it was
acknowledged with.

The second test runs the same scenario against a test-only ASGI entry
(``tests/db/unsafe_asgi.py``) that commits *after* the response is sent, and asserts that the
checker reports acknowledged runs as lost -- so a regression that moves the commit past the
response cannot pass the first test.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select

from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.models import BenchmarkResult, BenchmarkRun
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.api.benchmark_fixtures import make_gpu, result, run_on
from tests.conftest import fresh_database_url, is_postgres

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(
        not is_postgres(),
        reason="durability is tested against a real PostgreSQL server (set GPU_ADVISOR_TEST_DATABASE_URL); "
        "SQLite has no separate server process to kill",
    ),
]

REPO = Path(__file__).resolve().parents[2]
CLIENTS = 6
RUNS_PER_CLIENT = 20
RESULTS_PER_RUN = 10
KILL_AFTER_ACKS = 30


@dataclass
class Env:
    url: str
    engine: Engine
    key: str
    gpu: dict[str, Any]


@pytest.fixture()
def env(tmp_path: Path) -> Iterator[Env]:
    for url in fresh_database_url(tmp_path, "durable"):
        eng = make_engine(url)
        bootstrap(eng, Settings(database_url=url, seed_measurements_dir=None))
        with UnitOfWork(make_session_factory(eng)) as uow:
            key = create_key(uow, name="durability", scope="submit").secret
        gpu = make_gpu(eng)
        yield Env(url=url, engine=eng, key=key, gpu=gpu)
        eng.dispose()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, app: str, url: str, port: int, extra_env: dict[str, str] | None = None) -> None:
        self.app, self.port = app, port
        self.env = {
            **os.environ,
            "GPU_ADVISOR_DATABASE_URL": url,
            "GPU_ADVISOR_SEED_MEASUREMENTS_DIR": "",
            # durability, not limits: one key submits as fast as it can (tests/db/test_replicas.py
            # runs its servers with limits on)
            "GPU_ADVISOR_RATE_LIMITS_ENABLED": "false",
            **(extra_env or {}),
        }
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                self.app,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
                "--no-access-log",
            ],
            cwd=REPO,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=0.5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}")
            time.sleep(0.05)
        raise RuntimeError("server did not come up")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self.proc.kill()


@dataclass
class Outcome:
    acked: dict[str, list[int]] = field(default_factory=dict)  # run_id -> result ids acknowledged
    interrupted: set[str] = field(default_factory=set)  # sent, no answer: retried
    replays: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _client(
    port: int, key: str, bodies: list[dict[str, Any]], out: Outcome, deadline: float, retry: bool
) -> None:
    with httpx.Client(
        base_url=f"http://127.0.0.1:{port}", timeout=10.0, headers={"Authorization": f"Bearer {key}"}
    ) as http:
        for body in bodies:
            while time.monotonic() < deadline:
                try:
                    r = http.post(
                        "/v1/benchmark-runs", json=body, headers={"Idempotency-Key": body["run_id"]}
                    )
                except httpx.TransportError:
                    with out.lock:
                        out.interrupted.add(body["run_id"])
                    if not retry:
                        break
                    time.sleep(0.1)
                    continue
                if r.status_code >= 500:
                    time.sleep(0.1)
                    continue
                assert r.status_code in (200, 201), r.text
                with out.lock:
                    out.acked[body["run_id"]] = [o["result_id"] for o in r.json()["results"]]
                    out.replays += r.status_code == 200
                break


def lost_acknowledged_runs(engine: Engine, acked: dict[str, list[int]]) -> list[str]:
    """The checker: every acknowledged run stored exactly once, with the acknowledged results."""
    problems: list[str] = []
    with UnitOfWork(make_session_factory(engine)) as uow:
        s = uow.session
        for run_id, ids in acked.items():
            rows = s.scalars(select(BenchmarkRun.id).where(BenchmarkRun.run_id == run_id)).all()
            if len(rows) != 1:
                problems.append(f"{run_id}: stored {len(rows)} times")
                continue
            stored = sorted(s.scalars(select(BenchmarkResult.id).where(BenchmarkResult.run_pk == rows[0])))
            if stored != sorted(ids):
                problems.append(
                    f"{run_id}: acknowledged results {sorted(ids)[:3]}... but stored {stored[:3]}..."
                )
    return problems


def _scenario(
    env: Env,
    app: str,
    *,
    extra_env: dict[str, str] | None = None,
    retry: bool = True,
    kill_after: int = KILL_AFTER_ACKS,
) -> Outcome:
    port = _free_port()
    server = Server(app, env.url, port, extra_env)
    bodies = [
        [
            run_on(
                env.gpu,
                [
                    result(metrics={"throughput": 1000.0 + (c * RUNS_PER_CLIENT + i) % 17 + j})
                    for j in range(RESULTS_PER_RUN)
                ],
                run_id=f"durable-{c}-{i}-{os.getpid()}",
                host=f"host-{c}",
            )
            for i in range(RUNS_PER_CLIENT)
        ]
        for c in range(CLIENTS)
    ]
    out = Outcome()
    server.start()
    try:
        deadline = time.monotonic() + 40
        threads = [
            threading.Thread(target=_client, args=(port, env.key, b, out, deadline, retry)) for b in bodies
        ]
        for t in threads:
            t.start()
        while len(out.acked) < kill_after and time.monotonic() < deadline:
            time.sleep(0.005)
        server.kill()  # mid-stream: requests in flight, others queued
        killed_at = len(out.acked)
        time.sleep(0.2)
        server.start()
        for t in threads:
            t.join()
        assert killed_at < CLIENTS * RUNS_PER_CLIENT, "the kill came after everything was done"
    finally:
        server.stop()
    return out


def test_acknowledged_runs_survive_sigkill(env: Env) -> None:
    out = _scenario(env, "service.api.asgi:app")
    total = CLIENTS * RUNS_PER_CLIENT
    print(
        f"acknowledged {len(out.acked)}, interrupted and retried {len(out.interrupted)}, replays {out.replays}"
    )
    assert len(out.acked) == total, (
        f"only {len(out.acked)} of {total} runs were acknowledged before the deadline"
    )
    assert out.interrupted, "the kill interrupted no request; the scenario did not test anything"
    assert lost_acknowledged_runs(env.engine, out.acked) == []
    with UnitOfWork(make_session_factory(env.engine)) as uow:
        runs = uow.session.scalar(select(func.count()).select_from(BenchmarkRun))
        results = uow.session.scalar(select(func.count()).select_from(BenchmarkResult))
    assert runs == total and results == total * RESULTS_PER_RUN  # retries never duplicate


def test_the_checker_catches_a_commit_after_the_response(env: Env) -> None:
    """Same scenario, server committing after the response: acknowledged runs go missing."""
    out = _scenario(
        env,
        "tests.db.unsafe_asgi:app",
        extra_env={"GPU_ADVISOR_TEST_UNSAFE_COMMIT_DELAY_S": "0.3"},
        retry=False,  # what was acknowledged is never resent: exactly what an agent does
        # the kill lands right after an acknowledgement whose commit is still 0.3 s away
        kill_after=10,
    )
    lost = lost_acknowledged_runs(env.engine, out.acked)
    print(f"acknowledged {len(out.acked)}, lost {len(lost)}: {lost[:2]}")
    assert lost, "the checker did not notice acknowledged runs lost to a commit after the response"
