"""openapi/openapi.json is what `gpu-advisor openapi` writes from the running app."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import FastAPI

ROOT = Path(__file__).resolve().parents[2]


def test_committed_openapi_matches_app(app: FastAPI) -> None:
    committed = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    live = json.loads(json.dumps(app.openapi(), sort_keys=True))
    assert committed == live, (
        "openapi/openapi.json is stale: run `gpu-advisor openapi -o openapi/openapi.json`"
    )


def test_every_operation_declares_problem_responses(app: FastAPI) -> None:
    for path, item in app.openapi()["paths"].items():
        for method, op in item.items():
            for status in ("422", "413", "500"):
                content = op["responses"][status]["content"]
                assert "application/problem+json" in content, (method, path, status)
            assert op.get("operationId"), (method, path)
