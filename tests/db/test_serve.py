"""`gpu-advisor serve --workers 2` as operators run it: one real server (two uvicorn workers)
on a fresh database (SQLite or PostgreSQL), probed over real sockets.

- metrics in multiprocess mode: every scrape, whichever process answers, counts the requests
  of both workers (a per-process registry would report each worker's share);
- a body that stops short of its Content-Length, or trickles, is cut off with 408 after
  body_read_timeout_s and the connection closed; an oversized chunked body is 413;
- stderr is JSON lines; the access line of a request carries its X-Request-ID; no API key
  (valid, invalid, in a header or a query string) appears anywhere in the logs.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client.mmap_dict import MmapedDict

from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.api.benchmark_fixtures import make_gpu, result, run_on
from tests.conftest import fresh_database_url
from tests.db.servers import ServerProcess, free_port

pytestmark = pytest.mark.slow

BODY_TIMEOUT_S = 1.0
MAX_BODY = 65_536
ROUTE = "/v1/gpus/{ident}"


@dataclass
class Served:
    server: ServerProcess
    metrics_url: str
    prom_dir: Path
    admin: str
    submit: str
    gpu: dict[str, str]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("serve")
    for url in fresh_database_url(tmp, "serve"):
        eng = make_engine(url)
        bootstrap(eng, Settings(database_url=url, seed_measurements_dir=None))
        with UnitOfWork(make_session_factory(eng)) as uow:
            admin = create_key(uow, name="serve-admin", scope="admin").secret
        with UnitOfWork(make_session_factory(eng)) as uow:
            submit = create_key(uow, name="serve-agent", scope="submit").secret
        gpu = make_gpu(eng)
        eng.dispose()
        mport = free_port()
        server = ServerProcess.serve(
            url,
            tmp / "stderr.log",
            "--workers",
            "2",
            "--metrics-port",
            str(mport),
            env={
                "PROMETHEUS_MULTIPROC_DIR": str(tmp / "prom"),
                "GPU_ADVISOR_BODY_READ_TIMEOUT_S": str(BODY_TIMEOUT_S),
                "GPU_ADVISOR_MAX_BODY_BYTES": str(MAX_BODY),
            },
        )
        server.start()
        try:
            yield Served(server, f"http://127.0.0.1:{mport}/metrics", tmp / "prom", admin, submit, gpu)
        finally:
            server.stop()


def _requests_by_pid(prom_dir: Path) -> dict[str, float]:
    """This route's request count per worker, read from each process's own sample file."""
    out: dict[str, float] = {}
    for f in prom_dir.glob("counter_*.db"):
        for key, value, _ts, _pos in MmapedDict.read_all_values_from_file(str(f)):
            name, _sample, labels, _help = json.loads(key)
            if name == "gpu_advisor_http_requests" and labels.get("route") == ROUTE:
                out[f.stem] = out.get(f.stem, 0.0) + value
    return out


def _scraped(text: str) -> float:
    total = 0.0
    for line in text.splitlines():
        if line.startswith("gpu_advisor_http_requests_total{") and f'route="{ROUTE}"' in line:
            total += float(line.split()[-1])
    return total


def test_every_scrape_counts_both_workers(served: Served) -> None:
    n, threads = 60, 6
    errors: list[str] = []

    def hammer() -> None:
        for _ in range(n // threads):
            # a new connection per request: the kernel hands connections to either worker
            r = httpx.get(f"{served.server.url}/v1/gpus/nvidia-l4", headers={"Connection": "close"})
            if r.status_code != 200:
                errors.append(r.text)

    ts = [threading.Thread(target=hammer) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    # a request is counted when its response has gone out: give the last ones a moment
    deadline = time.monotonic() + 10
    while sum((per_worker := _requests_by_pid(served.prom_dir)).values()) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum(per_worker.values()) == n
    assert len([v for v in per_worker.values() if v > 0]) == 2, f"one worker took every request: {per_worker}"
    scrapes = [_scraped(httpx.get(served.metrics_url).text) for _ in range(5)]
    assert scrapes == [n] * 5
    assert "gpu_advisor_watermark" in httpx.get(served.metrics_url).text
    # metrics_access = port: nothing on the API port, key or not
    assert (
        httpx.get(
            f"{served.server.url}/metrics", headers={"Authorization": f"Bearer {served.admin}"}
        ).status_code
        == 404
    )


def _raw(
    port: int, payload: bytes, then: list[bytes] | None = None, every_s: float = 0.0
) -> tuple[bytes, float]:
    """Send ``payload`` (and trickle ``then`` every ``every_s``); the whole answer up to the
    server's close, and the seconds it took."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        s.sendall(payload)
        for piece in then or []:
            time.sleep(every_s)
            try:
                s.sendall(piece)
            except OSError:
                break
        chunks = []
        while True:
            try:
                data = s.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks), time.monotonic() - start


