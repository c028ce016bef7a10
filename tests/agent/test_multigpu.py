"""Multi-GPU suite: planning, environment, result format, and real torchrun launches on CPU.

The launches use the gloo backend at world sizes 1 and 2 (what a CPU machine can do); the
NCCL path is exercised on GPU hosts (docs/multigpu.md). Tests that need torch or
transformers skip when those are not installed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from service.agent.multigpu import collectives
from service.agent.multigpu.cli import EXIT_USAGE, main, parser, plan_from_args
from service.agent.multigpu.env import SAFE_ENV, nvls_disabled, safe_environ
from service.agent.multigpu.launcher import (
    CollectivePlan,
    Job,
    JobOutcome,
    LlmPlan,
    SuitePlan,
    assemble_runs,
    build_jobs,
    job_environment,
    run_job,
    run_suite,
    torchrun_command,
    validate_run,
)
from service.agent.multigpu.llm_train import accumulation_steps
from service.agent.multigpu.model_config import SUITE_PRESETS, UnknownModelError, resolve_shape
from service.core.catalog.fingerprint import check_fingerprint
from service.core.catalog.vocabulary import (
    FINGERPRINT_FIELDS,
    SUITE_VERSION,
    canonical_parameters,
    check_metric,
    suite_definition_hash,
)
from service.schemas.benchmarks import BenchmarkRunIn

# --- pure planning and formulas -----------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "n", "factor"),
    [
        ("all_reduce", 1, 0.0),
        ("all_reduce", 2, 1.0),
        ("all_reduce", 8, 1.75),
        ("all_gather", 8, 0.875),
        ("reduce_scatter", 4, 0.75),
        ("broadcast", 8, 1.0),
    ],
)
def test_bus_factor_follows_nccl_tests(op: str, n: int, factor: float) -> None:
    assert collectives.bus_factor(op, n) == pytest.approx(factor)


def test_bus_factor_rejects_unknown_op() -> None:
    with pytest.raises(ValueError):
        collectives.bus_factor("all_to_all", 2)


def test_message_sizes_and_alignment() -> None:
    assert collectives.message_sizes(1024, 2**30) == [1024 * 4**k for k in range(11)]
    assert collectives.aligned_message_bytes(1000, 8, "bf16") == 992  # 8 ranks x 2 B quantum
    assert collectives.aligned_message_bytes(3, 8, "fp32") == 32  # never below one element per rank
    with pytest.raises(ValueError):
        collectives.message_sizes(0, 10)


def test_accumulation_keeps_global_batch_fixed() -> None:
    assert [accumulation_steps(32, 4, n) for n in (1, 2, 4, 8)] == [8, 4, 2, 1]
    for bad in ((32, 4, 16), (30, 4, 2)):
        with pytest.raises(ValueError):
            accumulation_steps(*bad)


def test_build_jobs_skips_what_cannot_run() -> None:
    plan = SuitePlan(
        world_sizes=(1, 2, 4, 8),
        llm=(LlmPlan(model="gt-llama-350m", batch_size=4, global_batch=8, include_unsharded_baseline=True),),
    )
    jobs, skipped = build_jobs(plan, visible_devices=4)
    labels = [j.label for j in jobs]
    assert labels == [
        "collective ws1",
        "llm-train gt-llama-350m none ws1 bs4x2048",
        "llm-train gt-llama-350m ddp ws1 bs4x2048",
        "llm-train gt-llama-350m fsdp ws1 bs4x2048",
        "collective ws2",
        "llm-train gt-llama-350m ddp ws2 bs4x2048",
        "llm-train gt-llama-350m fsdp ws2 bs4x2048",
        "collective ws4",
    ]
    assert any("world size 8: needs 8 GPUs, 4 visible" in s for s in skipped)
    assert sum("not a multiple" in s for s in skipped) == 2  # ddp and fsdp at 4: 8 < 4 x 4
    coll = jobs[0]
    assert len(coll.expected) == 3 * 11
    for j in jobs:
        for e in j.expected:  # every expected cell is valid vocabulary
            canonical_parameters(e["workload"], e["parameters"])
            assert e["parameters"]["gpu_count"] == j.world_size


def test_every_launch_gets_nvls_off() -> None:
    env = safe_environ({"NCCL_NVLS_ENABLE": "1", "PATH": "/bin"}, NCCL_NVLS_ENABLE="1")
    assert {k: env[k] for k in SAFE_ENV} == dict(SAFE_ENV)
    assert env["PATH"] == "/bin"
    assert nvls_disabled(env) and not nvls_disabled({"PATH": "/bin"})
    jenv = job_environment({"TORCH_SYMM_MEM_DISABLE_MULTICAST": "0", "PYTHONPATH": "/x"})
    assert nvls_disabled(jenv)
    root = str(Path(__file__).resolve().parents[2])
    assert jenv["PYTHONPATH"].split(":")[:2] == [root, "/x"]


def test_torchrun_command_is_standalone_one_process_per_gpu(tmp_path: Path) -> None:
    cmd = torchrun_command("/py", 4, tmp_path / "job.json", tmp_path)
    assert cmd[:4] == ["/py", "-m", "torch.distributed.run", "--standalone"]
    assert cmd[cmd.index("--nproc-per-node") + 1] == "4"
    assert cmd[cmd.index("-m", 3) + 1] == "service.agent.multigpu.worker"


def test_model_shapes_come_from_the_core_presets() -> None:
    assert resolve_shape("mg-tiny-llama") is SUITE_PRESETS["mg-tiny-llama"]
    with pytest.raises(UnknownModelError):
        resolve_shape("no-such-model-xyz")
    core = pytest.importorskip("service.core.catalog.models")
    spec: Any = core.get_model("gt-llama-1b-v128k")
    shape = resolve_shape("gt-llama-1b-v128k")
    assert (shape.hidden_size, shape.num_layers, shape.num_kv_heads, shape.vocab_size) == (
        spec.hidden_size,
        spec.num_layers,
        spec.num_kv_heads,
        spec.vocab_size,
    )


@pytest.fixture
def isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI forces SAFE_ENV into its own process; keep that from leaking past the test."""
    for key in SAFE_ENV:
        monkeypatch.setenv(key, "unset-by-test")


