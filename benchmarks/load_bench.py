"""Read-path load benchmark (issue 10): /healthz, catalog GETs, POST /v1/estimate and the
measurements view, in ONE run per database, each also as a ratio to /healthz measured in the
same run (this shared machine is noisy); then estimates under load while 20 benchmark runs are
submitted.

What it does, per database (SQLite file and/or PostgreSQL):

1. creates a fresh database, runs ``gpu-advisor migrate`` (migrations + the shipped catalog +
   the committed H200 measurements), creates a submit key;
2. stores ``--results`` (default 100,000) results in ONE cell -- a bf16 GEMM on the H200, two
   hosts, one stack -- through ``POST /v1/benchmark-runs`` (10,000 per run);
3. starts ``gpu-advisor serve`` (one uvicorn worker, rate limits off, warnings-only logs) and
   warms it up (the first estimate fits the calibrations);
4. drives it with ``wrk`` (Debian package ``wrk``; 2 threads, ``--connections`` 4, loopback),
   one phase per endpoint, with varied requests generated into a Lua script: GPU idents
   (slugs, nvidia-smi names, GFD labels, PCI ids), estimate bodies (models, GPUs, modes,
   batch and sequence), measurement views (workload filters, the 100k-result cell among them);
5. runs the estimate phase again while a thread submits 20 runs (100 results each, new cells
   and the hot cell), and reports the estimate latencies of that phase;
6. (issue 15) ``POST /v1/recommend`` with the issue's scenario bodies, their fields randomised
   (sizes, rates, targets, objectives, ``Accept-Language``) and a per-request random figure
   (tokens to train, a length dispersion) so that every request is a new question and stores
   a new answer: storing included.

Prints req/s, p50, p99 and max per phase and the ratios to /healthz, and checks the issue's
targets: catalog GET >= 50 % of /healthz and p99 <= 25 ms; estimate >= 25 % and p99 <= 50 ms;
during submissions estimate p99 <= 50 ms and max <= 100 ms; measurements view p99 <= 50 ms;
recommend unloaded p50 <= 20 ms and p99 <= 50 ms (issue 15); with 4 clients >= 80 req/s and
p99 <= 100 ms (issue 24; also >= 0.8x the req/s before a search change, on the same machine). ``--only-recommend`` skips
phases 2 (with ``--results 0``), 4 and 5 but for /healthz.

Usage: ``python benchmarks/load_bench.py [--db sqlite|postgresql|both] [--pg URL]
[--duration 15] [--connections 4] [--results 100000]``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from service.core.catalog.vocabulary import SUITE_VERSION, suite_definition_hash  # noqa: E402

H200 = {"pci": "0x2335", "memory": 143_771 * 2**20, "name": "NVIDIA H200"}
GPU_IDENTS = [
    "nvidia-h200-sxm",
    "NVIDIA H200",
    "nvidia-h100-sxm",
    "NVIDIA-H100-80GB-HBM3",
    "0x2330",
    "L40",
    "l40s",
    "L20",
    "nvidia-a100-sxm4-80gb",
    "A100-80GB?on_ambiguous=default",
    "nvidia-l4",
    "NVIDIA-L4",
    "rtx-4090",
    "nvidia-a10g",
    "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb",
    "mi300x",
    "nvidia-b200",
    "0x26b5",
    "nvidia-rtx-6000-ada",
    "gh200",
]
MODELS = [
    "llama3-8b",
    "mistral-7b",
    "llama2-13b",
    "gt-llama-350m",
    "gt-llama-1b-v32k",
    "qwen2.5-7b",
    "llama2-70b",
]
GPUS = [
    "nvidia-h200-sxm",
    "nvidia-h100-sxm",
    "nvidia-a100-sxm4-80gb",
    "nvidia-l40s",
    "nvidia-l40",
    "nvidia-l4",
    "nvidia-a10g",
    "nvidia-l20",
    "NVIDIA H200",
    "L40S",
]
WORKLOAD_FILTERS = [
    "",
    "?workload=gemm",
    "?workload=llm-train",
    "?workload=gemm&param.precision=bf16",
    "?workload=llm-infer",
    "?workload=resnet50-train",
]
TARGETS = {
    "catalog_ratio": 0.50,
    "catalog_p99_ms": 25.0,
    "estimate_ratio": 0.25,
    "estimate_p99_ms": 50.0,
    "submit_estimate_p99_ms": 50.0,
    "submit_estimate_max_ms": 100.0,
    "measurements_p99_ms": 50.0,
    "recommend_p50_ms": 20.0,
    "recommend_p99_ms": 50.0,
    "recommend_rps": 80.0,  # issue 24 (was 50, issue 15)
    "recommend_loaded_p99_ms": 100.0,  # issue 24: 4 clients
}
NONCE = "%%RND%%"
"""Replaced by a random integer per request in the wrk script: every recommend body is new."""


# ---- requests ------------------------------------------------------------------------------------


def estimate_bodies(n: int, rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    while len(out) < n:
        mode = rng.choice(["training", "training", "fine-tuning", "inference"])
        body: dict[str, Any] = {"model": rng.choice(MODELS), "gpu": rng.choice(GPUS), "mode": mode}
        if mode == "inference":
            body.update(
                batch_size=rng.choice([1, 4, 16, 32]),
                input_len=rng.choice([512, 1024, 2048, 4096]),
                output_len=rng.choice([128, 256, 512]),
            )
        else:
            body.update(
                batch_size=rng.choice([1, 2, 4, 8]),
                seq_len=rng.choice([512, 1024, 2048, 4096]),
                gradient_checkpointing=rng.random() < 0.4,
                gpu_count=rng.choice([1, 1, 2, 8]),
            )
            if body["gpu_count"] > 1:
                body["sharding"] = rng.choice(["ddp", "fsdp"])
        out.append(body)
    return out


def recommend_bodies(n: int, rng: random.Random) -> list[tuple[dict[str, Any], str | None]]:
    """The issue's scenarios (tests/api/test_recommend.py), fields randomised; each body carries
    :data:`NONCE` in a figure that changes the question, not its cost (tokens to train, a
    prompt-length dispersion), and some ask for Chinese."""

    def training() -> dict[str, Any]:
        kind = rng.choice(["13b-full", "7b-lora", "8b-capped", "8b-node"])
        if kind == "13b-full":
            w = {
                "model": "meta-llama/Llama-2-13b-hf",
                "precision": "amp_bf16",
                "batch_size": rng.choice([2, 4, 8]),
                "seq_len": rng.choice([1024, 2048, 4096]),
            }
            c: dict[str, Any] = {"max_gpus": rng.choice([2, 4, 8])}
        elif kind == "7b-lora":
            w = {
                "model": "meta-llama/Llama-2-7b-hf",
                "mode": "fine-tuning",
                "finetune": "lora",
                "precision": "bf16",
                "batch_size": rng.choice([1, 2, 4, 8]),
                "seq_len": rng.choice([1024, 2048, 4096]),
            }
            c = {"max_gpus": 1, "allow_gradient_checkpointing": rng.random() < 0.8}
        elif kind == "8b-capped":
            w = {
                "model": "llama3-8b",
                "mode": "fine-tuning",
                "batch_size": rng.choice([1, 2, 4]),
                "seq_len": 2048,
            }
            c = {
                "max_power_w_per_gpu": rng.choice([300, 350, 400]),
                "form_factors": ["pcie"],
                "max_gpus": rng.choice([1, 2, 4]),
            }
        else:
            w = {
                "model": rng.choice(["llama3-8b", "mistral-7b", "qwen2.5-7b"]),
                "batch_size": rng.choice([1, 2, 4]),
                "seq_len": rng.choice([1024, 2048]),
            }
            c = {"max_gpus": 8}
        w["tokens"] = NONCE + "000"
        return {"workload": w, "constraints": c}

    def serving() -> dict[str, Any]:
        kind = rng.choice(["70b-4k", "7b-chat", "qwen72", "l40-inventory"])
        cv = f"0.{NONCE}"
        if kind == "70b-4k":
            w = {
                "model": "meta-llama/Llama-2-70b-hf",
                "mode": "inference",
                "precision": "bf16",
                "input_len": rng.choice([1792, 3840]),
                "output_len": 256,
                "batch_size": rng.choice([1, 4, 8, 16]),
            }
            c: dict[str, Any] = {"max_gpus": rng.choice([1, 8])}
            return {
                "workload": w,
                "constraints": c,
                "limit": 5 + rng.randrange(3),
                "objective": "fastest",
                "cost": {"utilisation": NONCE.join(["0.", ""])},
            }
        if kind == "7b-chat":
            w = {
                "model": "meta-llama/Llama-2-7b-hf",
                "mode": "inference",
                "engine": "vllm",
                "input_len": 512,
                "output_len": 256,
                "requests_per_s": rng.choice([1, 2, 4, 8]),
                "tpot_target_ms": rng.choice([20, 30, 50]),
                "input_len_cv": cv,
            }
            c = {"max_gpus": 1, "vendors": ["nvidia"]}
        elif kind == "qwen72":
            w = {
                "model": "Qwen/Qwen2.5-72B-Instruct",
                "mode": "inference",
                "engine": "vllm",
                "input_len": 1024,
                "input_len_cv": cv,
                "output_len": 256,
                "output_len_cv": 0.8,
                "requests_per_s": rng.choice([5, 10, 20, 30]),
                "ttft_target_ms": 1000,
                "tpot_target_ms": 50,
            }
            c = {"allowed_gpus": ["H100 SXM", "nvidia-h200-sxm", "nvidia-a100-sxm4-80gb"], "max_gpus": 64}
        else:
            w = {
                "model": rng.choice(["llama3-8b", "meta-llama/Llama-2-70b-hf"]),
                "mode": "inference",
                "engine": "vllm",
                "input_len": 1024,
                "output_len": 256,
                "requests_per_s": rng.choice([1, 2, 4]),
                "input_len_cv": cv,
            }
            c = {"inventory": [{"gpu": "L40", "gpus_per_node": 1, "nodes": 8}], "max_gpus": 8}
        return {"workload": w, "constraints": c}

    out: list[tuple[dict[str, Any], str | None]] = []
    while len(out) < n:
        body = training() if rng.random() < 0.5 else serving()
        body.setdefault("objective", rng.choice(["fastest", "fastest", "perf_per_watt"]))
        out.append((body, "zh-CN" if rng.random() < 0.25 else None))
    return out


def recommend_requests(
    bodies: Sequence[tuple[dict[str, Any], str | None]],
) -> list[tuple[str, str, str | None, dict[str, str]]]:
    """(method, path, body, headers) with the nonce left for the wrk script to fill (unquoted:
    it stands for a number)."""
    out = []
    for body, lang in bodies:
        text = json.dumps(body).replace(f'"{NONCE}000"', f"{NONCE}000").replace(f'"0.{NONCE}"', f"0.{NONCE}")
        out.append(("POST", "/v1/recommend", text, {"Accept-Language": lang} if lang else {}))
    return out


def lua_script(
    requests: Sequence[tuple[str, str, str | None] | tuple[str, str, str | None, dict[str, str]]],
) -> str:
    """A wrk script cycling through (method, path, body[, headers]) per thread, filling
    :data:`NONCE` with a random integer per request, and a done() that prints one JSON line of
    the figures."""
    rows = []
    for req in requests:
        method, path, body = req[0], req[1], req[2]
        extra = req[3] if len(req) > 3 else {}  # type: ignore[misc]
        b = "nil" if body is None else json.dumps(body)
        h = "{" + ", ".join(f"[{json.dumps(k)}] = {json.dumps(v)}" for k, v in extra.items()) + "}"
        rows.append(f"  {{{json.dumps(method)}, {json.dumps(path)}, {b}, {h}}},")
    return "\n".join(
        [
            "local reqs = {",
            *rows,
            "}",
            "local i = math.random(1, #reqs)",
            "math.randomseed(os.time() + math.floor(os.clock() * 1e6))",
            "request = function()",
            "  i = i % #reqs + 1",
            "  local r = reqs[i]",
            "  local headers = {}",
            "  for k, v in pairs(r[4]) do headers[k] = v end",
            "  local body = r[3]",
            "  if body ~= nil then",
            "    headers['Content-Type'] = 'application/json'",
            f"    body = string.gsub(body, '{NONCE.replace('%', '%%')}', function() return tostring(math.random(100000, 999999999)) end)",
            "  end",
            "  return wrk.format(r[1], r[2], headers, body)",
            "end",
            "done = function(summary, latency, requests)",
            "  local e = summary.errors",
            '  io.write(string.format(\'WRKJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,'
            '"max_us":%d,"errors":%d,"non2xx":%d}\\n\', summary.requests, summary.duration,'
            " latency:percentile(50), latency:percentile(99), latency.max,"
            " e.connect + e.read + e.write + e.timeout, e.status))",
            "end",
        ]
    )


def wrk(
    url: str, requests: Sequence[Any], *, duration: int, connections: int, workdir: Path
) -> dict[str, float]:
    script = workdir / f"wrk-{uuid.uuid4().hex[:8]}.lua"
    script.write_text(lua_script(requests))
    out = subprocess.run(
        [
            "wrk",
            "-t",
            str(min(2, connections)),
            "-c",
            str(connections),
            "-d",
            f"{duration}s",
            "--timeout",
            "10s",
            "-s",
            str(script),
            url,
        ],
        capture_output=True,
        text=True,
        timeout=duration + 60,
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk printed no figures:\n{out.stdout}\n{out.stderr}")
    d = json.loads(line.removeprefix("WRKJSON "))
    secs = d["duration_us"] / 1e6
    return {
        "rps": d["requests"] / secs,
        "p50_ms": d["p50_us"] / 1e3,
        "p99_ms": d["p99_us"] / 1e3,
        "max_ms": d["max_us"] / 1e3,
        "errors": d["errors"],
        "non2xx": d["non2xx"],
        "requests": d["requests"],
    }


# ---- runs -----------------------------------------------------------------------------------------


def fingerprint(host: str) -> dict[str, Any]:
    return {
        "suite_version": SUITE_VERSION,
        "workload_definition_hash": suite_definition_hash(),
        "driver_version": "580.159.04",
        "cuda_version": "13.0",
        "torch_version": "2.11.0+loadbench",
        "attention_backend": "flash",
        "tf32_matmul": False,
        "tf32_cudnn": False,
        "torch_compile": False,
        "ecc_mode": "enabled",
        "mig_mode": "disabled",
        "pci_device_id": H200["pci"],
        "host_id": f"mid-{host}",
        "cudnn_version": "91002",
        "nccl_version": "2.28.9",
        "transformers_version": "5.17.0",
        "engine_versions": None,
        "power_limit_w": 700,
        "app_clock_sm_mhz": 1980,
        "app_clock_mem_mhz": 3201,
        "pcie_gen": 5,
        "pcie_width": 16,
        "container_image_digest": None,
        "nccl_nvls_enable": None,
    }


def gemm_run(
    n: int, host: str, rng: random.Random, *, precision: str = "bf16", side: int = 8192
) -> dict[str, Any]:
    now = time.time()
    return {
        "run_id": f"load-{uuid.uuid4().hex}",
        "host": host,
        "suite_version": SUITE_VERSION,
        "gpu": {"name": H200["name"], "pci_device_id": H200["pci"], "memory_total_bytes": H200["memory"]},
        "gpu_count": 1,
        "fingerprint": fingerprint(host),
        "results": [
            {
                "workload": "gemm",
                "parameters": {"precision": precision, "n": side},
                "status": "ok",
                "metrics": {"tflops": {"value": 660.0 * (1 + rng.gauss(0, 0.01)), "unit": "TFLOP/s"}},
                "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now - (n - i) * 0.01)),
            }
            for i in range(n)
        ],
    }


# ---- server ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cli(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )
    if out.returncode != 0:
        raise RuntimeError(f"gpu-advisor {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    return out.stdout


def start_server(env: dict[str, str], port: int, workers: int = 1) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service.cli",
            "serve",
            "--no-migrate",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--workers",
            str(workers),
        ],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError("server did not come up")


def bench_database(
    name: str, url: str, args: argparse.Namespace, workdir: Path
) -> dict[str, dict[str, float]]:
    rng = random.Random(7)
    env = {
        **os.environ,
        "GPU_ADVISOR_DATABASE_URL": url,
        "GPU_ADVISOR_RATE_LIMITS_ENABLED": "false",
        "GPU_ADVISOR_LOG_LEVEL": "warning",
        "PYTHONUNBUFFERED": "1",
    }
    print(f"== {name}: migrate + catalog + committed measurements", flush=True)
    cli(env, "migrate")
    key = cli(env, "keys", "create", "--scope", "submit", "--name", "load-bench").strip().splitlines()[-1]
    port = free_port()
    proc = start_server(env, port, args.workers)
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {key}"}
    try:
        with httpx.Client(base_url=base, timeout=300, headers=headers) as c:
            t0 = time.time()
            per = 10_000
            stored = 0
            while stored < args.results:
                n = min(per, args.results - stored)
                r = c.post("/v1/benchmark-runs", json=gemm_run(n, f"load-host-{stored // per % 2}", rng))
                if r.status_code != 201:
                    raise RuntimeError(f"seeding failed: {r.status_code} {r.text[:500]}")
                stored += n
            print(f"   stored {stored:,} results in one cell in {time.time() - t0:.1f} s", flush=True)
            if stored:
                hot = c.get(
                    "/v1/gpus/nvidia-h200-sxm/measurements?workload=gemm&param.precision=bf16&param.n=8192"
                ).json()
                cell = next(x for x in hot["cells"] if x["parameters"].get("n") == 8192)
                print(
                    f"   the hot cell: {cell['count']} results in its window (N), chosen stack of "
                    f"{len(cell['other_fingerprints']) + 1} stack(s)",
                    flush=True,
                )
            # warm-up: the first estimate fits the calibrations
            bodies = estimate_bodies(300, rng)
            for b in bodies[:20]:
                c.post("/v1/estimate", json=b)
            for ident in GPU_IDENTS:
                c.get(f"/v1/gpus/{ident}")
            rec_reqs = recommend_requests(recommend_bodies(400, rng))
            for _m, path, text, hdrs in rec_reqs[:40]:
                assert text is not None
                body = text.replace(NONCE, str(rng.randrange(100000, 999999999)))
                r = c.post(path, content=body, headers={**hdrs, "Content-Type": "application/json"})
                if r.status_code != 200:
                    raise RuntimeError(f"recommend warm-up failed: {r.status_code} {r.text[:500]}")
        est_reqs = [("POST", "/v1/estimate", json.dumps(b)) for b in bodies]
        phases: dict[str, list[Any]] = {
            "healthz": [("GET", "/healthz", None)],
            "catalog GET /v1/gpus/{ident}": [
                ("GET", f"/v1/gpus/{quote(i, safe='?=')}", None) for i in GPU_IDENTS
            ],
            "POST /v1/estimate": est_reqs,
            "measurements view (100k-result cell)": [
                ("GET", f"/v1/gpus/{quote(g)}/measurements{f}", None)
                for g in ("nvidia-h200-sxm", "NVIDIA H200")
                for f in WORKLOAD_FILTERS
            ],
            "POST /v1/recommend (stored)": rec_reqs,
        }
        unloaded: dict[str, float] | None = None
        if args.only_recommend:
            phases = {k: v for k, v in phases.items() if k in ("healthz", "POST /v1/recommend (stored)")}
        results: dict[str, dict[str, float]] = {}
        for phase, reqs in phases.items():
            results[phase] = wrk(
                base, reqs, duration=args.duration, connections=args.connections, workdir=workdir
            )
            print(f"   {phase}: {results[phase]['rps']:.0f} req/s", flush=True)
        # unloaded: one client, one request at a time (the latency targets)
        unloaded = wrk(base, rec_reqs, duration=args.duration, connections=1, workdir=workdir)
        results["POST /v1/recommend (stored), 1 client"] = unloaded
        print(f"   POST /v1/recommend, 1 client: p50 {unloaded['p50_ms']:.1f} ms", flush=True)
        from sqlalchemy import create_engine, text

        eng = create_engine(
            url
            if not url.startswith("postgresql://")
            else url.replace("postgresql://", "postgresql+psycopg://", 1)
        )
        with eng.connect() as conn:
            n_stored = conn.execute(text("SELECT count(*) FROM recommendations")).scalar_one()
        eng.dispose()
        results["POST /v1/recommend (stored)"]["stored"] = float(n_stored)
        results["POST /v1/recommend (stored)"]["connections"] = float(args.connections)
        print(f"   {n_stored:,} recommendations stored", flush=True)
        if args.only_recommend:
            return results
        # estimates while 20 runs are submitted
        submit_lat: list[float] = []

        def submit() -> None:
            time.sleep(1.0)
            with httpx.Client(base_url=base, timeout=120, headers=headers) as s:
                for i in range(20):
                    side = 8192 if i % 2 else 2048 + 64 * i  # the hot cell and new cells
                    t = time.perf_counter()
                    r = s.post("/v1/benchmark-runs", json=gemm_run(100, f"load-host-{i % 2}", rng, side=side))
                    submit_lat.append(time.perf_counter() - t)
                    assert r.status_code == 201, r.text
                    time.sleep(max(0.0, (args.duration - 2) / 20 - (time.perf_counter() - t)))

        th = threading.Thread(target=submit)
        th.start()
        results["POST /v1/estimate during 20 submissions"] = wrk(
            base, est_reqs, duration=args.duration, connections=args.connections, workdir=workdir
        )
        th.join()
        results["POST /v1/estimate during 20 submissions"]["submissions"] = len(submit_lat)
        results["POST /v1/estimate during 20 submissions"]["submit_p50_ms"] = (
            sorted(submit_lat)[len(submit_lat) // 2] * 1e3
        )
        return results
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


def report(name: str, res: dict[str, dict[str, float]]) -> list[str]:
    base = res["healthz"]["rps"]
    print(f"\n{name}: wrk, 2 threads, loopback")
    print(
        f"{'phase':45s} {'req/s':>8s} {'ratio':>6s} {'p50 ms':>8s} {'p99 ms':>8s} {'max ms':>8s} {'errors':>7s}"
    )
    for phase, r in res.items():
        print(
            f"{phase:45s} {r['rps']:8.0f} {r['rps'] / base:6.1%} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f} "
            f"{r['max_ms']:8.1f} {int(r['errors'] + r['non2xx']):7d}"
        )
    rec, one = res["POST /v1/recommend (stored)"], res["POST /v1/recommend (stored), 1 client"]
    print(f"   {int(rec.get('stored', 0)):,} recommendations stored in the database after the phases")
    rec_checks = [
        ("recommend unloaded p50 <= 20 ms", one["p50_ms"] <= TARGETS["recommend_p50_ms"]),
        ("recommend unloaded p99 <= 50 ms", one["p99_ms"] <= TARGETS["recommend_p99_ms"]),
        (
            f"recommend >= 80 req/s ({int(rec.get('connections', 4))} clients)",
            rec["rps"] >= TARGETS["recommend_rps"],
        ),
        (
            f"recommend p99 <= 100 ms ({int(rec.get('connections', 4))} clients)",
            rec["p99_ms"] <= TARGETS["recommend_loaded_p99_ms"],
        ),
    ]
    if "POST /v1/estimate" not in res:
        checks = [
            *rec_checks,
            ("no errors or non-2xx", all(r["errors"] == 0 and r["non2xx"] == 0 for r in res.values())),
        ]
        for label, ok in checks:
            print(f"   {'met    ' if ok else 'NOT met'} {label}")
        return [f"{name}: {label}" for label, ok in checks if not ok]
    cat, est = res["catalog GET /v1/gpus/{ident}"], res["POST /v1/estimate"]
    meas, sub = res["measurements view (100k-result cell)"], res["POST /v1/estimate during 20 submissions"]
    print(
        f"   {int(sub['submissions'])} runs submitted during the last phase (p50 {sub['submit_p50_ms']:.0f} ms each)"
    )
    checks = [
        ("catalog GET >= 50% of /healthz", cat["rps"] / base >= TARGETS["catalog_ratio"]),
        ("catalog GET p99 <= 25 ms", cat["p99_ms"] <= TARGETS["catalog_p99_ms"]),
        ("estimate >= 25% of /healthz", est["rps"] / base >= TARGETS["estimate_ratio"]),
        ("estimate p99 <= 50 ms", est["p99_ms"] <= TARGETS["estimate_p99_ms"]),
        ("estimate during submissions p99 <= 50 ms", sub["p99_ms"] <= TARGETS["submit_estimate_p99_ms"]),
        ("estimate during submissions max <= 100 ms", sub["max_ms"] <= TARGETS["submit_estimate_max_ms"]),
        ("measurements view p99 <= 50 ms", meas["p99_ms"] <= TARGETS["measurements_p99_ms"]),
        *rec_checks,
        ("no errors or non-2xx", all(r["errors"] == 0 and r["non2xx"] == 0 for r in res.values())),
    ]
    for label, ok in checks:
        print(f"   {'met    ' if ok else 'NOT met'} {label}")
    return [f"{name}: {label}" for label, ok in checks if not ok]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", choices=["sqlite", "postgresql", "both"], default="both")
    ap.add_argument(
        "--pg",
        default=os.environ.get("GPU_ADVISOR_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"),
    )
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--connections", type=int, default=4)
    ap.add_argument("--results", type=int, default=100_000)
    ap.add_argument("--only-recommend", action="store_true", help="only /healthz and the recommend phase")
    ap.add_argument("--workers", type=int, default=1, help="uvicorn workers of the server under test")
    args = ap.parse_args(argv)
    if shutil.which("wrk") is None:
        print("wrk is not installed (apt-get install wrk)", file=sys.stderr)
        return 2
    misses: list[str] = []
    workdir = Path(tempfile.mkdtemp(prefix="gpu-advisor-load-"))
    try:
        if args.db in ("sqlite", "both"):
            res = bench_database("SQLite", f"sqlite:///{workdir / 'load.db'}", args, workdir)
            misses += report("SQLite", res)
        if args.db in ("postgresql", "both"):
            import psycopg
            from sqlalchemy.engine import make_url

            admin = make_url(args.pg)
            dbname = f"gpua_load_{uuid.uuid4().hex[:8]}"
            conninfo = f"host={admin.host or '127.0.0.1'} port={admin.port or 5432} user={admin.username or 'postgres'} dbname={admin.database or 'postgres'}"
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{dbname}"')
            try:
                url = admin.set(database=dbname).render_as_string(hide_password=False)
                res = bench_database("PostgreSQL", url, args, workdir)
                misses += report("PostgreSQL", res)
            finally:
                with psycopg.connect(conninfo, autocommit=True) as conn:
                    conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print("\nall targets met" if not misses else "\ntargets missed: " + "; ".join(misses))
    return 0 if not misses else 1


if __name__ == "__main__":
    raise SystemExit(main())
