"""PostgreSQL frozen under load with the *production default* timeouts (issue 26): how long a
request waits for its 503, and what the first requests after the thaw get.

    python benchmarks/frozen_database.py              # freeze 15 s
    python benchmarks/frozen_database.py --freeze-s 30

A private throwaway cluster (``tests.faults.cluster``: initdb/pg_ctl, never a shared server; needs
the PostgreSQL server binaries, and root to run them as ``postgres``), one ``gpu-advisor serve``
with its default database timeouts (rate limits off: one client sends everything), two reader
loops, one writer loop and a /readyz probe; every process of the cluster is SIGSTOPped for the
freeze. tests/faults/test_postgres_outage.py asserts the behaviour with 2 s timeouts; this prints
the figures a deployment with the defaults sees (connect 3 s, statement 5 s + 2 s client grace,
pool 3 s, /readyz 2 s)."""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.db.servers import ServerProcess  # noqa: E402
from tests.faults.cluster import PrivateCluster  # noqa: E402
from tests.faults.conftest import Seen, auth, new_pg_database, prepared, small_run, timed, wait_ready  # noqa: E402

READ = "/v1/benchmark-results?limit=5"


async def load(server: ServerProcess, cluster: PrivateCluster, key: str, freeze_s: float) -> None:
    seen, stop = Seen(), asyncio.Event()
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:

        async def reads() -> None:
            while not stop.is_set():
                await timed(c, seen, "read", "GET", READ)
                await asyncio.sleep(0.05)

        async def writes() -> None:
            while not stop.is_set():
                await timed(
                    c, seen, "write", "POST", "/v1/benchmark-runs", json=small_run(), headers=auth(key)
                )
                await asyncio.sleep(0.1)

        async def ready() -> None:
            while not stop.is_set():
                await timed(c, seen, "readyz", "GET", "/readyz")
                await asyncio.sleep(0.5)

        tasks = [asyncio.create_task(f()) for f in (reads, reads, writes, ready)]
        await asyncio.sleep(1)
        cluster.freeze()
        await asyncio.sleep(freeze_s)
        cluster.thaw()
        stop.set()
        await asyncio.gather(*tasks)
        t = time.monotonic()
        after = [(await c.get(READ)).status_code]
        after.append((await c.post("/v1/benchmark-runs", json=small_run(), headers=auth(key))).status_code)
        after_s = time.monotonic() - t
    print(f"PostgreSQL frozen {freeze_s:g} s under load, default timeouts:")
    for what in ("read", "write", "readyz"):
        print(f"  {what:6s} answers {seen.statuses(what)}, slowest {seen.slowest(what):.2f} s")
    print(f"  500s or no answer: {len(seen.unanswered_or_500())}")
    print(f"  after the thaw: {after} in {after_s:.2f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--freeze-s", type=float, default=15.0)
    args = ap.parse_args()
    cluster = PrivateCluster().init()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            url = new_pg_database(cluster)
            engine, keys = prepared(url)
            server = ServerProcess.serve(
                url, Path(tmp) / "server.log", env={"GPU_ADVISOR_RATE_LIMITS_ENABLED": "false"}
            ).start()
            try:
                wait_ready(server)
                asyncio.run(load(server, cluster, keys["submit"], args.freeze_s))
            finally:
                server.stop()
                engine.dispose()
            unhandled = "unhandled error" in Path(server.log_path).read_text()
            print(f"  unhandled errors in the server log: {unhandled}")
            return 1 if unhandled else 0
    finally:
        cluster.destroy()


if __name__ == "__main__":
    sys.exit(main())