def test_cli_plans(tmp_path: Path, isolated_env: None) -> None:
    smoke = plan_from_args(parser().parse_args(["--smoke"]))
    assert (smoke.backend, smoke.device, smoke.world_sizes) == ("gloo", "cpu", (1, 2))
    gpu = plan_from_args(
        parser().parse_args(
            ["--backend", "nccl", "--world-sizes", "1,2", "--max-bytes", "64MiB", "--models", "a,b"]
        )
    )
    assert gpu.collective is not None and gpu.collective.max_bytes == 64 * 2**20
    assert [p.model for p in gpu.llm] == ["a", "b"] and gpu.world_sizes == (1, 2)
    assert main(["--ops", "all_to_all", "-o", str(tmp_path / "x.json")]) == EXIT_USAGE


def test_fingerprint_from_this_host_is_complete(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    from service.agent.multigpu import fingerprint as fpm

    for key, value in SAFE_ENV.items():
        monkeypatch.setenv(key, value)
    fp = fpm.build_fingerprint(backend="gloo", info=None, attention_backend=fpm.sdpa_backend("cpu"))
    assert set(fp) == set(FINGERPRINT_FIELDS)
    check_fingerprint(fp)
    assert fp["nccl_nvls_enable"] is False and fp["driver_version"] == "none"
    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")
    assert fpm.build_fingerprint(backend="gloo", info=None, attention_backend="x")["nccl_nvls_enable"] is True
    try:  # same host id as the single-GPU agent, so "results from >= 2 hosts" counts hosts
        from service.agent.payload import host_id
    except ImportError:
        return
    assert fpm.host_id() == host_id()


# --- result format without launching ----------------------------------------------------

FAKE_FP: dict[str, Any] = {k: None for k in FINGERPRINT_FIELDS} | {
    "suite_version": SUITE_VERSION,
    "workload_definition_hash": suite_definition_hash(),
    "driver_version": "none",
    "cuda_version": "none",
    "torch_version": "2.13.0+cpu",
    "attention_backend": "none",
    "tf32_matmul": False,
    "tf32_cudnn": False,
    "torch_compile": False,
    "ecc_mode": "none",
    "mig_mode": "none",
    "pci_device_id": "0x0000",
    "host_id": "test-host",
    "nccl_nvls_enable": False,
}
FAKE_GPU = {"name": "CPU", "pci_device_id": "0x0000", "memory_total_bytes": 0}


def _validate_like_the_service(run: dict[str, Any]) -> None:
    BenchmarkRunIn.model_validate(run)
    try:  # and as `gpu-advisor agent submit` checks a file before sending it
        from service.agent.payload import validate_run as agent_validate
    except ImportError:
        pass
    else:
        assert agent_validate(run) == []
    check_fingerprint(run["fingerprint"])
    for i, r in enumerate(run["results"]):
        canonical_parameters(r["workload"], r["parameters"])
        for name, mv in r["metrics"].items():
            check_metric(r["workload"], name, mv["value"], mv["unit"], ("results", i, "metrics", name))


def test_failed_job_results_are_filled_in_as_oom_or_error() -> None:
    plan = SuitePlan(
        world_sizes=(2,),
        backend="gloo",
        device="cpu",
        collective=CollectivePlan(ops=("all_reduce",), min_bytes=1024, max_bytes=4096),
        llm=(LlmPlan(model="mg-tiny-llama", batch_size=1, global_batch=2, shardings=("fsdp",)),),
    )
    jobs, _ = build_jobs(plan, visible_devices=None)
    coll, llm = jobs
    first = coll.expected[0]
    done = dict(first) | {
        "status": "ok",
        "metrics": {
            "time_ms": {"value": 1.0, "unit": "ms"},
            "busbw_gb_per_s": {"value": 0.001, "unit": "GB/s"},
        },
        "extra": {"suite": "internal"},
    }

    def outcome(job: Job, results: list[dict[str, Any]], failure: str) -> JobOutcome:
        return JobOutcome(
            job,
            results,
            None,
            None,
            "2026-01-01T00:00:00+00:00",
            "2026-01-01T00:01:00+00:00",
            3,
            failure,
            "log",
        )

    runs = assemble_runs(
        [
            outcome(coll, [done], "rank 1: RuntimeError: connection reset"),
            outcome(llm, [], "OOM: rank 0: OutOfMemoryError: CUDA out of memory"),
        ],
        fallback_fingerprint=lambda: dict(FAKE_FP),
        fallback_gpu=lambda: dict(FAKE_GPU),
    )
    assert len(runs) == 1 and runs[0]["gpu_count"] == 2
    statuses = [(r["workload"], r["status"]) for r in runs[0]["results"]]
    assert statuses == [("collective", "ok"), ("collective", "error"), ("llm-train", "oom")]
    assert "extra" not in runs[0]["results"][0]
    assert "connection reset" in runs[0]["results"][1]["error"]
    assert "FAILED" in runs[0]["notes"] and "NCCL_NVLS_ENABLE=0" in runs[0]["notes"]
    validate_run(runs[0])
    _validate_like_the_service(runs[0])


# --- real torchrun launches on CPU (gloo) ------------------------------------------------


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Three real jobs: collectives at world size 2, DDP at 1, FSDP at 2."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    plan = SuitePlan(
        world_sizes=(1, 2),
        backend="gloo",
        device="cpu",
        collective=CollectivePlan(
            ops=("all_reduce", "all_gather", "reduce_scatter"), min_bytes=4096, max_bytes=4096, dtype="fp32",
            warmup=1, iters=2, repeats=2,
        ),
        llm=(LlmPlan(model="mg-tiny-llama", precision="amp_bf16", batch_size=1, seq_len=32, global_batch=2,
                     shardings=("ddp", "fsdp"), warmup_steps=1, steps=2),),
        job_timeout_s=120,
    )  # fmt: skip
    jobs, skipped = build_jobs(plan, visible_devices=None)
    assert not skipped
    # collective ws1 runs in test_cli_smoke_writes_validated_runs; three launches keep this fast
    keep = {
        "collective ws2",
        "llm-train mg-tiny-llama ddp ws1 bs1x32",
        "llm-train mg-tiny-llama fsdp ws2 bs1x32",
    }
    base = tmp_path_factory.mktemp("multigpu")
    outcomes = [run_job(j, plan, base / f"job{i}") for i, j in enumerate(jobs) if j.label in keep]
    assert len(outcomes) == 3
    for oc in outcomes:
        assert oc.failure is None, f"{oc.job.label}: {oc.failure}\n{oc.log_tail}"
    runs = assemble_runs(
        outcomes, fallback_fingerprint=lambda: dict(FAKE_FP), fallback_gpu=lambda: dict(FAKE_GPU)
    )
    return {"runs": runs, "outcomes": outcomes, "base": base}


