"""Requests lost to the keep-alive race: a client reuses a connection it has kept idle about as
long as the server keeps it, and sends into the server's close (no answer at all).

httpx expires idle pooled connections after 5 s -- uvicorn's default keep-alive too -- and a
client's idle clock starts when its (possibly lagging) loop reads the response, after the
server's. This starts ``gpu-advisor serve`` on a fresh SQLite database once per keep-alive
setting, has ``--clients`` connections each answer, idle a random 4.95-5.05 s and ask again
(``--rounds`` times), and prints how many of those second requests got no answer.

    python benchmarks/keepalive_race.py                 # keep-alive 5 s (uvicorn's) and 75 s (ours)
    python benchmarks/keepalive_race.py --keep-alive 75 --clients 200
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(db: Path, keep_alive_s: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {
        **os.environ,
        "GPU_ADVISOR_DATABASE_URL": f"sqlite:///{db}",
        "GPU_ADVISOR_SEED_MEASUREMENTS_DIR": "",
        "GPU_ADVISOR_RATE_LIMITS_ENABLED": "false",
        "GPU_ADVISOR_KEEP_ALIVE_TIMEOUT_S": str(keep_alive_s),
    }
    argv = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=log.open("ab"))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit(f"the server did not come up: {log.read_text()[-2000:]}")


async def _reuse(url: str, rounds: int, lost: list[str]) -> int:
    answered = 0
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        for _ in range(rounds):
            await client.get("/healthz")
            await asyncio.sleep(random.uniform(4.95, 5.05))
            try:
                await client.get("/healthz")
                answered += 1
            except httpx.HTTPError as exc:
                lost.append(type(exc).__name__)
    return answered


async def _race(url: str, clients: int, rounds: int) -> tuple[int, list[str]]:
    lost: list[str] = []
    answered = await asyncio.gather(*(_reuse(url, rounds, lost) for _ in range(clients)))
    return sum(answered), lost


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep-alive", type=int, action="append", help="server keep-alive, s (repeatable)")
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for keep_alive_s in args.keep_alive or [5, 75]:
            db = Path(tmp) / f"ka{keep_alive_s}.db"
            print(f"keep-alive {keep_alive_s} s: starting the server (migrations, catalog) ...", flush=True)
            proc, url = _serve(db, keep_alive_s, Path(tmp) / "server.log")
            try:
                answered, lost = asyncio.run(_race(url, args.clients, args.rounds))
            finally:
                proc.terminate()
                proc.wait(30)
            kinds = {k: lost.count(k) for k in sorted(set(lost))}
            print(
                f"keep-alive {keep_alive_s} s: {len(lost)} of {answered + len(lost)} reused-connection "
                f"requests lost unanswered {kinds or ''}",
                flush=True,
            )


if __name__ == "__main__":
    main()
