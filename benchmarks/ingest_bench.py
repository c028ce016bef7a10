"""Ingestion throughput of ``POST /v1/benchmark-runs`` (issue 3, item 7: >= 5,000 results/s).

What it does:

1. creates a fresh PostgreSQL database, runs the migrations and the catalog seed, creates a
   ``submit`` key;
2. builds realistic 1,000-result runs for an H200 (PCI 0x2335, 143,771 MiB -- resolved through
   the shipped catalog, so every check is on: vocabulary, catalog peak and usable memory, the
   MAD test over each touched cell): one configuration grid (GEMM, copy bandwidth, ResNet-50,
   BERT-Large, LLM training and inference at several precisions and batch sizes), re-measured
   by several hosts with ~1.5% noise, a few outliers and a few above-peak GEMMs; bodies are
   encoded before the clock starts;
3. starts uvicorn on that database and submits the runs from ``--concurrency`` client threads,
   timing each request; prints results/s over the wall time and p50/p99 per request;
4. checks that every acknowledged result is individually queryable
   (``GET /v1/benchmark-results/{id}``: right run, right position);
5. for context, ``COPY``s the very same stored rows into an empty copy of the table.

Usage: ``python benchmarks/ingest_bench.py [--pg URL] [--runs 30] [--results 1000]
[--concurrency 2] [--workers 1] [--verify all|sample] [--keep]``
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from service.bootstrap import bootstrap  # noqa: E402
from service.core.catalog.vocabulary import SUITE_VERSION, suite_definition_hash  # noqa: E402
from service.db.engine import make_engine, make_session_factory  # noqa: E402
from service.db.uow import UnitOfWork  # noqa: E402
from service.settings import Settings  # noqa: E402
from service.usecases.keys import create_key  # noqa: E402

TARGET_RESULTS_PER_S = 5000.0
H200_PCI = "0x2335"
H200_MEMORY = 143_771 * 2**20
GIB = 2**30


# ---- payloads ------------------------------------------------------------------------------------


def configuration_grid(n: int) -> list[tuple[str, dict[str, Any], str, str, float]]:
    """``n`` distinct (workload, parameters, metric, unit, typical value) on an H200."""
    grid: list[tuple[str, dict[str, Any], str, str, float]] = []
    peaks = {"fp32": 51.0, "tf32": 380.0, "bf16": 720.0, "fp16": 730.0, "fp8": 1250.0}
    for p, v in peaks.items():
        for side in (2048, 4096, 8192, 16384):
            grid.append(("gemm", {"precision": p, "n": side}, "tflops", "TFLOP/s", v * (0.6 + side / 40960)))
    for mib in (256, 1024, 4096, 16384):
        grid.append(("memory-bandwidth", {"buffer_bytes": mib * 2**20}, "bandwidth_gb_per_s", "GB/s", 4100.0))
    precisions = ["fp32", "tf32", "amp_fp16", "amp_bf16", "fp16", "bf16"]
    for wl, unit, base in (("resnet50-train", "images/s", 3000.0), ("resnet50-infer", "images/s", 12000.0)):
        for p in precisions:
            for bs in range(1, 129):
                for cl in (True, False):
                    grid.append(
                        (
                            wl,
                            {"precision": p, "batch_size": bs, "channels_last": cl},
                            "throughput",
                            unit,
                            base * min(1.0, bs / 64) * (0.4 if p == "fp32" else 1.0),
                        )
                    )
    for p in precisions:
        for bs in (1, 2, 4, 8, 16, 32):
            for seq in (128, 256, 384, 512):
                grid.append(
                    (
                        "bert-large-train",
                        {"precision": p, "batch_size": bs, "seq_len": seq},
                        "throughput",
                        "samples/s",
                        400.0 * bs / (bs + 4) * 512 / seq,
                    )
                )
    for model in ("llama3-8b", "qwen2.5-7b", "llama2-13b"):
        for p in ("amp_bf16", "bf16"):
            for bs in (1, 2, 4, 8):
                for seq in (512, 1024, 2048, 4096):
                    for ft in ("full", "lora"):
                        grid.append(
                            (
                                "llm-train",
                                {
                                    "model": model,
                                    "precision": p,
                                    "batch_size": bs,
                                    "seq_len": seq,
                                    "finetune": ft,
                                },
                                "throughput",
                                "tokens/s",
                                9000.0,
                            )
                        )
    out = grid[:n]
    if len(out) < n:
        raise SystemExit(f"the configuration grid has only {len(grid)} entries")
    return out


def fingerprint(host: str) -> dict[str, Any]:
    return {
        "suite_version": SUITE_VERSION,
        "workload_definition_hash": suite_definition_hash(),
        "driver_version": "550.127.08",
        "cuda_version": "12.4",
        "torch_version": "2.5.1+cu124",
        "attention_backend": "flash",
        "tf32_matmul": False,
        "tf32_cudnn": False,
        "torch_compile": False,
        "ecc_mode": "enabled",
        "mig_mode": "disabled",
        "pci_device_id": H200_PCI,
        "host_id": f"mid-{host}",
        "cudnn_version": "90100",
        "nccl_version": "2.21.5",
        "transformers_version": "4.46.3",
        "engine_versions": None,
        "power_limit_w": 700,
        "app_clock_sm_mhz": 1980,
        "app_clock_mem_mhz": 3201,
        "pcie_gen": 5,
        "pcie_width": 16,
        "container_image_digest": None,
        "nccl_nvls_enable": None,
    }


def make_runs(count: int, size: int, hosts: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    grid = configuration_grid(size)
    tag = uuid.uuid4().hex[:8]
    runs = []
    for i in range(count):
        host = f"h200-node-{i % hosts}"
        results = []
        for wl, params, metric, unit, typical in grid:
            value = typical * rng.gauss(1.0, 0.015)
            u = rng.random()
            if u < 0.003:
                value *= 0.5  # a throttled measurement: an outlier once the cell has data
            elif wl == "gemm" and params["precision"] == "bf16" and u < 0.02:
                value = 1100.0  # above the 989.5 TFLOP/s dense peak
            results.append(
                {
                    "workload": wl,
                    "parameters": params,
                    "status": "ok",
                    "metrics": {
                        metric: {"value": round(value, 3), "unit": unit},
                        "step_time_s": {"value": round(rng.uniform(0.01, 0.5), 5), "unit": "s"},
                    },
                    "peak_allocated_bytes": int(rng.uniform(1, 60) * GIB),
                    "peak_reserved_bytes": int(rng.uniform(60, 70) * GIB),
                    "nvml_used_bytes": int(rng.uniform(70, 80) * GIB),
                    "repeats": 20,
                }
            )
        runs.append(
            {
                "run_id": f"bench-{tag}-{i:05d}",
                "suite_version": SUITE_VERSION,
                "host": host,
                "gpu": {
                    "name": "NVIDIA H200",
                    "pci_device_id": "0x233510DE",
                    "memory_total_bytes": H200_MEMORY,
                },
                "gpu_count": 8,
                "fingerprint": fingerprint(host),
                "results": results,
            }
        )
    return runs


# ---- database and server ---------------------------------------------------------------------------------


def psycopg_url(url: str) -> str:
    u = make_url(url)
    return u.set(drivername="postgresql").render_as_string(hide_password=False)


def create_database(admin_url: str) -> tuple[str, str]:
    name = f"gpua_ingest_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(psycopg_url(admin_url), autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    url = make_url(admin_url).set(drivername="postgresql+psycopg", database=name)
    return name, url.render_as_string(hide_password=False)


def drop_database(admin_url: str, name: str) -> None:
    with psycopg.connect(psycopg_url(admin_url), autocommit=True) as c:
        c.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
        c.execute(f'DROP DATABASE IF EXISTS "{name}"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(url: str, port: int, workers: int) -> subprocess.Popen[bytes]:
    # ingestion throughput, not rate limits: one key submits as fast as the server takes it
    env = {
        **os.environ,
        "GPU_ADVISOR_DATABASE_URL": url,
        "GPU_ADVISOR_SEED_MEASUREMENTS_DIR": "",
        "GPU_ADVISOR_RATE_LIMITS_ENABLED": "false",
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "service.api.asgi:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        cwd=ROOT,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        if proc.poll() is not None:
            raise SystemExit(f"uvicorn exited with {proc.returncode}")
        time.sleep(0.1)
    raise SystemExit("uvicorn did not come up")


# ---- the measurement -----------------------------------------------------------------------------------


def submit_all(
    port: int, key: str, bodies: list[bytes], concurrency: int
) -> tuple[float, list[float], list[dict[str, Any]]]:
    latencies: list[float] = []
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()
    queue = list(enumerate(bodies))
    qlock = threading.Lock()

    def worker() -> None:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            timeout=120.0,
            headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
        ) as http:
            while True:
                with qlock:
                    if not queue:
                        return
                    _, body = queue.pop(0)
                t0 = time.perf_counter()
                r = http.post("/v1/benchmark-runs", content=body)
                dt_s = time.perf_counter() - t0
                if r.status_code != 201:
                    raise SystemExit(f"submission failed: {r.status_code} {r.text[:500]}")
                with lock:
                    latencies.append(dt_s)
                    answers.append(r.json())

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, latencies, answers


def verify_listing(port: int, answers: list[dict[str, Any]]) -> int:
    """Each run's results through the listing (``?run_id=``, cursor pages): exactly the
    acknowledged ids."""
    n = 0
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60.0) as http:
        for a in answers:
            want = {o["result_id"] for o in a["results"]}
            got: set[int] = set()
            cursor = None
            while True:
                params: dict[str, Any] = {"run_id": a["run_id"], "limit": 500}
                if cursor:
                    params["cursor"] = cursor
                page = http.get("/v1/benchmark-results", params=params).json()
                got.update(x["id"] for x in page["items"])
                cursor = page["next_cursor"]
                if not cursor:
                    break
            if got != want:
                raise SystemExit(
                    f"run {a['run_id']}: listing has {len(got)} results, acknowledged {len(want)}"
                )
            n += len(got)
    return n


def verify(port: int, answers: list[dict[str, Any]], mode: str, threads: int) -> tuple[int, float]:
    """Every acknowledged result fetched by id: right run and position."""
    todo = [(a["run_id"], o["index"], o["result_id"]) for a in answers for o in a["results"]]
    if mode == "sample":
        todo = random.Random(1).sample(todo, min(2000, len(todo)))
    chunks = [todo[i::threads] for i in range(threads)]

    def check(chunk: list[tuple[str, int, int]]) -> int:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60.0) as http:
            for run_id, index, rid in chunk:
                r = http.get(f"/v1/benchmark-results/{rid}")
                d = r.json()
                if r.status_code != 200 or d["run_id"] != run_id or d["position"] != index:
                    raise SystemExit(
                        f"result {rid} of {run_id}[{index}] is not queryable: {r.status_code} {r.text[:300]}"
                    )
        return len(chunk)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as ex:
        n = sum(ex.map(check, chunks))
    return n, time.perf_counter() - t0


def copy_context(url: str) -> tuple[int, float]:
    """COPY the stored rows into an empty twin of the table (indexes included)."""
    with psycopg.connect(psycopg_url(url)) as c:
        buf = io.BytesIO()
        with c.cursor() as cur:
            with cur.copy("COPY benchmark_results TO STDOUT") as cp:
                for chunk in cp:
                    buf.write(chunk)
            n = cur.execute("SELECT count(*) FROM benchmark_results").fetchone()[0]  # type: ignore[index]
            cur.execute(
                "CREATE TABLE copy_bench (LIKE benchmark_results INCLUDING DEFAULTS INCLUDING INDEXES)"
            )
        c.commit()
        data = buf.getvalue()
        t0 = time.perf_counter()
        with c.cursor() as cur, cur.copy("COPY copy_bench FROM STDIN") as cp:
            for i in range(0, len(data), 1 << 20):
                cp.write(data[i : i + (1 << 20)])
        c.commit()
        return int(n), time.perf_counter() - t0


def pct(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ingestion throughput of POST /v1/benchmark-runs on PostgreSQL")
    ap.add_argument(
        "--pg",
        default=os.environ.get("GPU_ADVISOR_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="admin URL of the PostgreSQL server (a fresh database is created and dropped)",
    )
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--results", type=int, default=1000)
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    ap.add_argument("--verify", choices=("all", "sample"), default="all")
    ap.add_argument("--keep", action="store_true", help="keep the database")
    args = ap.parse_args(argv)

    name, url = create_database(args.pg)
    proc: subprocess.Popen[bytes] | None = None
    try:
        engine = make_engine(url)
        bootstrap(engine, Settings(database_url=url, seed_measurements_dir=None))
        with UnitOfWork(make_session_factory(engine)) as uow:
            key = create_key(uow, name="ingest-bench", scope="submit").secret
        engine.dispose()
        runs = make_runs(args.runs + 1, args.results, args.hosts, seed=7)
        bodies = [json.dumps(r, separators=(",", ":")).encode() for r in runs]
        port = free_port()
        proc = start_server(url, port, args.workers)
        warm_s, _, warm = submit_all(port, key, bodies[:1], 1)  # imports, caches, first fingerprint
        if warm[0]["gpu_slug"] != "nvidia-h200-sxm":
            raise SystemExit(f"the H200 did not resolve through the catalog: {warm[0]['gpu_slug']}")
        wall, lat, answers = submit_all(port, key, bodies[1:], args.concurrency)
        results = sum(a["result_count"] for a in answers)
        quarantined = sum(a["quarantined_count"] for a in answers)
        listed = verify_listing(port, warm + answers)
        n_checked, verify_s = verify(port, warm + answers, args.verify, threads=4)
        copied, copy_s = copy_context(url)

        rate = results / wall
        print(
            f"ingest: {len(answers)} runs x {args.results} results, {args.concurrency} concurrent clients, "
            f"uvicorn --workers {args.workers}, PostgreSQL, every check on"
        )
        print(
            f"  {results} results in {wall:.2f} s = {rate:,.0f} results/s "
            f"(target >= {TARGET_RESULTS_PER_S:,.0f}: {'met' if rate >= TARGET_RESULTS_PER_S else 'NOT met'})"
        )
        print(
            f"  per request (1,000 results): p50 {pct(lat, 0.5) * 1000:.0f} ms, p99 {pct(lat, 0.99) * 1000:.0f} ms, "
            f"mean {statistics.fmean(lat) * 1000:.0f} ms; first (cold) request {warm_s * 1000:.0f} ms"
        )
        print(f"  quarantined on the way in: {quarantined} ({quarantined / results:.2%})")
        print(
            f"  verified: all {listed} results listed under their runs; {n_checked} fetched one by one by id "
            f"({args.verify}) in {verify_s:.1f} s"
        )
        print(
            f"context: plain COPY of the same {copied} stored rows into an empty twin table: "
            f"{copy_s:.2f} s = {copied / copy_s:,.0f} rows/s"
        )
        return 0 if rate >= TARGET_RESULTS_PER_S else 1
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not args.keep:
            drop_database(args.pg, name)
        else:
            print(f"kept database {name}")


if __name__ == "__main__":
    raise SystemExit(main())