def test_launched_runs_validate_against_the_submission_schema(
    launched: dict[str, Any], tmp_path: Path
) -> None:
    runs = launched["runs"]
    # one run per (world size, fingerprint): collectives share the amp_bf16 llm-train stack
    assert sorted((r["gpu_count"], sorted({x["workload"] for x in r["results"]})) for r in runs) == [
        (1, ["llm-train"]),
        (2, ["collective", "llm-train"]),
    ]
    for run in runs:
        _validate_like_the_service(run)
        fp = run["fingerprint"]
        assert fp["nccl_nvls_enable"] is False  # the worker saw the safe environment
        assert fp["driver_version"] == "none" and fp["pci_device_id"] == "0x0000"
        assert fp["attention_backend"] == "torch-sdpa[cpu]" and fp["tf32_matmul"] is True
        assert all(r["status"] == "ok" for r in run["results"])
    out = tmp_path / "runs.json"
    out.write_text(json.dumps(runs))
    assert [BenchmarkRunIn.model_validate(r).gpu_count for r in json.loads(out.read_text())]


def test_launched_collectives_follow_bus_conventions(launched: dict[str, Any]) -> None:
    cells = [r for run in launched["runs"] for r in run["results"] if r["workload"] == "collective"]
    assert len(cells) == 3
    for c in cells:
        p, m = c["parameters"], c["metrics"]
        n = p["gpu_count"]
        assert p["backend"] == "gloo" and p["message_bytes"] == 4096
        algbw = p["message_bytes"] / (m["time_ms"]["value"] / 1e3) / 1e9
        assert m["algbw_gb_per_s"]["value"] == pytest.approx(algbw, rel=1e-9)
        assert m["busbw_gb_per_s"]["value"] == pytest.approx(
            algbw * collectives.bus_factor(p["op"], n), rel=1e-9
        )
        assert n == 2 and m["busbw_gb_per_s"]["value"] > 0


