"""Real server processes for tests (modelled on the durability test's helpers): start a
command that serves HTTP on a free port, wait for /healthz, stop it, keep its stderr in a file.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ServerProcess:
    """``gpu-advisor serve`` (or any argv) on ``port``; stderr goes to ``log_path``."""

    def __init__(self, argv: list[str], port: int, env: dict[str, str], log_path: Path) -> None:
        self.argv, self.port, self.log_path = argv, port, log_path
        self.env = {**os.environ, **env}
        self.proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def serve(
        cls, database_url: str, log_path: Path, *extra: str, env: dict[str, str] | None = None
    ) -> ServerProcess:
        port = free_port()
        argv = [
            sys.executable,
            "-m",
            "service.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-migrate",
            *extra,
        ]
        base = {"GPU_ADVISOR_DATABASE_URL": database_url, "GPU_ADVISOR_SEED_MEASUREMENTS_DIR": ""}
        return cls(argv, port, {**base, **(env or {})}, log_path)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 120) -> ServerProcess:
        return self.launch().wait_ready(timeout_s)

    def launch(self) -> ServerProcess:
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            self.argv, cwd=REPO, env=self.env, stdout=subprocess.DEVNULL, stderr=self._log
        )
        return self

    def wait_ready(self, timeout_s: float = 120) -> ServerProcess:
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=0.5).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}"
                )
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"server did not come up: {self.log_path.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:  # pragma: no cover
                self.proc.kill()
                self.proc.wait(5)
        if getattr(self, "_log", None) is not None:
            self._log.close()
