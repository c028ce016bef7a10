"""The agent's client against the real app (real migrations, real routes), in process."""

from __future__ import annotations

import copy
import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from service.agent.client import AgentClient
from service.agent.payload import build_runs, read_runs, sanitize_run, validate_run
from service.agent.plan import make_config
from service.agent.probe import probe
from service.agent.runner import ConfigOutcome
from service.agent.spool import Spool
from tests.agent.fake_nvml import FakeNvml, load_capture

REPO = Path(__file__).resolve().parents[2]


def h200_run() -> dict[str, Any]:
    host = probe(FakeNvml(load_capture("nvml_h200_real.json")))
    spec = make_config(
        {
            "workload": "llm-train",
            "parameters": {
                "model": "gt-llama-350m",
                "precision": "amp_bf16",
                "batch_size": 8,
                "seq_len": 2048,
            },
        }
    )
    raw = {
        "status": "ok",
        "metrics": {"throughput": 92462.9},
        "step_time_s": 0.1772,
        "repeats": 4,
        "peak_allocated_bytes": 34_370_000_000,
        "peak_reserved_bytes": 36_000_000_000,
        "nvml_used_bytes": 37_000_000_000,
        "flags": {"tf32_matmul": True, "tf32_cudnn": True},
    }
    env = {
        "torch_version": "2.11.0+cu130",
        "cuda_runtime": "13.0",
        "attention_backend": "torch-sdpa[flash]",
        "transformers_version": "5.17.0",
    }
    (run,) = build_runs(
        [ConfigOutcome(spec, raw, 2.0)],
        run_id_base=f"test-{uuid.uuid4().hex[:12]}",
        env=env,
        host=host,
        gpu=host.gpus[0],
        started_at=dt.datetime.now(dt.UTC),
        finished_at=None,
        notes="agent client test",
    )
    return run


class ViaTestClient(httpx.BaseTransport):
    """Route the agent's httpx requests into the in-process app."""

    def __init__(self, tc: TestClient) -> None:
        self.tc = tc

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        r = self.tc.request(
            request.method,
            request.url.path,
            content=request.content,
            headers={k: v for k, v in request.headers.items() if k.lower() != "host"},
        )
        return httpx.Response(r.status_code, headers=r.headers, content=r.content)


@pytest.fixture()
def agent(client: TestClient, submit_key: str, tmp_path: Path) -> AgentClient:
    return AgentClient(
        "http://testserver",
        submit_key,
        spool=Spool(tmp_path / "spool"),
        transport=ViaTestClient(client),
        sleep=lambda s: None,
    )


def test_submit_replay_conflict_and_unit_error_against_the_app(
    agent: AgentClient, client: TestClient
) -> None:
    run = h200_run()
    ok, code, answer = agent.validate(run)
    assert ok and code == 200, answer
    (d,) = agent.submit(run)
    assert (d.outcome, d.status_code) == ("accepted", 201), d
    assert d.response["gpu_slug"] == "nvidia-h200-sxm" and d.response["result_count"] == 1
    (d,) = agent.submit(copy.deepcopy(run))
    assert (d.outcome, d.status_code) == ("replayed", 200)
    stored = client.get(f"/v1/benchmark-runs/{run['run_id']}").json()
    assert stored["run_id"] == run["run_id"]

    changed = copy.deepcopy(run)
    changed["results"][0]["metrics"]["throughput"]["value"] = 1.0
    (d,) = agent.submit(changed)
    assert (d.outcome, d.status_code) == ("dead_letter", 409)

    bad = h200_run()
    bad["results"][0]["metrics"]["throughput"]["unit"] = "samples/s"
    (d,) = agent.submit(bad)
    assert (d.outcome, d.status_code) == ("dead_letter", 422)
    problem = json.loads((agent.spool.dead_dir / f"{bad['run_id']}.problem.json").read_text())
    assert any(e["loc"][-1] == "unit" for e in problem["problem"]["errors"])
    assert agent.spool.pending() == []


def test_committed_h200_results_are_valid_runs() -> None:
    files = sorted((REPO / "data/benchmarks").glob("h200-sxm-*.json"))
    assert files, "the measured H200 results are committed"
    runs = [r for f in files for r in read_runs(f)]
    results = [x for r in runs for x in r["results"]]
    assert all(validate_run(r) == [] for r in runs)
    assert all(
        r["gpu"]["pci_device_id"] == "0x2335" and r["fingerprint"]["torch_version"].startswith("2.")
        for r in runs
    )
    train = {json.dumps(x["parameters"], sort_keys=True) for x in results if x["workload"] == "llm-train"}
    assert len(train) >= 45
    assert {x["status"] for x in results} == {"ok", "oom"}
    # the committed files are the raw agent output after the documented, rule-based sanitize step
    raw = [r for f in sorted((REPO / "data/benchmarks/raw").glob("h200-sxm-*.json")) for r in read_runs(f)]
    by_id = {r["run_id"]: r for r in raw}
    for r in runs:
        clean, _ = sanitize_run(by_id[r["run_id"]], drop=[], reason=None)
        assert [x for x in clean["results"] if x["workload"] != "gemm"] == [
            x for x in r["results"] if x["workload"] != "gemm"
        ]
