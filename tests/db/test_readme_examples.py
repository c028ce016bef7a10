"""The README's shell examples, run as written against a fresh install (issue 16): a real
`gpu-advisor serve` on a new SQLite file, the README's `.venv/bin/gpu-advisor` (this venv), every
`curl` made to fail on any status >= 400. Afterwards the catalog and the measured figures are as
they were: the examples leave no trace in real data."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.db.servers import REPO, ServerProcess, free_port

SECTIONS = ("## Try it", "## Benchmark agent")  # from the first heading up to the second
NOT_EXAMPLES = ("pip install", "pytest", "redis-server", "createdb", "export ", "GPU_ADVISOR_DATABASE_URL=")


def readme_examples() -> list[str]:
    text = (REPO / "README.md").read_text()
    part = text[text.index(SECTIONS[0]) : text.index(SECTIONS[1])]
    blocks = re.findall(r"```bash\n(.*?)```", part, flags=re.S)
    return [b for b in blocks if not any(marker in b for marker in NOT_EXAMPLES)]


@pytest.mark.slow
def test_readme_shell_examples_run_against_a_fresh_install(tmp_path: Path) -> None:
    blocks = readme_examples()
    assert len(blocks) >= 6, blocks  # try it, keys, admin writes, three estimates, batch, submission
    port = free_port()
    db = f"sqlite:///{tmp_path}/fresh.db"
    argv = [sys.executable, "-m", "service.cli", "serve", "--host", "127.0.0.1", "--port", str(port)]
    env = {"GPU_ADVISOR_DATABASE_URL": db, "GPU_ADVISOR_LOG_LEVEL": "warning"}
    server = ServerProcess(argv, port, env, tmp_path / "server.log").start(timeout_s=300)
    base = f"http://127.0.0.1:{port}"
    http = httpx.Client(base_url=base, timeout=120)  # the first reads build the read model
    try:
        before_l4 = http.get("/v1/gpus/nvidia-l4").json()
        gemm = http.get("/v1/gpus/nvidia-h200-sxm/measurements", params={"workload": "gemm"}).json()
        workdir = tmp_path / "fresh"
        workdir.mkdir()
        (workdir / ".venv").symlink_to(Path(sys.executable).parent.parent)
        (workdir / "service").symlink_to(REPO / "service")  # examples name shipped files by repo path
        script = "set -euo pipefail\n" + "\n".join(blocks)
        script = script.replace("localhost:8000", f"127.0.0.1:{port}").replace(
            "curl -s ", "curl -sS --fail-with-body "
        )
        out = subprocess.run(
            ["bash", "-c", script],
            cwd=workdir,
            capture_output=True,
            text=True,
            timeout=600,
            env={"GPU_ADVISOR_DATABASE_URL": db, "PATH": "/usr/bin:/bin"},
        )
        assert out.returncode == 0, (out.stdout[-4000:], out.stderr[-4000:])
        assert "internal-error" not in out.stdout
        # no trace in real data: the throwaway GPU is gone, the L4 and the H200's GEMM untouched
        assert http.get("/v1/gpus/example-throwaway-gpu").status_code == 404
        after_l4 = http.get("/v1/gpus/nvidia-l4").json()
        assert {k: v for k, v in after_l4.items() if k != "data_version"} == {
            k: v for k, v in before_l4.items() if k != "data_version"
        }
        after = http.get("/v1/gpus/nvidia-h200-sxm/measurements", params={"workload": "gemm"}).json()
        assert json.dumps(after["cells"], sort_keys=True) == json.dumps(gemm["cells"], sort_keys=True)
        run = http.get("/v1/benchmark-runs/example-node-1-20261202T2300Z-a1b2c3").json()
        assert run["state"] == "retracted" and run["gpu"]["slug"] is None
    finally:
        http.close()
        server.stop()
