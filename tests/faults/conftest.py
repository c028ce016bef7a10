"""Fixtures of the fault-injection tests (marker ``faults``; ``.ci/run`` runs them once, on
both databases, with ``pytest -m faults``): real ``gpu-advisor serve`` processes over a private
PostgreSQL cluster (``cluster.PrivateCluster``) or over a SQLite file on a small ``tmpfs``
mount, and an asynchronous HTTP client that records what every request saw.

The disk faults need ``mount`` (root); elsewhere they skip, unless
``GPU_ADVISOR_REQUIRE_FAULTS=1`` (set by ``.ci/run``) makes that a failure."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, text

from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.api.benchmark_fixtures import result, run
from tests.db.servers import REPO, ServerProcess
from tests.faults.cluster import PrivateCluster, postgres_bin

REQUIRE = os.environ.get("GPU_ADVISOR_REQUIRE_FAULTS") == "1"


def unavailable(reason: str) -> None:
    if REQUIRE:
        pytest.fail(f"GPU_ADVISOR_REQUIRE_FAULTS=1 but {reason}")
    pytest.skip(reason)


# ---- databases -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PrivateCluster]:
    if postgres_bin() is None:
        unavailable("no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin")
    cluster = PrivateCluster().init()
    try:
        yield cluster
    finally:
        cluster.destroy()


def new_pg_database(cluster: PrivateCluster) -> str:
    import psycopg

    name = f"faults_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return cluster.url.rsplit("/", 1)[0] + f"/{name}"


@contextlib.contextmanager
def tmpfs(size_mib: int) -> Iterator[Path]:
    """A fresh tmpfs of ``size_mib`` MiB, unmounted afterwards."""
    where = Path(tempfile.mkdtemp(prefix="gpua-faults-disk-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mib}m,mode=0755", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        where.rmdir()
        unavailable(f"cannot mount a tmpfs for the disk faults: {done.stderr.strip()}")
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)
        with contextlib.suppress(OSError):
            where.rmdir()


def remount(where: Path, mode: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True, capture_output=True)


def prepared(url: str, *, measurements: bool = False) -> tuple[Engine, dict[str, str]]:
    """Migrate and seed ``url`` (the catalog; the committed measurements when asked); a key
    of each scope."""
    engine = make_engine(url)
    over: dict[str, Any] = {} if measurements else {"seed_measurements_dir": None}
    bootstrap(engine, Settings(database_url=url, **over))
    keys = {}
    for scope in ("read", "submit", "admin"):
        with UnitOfWork(make_session_factory(engine)) as uow:
            keys[scope] = create_key(uow, name=f"faults-{scope}-{uuid.uuid4().hex[:6]}", scope=scope).secret
    return engine, keys


FAST_TIMEOUTS = {
    "GPU_ADVISOR_RATE_LIMITS_ENABLED": "false",
    "GPU_ADVISOR_DB_CONNECT_TIMEOUT_S": "2",
    "GPU_ADVISOR_DB_STATEMENT_TIMEOUT_S": "2",
    "GPU_ADVISOR_DB_POOL_TIMEOUT_S": "2",
    "GPU_ADVISOR_READYZ_TIMEOUT_S": "1",
    "GPU_ADVISOR_LOG_LEVEL": "warning",
}
"""Server settings of the fault tests: short timeouts, so each fault shows in seconds."""


def serve(url: str, log: Path, **env: str) -> ServerProcess:
    return ServerProcess.serve(url, log, env={**FAST_TIMEOUTS, **env}).start()


def wait_ready(server: ServerProcess, timeout_s: float = 120) -> None:
    """Until ``/readyz`` is 200 (the start-up warm-up is done)."""
    deadline = time.monotonic() + timeout_s
    while httpx.get(f"{server.url}/readyz", timeout=10).status_code != 200:
        assert time.monotonic() < deadline, "the server never became ready"
        time.sleep(0.2)


# ---- requests and what they saw ----------------------------------------------------------------


@dataclass
class Seen:
    """Every answer: (what, status, seconds, problem type, Retry-After); a request that got no
    answer has status 0 and the client's error in the problem-type slot."""

    rows: list[tuple[str, int, float, str | None, str | None]] = field(default_factory=list)

    def add(self, what: str, r: httpx.Response | None, seconds: float, error: str | None = None) -> None:
        if r is None:
            self.rows.append((what, 0, seconds, error, None))
            return
        ptype = None
        if r.headers.get("content-type", "").startswith("application/problem+json"):
            ptype = r.json().get("type", "").rsplit("/", 1)[-1]
        self.rows.append((what, r.status_code, seconds, ptype, r.headers.get("retry-after")))

    def statuses(self, what: str | None = None) -> dict[int, int]:
        out: dict[int, int] = {}
        for w, s, *_ in self.rows:
            if what is None or w == what:
                out[s] = out.get(s, 0) + 1
        return out

    def slowest(self, what: str | None = None) -> float:
        return max((t for w, _s, t, *_ in self.rows if what is None or w == what), default=0.0)

    def p99(self, what: str) -> float:
        times = sorted(t for w, _s, t, *_ in self.rows if w == what)
        return times[min(len(times) - 1, int(0.99 * len(times)))] if times else 0.0

    def unanswered_or_500(self) -> list[tuple[str, int, float, str | None, str | None]]:
        return [row for row in self.rows if row[1] == 0 or (row[1] >= 500 and row[1] not in (503, 507))]

    def outages_without_retry_after(self) -> list[tuple[str, int, float, str | None, str | None]]:
        return [row for row in self.rows if row[1] in (503, 507) and not row[4]]


