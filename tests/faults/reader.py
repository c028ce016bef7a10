"""A reader in a process of its own (so that the load the test generates does not slow its
clock): GETs ``path`` back to back until ``stop_file`` exists, then writes one line per read
(seconds, status) to ``out``.

    python -m tests.faults.reader URL PATH OUT STOP_FILE
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import httpx


def main(url: str, path: str, out: str, stop_file: str) -> None:
    rows: list[str] = []
    stop = Path(stop_file)
    with httpx.Client(base_url=url, timeout=60) as client:
        client.get(path)
        Path(out + ".ready").write_text("ready")
        while not stop.exists():
            t = time.monotonic()
            try:
                status = client.get(path).status_code
            except httpx.HTTPError:
                status = 0
            rows.append(f"{time.monotonic() - t:.6f} {status}")
            time.sleep(0.005)
    Path(out).write_text("\n".join(rows) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:5])
