"""The runner: per-configuration processes, OOM/error/crash/timeout isolation, time budget,
the --smoke suite on the CPU end to end, and the payloads it builds."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from service.agent import cli
from service.agent.payload import build_runs, measured_keys, read_runs, validate_run
from service.agent.plan import ConfigSpec, Plan, PlanError, load_plan, make_config, plan_from_dict, smoke_plan
from service.agent.probe import probe
from service.agent.runner import ConfigOutcome, Executor, Runner
from tests.agent.fake_nvml import FakeNvml, load_capture

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_HF = (
    HAS_TORCH
    and importlib.util.find_spec("transformers") is not None
    and importlib.util.find_spec("peft") is not None
)
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (pip install torch)")
needs_hf = pytest.mark.skipif(
    not HAS_HF, reason="torch, transformers and peft are needed for the smoke suite"
)

REPO = Path(__file__).resolve().parents[2]
FAKE = "tests.agent.fake_workloads"


@pytest.fixture(scope="module")
def executor() -> Executor:
    return Executor("forkserver")


def payload(behaviour: str) -> dict[str, Any]:
    return {
        "kind": "config",
        "workload": "gemm",
        "module": FAKE,
        "parameters": {"precision": "bf16", "n": 64},
        "smoke": True,
        "options": {"behaviour": behaviour},
    }


@needs_torch
@pytest.mark.parametrize(
    ("behaviour", "status", "text"),
    [
        ("ok", "ok", None),
        ("oom", "oom", "OutOfMemoryError"),
        ("cublas-oom", "oom", "CUBLAS_STATUS_ALLOC_FAILED"),
        ("error", "error", "kernel exploded"),
        ("crash", "error", "exit code 7"),
        ("skip", "skipped", "not on this hardware"),
    ],
)
def test_each_configuration_is_isolated(
    executor: Executor, behaviour: str, status: str, text: str | None
) -> None:
    out = executor.run(payload(behaviour), timeout_s=60)
    assert out["status"] == status
    if text:
        assert text in out["error"]
    else:
        assert out["metrics"] == {"tflops": 1.5}
        assert out["flags"] == {"tf32_matmul": True, "tf32_cudnn": True}


@needs_torch
def test_a_hanging_configuration_is_killed(executor: Executor) -> None:
    out = executor.run(payload("hang"), timeout_s=2)
    assert out["status"] == "error" and "timeout" in out["error"]
    assert executor.run(payload("ok"), timeout_s=60)["status"] == "ok"  # the next one is unaffected


class FakeExecutor:
    def __init__(self, step_s: float, clock: list[float]) -> None:
        self.step_s, self.clock, self.payloads = step_s, clock, []

    def run(self, payload: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.payloads.append((payload, timeout_s))
        self.clock[0] += self.step_s
        return {
            "status": "ok",
            "metrics": {"tflops": 1.0},
            "step_time_s": 0.1,
            "repeats": 3,
            "flags": {"tf32_matmul": True, "tf32_cudnn": True},
            "clock_event_reasons": 0x40,
        }


def test_time_budget_stops_before_a_config_that_would_overrun() -> None:
    clock = [0.0]
    plan = plan_from_dict(
        {
            "configs": [
                {"workload": "gemm", "parameters": {"precision": p}, "est_s": 10}
                for p in ("bf16", "fp16", "tf32", "fp32")
            ]
        }
    )
    fake = FakeExecutor(step_s=10.0, clock=clock)
    runner = Runner(fake, smoke=True, nvml_index=None, time_budget_s=25, clock=lambda: clock[0])  # type: ignore[arg-type]
    outcomes = runner.run(plan)
    assert [o.spec.parameters["precision"] for o in outcomes] == ["bf16", "fp16"]
    assert [c.parameters["precision"] for c in runner.log.not_run] == ["tf32", "fp32"]
    assert fake.payloads[1][1] <= 25 - 10 + 30  # a config's timeout never runs far past the budget
    assert any("hw_thermal_slowdown" in e for e in runner.log.throttle_events)


@needs_hf
def test_smoke_run_end_to_end_on_cpu(tmp_path: Path) -> None:
    out = tmp_path / "smoke.json"
    res = CliRunner().invoke(
        cli.agent_app,
        [
            "run",
            "--smoke",
            "--workloads",
            "gemm,memory-bandwidth,resnet50-train,bert-large-train,bert-large-infer,llm-train,llm-infer",
            "-o",
            str(out),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    runs = read_runs(out)
    assert json.loads(res.stdout) == runs
    assert [r["run_id"].rsplit("-", 1)[1] for r in runs] == ["fp32strict", "tf32"]
    for r in runs:
        assert validate_run(r) == []
        assert r["fingerprint"]["tf32_matmul"] is r["run_id"].endswith("tf32")
    results = [x for r in runs for x in r["results"]]
    assert {x["status"] for x in results} == {"ok"}
    workloads = {x["workload"] for x in results}
    assert {"gemm", "memory-bandwidth", "bert-large-train", "llm-train", "llm-infer"} <= workloads
    infer = next(x for x in results if x["workload"] == "llm-infer")
    assert set(infer["metrics"]) >= {
        "ttft_ms_p50",
        "ttft_ms_p99",
        "tpot_ms_p50",
        "tpot_ms_p99",
        "output_tokens_per_s",
    }
    lora = next(x for x in results if x["workload"] == "llm-train" and x["parameters"]["finetune"] == "lora")
    assert lora["parameters"]["lora_targets"] == "k_proj,o_proj,q_proj,v_proj"
    # the declared loop variants run, as cells of their own; the reference loop's cells name none
    train = [x for x in results if x["workload"] == "llm-train"]
    variants = {(x["parameters"].get("loop"), x["parameters"].get("optimizer_impl")) for x in train}
    assert variants == {(None, None), ("keeps_outputs", "foreach"), (None, "forloop")}
    assert all("optimizer_step_peak_allocated_bytes" not in x["metrics"] for x in train)  # CUDA only
    bert_infer = next(x for x in results if x["workload"] == "bert-large-infer")
    assert (
        bert_infer["metrics"]["throughput"]["unit"] == "samples/s"
        and bert_infer["parameters"]["seq_len"] == 16
    )
    notes = runs[0]["notes"]
    assert "smoke=true" in notes and "fp8" in notes  # fp8 gemm is skipped on a CPU, and said so
    try:
        import torchvision  # noqa: F401
    except Exception:
        assert "torchvision is not importable" in notes  # ResNet skips cleanly without torchvision
    # --resume skips what the file already holds
    res = CliRunner().invoke(
        cli.agent_app,
        ["run", "--smoke", "--workloads", "gemm", "--resume", str(out), "-o", str(tmp_path / "again.json")],
    )
    assert res.exit_code == 0, res.output
    assert "already measured" in res.output and not (tmp_path / "again.json").exists()


@needs_torch
@pytest.mark.parametrize(
    ("impl", "foreach", "fused"), [("fused", None, None), ("foreach", True, False), ("forloop", False, False)]
)
def test_optimizer_implementations(impl: str, foreach: bool | None, fused: bool | None) -> None:
    """On the CPU ``fused`` is torch's default choice (fused=True only on CUDA); the other two
    are pinned either way. One real step each: the implementations compute the same update."""
    import torch

    from service.agent.suite.common import Context, OptimizerStepPeak, adamw, backward_and_step

    ctx = Context(device="cpu", smoke=True, nvml_index=None, warmup=1, steps=1, repeats=1)
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(64, 64))
    opt = adamw(ctx, [w], impl)
    assert (opt.defaults["foreach"], opt.defaults["fused"]) == (foreach, fused)
    peak = OptimizerStepPeak(ctx)
    peak.arm()
    assert not peak.armed  # the optimizer-step peak is a CUDA allocator figure: inert on the CPU
    backward_and_step((w * w).sum(), opt, None, peak)
    assert w.grad is None and peak.value is None
    torch.manual_seed(0)
    ref = torch.nn.Parameter(torch.randn(64, 64))
    ref_opt = torch.optim.AdamW([ref], lr=1e-4, foreach=False)
    (ref * ref).sum().backward()
    ref_opt.step()
    # the same update (lr 1e-4 moves every weight by ~1e-4) up to float32 rounding: the foreach and
    # for-loop kernels may round one ulp apart (2.4e-7 at |w| ~ 2; which SIMD path runs depends
    # on the tensor's alignment), so 1e-7 was flaky; 1e-6 is still a hundredth of the step
    torch.manual_seed(0)
    w0 = torch.randn(64, 64)
    assert float((ref.detach() - w0).abs().min()) > 5e-5
    assert torch.allclose(w, ref, rtol=0, atol=1e-6)


def test_build_runs_groups_by_tf32_and_carries_the_probe() -> None:
    host = probe(FakeNvml(load_capture("nvml_h200_real.json")))
    gpu = host.gpus[0]
    specs = [make_config({"workload": "gemm", "parameters": {"precision": p}}) for p in ("fp32", "bf16")]
    oom = make_config(
        {
            "workload": "llm-train",
            "parameters": {"model": "llama3-8b", "precision": "amp_bf16", "batch_size": 2, "seq_len": 2048},
        }
    )
    outcomes = [
        ConfigOutcome(
            specs[0],
            {
                "status": "ok",
                "metrics": {"tflops": 51.2, "bogus": 1},
                "step_time_s": 0.02,
                "repeats": 50,
                "flags": {"tf32_matmul": False, "tf32_cudnn": False},
            },
            1.0,
        ),
        ConfigOutcome(
            specs[1],
            {
                "status": "ok",
                "metrics": {"tflops": 780.0},
                "step_time_s": 0.0014,
                "repeats": 50,
                "flags": {"tf32_matmul": True, "tf32_cudnn": True},
            },
            1.0,
        ),
        ConfigOutcome(
            oom, {"status": "oom", "error": "CUDA out of memory", "peak_allocated_bytes": 148 * 2**30}, 2.0
        ),
    ]
    env = {
        "torch_version": "2.11.0+cu130",
        "cuda_runtime": "13.0",
        "attention_backend": "torch-sdpa[flash]",
        "transformers_version": "5.17.0",
        "cudnn_version": "91900",
        "nccl_version": "2.28.9",
    }
    runs = build_runs(
        outcomes,
        run_id_base="node-20261202T000000Z-abcdef",
        env=env,
        host=host,
        gpu=gpu,
        started_at=dt.datetime(2026, 12, 2, tzinfo=dt.UTC),
        finished_at=None,
        notes="n",
    )
    strict, tf32 = runs
    assert strict["run_id"].endswith("-fp32strict") and tf32["run_id"].endswith("-tf32")
    assert strict["fingerprint"]["tf32_matmul"] is False and tf32["fingerprint"]["tf32_cudnn"] is True
    fp = tf32["fingerprint"]
    assert (fp["pci_device_id"], fp["driver_version"], fp["ecc_mode"], fp["pcie_gen"]) == (
        "0x2335",
        "580.159.04",
        "enabled",
        5,
    )
    assert tf32["gpu"]["slug"] == "nvidia-h200-sxm" and tf32["gpu"]["memory_total_bytes"] == 150754820096
    assert strict["results"][0]["metrics"] == {
        "tflops": {"value": 51.2, "unit": "TFLOP/s"},
        "step_time_s": {"value": 0.02, "unit": "s"},
    }  # unknown metric dropped
    oom_rec = tf32["results"][1]
    assert (
        oom_rec["status"] == "oom" and oom_rec["metrics"] == {} and oom_rec["parameters"]["global_batch"] == 2
    )
    assert measured_keys(runs) == {s.key for s in (*specs, oom)}


def test_plan_files_validate() -> None:
    plan = load_plan(REPO / "service/agent/plans/h200-groundtruth.json")
    train = [c for c in plan.configs if c.workload == "llm-train"]
    assert len(train) >= 45
    assert {c.parameters["precision"] for c in train} >= {"amp_bf16", "bf16", "fp32"}
    assert {c.parameters["attention"] for c in train} == {"sdpa", "eager"}
    assert {c.parameters["finetune"] for c in train} == {"full", "lora"}
    assert (
        min(c.parameters["seq_len"] for c in train) == 512
        and max(c.parameters["seq_len"] for c in train) == 4096
    )
    variants = load_plan(REPO / "service/agent/plans/h200-variants.json")
    vtrain = [c.parameters for c in variants.configs if c.workload == "llm-train"]
    assert {p.get("optimizer_impl") for p in vtrain} == {
        None,
        "foreach",
        "forloop",
    }  # None: fused, the default
    assert {p.get("loop") for p in vtrain} == {None, "keeps_outputs"}
    assert {p["precision"] for p in vtrain} == {"amp_bf16", "tf32", "fp32"}
    assert {c.workload for c in variants.configs} == {
        "llm-train",
        "resnet50-train",
        "bert-large-train",
        "bert-large-infer",
        "resnet50-infer",
    }
    assert isinstance(smoke_plan(), Plan) and all(isinstance(c, ConfigSpec) for c in smoke_plan().configs)
    with pytest.raises(PlanError, match="unknown workload"):
        plan_from_dict({"configs": [{"workload": "nope"}]})
    with pytest.raises(PlanError, match=r"configs\.0\.parameters\.model"):
        plan_from_dict(
            {
                "configs": [
                    {
                        "workload": "llm-train",
                        "parameters": {
                            "model": "no-such-model",
                            "precision": "bf16",
                            "batch_size": 1,
                            "seq_len": 8,
                        },
                    }
                ]
            }
        )
    with pytest.raises(PlanError, match="duplicate"):
        plan_from_dict(
            {
                "configs": [
                    {"workload": "gemm", "parameters": {"precision": "bf16"}},
                    {"workload": "gemm", "parameters": {"precision": "bf16", "n": 8192.0}},
                ]
            }
        )


def test_sanitize_removes_short_window_energy_and_dropped_results(tmp_path: Path) -> None:
    from service.agent.payload import sanitize_run, write_runs

    run = json.loads((Path(__file__).parent / "fixtures" / "run_sample.json").read_text())
    clean, changes = sanitize_run(run, drop=["gemm:precision=int8"], reason="bad layout")
    by = {(x["workload"], x["parameters"].get("precision")): x for x in clean["results"]}
    assert ("gemm", "int8") not in by
    assert "avg_power_w" not in by[("gemm", "bf16")]["metrics"]  # 0.05 s window
    assert by[("llm-train", "amp_bf16")]["metrics"]["avg_power_w"]["value"] == 690.0  # 2 s window: kept
    assert "bad layout" in clean["notes"] and len(changes) == 2
    assert validate_run(clean) == []
    src, out = tmp_path / "in.json", tmp_path / "out.json"
    write_runs(src, [run])
    res = CliRunner().invoke(cli.agent_app, ["sanitize", str(src), "-o", str(out), "--drop", "gemm"])
    assert res.exit_code == 2  # --drop needs --reason
    res = CliRunner().invoke(
        cli.agent_app, ["sanitize", str(src), "-o", str(out), "--drop", "gemm", "--reason", "x"]
    )
    assert res.exit_code == 0, res.output
    assert {x["workload"] for r in read_runs(out) for x in r["results"]} == {"llm-train"}
