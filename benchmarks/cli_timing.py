"""Issue 29's CLI target: ``gpu-advisor estimate ...`` <= 1 s wall on the second call against
the same database, printed as a table.

Makes a fresh SQLite database and an empty calibration cache in a temporary directory, then
times, as separate processes (what a person typing the command gets): the first call (migrates,
loads the shipped data, fits every calibration), then ``--runs`` more calls (reuse the stored
fits), and ``gpu-advisor --help``. Prints wall and CPU (user + sys of the child) per call, and
the load average, since on a shared machine wall time is mostly waiting for a core.

Usage::

    python benchmarks/cli_timing.py [--runs 5] [--database-url URL]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMAND = ["estimate", "--model", "llama3-8b", "--gpu", "L40", "--mode", "fine-tuning"]


def timed(exe: str, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {out.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    a = ap.parse_args()
    exe = shutil.which("gpu-advisor", path=str(Path(sys.executable).parent)) or "gpu-advisor"
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "GPU_ADVISOR_DATABASE_URL": a.database_url or f"sqlite:///{tmp}/cli.sqlite",
            "GPU_ADVISOR_CACHE_DIR": f"{tmp}/cache",
        }
        first = timed(exe, COMMAND, env)
        again = [timed(exe, COMMAND, env) for _ in range(a.runs)]
        help_ = [timed(exe, ["--help"], env) for _ in range(3)]
    print(
        f"gpu-advisor {' '.join(COMMAND)}   (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )
    print(f"{'call':<28}{'wall s':>10}{'cpu s':>10}")
    print(f"{'first (migrate + fit)':<28}{first[0]:>10.2f}{first[1]:>10.2f}")
    for i, (w, c) in enumerate(again, 2):
        print(f"{f'call {i} (stored fits)':<28}{w:>10.2f}{c:>10.2f}")
    print(
        f"{'median of calls 2..':<28}{statistics.median(w for w, _ in again):>10.2f}{statistics.median(c for _, c in again):>10.2f}"
    )
    print(
        f"{'--help (median of 3)':<28}{statistics.median(w for w, _ in help_):>10.2f}{statistics.median(c for _, c in help_):>10.2f}"
    )


if __name__ == "__main__":
    main()
