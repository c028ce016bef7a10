"""What the H200 probes share: a time budget, one JSON line per measurement, synchronised wall
time and summed CUDA-kernel time. ``PROBE_SMOKE=1`` runs a probe on the CPU to check the script
(no synchronisation, no profiler). Imported as a sibling module: the probes run as scripts
(``python3 benchmarks/probes/NAME.py``), whose folder is on ``sys.path``."""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

SMOKE = os.environ.get("PROBE_SMOKE") == "1"
DEV = torch.device("cpu" if SMOKE else "cuda:0")


class Probe:
    """One probe run: its budget (``PROBE_BUDGET_S``) and its record ``$OUT/<record>``."""

    def __init__(self, record: str, budget_s: float) -> None:
        self.t0 = time.perf_counter()
        self.budget_s = float(os.environ.get("PROBE_BUDGET_S", str(budget_s)))
        self.rec = open(os.path.join(os.environ.get("OUT", "."), record), "a")  # noqa: SIM115

    def left(self) -> float:
        return self.budget_s - (time.perf_counter() - self.t0)

    def emit(self, rec: dict[str, Any]) -> None:
        rec["t_s"] = round(time.perf_counter() - self.t0, 2)
        self.rec.write(json.dumps(rec) + "\n")
        self.rec.flush()
        print(json.dumps(rec)[:300], flush=True)


def sync() -> None:
    if not SMOKE:
        torch.cuda.synchronize()


def wall_s(fn: Callable[[], Any], min_s: float = 0.3, max_n: int = 30) -> float:
    """Median synchronised time of ``fn`` after one warm-up."""
    fn()
    sync()
    ts: list[float] = []
    start = time.perf_counter()
    while len(ts) < 3 or (time.perf_counter() - start < min_s and len(ts) < max_n):
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def timed(fn: Callable[[], object], reps: int = 10) -> float:
    """Median seconds of ``fn`` over ``reps`` runs after two warm-ups (CUDA events)."""
    if SMOKE:
        t = time.perf_counter()
        fn()
        return time.perf_counter() - t
    fn()
    fn()
    sync()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e-3)
    return statistics.median(ts)


def kernel_s(fn: Callable[[], Any]) -> tuple[int, float]:
    """CUDA kernels launched by one run of ``fn`` and their summed duration (s)."""
    from torch.profiler import ProfilerActivity, profile

    if SMOKE:
        fn()
        return 0, 0.0
    sync()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        sync()
    n, total = 0, 0.0
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            n += 1
            total += e.time_range.elapsed_us() * 1e-6
    return n, total
