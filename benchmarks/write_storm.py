"""Write storms against a real server (issue 26): reads while 60 writes with made-up keys, and
while 200 valid submissions, arrive at once; printed as absolute figures and as ratios to a
trivial endpoint (/healthz) read in the same run, since this shared machine is noisy.

    python benchmarks/write_storm.py                                            # SQLite
    python benchmarks/write_storm.py --postgres postgresql://postgres@127.0.0.1:5432/test

The server runs with production settings (start-up warm-up included), rate limits off (one
client sends everything). Reads are made by a process of their own, back to back, so the load
generator's event loop does not slow their clock. tests/faults/test_write_storm.py asserts the
targets (all 401 within 2 s, no 500, each submission stored once, reads p99 <= 100 ms)."""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy import text

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from service.bootstrap import bootstrap  # noqa: E402
from service.core.catalog.vocabulary import SUITE_VERSION, suite_definition_hash  # noqa: E402
from service.db.engine import make_engine, make_session_factory  # noqa: E402
from service.db.uow import UnitOfWork  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.usecases.keys import create_key  # noqa: E402

READER = """
import sys, time, httpx, pathlib
url, path, out, stop = sys.argv[1:5]
rows = []
with httpx.Client(base_url=url, timeout=60) as c:
    c.get(path)
    pathlib.Path(out + ".ready").write_text("1")
    while not pathlib.Path(stop).exists():
        t = time.monotonic(); s = c.get(path).status_code
        rows.append(f"{time.monotonic() - t:.6f} {s}"); time.sleep(0.005)
pathlib.Path(out).write_text("\\n".join(rows))
"""


def _run(host_id: str, run_id: str | None = None) -> dict[str, Any]:
    fp = {
        "suite_version": SUITE_VERSION,
        "workload_definition_hash": suite_definition_hash(),
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "torch_version": "2.5.1",
        "attention_backend": "flash",
        "tf32_matmul": False,
        "tf32_cudnn": False,
        "torch_compile": False,
        "ecc_mode": "enabled",
        "mig_mode": "disabled",
        "pci_device_id": "0x2335",
        "host_id": host_id,
        **dict.fromkeys(
            (
                "cudnn_version",
                "nccl_version",
                "transformers_version",
                "engine_versions",
                "power_limit_w",
                "app_clock_sm_mhz",
                "app_clock_mem_mhz",
                "pcie_gen",
                "pcie_width",
                "container_image_digest",
                "nccl_nvls_enable",
            )
        ),
    }
    result = {
        "workload": "resnet50-train",
        "parameters": {"precision": "amp_bf16", "batch_size": 64},
        "status": "ok",
        "metrics": {"throughput": {"value": 2500.0, "unit": "images/s"}},
    }
    return {
        "run_id": run_id or f"storm-{uuid.uuid4().hex}",
        "suite_version": SUITE_VERSION,
        "host": "storm-host",
        "gpu": {"name": "NVIDIA H200", "pci_device_id": "0x2335", "memory_total_bytes": 143_771 * 2**20},
        "gpu_count": 1,
        "fingerprint": fp,
        "results": [result],
    }


class Reads:
    """Reads of ``path`` by a process of its own while the block runs."""

    def __init__(self, url: str, path: str, tmp: Path) -> None:
        self.out, self.stop = tmp / f"r-{uuid.uuid4().hex}", tmp / f"s-{uuid.uuid4().hex}"
        self.argv = [sys.executable, "-c", READER, url, path, str(self.out), str(self.stop)]
        self.times: list[float] = []

    def __enter__(self) -> Reads:
        self.proc = subprocess.Popen(self.argv)
        while not Path(str(self.out) + ".ready").exists():
            time.sleep(0.02)
        time.sleep(0.3)
        return self

    def __exit__(self, *exc: object) -> None:
        time.sleep(0.3)
        self.stop.write_text("1")
        self.proc.wait(60)
        rows = [line.split() for line in self.out.read_text().splitlines() if line]
        self.times = sorted(float(t) for t, _s in rows)

    def p(self, q: float) -> float:
        return self.times[min(len(self.times) - 1, int(q * len(self.times)))] * 1000