async def timed(
    client: httpx.AsyncClient, seen: Seen, what: str, method: str, url: str, **kw: Any
) -> httpx.Response | None:
    t = time.monotonic()
    try:
        r = await client.request(method, url, **kw)
    except httpx.HTTPError as e:
        seen.add(what, None, time.monotonic() - t, error=f"{type(e).__name__}: {e}")
        return None
    seen.add(what, r, time.monotonic() - t)
    return r


async def read_loop(client: httpx.AsyncClient, seen: Seen, stop: asyncio.Event, path: str) -> None:
    """Reads, back to back, until ``stop``."""
    while not stop.is_set():
        await timed(client, seen, "read", "GET", path)
        await asyncio.sleep(0.01)


class ReaderProcess:
    """``tests.faults.reader`` in a process of its own while a block runs: its reads'
    latencies are not those of the load generator's event loop."""

    def __init__(self, url: str, path: str, where: Path) -> None:
        self.out = where / f"reads-{uuid.uuid4().hex[:6]}.txt"
        self.stop_file = where / f"stop-{uuid.uuid4().hex[:6]}"
        self.argv = [
            sys.executable,
            "-m",
            "tests.faults.reader",
            url,
            path,
            str(self.out),
            str(self.stop_file),
        ]
        self.times: list[float] = []
        self.statuses: dict[int, int] = {}

    def __enter__(self) -> ReaderProcess:
        self.proc = subprocess.Popen(self.argv, cwd=REPO)
        ready = Path(str(self.out) + ".ready")
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert self.proc.poll() is None and time.monotonic() < deadline, "the reader did not start"
            time.sleep(0.02)
        time.sleep(0.3)  # a few reads before the load
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.3)  # a few reads after
        self.stop_file.write_text("stop")
        self.proc.wait(60)
        rows = [line.split() for line in self.out.read_text().splitlines() if line.strip()]
        self.times = sorted(float(t) for t, _s in rows)
        for _t, s in rows:
            self.statuses[int(s)] = self.statuses.get(int(s), 0) + 1

    def p99(self) -> float:
        return self.times[min(len(self.times) - 1, int(0.99 * len(self.times)))] if self.times else 0.0


def small_run(run_id: str | None = None, host: str = "faults-host") -> dict[str, Any]:
    """A valid one-result run on the H200 (a real catalog GPU)."""
    return run([result("resnet50-train", metrics={"throughput": 2500.0})], run_id=run_id, host=host)


def stored_runs(engine: Engine, run_ids: list[str]) -> dict[str, int]:
    """How many times each of ``run_ids`` is stored."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT run_id, count(*) FROM benchmark_runs GROUP BY run_id")).all()
    wanted = set(run_ids)
    return {str(r[0]): int(r[1]) for r in rows if r[0] in wanted}


def auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
