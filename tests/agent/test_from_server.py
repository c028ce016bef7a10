"""``gpu-advisor agent run --from-server``: the agent reads the measurement plan from a real
served app (uvicorn, its own database built by the real migrations) with its key, runs the top
cell this GPU can run, submits it over HTTP, and the band the plan named narrows.

The GPU side is faked, as in the other agent tests: NVML answers from the captured H200 dump
(``fake_nvml``) and the configuration processes are replaced by an executor that answers at
the estimate's own step time (no CUDA here). The service, the database and HTTP are real."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from service.agent import cli, exitcodes
from service.agent.plan import plan_from_cells
from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.agent.fake_nvml import FakeNvml, load_capture
from tests.conftest import fresh_database_url
from tests.db.servers import ServerProcess

H200 = "nvidia-h200-sxm"
JOB = {
    "model": "gt-llama-350m",
    "precision": "amp_bf16",
    "batch_size": 4,
    "seq_len": 1024,
    "optimizer_impl": "fused",
}


@dataclass(frozen=True)
class Served:
    url: str
    key: str

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        r = httpx.get(
            self.url + path, params=params, headers={"Authorization": f"Bearer {self.key}"}, timeout=60
        )
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = httpx.post(
            self.url + path, json=body, headers={"Authorization": f"Bearer {self.key}"}, timeout=60
        )
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("from-server")
    for url in fresh_database_url(tmp, "fromserver"):
        eng = make_engine(url)
        bootstrap(eng, Settings(database_url=url, seed_measurements_dir=None))
        with UnitOfWork(make_session_factory(eng)) as uow:
            key = create_key(uow, name=f"agent-{uuid.uuid4().hex[:6]}", scope="submit", trusted=True).secret
        eng.dispose()
        server = ServerProcess.serve(url, tmp / "stderr.log").start()
        try:
            yield Served(server.url, key)
        finally:
            server.stop()


class AnswersAt:
    """The configuration processes' stand-in: the environment of a CUDA host, and each
    llm-train configuration measured at ``step_s`` (three repeats)."""

    def __init__(self, isolation: str, step_s: float) -> None:
        self.step_s = step_s
        self.configs: list[dict[str, Any]] = []

    def run(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if payload["kind"] == "env":
            return {
                "status": "ok",
                "cuda_available": True,
                "device_name": "NVIDIA H200",
                "torch_version": "2.11.0+cu130",
                "cuda_runtime": "13.0",
                "attention_backend": "torch-sdpa[flash]",
                "transformers_version": "5.17.0",
            }
        self.configs.append(payload)
        p = payload["parameters"]
        return {
            "status": "ok",
            "metrics": {"throughput": p["batch_size"] * p["seq_len"] / self.step_s},
            "step_time_s": self.step_s,
            "repeats": 3,
            "peak_allocated_bytes": 20_000_000_000,
            "peak_reserved_bytes": 21_000_000_000,
            "nvml_used_bytes": 22_000_000_000,
            "flags": {"tf32_matmul": True, "tf32_cudnn": True},
        }


def _band_pct(served: Served) -> tuple[float, dict[str, Any]]:
    t = served.post("/v1/estimate", {**JOB, "gpu": H200})["time"]
    b = t["step_time_band"]
    return (b["high"] - b["low"]) / b["mid"] * 100, t


def test_run_from_server_measures_the_top_cell_and_narrows_its_band(
    served: Served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    served.post("/v1/recommend", {"workload": JOB, "constraints": {"allowed_gpus": [H200], "max_gpus": 1}})
    served.post(
        "/v1/recommend",
        {"workload": {**JOB, "batch_size": 2}, "constraints": {"allowed_gpus": [H200], "max_gpus": 1}},
    )
    before = served.get("/v1/measurement-plan", gpu="0x2335")  # what the agent asks: its PCI device id
    top = before["items"][0]
    assert top["gpu"]["slug"] == H200 and top["parameters"]["batch_size"] == 4
    band_now, t = _band_pct(served)
    assert band_now == pytest.approx(top["answers"][0]["band_now_pct"], abs=0.01)

    executor = AnswersAt("forkserver", step_s=t["step_time_s"])
    monkeypatch.setattr(cli, "load_nvml", lambda: FakeNvml(load_capture("nvml_h200_real.json")))
    monkeypatch.setattr(cli, "Executor", lambda isolation: executor)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    args = ["run", "--from-server", "--top", "1", "--submit", "--url", served.url, "--api-key", served.key]
    res = CliRunner().invoke(cli.agent_app, [*args, "--spool-dir", str(tmp_path / "spool")])
    assert res.exit_code == 0, res.output
    assert [c["parameters"] for c in executor.configs] == [top["parameters"]]  # the top cell, and only it
    assert "accepted" in res.output

    band_after, t = _band_pct(served)
    assert t["provenance"] == "measured" and band_after < band_now
    assert band_after == pytest.approx(top["answers"][0]["band_after_pct"], abs=0.01)
    after = served.get("/v1/measurement-plan", gpu="0x2335")
    assert top["parameters_hash"] not in [c["parameters_hash"] for c in after["items"]]
    assert after["items"][0]["parameters_hash"] == before["items"][1]["parameters_hash"]


def test_from_server_with_nothing_to_run_or_a_refused_key(
    served: Served, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    executor = AnswersAt("forkserver", step_s=0.1)
    monkeypatch.setattr(cli, "load_nvml", lambda: FakeNvml(load_capture("nvml_h200_real.json")))
    monkeypatch.setattr(cli, "Executor", lambda isolation: executor)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    served.post("/v1/recommend", {"workload": JOB, "constraints": {"allowed_gpus": [H200], "max_gpus": 1}})
    base = ["run", "--from-server", "--url", served.url, "--spool-dir", str(tmp_path)]
    res = CliRunner().invoke(cli.agent_app, [*base, "--api-key", served.key, "--workloads", "resnet50-train"])
    assert res.exit_code == 0 and "nothing this agent can run" in res.output and executor.configs == []
    res = CliRunner().invoke(cli.agent_app, [*base, "--api-key", "gpa_not_a_key"])
    assert res.exit_code == exitcodes.ERROR and "cannot read the measurement plan" in res.output
    res = CliRunner().invoke(cli.agent_app, [*base, "--api-key", served.key, "--workloads", "nope"])
    assert res.exit_code == exitcodes.USAGE and "unknown workload" in res.output
    assert executor.configs == []


def test_from_server_refuses_a_plan_file_and_needs_a_url(tmp_path: Path) -> None:
    plan = tmp_path / "p.json"
    plan.write_text('{"configs": [{"workload": "gemm", "parameters": {"precision": "bf16"}}]}')
    for extra in (["--plan", str(plan), "--url", "http://127.0.0.1:9"], ["--smoke", "--url", "http://x"], []):
        res = CliRunner().invoke(cli.agent_app, ["run", "--from-server", *extra])
        assert res.exit_code == 2 and "--from-server" in res.output


def test_plan_cells_this_agent_cannot_run_are_passed_over() -> None:
    cell = {"workload": "llm-train", "parameters": {**JOB, "gpu_count": 1}}
    cells = [
        {**cell, "rank": 1, "parameters": {**JOB, "gpu_count": 2, "sharding": "ddp", "global_batch": 8}},
        {**cell, "rank": 2, "parameters": {**JOB, "model": "no-such-model"}},
        {**cell, "rank": 3},
        {**cell, "rank": 4, "parameters": {**JOB, "batch_size": 2}},
        {**cell, "rank": 5, "parameters": {**JOB, "batch_size": 1}},
    ]
    plan, skipped = plan_from_cells(cells, top=2)
    assert [c.parameters["batch_size"] for c in plan.configs] == [4, 2]
    assert len(skipped) == 2 and "needs 2 GPUs" in skipped[0] and "no-such-model" in skipped[1]