def test_launched_llm_train_holds_the_global_batch(launched: dict[str, Any]) -> None:
    cells = {
        r["parameters"]["sharding"]: r
        for run in launched["runs"]
        for r in run["results"]
        if r["workload"] == "llm-train"
    }
    assert set(cells) == {"ddp", "fsdp"}
    for sharding, ws in (("ddp", 1), ("fsdp", 2)):
        r = cells[sharding]
        p = r["parameters"]
        assert (p["gpu_count"], p["global_batch"], p["batch_size"], p["model"]) == (ws, 2, 1, "mg-tiny-llama")
        assert p["precision"] == "amp_bf16"
        tput = r["metrics"]["throughput"]["value"]
        assert tput == pytest.approx(2 * 32 / r["step_time_s"], rel=1e-9)
        assert r["repeats"] == 2
        assert "mfu" not in r["metrics"]  # no known peak for a CPU
    raw = {oc.job.spec.get("sharding"): oc.results for oc in launched["outcomes"]}
    assert raw["ddp"][0]["extra"]["accumulation_steps"] == 2
    assert raw["fsdp"][0]["extra"]["accumulation_steps"] == 1


def test_a_failing_job_becomes_an_error_result(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    plan = SuitePlan(
        world_sizes=(1,),
        backend="gloo",
        device="cpu",
        collective=None,
        llm=(
            LlmPlan(
                model="no-such-model-xyz",
                precision="fp32",
                batch_size=1,
                seq_len=8,
                global_batch=1,
                shardings=("ddp",),
            ),
        ),
        job_timeout_s=120,
    )
    (job,), _ = build_jobs(plan, visible_devices=None)
    oc = run_job(job, plan, tmp_path / "bad")
    assert oc.returncode != 0 and oc.failure is not None and "UnknownModelError" in oc.failure
    assert (tmp_path / "bad" / "error-rank0.json").exists()
    runs = assemble_runs(
        [oc], fallback_fingerprint=lambda: dict(FAKE_FP), fallback_gpu=lambda: dict(FAKE_GPU)
    )
    (result,) = runs[0]["results"]
    assert result["status"] == "error" and "no-such-model-xyz" in result["error"]
    _validate_like_the_service(runs[0])


def test_a_job_past_its_time_limit_is_killed(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    plan = SuitePlan(world_sizes=(1,), backend="gloo", device="cpu", job_timeout_s=0.5,
                     collective=CollectivePlan(ops=("all_reduce",), min_bytes=1024, max_bytes=1024))  # fmt: skip
    (job,), _ = build_jobs(plan, visible_devices=None)
    oc = run_job(job, plan, tmp_path / "slow")
    assert oc.failure is not None and oc.failure.startswith("timed out")
    runs = assemble_runs(
        [oc], fallback_fingerprint=lambda: dict(FAKE_FP), fallback_gpu=lambda: dict(FAKE_GPU)
    )
    assert runs[0]["results"][0]["status"] == "error"


def test_cli_smoke_writes_validated_runs(tmp_path: Path, isolated_env: None) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "runs.json"
    rc = main(["--smoke", "--workloads", "collective", "--world-sizes", "1", "--ops", "all_reduce", "-q", "-o", str(out),
               "--details", str(tmp_path / "details.json")])  # fmt: skip
    assert rc == 0
    (run,) = json.loads(out.read_text())
    _validate_like_the_service(run)
    assert run["gpu_count"] == 1 and {r["parameters"]["op"] for r in run["results"]} == {"all_reduce"}
    for r in run["results"]:  # one rank: nothing crosses a bus
        assert r["status"] == "ok" and r["metrics"]["busbw_gb_per_s"]["value"] == 0
        assert r["metrics"]["algbw_gb_per_s"]["value"] > 0
    assert json.loads((tmp_path / "details.json").read_text())[0]["returncode"] == 0


# --- declared variants: optimizer implementation, FSDP mixed-precision policy, loop ----------

REPO = Path(__file__).resolve().parents[2]


def test_variants_are_checked_before_anything_is_launched() -> None:
    def jobs(**kw: Any) -> list[Job]:
        plan = SuitePlan(world_sizes=(1,), collective=None,
                         llm=(LlmPlan(model="gt-llama-350m", batch_size=4, global_batch=4, **kw),))  # fmt: skip
        return build_jobs(plan, visible_devices=1)[0]

    ddp, fsdp = jobs(mixed_precision="autocast", optimizer_impl="foreach", loop="keeps_outputs")
    assert ddp.spec["optimizer_impl"] == "foreach" and ddp.label.startswith("llm-train gt-llama-350m ddp")
    assert fsdp.label == "llm-train gt-llama-350m fsdp ws1 bs4x2048 foreach keeps_outputs"
    p = fsdp.expected[0]["parameters"]
    assert (p["optimizer_impl"], p["mixed_precision"], p["loop"]) == ("foreach", "autocast", "keeps_outputs")
    canon = canonical_parameters("llm-train", p)
    assert canon["loop"] == "keeps_outputs" and "mixed_precision" not in canon  # default: left out
    with pytest.raises(ValueError, match="mixed_precision"):  # the policy is an FSDP option
        jobs(mixed_precision="fsdp_policy")
    with pytest.raises(ValueError, match="mixed_precision"):  # and casts fp32 params: amp_bf16 only
        jobs(mixed_precision="fsdp_policy", shardings=("fsdp",), precision="bf16")
    with pytest.raises(ValueError, match="optimizer_impl"):
        jobs(optimizer_impl="apex")
    (policy,) = jobs(mixed_precision="fsdp_policy", shardings=("fsdp",))
    assert policy.label.endswith("fsdp_policy")
    args = parser().parse_args(["--models", "gt-llama-350m", "--optimizer-impl", "forloop", "--loop",
                                "keeps_outputs", "--mixed-precision", "fsdp_policy"])  # fmt: skip
    (lp,) = plan_from_args(args).llm
    assert (lp.optimizer_impl, lp.loop, lp.mixed_precision) == ("forloop", "keeps_outputs", "fsdp_policy")


def test_plan_files_and_resume(tmp_path: Path, isolated_env: None) -> None:
    plan_path = REPO / "service/agent/plans/h200-variants-fsdp-ws1.json"
    plan = plan_from_args(
        parser().parse_args(["--plan", str(plan_path), "--backend", "nccl", "--time-budget", "300"])
    )
    assert plan.collective is None and plan.world_sizes == (1,) and plan.time_budget_s == 300
    jobs, skipped = build_jobs(plan, visible_devices=1)
    assert len(jobs) == 24 and not skipped
    cells = {
        (j.spec["model"], j.spec["optimizer_impl"], j.spec["mixed_precision"], j.spec["batch_size"])
        for j in jobs
    }
    assert len(cells) == 24
    assert {j.spec["global_batch"] for j in jobs if j.spec["model"] == "llama2-7b"} == {
        1,
        2,
    }  # one micro-batch
    # --resume: cells a runs file holds as ok or oom are not run again; errors are
    first, second, third = (dict(j.expected[0]) for j in jobs[:3])
    runs = [{"results": [first | {"status": "ok"}, second | {"status": "oom"}, third | {"status": "error"}]}]
    done_file = tmp_path / "done.json"
    done_file.write_text(json.dumps(runs))
    resumed = plan_from_args(parser().parse_args(["--plan", str(plan_path), "--resume", str(done_file)]))
    jobs2, skipped2 = build_jobs(resumed, visible_devices=1)
    assert len(jobs2) == 22 and sum("already measured" in s for s in skipped2) == 2
    assert jobs2[0].label == jobs[2].label
    # a plan file's entries: defaults overlaid, unknown keys refused
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"llm": [{"model": "gt-llama-350m", "batch_size": 2, "batch": 3}]}))
    assert main(["--plan", str(bad), "-o", str(tmp_path / "x.json")]) == EXIT_USAGE
    bad.write_text(json.dumps({"llm": [{"model": "gt-llama-350m", "batch_size": 2, "shardings": ["ddp"],
                                        "mixed_precision": "fsdp_policy"}]}))  # fmt: skip
    assert main(["--plan", str(bad), "-o", str(tmp_path / "x.json")]) == EXIT_USAGE
    assert not (tmp_path / "x.json").exists()