async def _burst(url: str, bodies: list[dict[str, Any]], keys: list[str]) -> tuple[list[int], float]:
    limits = httpx.Limits(max_connections=300, max_keepalive_connections=300)
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as c:

        async def one(body: dict[str, Any], key: str) -> int:
            for _ in range(20):
                r = await c.post("/v1/benchmark-runs", json=body, headers={"Authorization": f"Bearer {key}"})
                if r.status_code not in (503, 429):
                    return r.status_code
                await asyncio.sleep(float(r.headers.get("retry-after", "1")))
            return -1

        t0 = time.monotonic()
        statuses = await asyncio.gather(*(one(b, k) for b, k in zip(bodies, keys, strict=True)))
        return list(statuses), time.monotonic() - t0


def _database(args: argparse.Namespace, tmp: Path) -> str:
    if not args.postgres:
        return f"sqlite:///{tmp / 'storm.db'}"
    name = f"storm_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.postgres, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return args.postgres.rsplit("/", 1)[0] + f"/{name}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--postgres", help="a PostgreSQL URL: a fresh database is made there")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        url = _database(args, tmp)
        engine = make_engine(url)
        bootstrap(engine, Settings(database_url=url, seed_measurements_dir=None))
        with UnitOfWork(make_session_factory(engine)) as uow:
            key = create_key(uow, name=f"storm-{uuid.uuid4().hex[:6]}", scope="submit").secret
        port = 18000 + secrets.randbelow(2000)
        env = {
            **os.environ,
            "GPU_ADVISOR_DATABASE_URL": url,
            "GPU_ADVISOR_RATE_LIMITS_ENABLED": "false",
            "GPU_ADVISOR_LOG_LEVEL": "warning",
        }
        argv = [sys.executable, "-m", "service.cli", "serve", "--no-migrate", "--port", str(port)]
        server = subprocess.Popen(argv, cwd=REPO, env=env, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}"
        try:
            while True:
                try:
                    if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                time.sleep(0.2)
            report(base, key, tmp, engine)
        finally:
            server.terminate()
            server.wait(30)
            engine.dispose()
            if args.postgres:
                with psycopg.connect(args.postgres, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}"')
    return 0


def report(base: str, key: str, tmp: Path, engine: Any) -> None:
    quiet: dict[str, Reads] = {}
    for path in ("/healthz", "/v1/gpus/nvidia-l40"):
        with Reads(base, path, tmp) as quiet[path]:
            time.sleep(3)
        r = quiet[path]
        print(f"quiet {path}: p50 {r.p(0.5):.1f} ms, p99 {r.p(0.99):.1f} ms ({len(r.times)} reads)")
    baseline = quiet["/healthz"].p(0.5)
    made_up = [f"gpa_{secrets.token_hex(4)}_{secrets.token_urlsafe(32)}" for _ in range(60)]
    with Reads(base, "/v1/gpus/nvidia-l40", tmp) as reads:
        statuses, wall = asyncio.run(_burst(base, [_run("mid-x") for _ in range(60)], made_up))
    print(
        f"60 writes with made-up keys: {dict(sorted((s, statuses.count(s)) for s in set(statuses)))} in {wall:.2f} s; "
        f"GPU reads meanwhile p50 {reads.p(0.5):.1f} ms, p99 {reads.p(0.99):.1f} ms "
        f"(p99 = {reads.p(0.99) / baseline:.1f}x the quiet /healthz p50)"
    )
    ids = [f"storm-{uuid.uuid4().hex}" for _ in range(200)]
    with Reads(base, "/v1/gpus/nvidia-l40", tmp) as reads:
        statuses, wall = asyncio.run(_burst(base, [_run("mid-y", i) for i in ids], [key] * 200))
    with engine.connect() as conn:
        stored = conn.execute(
            text("SELECT run_id FROM benchmark_runs WHERE run_id LIKE :p"), {"p": "storm-%"}
        ).all()
    once = sum(1 for (r,) in stored if r in set(ids)) == 200 == len({r for (r,) in stored} & set(ids))
    print(
        f"200 valid submissions: {dict(sorted((s, statuses.count(s)) for s in set(statuses)))} in {wall:.1f} s, "
        f"each stored once: {once}; GPU reads meanwhile p50 {reads.p(0.5):.1f} ms, p99 {reads.p(0.99):.1f} ms "
        f"(p99 = {reads.p(0.99) / baseline:.1f}x the quiet /healthz p50)"
    )


if __name__ == "__main__":
    sys.exit(main())
