"""A private, throwaway PostgreSQL cluster for fault injection: made with ``initdb`` in a
temporary directory, served by its own ``postgres`` on a free port, and stopped, frozen
(``SIGSTOP``), thawed and restarted by the tests -- never the suite's server. As root, the
cluster runs as the ``postgres`` user (PostgreSQL refuses to run as root)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from tests.db.servers import free_port


def postgres_bin() -> Path | None:
    """The newest installed PostgreSQL's bin directory (Debian: /usr/lib/postgresql/N/bin)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    return found[-1] if found and (found[-1] / "initdb").exists() else None


class PrivateCluster:
    def __init__(self) -> None:
        bindir = postgres_bin()
        if bindir is None:
            raise RuntimeError("no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
        self.bin = bindir
        self.root = Path(tempfile.mkdtemp(prefix="gpua-faults-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.user: str | None = None
        if os.geteuid() == 0:
            self.user = "postgres"
            pw = pwd.getpwnam(self.user)
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
        self.frozen: list[int] = []

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str, timeout: float = 60) -> None:
        subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            check=True,
            user=self.user,
            cwd=self.root,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=timeout,
        )

    def init(self) -> PrivateCluster:
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync")
        return self.start()

    def start(self) -> PrivateCluster:
        opts = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=200"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60", "start")
        return self

    def stop(self, mode: str = "fast") -> None:
        self.thaw()
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def pids(self) -> list[int]:
        """The postmaster and every process it started."""
        master = int((self.data / "postmaster.pid").read_text().split()[0])
        out = [master]
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                if int(fields[1]) == master:
                    out.append(int(stat.parent.name))
        return out

    def freeze(self) -> None:
        """Stop every process of the cluster: connections stay open, nothing answers."""
        self.frozen = self.pids()
        for pid in self.frozen:
            os.kill(pid, signal.SIGSTOP)

    def thaw(self) -> None:
        for pid in self.frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self.frozen = []

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self.stop("immediate")
        deadline = time.monotonic() + 10
        while (self.data / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        shutil.rmtree(self.root, ignore_errors=True)
