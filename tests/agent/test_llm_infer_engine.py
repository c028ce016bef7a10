"""The llm-infer engine plug-in hook: an operator with vLLM installed registers a runner."""

from __future__ import annotations

from typing import Any

import pytest

from service.agent.suite import llm_infer
from service.agent.suite.common import Context, Skip


class _EntryPoint:
    def __init__(self, name: str, obj: object) -> None:
        self.name = name
        self._obj = obj

    def load(self) -> object:
        return self._obj


def _ctx() -> Context:
    return Context(device="cpu", smoke=True, nvml_index=None, warmup=0, steps=1, repeats=1)


@pytest.fixture(autouse=True)
def _torch_imported() -> None:
    """``run`` imports torch, and torch reads its own entry points on first import: imported
    here, before a test patches ``entry_points``, the test sees only the plug-in group's call
    whichever test of the run imported torch first (or none did: -p randomly, -n)."""
    pytest.importorskip("torch")


PARAMS = {
    "model": "gt-llama-110m",
    "precision": "bf16",
    "engine": "vllm",
    "batch_size": 4,
    "input_len": 64,
    "output_len": 8,
    "quant_method": "none",
}


def test_an_engine_without_a_plugin_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.metadata.entry_points", lambda group: [])
    with pytest.raises(Skip, match=r"gpu_advisor\.llm_infer_engines"):
        llm_infer.run(_ctx(), dict(PARAMS))


def test_a_registered_engine_runs_the_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def runner(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
        seen.update(params)
        return {
            "status": "ok",
            "metrics": {"ttft_ms_p50": 10.0, "tpot_ms_p50": 2.0},
            "step_time_s": 0.1,
            "extra": {"engine_version": "vllm 0.0-test"},
        }

    def eps(group: str) -> list[_EntryPoint]:
        assert group == llm_infer.ENGINE_PLUGIN_GROUP
        return [_EntryPoint("sglang", object()), _EntryPoint("vllm", runner)]

    monkeypatch.setattr("importlib.metadata.entry_points", eps)
    out = llm_infer.run(_ctx(), dict(PARAMS))
    assert out["status"] == "ok" and seen["batch_size"] == 4
    assert llm_infer.engine_plugin("tensorrt-llm") is None