def test_a_body_that_never_arrives_is_cut_off_with_408(served: Served) -> None:
    head = (
        b"POST /v1/benchmark-runs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + served.submit.encode() + b'\r\nContent-Length: 5000\r\n\r\n{"run_id": '
    )
    answer, took = _raw(served.server.port, head)  # then silence
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert b"application/problem+json" in answer and b"connection: close" in answer.lower()
    assert BODY_TIMEOUT_S <= took < BODY_TIMEOUT_S + 4, took  # not 75 s; and the server closed it
    # a trickle (one byte every 0.2 s) gets no longer
    answer, took = _raw(served.server.port, head, then=[b" "] * 40, every_s=0.2)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert took < BODY_TIMEOUT_S + 4


def test_an_oversized_chunked_body_is_413(served: Served) -> None:
    body = json.dumps(run_on(served.gpu, [result() for _ in range(400)])).encode()
    assert len(body) > MAX_BODY
    chunked = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + 8192]), body[i : i + 8192]) for i in range(0, len(body), 8192)
    )
    head = (
        b"POST /v1/benchmark-runs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + served.submit.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    answer, _ = _raw(served.server.port, head + chunked + b"0\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]
    assert b'"max_body_bytes":%d' % MAX_BODY in answer.replace(b" ", b"")
    with httpx.Client(base_url=served.server.url) as c:
        r = c.get(f"/v1/benchmark-runs/{json.loads(body)['run_id']}")
        assert r.status_code == 404


def test_logs_are_json_lines_with_request_ids_and_no_secrets(served: Served) -> None:
    rid = f"ops-{uuid.uuid4().hex[:8]}"
    bogus = f"gpa_{uuid.uuid4().hex[:8]}_{uuid.uuid4().hex}{uuid.uuid4().hex}"
    with httpx.Client(base_url=served.server.url) as c:
        admin = {"Authorization": f"Bearer {served.admin}"}
        r = c.get("/v1/admin/alerts", headers={**admin, "X-Request-ID": rid})
        assert r.status_code == 200 and r.headers["X-Request-ID"] == rid
        made = c.get("/healthz").headers["X-Request-ID"]
        assert c.get("/v1/admin/alerts", headers={"Authorization": f"Bearer {bogus}"}).status_code == 401
        # a key pasted into the query string is not a declared parameter (422), and is still
        # kept out of the logs below
        assert c.get(f"/v1/admin/alerts?api_key={served.admin}", headers=admin).status_code == 422
        bad = run_on(served.gpu, [result(status="bogus")])
        r = c.post("/v1/benchmark-runs", json=bad, headers={"Authorization": f"Bearer {served.submit}"})
        assert r.status_code == 422
    deadline = time.monotonic() + 20
    while True:
        text = served.server.log_path.read_text()
        complete = text[: text.rfind("\n") + 1]  # a line being written right now is read next time
        lines = [json.loads(line) for line in complete.splitlines() if line.strip()]
        access = [x for x in lines if x.get("logger") == "gpu_advisor.access"]
        ids = {a.get("request_id") for a in access}
        if {rid, made} <= ids and {a["status"] for a in access} >= {200, 401, 422}:
            break
        assert time.monotonic() < deadline, (
            f"access lines missing: {[a.get('request_id') for a in access][-8:]}"
        )
        time.sleep(0.1)
    mine = [a for a in access if a.get("request_id") == rid]
    assert len(mine) == 1 and mine[0]["status"] == 200 and mine[0]["route"] == "/v1/admin/alerts"
    assert mine[0]["path"] == "/v1/admin/alerts" and mine[0]["client"] == "127.0.0.1"
    assert any(a.get("request_id") == made and a["path"] == "/healthz" for a in access)
    assert {a["status"] for a in access} >= {200, 401, 422}
    assert any(x.get("logger") == "uvicorn.error" for x in lines)  # the server's own lines are JSON too
    for secret in (served.admin, served.submit, bogus, served.admin.split("_", 2)[2], bogus.split("_", 2)[2]):
        assert secret not in text


def test_each_worker_limits_the_request_head(served: Served) -> None:
    """The head limits reach the worker processes (``service.api.asgi`` configures each):
    every one of several connections -- spread over both workers -- refuses a 40 KiB header."""
    for _ in range(6):
        s = socket.create_connection(("127.0.0.1", served.server.port), timeout=10)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000 + b"\r\n\r\n")
        answer = s.recv(200)
        s.close()
        assert answer.startswith(b"HTTP/1.1 431 "), answer