def test_launched_variants_on_cpu(tmp_path: Path) -> None:
    """Real torchrun jobs at world size 1 (gloo): FSDP2 with the mixed-precision policy,
    foreach AdamW, the keeps_outputs loop and checkpointing; the plain model with the for-loop
    AdamW; a third job the time budget leaves out (and the runs say so)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    common: dict[str, Any] = dict(model="mg-tiny-llama", batch_size=1, seq_len=32, global_batch=2,
                                  warmup_steps=1, steps=2, est_s=1.0)  # fmt: skip
    plan = SuitePlan(
        world_sizes=(1,),
        backend="gloo",
        device="cpu",
        collective=None,
        llm=(
            LlmPlan(precision="amp_bf16", shardings=("fsdp",), mixed_precision="fsdp_policy",
                    optimizer_impl="foreach", loop="keeps_outputs", gradient_checkpointing=True, **common),
            LlmPlan(precision="fp32", shardings=("none",), optimizer_impl="forloop", **common),
            LlmPlan(precision="fp32", shardings=("fsdp",), **(common | {"est_s": 10_000.0})),
        ),
        job_timeout_s=120,
        time_budget_s=600,
    )  # fmt: skip
    runs, outcomes = run_suite(plan, workdir=tmp_path)
    assert [oc.job.label for oc in outcomes] == [
        "llm-train mg-tiny-llama fsdp ws1 bs1x32 ckpt foreach fsdp_policy keeps_outputs",
        "llm-train mg-tiny-llama none ws1 bs1x32 forloop",
    ]
    for oc in outcomes:
        assert oc.failure is None, f"{oc.job.label}: {oc.failure}\n{oc.log_tail}"
    assert len(runs) == 2  # amp_bf16 and strict fp32: two stacks (the TF32 switches differ)
    for run in runs:
        _validate_like_the_service(run)
        assert (
            "not run (time budget 600 s): 1 job(s)" in run["notes"] and "MixedPrecisionPolicy" in run["notes"]
        )
    results = [r for run in runs for r in run["results"]]
    policy, plain = (r["parameters"] for r in results)
    assert (policy["mixed_precision"], policy["optimizer_impl"], policy["loop"], policy["sharding"]) == (
        "fsdp_policy",
        "foreach",
        "keeps_outputs",
        "fsdp",
    )
    assert policy["gradient_checkpointing"] is True and policy["global_batch"] == 2
    assert plain["optimizer_impl"] == "forloop" and "loop" not in plain and "mixed_precision" not in plain
    # what the steps really computed in: the policy casts the gathered parameters to bf16 without
    # autocast (logits bf16) while the optimizer updates fp32 sharded parameters
    dtypes = [oc.results[0]["extra"]["dtypes"] for oc in outcomes]
    assert dtypes == [{"lm_head_output": "bfloat16", "optimizer_param": "float32"},
                      {"lm_head_output": "float32", "optimizer_param": "float32"}]  # fmt: skip
    for r in results:  # CPU: no allocator peaks, and a window under 1 s reports no energy
        assert (
            "optimizer_step_peak_allocated_bytes" not in r["metrics"]
            and "energy_per_step_j" not in r["metrics"]
        )
