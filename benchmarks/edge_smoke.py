"""The request edge of issue 26 against a real ``gpu-advisor serve`` with production defaults
(rate limits on): one line per item, OK or BAD, with what the server answered.

    python benchmarks/edge_smoke.py sqlite:////tmp/edge-smoke.db
    python benchmarks/edge_smoke.py postgresql://postgres@127.0.0.1:5432/edge_smoke   # an empty database

Page-limit bypasses, ``If-Match: *``, invisible characters in names, OPTIONS, /docs and its CSP,
per-route body limits, the /v1/models/parse rate rule, RFC 9112 framing on raw sockets, head size,
field count and read timeout, large bodies decoded off the event loop (/healthz timed while
10,000-result runs are validated), and a Redis that accepts connections and never answers.
The tests that assert each: tests/api/test_edge.py, tests/db/test_http_edge.py,
tests/api/test_limits.py, tests/api/test_docs_pages.py. Exit status: the number of BAD lines."""

from __future__ import annotations

import contextlib
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.api.benchmark_fixtures import result, run  # noqa: E402
from tests.db.servers import ServerProcess  # noqa: E402
from tests.faults.conftest import prepared  # noqa: E402

ESTIMATE = {"model": "llama3-8b", "gpu": "H200"}
CONFIG = {
    "model_type": "llama",
    "hidden_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "intermediate_size": 1024,
    "vocab_size": 1000,
}
BAD: list[str] = []


def rec(item: str, ok: bool, figure: str) -> None:
    if not ok:
        BAD.append(item)
    print(f"{'OK ' if ok else 'BAD'} {item}: {figure}", flush=True)


