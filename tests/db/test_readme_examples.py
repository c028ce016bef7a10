"""The README's shell examples, run as written, twice in a row, against a fresh install (issues
16 and 29): a real `gpu-advisor serve` on a new database (SQLite, or PostgreSQL with
GPU_ADVISOR_TEST_DATABASE_URL), the README's `.venv/bin/gpu-advisor` (this venv), every `curl`
made to fail on any status >= 400, and the shell's `gpu-advisor` questions in process on the
same database. The second run must succeed too, and afterwards nothing is left behind: no
pending GPU in the admin queue, no open alert, no key that can authenticate (the examples'
keys are revoked), no GPU added, and the catalog and every measured figure as they were. What
stays is the audit trail a real admin would keep: revoked keys and retracted runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import fresh_database_url
from tests.db.servers import REPO, ServerProcess, free_port

SECTIONS = ("## Try it", "## Benchmark agent")  # from the first heading up to the second
NOT_EXAMPLES = ("pip install", "pytest", "redis-server", "createdb", "export ", "GPU_ADVISOR_DATABASE_URL=")


def readme_examples() -> list[str]:
    """Every ```bash and ```sh block between the two headings, less installs and set-up."""
    text = (REPO / "README.md").read_text()
    part = text[text.index(SECTIONS[0]) : text.index(SECTIONS[1])]
    blocks = re.findall(r"```(?:bash|sh)\n(.*?)```", part, flags=re.S)
    return [b for b in blocks if not any(marker in b for marker in NOT_EXAMPLES)]


def test_the_shell_blocks_are_collected() -> None:
    blocks = readme_examples()
    # try it, admin writes, three estimates, batch, recommend, compare, the shell, submission
    assert len(blocks) >= 8, blocks
    assert any("gpu-advisor estimate" in b and ".venv/bin" not in b for b in blocks)  # "From the shell"
    assert any("benchmark-runs" in b and "keys revoke" in b for b in blocks)


def _state(http: httpx.Client, admin: str) -> dict[str, Any]:
    """What an example could leave behind, as the API shows it."""
    auth = {"Authorization": f"Bearer {admin}"}
    figures = {
        slug: http.get(f"/v1/gpus/{slug}/measurements").json()["cells"]
        for slug in ("nvidia-l4", "nvidia-h200-sxm")
    }
    return {
        "gpus": sorted(g["slug"] for g in http.get("/v1/gpus", params={"limit": 500}).json()["items"]),
        "l4": {k: v for k, v in http.get("/v1/gpus/nvidia-l4").json().items() if k != "data_version"},
        "figures": json.dumps(figures, sort_keys=True),
        "pending": http.get("/v1/admin/pending-gpus", headers=auth).json()["items"],
        "open_alerts": http.get("/v1/admin/alerts", params={"acknowledged": False}, headers=auth).json()[
            "items"
        ],
    }


def _active_keys(env: dict[str, str]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "service.cli", "keys", "list"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [line for line in out.stdout.splitlines() if "\tactive\t" in line]


def _run_blocks(blocks: list[str], port: int, workdir: Path, env: dict[str, str]) -> None:
    script = "set -euo pipefail\n" + "\n".join(blocks)
    script = script.replace("localhost:8000", f"127.0.0.1:{port}").replace(
        "curl -s ", "curl -sS --fail-with-body "
    )
    out = subprocess.run(
        ["bash", "-c", script], cwd=workdir, capture_output=True, text=True, timeout=900, env=env
    )
    assert out.returncode == 0, (out.stdout[-4000:], out.stderr[-4000:])
    assert "internal-error" not in out.stdout and "Traceback" not in out.stderr


@pytest.mark.slow
def test_readme_shell_examples_run_twice_and_leave_nothing_behind(tmp_path: Path) -> None:
    blocks = readme_examples()
    for db in fresh_database_url(tmp_path, "readme"):
        port = free_port()
        argv = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
        server_env = {"GPU_ADVISOR_DATABASE_URL": db, "GPU_ADVISOR_LOG_LEVEL": "warning"}
        server = ServerProcess(argv, port, server_env, tmp_path / "server.log").start(timeout_s=300)
        http = httpx.Client(
            base_url=f"http://127.0.0.1:{port}", timeout=120
        )  # first reads build the read model
        workdir = tmp_path / "fresh"
        workdir.mkdir()
        (workdir / ".venv").symlink_to(Path(sys.executable).parent.parent)
        (workdir / "service").symlink_to(REPO / "service")  # examples name shipped files by repo path
        env = {
            "GPU_ADVISOR_DATABASE_URL": db,
            "GPU_ADVISOR_CACHE_DIR": str(tmp_path / "cache"),
            "HOME": str(tmp_path),
            # the README's bare `gpu-advisor` is the installed command
            "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        }
        test_key = subprocess.run(
            [
                sys.executable,
                "-m",
                "service.cli",
                "keys",
                "create",
                "--scope",
                "admin",
                "--name",
                "readme-test",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        admin = test_key.stdout.strip().splitlines()[-1]
        try:
            before, keys_before = _state(http, admin), _active_keys(env)
            assert before["pending"] == [] and before["open_alerts"] == []
            for _ in range(2):
                _run_blocks(blocks, port, workdir, env)
                after = _state(http, admin)
                assert after == before
                assert _active_keys(env) == keys_before  # the examples' keys are revoked
            assert http.get("/v1/gpus/example-throwaway-gpu").status_code == 404
        finally:
            http.close()
            server.stop()
            subprocess.run(
                [sys.executable, "-m", "service.cli", "keys", "revoke", "readme-test"], env=env, timeout=120
            )
