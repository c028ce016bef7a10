"""Local, crash-safe storage for runs that are not (yet) accepted by the service.

Layout under the spool root (default ``$XDG_STATE_HOME/gpu-advisor/agent``)::

    pending/<run_id>.json             exact request bodies waiting for ``agent flush``
    dead-letter/<run_id>.json         bodies the service refused permanently (4xx)
    dead-letter/<run_id>.problem.json the status code and the server's problem+json answer

Bodies are stored as the exact bytes that were (or will be) sent, so a later replay is
byte-identical and the service's idempotency check answers 200 rather than 409. Writes go to
a temporary file that is fsynced and renamed: a crash leaves either the old file or the new.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any


def default_spool_dir() -> Path:
    env = os.environ.get("GPU_ADVISOR_AGENT_SPOOL")
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "gpu-advisor" / "agent"


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _safe(run_id: str) -> str:
    if not run_id or "/" in run_id or run_id.startswith(".") or "\\" in run_id:
        raise ValueError(f"unsafe run id for a file name: {run_id!r}")
    return run_id


@dataclass(frozen=True, slots=True)
class SpoolItem:
    run_id: str
    path: Path

    def body(self) -> bytes:
        return self.path.read_bytes()


class Spool:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pending_dir = root / "pending"
        self.dead_dir = root / "dead-letter"

    def put(self, run_id: str, body: bytes) -> Path:
        path = self.pending_dir / f"{_safe(run_id)}.json"
        _atomic_write(path, body)
        return path

    def remove(self, run_id: str) -> None:
        (self.pending_dir / f"{_safe(run_id)}.json").unlink(missing_ok=True)

    def pending(self) -> list[SpoolItem]:
        if not self.pending_dir.is_dir():
            return []
        return [
            SpoolItem(p.name[: -len(".json")], p)
            for p in sorted(self.pending_dir.glob("*.json"))
            if not p.name.startswith(".")
        ]

    def dead_letter(self, run_id: str, body: bytes, status_code: int | None, problem: Any) -> Path:
        path = self.dead_dir / f"{_safe(run_id)}.json"
        _atomic_write(path, body)
        info = {"run_id": run_id, "status_code": status_code, "problem": problem}
        _atomic_write(
            self.dead_dir / f"{run_id}.problem.json", json.dumps(info, indent=1, sort_keys=True).encode()
        )
        return path

    def dead(self) -> list[SpoolItem]:
        if not self.dead_dir.is_dir():
            return []
        return [
            SpoolItem(p.name[: -len(".json")], p)
            for p in sorted(self.dead_dir.glob("*.json"))
            if not p.name.endswith(".problem.json") and not p.name.startswith(".")
        ]