def raw(port: int, data: bytes, wait_s: float = 15) -> bytes:
    """Send bytes on a connection of their own; everything the server sends until it closes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=wait_s)
    with contextlib.suppress(OSError):  # refused and closed while sending
        s.sendall(data)
    got = b""
    while True:
        try:
            chunk = s.recv(65536)
        except OSError:
            break
        if not chunk:
            break
        got += chunk
    s.close()
    return got


def status_line(answer: bytes) -> str:
    return answer.split(b"\r\n", 1)[0].decode()


def api_items(c: httpx.Client, keys: dict[str, str]) -> None:
    admin = {"Authorization": f"Bearer {keys['admin']}"}
    for q in ("limit=1&limit=500", "limit=500.0"):
        r = c.get(f"/v1/gpus?{q}")
        rec(
            f"GET /v1/gpus?{q}",
            r.status_code == 422,
            f"{r.status_code} {r.json().get('errors', [{}])[0].get('loc')}",
        )
    for m in ("PATCH", "DELETE"):
        r = c.request(
            m,
            "/v1/gpus/nvidia-l40",
            headers={**admin, "If-Match": "*"},
            json={"notes": "x"} if m == "PATCH" else None,
        )
        rec(f"{m} /v1/gpus/nvidia-l40 with If-Match: *", r.status_code == 422, str(r.status_code))
    rec("the L40 is still there", c.get("/v1/gpus/nvidia-l40").status_code == 200, "200")
    for name in ("L\u200b40", "\u202e04L"):
        r = c.get(f"/v1/gpus/{name}")
        rec(f"GET /v1/gpus/{name!a}", r.status_code == 422, str(r.status_code))
    for path in ("/v1/gpus", "/v1/gpus/nvidia-l40"):
        r = c.options(path)
        rec(f"OPTIONS {path}", r.status_code == 204, f"{r.status_code} Allow: {r.headers.get('allow')}")
    r = c.get("/docs")
    csp = r.headers.get("content-security-policy", "")
    scripts = [w for w in r.text.split() if w.startswith("src=")]
    rec(
        "/docs",
        r.status_code == 200 and "script-src 'self'" in csp,
        f"{r.status_code}; scripts {scripts}; CSP {csp}",
    )
    big = b'{"x":"' + b"a" * (300 * 1024) + b'"}'
    r = c.post("/v1/models/parse", content=big, headers={"content-type": "application/json"})
    rec("300 KiB to POST /v1/models/parse", r.status_code == 413, r.json().get("detail", ""))
    r = c.post(
        "/v1/gpus/nvidia-l40/prices",
        content=b'{"x":"' + b"a" * (70 * 1024) + b'"}',
        headers={**admin, "content-type": "application/json"},
    )
    rec("70 KiB to POST /v1/gpus/{slug}/prices", r.status_code == 413, str(r.status_code))
    rule = c.get("/openapi.json").json()["paths"]["/v1/models/parse"]["post"].get("x-rate-limit")
    statuses = [c.post("/v1/models/parse", json=CONFIG).status_code for _ in range(40)]
    first = statuses.index(429) + 1 if 429 in statuses else None
    rec(
        "40 rapid POST /v1/models/parse", first is not None, f"first 429 at #{first}; rule {json.dumps(rule)}"
    )


def wire_items(port: int) -> None:
    dup = raw(port, b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n")
    rec("duplicated Host", dup.startswith(b"HTTP/1.1 400"), status_line(dup))
    body = json.dumps(ESTIMATE).encode()
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = b"POST /v1/estimate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    odd = raw(port, head + b"Transfer-Encoding: identity, chunked\r\n\r\n" + chunked)
    rec(
        "Transfer-Encoding: identity, chunked",
        odd.startswith((b"HTTP/1.1 501", b"HTTP/1.1 400")),
        status_line(odd),
    )
    ok = raw(port, head + b"Transfer-Encoding: Chunked\r\nConnection: close\r\n\r\n" + chunked)
    rec("Transfer-Encoding: Chunked (valid)", ok.startswith(b"HTTP/1.1 200"), status_line(ok))
    large = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n")
    rec("a 64 KiB header", large.startswith(b"HTTP/1.1 431"), status_line(large))
    fields = b"".join(b"X-H%d: 1\r\n" % i for i in range(150))
    many = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + fields + b"\r\n")
    rec("150 header fields", many.startswith(b"HTTP/1.1 431"), status_line(many))
    t = time.monotonic()
    slow = raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", wait_s=30)
    rec(
        "a head that never ends",
        slow.startswith(b"HTTP/1.1 408"),
        f"{status_line(slow)} after {time.monotonic() - t:.1f} s",
    )


def off_loop_item(base: str, submit_key: str) -> None:
    """/healthz timed from a thread while 10,000-result runs are validated."""
    body = json.dumps(run([result() for _ in range(10_000)])).encode()
    lat: list[float] = []
    stop = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=base) as hc:
            while not stop.is_set():
                t0 = time.monotonic()
                hc.get("/healthz")
                lat.append(time.monotonic() - t0)
                time.sleep(0.005)

    th = threading.Thread(target=probe)
    th.start()
    time.sleep(0.3)
    headers = {"Authorization": f"Bearer {submit_key}", "content-type": "application/json"}
    with httpx.Client(base_url=base, timeout=120) as c:
        t0 = time.monotonic()
        statuses = [
            c.post("/v1/benchmark-runs/validate", content=body, headers=headers).status_code for _ in range(3)
        ]
        took = time.monotonic() - t0
    time.sleep(0.3)
    stop.set()
    th.join()
    lat.sort()
    rec(
        f"/healthz while 3 runs of {len(body) / 2**20:.1f} MiB are validated",
        statuses == [200] * 3 and lat[-1] < 0.5,
        f"validate {statuses} in {took:.1f} s; /healthz p50 {lat[len(lat) // 2] * 1000:.0f} ms, "
        f"max {lat[-1] * 1000:.0f} ms over {len(lat)}",
    )


def hung_redis_item(url: str, tmp: Path) -> None:
    silent = socket.create_server(("127.0.0.1", 0))
    redis_url = f"redis://127.0.0.1:{silent.getsockname()[1]}/0"
    server = ServerProcess.serve(
        url, tmp / "server-redis.log", env={"GPU_ADVISOR_REDIS_URL": redis_url}
    ).start()
    try:
        with httpx.Client(base_url=server.url, timeout=30) as c:
            times: list[float] = []
            for _ in range(20):
                t = time.monotonic()
                c.post("/v1/estimate", json=ESTIMATE)
                times.append(time.monotonic() - t)
            time.sleep(5.5)  # past the back-off: Redis is asked again
            t = time.monotonic()
            c.post("/v1/estimate", json=ESTIMATE)
            again = time.monotonic() - t
    finally:
        server.stop()
        silent.close()
    rec(
        "a hung Redis, 20 POST /v1/estimate",
        max(times[1:]) < 0.2,
        f"first {times[0] * 1000:.0f} ms (Redis client import + timeout), next 19 median "
        f"{statistics.median(times[1:]) * 1000:.0f} ms, max {max(times[1:]) * 1000:.0f} ms; "
        f"the first after the 5 s back-off {again * 1000:.0f} ms",
    )


def main() -> int:
    url = sys.argv[1]
    engine, keys = prepared(url)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        server = ServerProcess.serve(url, tmp / "server.log").start()
        try:
            with httpx.Client(base_url=server.url, timeout=30) as c:
                api_items(c, keys)
            wire_items(server.port)
            off_loop_item(server.url, keys["submit"])
        finally:
            server.stop()
        hung_redis_item(url, tmp)
    engine.dispose()
    print(f"{len(BAD)} BAD: {BAD}" if BAD else "all OK")
    return len(BAD)


if __name__ == "__main__":
    sys.exit(main())
