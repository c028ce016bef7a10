"""Issue 29's CLI target: ``gpu-advisor estimate ...`` <= 1 s wall on the second call against
the same database, printed as a table.

Makes a fresh database (a SQLite file, or ``--database-url``) and an empty calibration cache in
a temporary directory, then times each question as separate processes, as a person typing the
command gets them: the first call (estimate's first call migrates, loads the shipped data and
fits every calibration), then ``--runs`` more calls, which reuse the stored fit; and
``gpu-advisor --help`` in the same run, the floor of any call (Python, typer, rich). Prints wall
and CPU (user + sys of the child) per call, the ratio of the second call's median wall to
``--help``'s, and the load average: on a shared machine wall time is mostly waiting for a core,
so CPU is the figure to compare between runs.

The children run with Python's bytecode cache on (PYTHONDONTWRITEBYTECODE is dropped from
their environment, as in a user's shell): with it off, every call compiles the project's ~200
modules again. ``--no-bytecode-cache`` keeps the caller's setting.

Usage::

    python benchmarks/cli_speed.py [--runs 5] [--database-url URL] [--all] [--no-bytecode-cache]
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

ESTIMATE = ["estimate", "--model", "llama3-8b", "--gpu", "L40", "--mode", "fine-tuning"]
OTHERS = {
    "recommend": ["recommend", "--model", "llama2-7b", "--mode", "fine-tuning", "--gpus", "L40,L20"],
    "compare": ["compare", "L40", "L20", "nvidia-a100-sxm4-80gb"],
    "gpus": ["gpus", "--vendor", "nvidia", "--supports", "fp8"],
}
TARGET_S = 1.0


def timed(exe: str, args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, CPU s) of one call; exits if the call fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        sys.exit(f"{' '.join(args)} failed: {out.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def median(xs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(w for w, _ in xs), statistics.median(c for _, c in xs)


def row(label: str, wall: float, cpu: float, note: str = "") -> None:
    print(f"{label:<34}{wall:>9.2f}{cpu:>9.2f}  {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="calls after the first (default 5)")
    ap.add_argument("--database-url", default=None, help="default: a fresh SQLite file")
    ap.add_argument("--all", action="store_true", help="also recommend, compare and gpus")
    ap.add_argument("--no-bytecode-cache", action="store_true", help="keep PYTHONDONTWRITEBYTECODE")
    a = ap.parse_args()
    exe = shutil.which("gpu-advisor", path=str(Path(sys.executable).parent)) or "gpu-advisor"
    questions = {"estimate": ESTIMATE, **(OTHERS if a.all else {})}
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "GPU_ADVISOR_DATABASE_URL": a.database_url or f"sqlite:///{tmp}/cli.sqlite",
            "GPU_ADVISOR_CACHE_DIR": f"{tmp}/cache",
        }
        if not a.no_bytecode_cache:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
        times = {}
        for name, args in questions.items():
            first = timed(exe, args, env)
            times[name] = (first, [timed(exe, args, env) for _ in range(a.runs)])
        help_ = median([timed(exe, ["--help"], env) for _ in range(max(3, a.runs))])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {a.runs} calls after the first")
    print(f"{'call':<34}{'wall s':>9}{'cpu s':>9}")
    row("gpu-advisor --help (median)", *help_)
    for name, (first, again) in times.items():
        wall, cpu = median(again)
        row(f"{name}: first call", *first, "(estimate: migrate, load, fit)" if name == "estimate" else "")
        row(
            f"{name}: second call (median)",
            wall,
            cpu,
            f"x{wall / help_[0]:.1f} --help wall, x{cpu / help_[1]:.1f} its CPU; "
            f"min wall {min(w for w, _ in again):.2f}",
        )
    wall, _ = median(times["estimate"][1])
    verdict = "met" if wall <= TARGET_S else "NOT met on this machine"
    print(f"target: estimate's second call <= {TARGET_S:.0f} s wall: {verdict} ({wall:.2f} s)")


if __name__ == "__main__":
    main()
