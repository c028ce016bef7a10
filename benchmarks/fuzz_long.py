"""The long schema-fuzzing run (issue 16): tests/contract/test_fuzz.py with many more examples
per operation, on SQLite (a fresh file) or on PostgreSQL (a fresh database on the server you
name), and the counts: cases sent per operation, in total, failures, wall time.

    python benchmarks/fuzz_long.py --examples 300                      # SQLite
    python benchmarks/fuzz_long.py --examples 300 \\
        --postgres postgresql://postgres@127.0.0.1:5432/test          # PostgreSQL

The CI run (the same test, 30 examples per operation and 30 stateful scenarios) is part of the normal suite; this one is
for a longer look (10k+ cases at --examples 300). Exit status: pytest's."""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--examples",
        type=int,
        default=300,
        help="fuzzed examples per operation and stateful scenarios (CI: 30)",
    )
    ap.add_argument("--postgres", help="a PostgreSQL URL: the run creates and drops its own database there")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "cases.txt"
        env = {
            **os.environ,
            "GPU_ADVISOR_FUZZ_EXAMPLES": str(args.examples),
            "GPU_ADVISOR_FUZZ_STATEFUL_EXAMPLES": str(args.examples),
            "GPU_ADVISOR_FUZZ_COUNT_FILE": str(counts),
        }
        env.pop("GPU_ADVISOR_TEST_DATABASE_URL", None)
        if args.postgres:
            env["GPU_ADVISOR_TEST_DATABASE_URL"] = args.postgres
        start = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/contract/test_fuzz.py"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
        wall = time.monotonic() - start
        lines = counts.read_text().splitlines() if counts.exists() else []
    per_op = collections.Counter(lines)
    db = "PostgreSQL" if args.postgres else "SQLite"
    summary = [line for line in proc.stdout.splitlines() if " passed" in line or " failed" in line]
    print(f"database: {db}; examples per operation: {args.examples}")
    print(f"cases sent: {len(lines)} over {len(per_op)} operations in {wall:.0f} s")
    for op, n in sorted(per_op.items()):
        print(f"  {n:6d}  {op}")
    print("pytest:", summary[-1] if summary else proc.stdout[-2000:])
    if proc.returncode:
        print(proc.stdout[-20000:])
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
