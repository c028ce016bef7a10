"""`gpu-advisor estimate --json` prints the same answer as POST /v1/estimate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from tests.conftest import fresh_database_url


def test_cli_estimate_matches_api(tmp_path: Path, client: TestClient) -> None:
    for url in fresh_database_url(tmp_path, "cli"):
        # the calibration cache in this test's directory, not the user's ~/.cache
        env = {
            "GPU_ADVISOR_DATABASE_URL": url,
            "PATH": "/usr/bin:/bin",
            "GPU_ADVISOR_CACHE_DIR": str(tmp_path),
        }
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "service.cli",
                "estimate",
                "--model",
                "gt-llama-350m",
                "--gpu",
                "NVIDIA H200",
                "--set",
                "batch_size=4",
                "--set",
                "seq_len=1024",
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert out.returncode == 0, out.stderr
        cli = json.loads(out.stdout)
        api = client.post(
            "/v1/estimate",
            json={"model": "gt-llama-350m", "gpu": "NVIDIA H200", "batch_size": 4, "seq_len": 1024},
        ).json()
        assert cli["memory"]["peak_allocated_bytes"] == api["memory"]["peak_allocated_bytes"]
        assert cli["time"]["provenance"] == api["time"]["provenance"]
        bad = subprocess.run(
            [sys.executable, "-m", "service.cli", "estimate", "--model", "nope", "--gpu", "h200"],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert bad.returncode == 2 and "model" in bad.stderr
