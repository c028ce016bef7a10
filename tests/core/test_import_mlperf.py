"""The MLPerf importer (benchmarks/import_mlperf.py) on a small results repository built here:
time to train from the logs, MLPerf's score, the system description, and the inference summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import import_mlperf as im
from service.core.evidence.published import PRECISIONS


def _log(start_ms: int, minutes: float, status: str = "success", gbs: int = 768) -> str:
    ev = [
        {"key": "submission_benchmark", "value": "bert", "time_ms": start_ms - 5000},
        {"key": "global_batch_size", "value": gbs, "time_ms": start_ms - 4000},
        {"key": "run_start", "value": None, "time_ms": start_ms},
        {
            "key": "run_stop",
            "value": None,
            "time_ms": start_ms + int(minutes * 60000),
            "metadata": {"status": status},
        },
    ]
    lines = ["some launcher noise"] + [":::MLLOG " + json.dumps({"namespace": "", **e}) for e in ev]
    return "\n".join(lines) + "\n"


def _log_with_work(start_ms: int, minutes: float, work: dict[str, float], status: str = "success") -> str:
    lines = _log(start_ms, minutes, status).splitlines()
    stop = json.loads(lines[-1].removeprefix(":::MLLOG "))
    stop["metadata"].update(work)
    return "\n".join([*lines[:-1], ":::MLLOG " + json.dumps(stop)]) + "\n"


def test_a_run_logs_its_work_rate_in_samples_or_epochs() -> None:
    """samples_count (LLMs, LoRA, diffusion) or epoch_num (ResNet, DLRM, ...) at run_stop, over
    the time to train; a run that logs neither has no rate."""
    log = im.parse_mllog(_log_with_work(0, 10.0, {"samples_count": 6000}))
    assert im.run_work_rate(log) == ("train_samples_per_s", pytest.approx(10.0))
    log = im.parse_mllog(_log_with_work(0, 2.0, {"epoch_num": 0.96}))
    assert im.run_work_rate(log) == ("train_epochs_per_s", pytest.approx(0.008))
    assert im.run_work_rate(im.parse_mllog(_log(0, 2.0))) is None


def test_parse_mllog_reads_start_stop_status_and_batch() -> None:
    log = im.parse_mllog(_log(1_000_000, 12.5, gbs=256))
    assert log["benchmark"] == "bert" and log["global_batch_size"] == 256
    assert im.run_minutes(log) == pytest.approx(12.5)
    assert im.run_minutes(im.parse_mllog(_log(0, 3.0, status="aborted"))) is None
    assert im.run_minutes(im.parse_mllog("no mllog here")) is None


def test_olympic_mean_drops_fastest_and_slowest() -> None:
    assert im.olympic_mean([10.0, 1.0, 11.0, 12.0, 100.0]) == pytest.approx(11.0)
    assert im.olympic_mean([4.0, 6.0]) == pytest.approx(5.0)


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("NVIDIA H100-SXM5-80GB", "nvidia-h100-sxm"),
        ("H100 NVL Tensor Core GPU (PCIe)", "nvidia-h100-nvl-94gb"),
        ("NVIDIA H200-NVL-141GB", "nvidia-h200-nvl"),
        ("Virtualized NVIDIA H200-SXM-141GB", "nvidia-h200-sxm"),
        ("NVIDIA Blackwell GPU (B200-SXM-180GB)", "nvidia-b200"),
        ("NVIDIA Blackwell GPU (GB200)", "nvidia-gb200"),
        ("NVIDIA GB300", "nvidia-gb300"),
        ("NVIDIA Blackwell Ultra GPU (B300-SXM-270GB)", "nvidia-b300"),
        ("NVIDIA GH200 Grace Hopper Superchip 144GB", "nvidia-gh200-144gb"),
        ("AMD Instinct MI325X 256GB HBM3E DLC", "amd-mi325x"),
        ("Intel(R) Gaudi(R) 2 AI Accelerator", "intel-gaudi2"),
        ("NVIDIA L4-PCIe-24GB", "nvidia-l4"),
        ("NVIDIA L40S", "nvidia-l40s"),
        ("TPU-v5p", None),
    ],
)
def test_accelerator_names_map_to_catalog_slugs(name: str, slug: str | None) -> None:
    assert im.slug_for(im.clean_name(name)) == slug


@pytest.mark.parametrize(
    ("raw", "precision"),
    [
        ("fp8", "fp8"),
        ("uint8", "int8"),
        ("INT8", "int8"),
        ("UINT4", "int4"),
        ("mxfp4", "mxfp4"),
        ("fp4", "fp4"),
        ("{'clip1': 'fp16', 'clip2': 'fp16', 'unet': 'fp8', 'vae': 'int8'}", "fp8"),
        ("UNSET", None),
    ],
)
def test_inference_weight_types_map_to_precisions(raw: str, precision: str | None) -> None:
    p = im.inference_precision(raw)
    assert p == precision
    assert p is None or p in PRECISIONS


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_training_rows_from_a_results_repository(tmp_path: Path) -> None:
    repo = tmp_path / "results"
    (repo / "Acme" / "systems").mkdir(parents=True)
    (repo / "Acme" / "systems" / "box8.json").write_text(
        json.dumps(
            {
                "submitter": "Acme",
                "division": "closed",
                "system_name": "Box 8",
                "number_of_nodes": "2",
                "accelerators_per_node": "8",
                "accelerator_model_name": "NVIDIA H200-SXM5-141GB",
                "host_processor_model_name": "Xeon 8480",
                "framework": "NGC PyTorch 24.09",
                "status": "available",
            }
        )
    )
    runs = repo / "Acme" / "results" / "box8" / "bert"
    runs.mkdir(parents=True)
    for i, (m, st) in enumerate(
        [(10.0, "success"), (9.0, "success"), (30.0, "success"), (11.0, "success"), (1.0, "aborted")]
    ):
        (runs / f"result_{i}.txt").write_text(_log_with_work(10_000 * i, m, {"samples_count": 6000.0}, st))
    (repo / "Acme" / "results" / "box8" / "unknown_bench").mkdir(parents=True)
    (repo / "Acme" / "results" / "box8" / "unknown_bench" / "result_0.txt").write_text(_log(0, 1.0))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "x")
    commit = im.resolve(str(repo))
    rows, skipped = im.training_rows(im.Snapshot(str(repo), commit), "mlperf-training-test")
    assert skipped == {"benchmark not mapped (unknown_bench)": 1}
    r, rate = rows
    # four converged runs 9, 10, 11, 30: without the fastest and slowest, mean of 10 and 11
    assert r.value == pytest.approx(10.5) and r.metric == "minutes_to_train"
    # their 6,000 samples each at 11.1, 10, 9.09 and 3.33 samples/s: the same mean of 10 and 9.09
    assert rate.metric == "train_samples_per_s" and rate.value == pytest.approx(
        (10.0 + 100 / 11) / 2, rel=1e-5
    )
    assert (rate.system, rate.workload, rate.gpu_count, rate.slug) == (
        r.system,
        r.workload,
        r.gpu_count,
        r.slug,
    )
    assert r.gpu_count == 16 and r.slug == "nvidia-h200-sxm" and r.workload == "mlperf-train-bert"
    assert "NGC PyTorch 24.09" in r.system and "Xeon 8480" in r.system and "2 x 8" in r.system
    assert "4 of 5 runs converged" in r.note and "global batch 768" in r.note


def test_inference_rows_keep_closed_throughput_single_accelerator_entries() -> None:
    base = {
        "ID": "5.1-0001",
        "Submitter": "AMD",
        "Category": "closed",
        "Suite": "datacenter",
        "System": "S",
        "Platform": "P",
        "Model": "llama2-70b-99",
        "Scenario": "Offline",
        "Nodes": 2,
        "a#": 8,
        "Processor": "EPYC",
        "Accelerator": "AMD Instinct MI325X 256GB HBM3e",
        "Software": "vLLM 0.9",
        "weight_data_types": "fp8",
        "Availability": "available",
        "Performance_Result": 1000.0,
        "Performance_Units": "Tokens/s",
    }
    entries = [
        base,
        {**base, "Category": "open"},
        {**base, "Scenario": "SingleStream", "Performance_Units": "Latency (ms)"},
        {
            **base,
            "Accelerator": "AMD Instinct MI300X 192GB HBM3 (x32), AMD Instinct MI325X 256GB HBM3e (x16)",
        },
        {**base, "weight_data_types": "UNSET"},
        {**base, "Scenario": "Interactive", "inferred": 1},
        {**base, "Scenario": "Server", "inferred": 0},
    ]
    rows, skipped = im.inference_rows(entries, "mlperf-inference-test")
    r, server = rows
    assert r.gpu_count == 16 and r.slug == "amd-mi325x" and r.precision == "fp8"
    assert r.workload == "mlperf-infer-offline" and r.metric == "output_tokens_per_s"
    assert r.model == "mlperf/llama2-70b-99" and "vLLM 0.9" in r.system
    assert server.workload == "mlperf-infer-server"
    assert sum(skipped.values()) == 5 and skipped["inferred from another scenario"] == 1


def test_a_power_capped_part_is_not_its_catalog_entry() -> None:
    """An MI355X run under a 1,000 W cap is not the 1,400 W part the catalog's figures describe:
    it keeps its name and no slug, so it makes no pair against the uncapped rows."""
    assert im.slug_for("AMD Instinct MI355X 288GB HBM3e") == "amd-mi355x"
    assert im.slug_for("AMD Instinct MI355X 288GB HBM3e (Power Cap 1000 W)") is None


def test_a_layout_whose_configs_are_all_nvfp4_ran_nvfp4(tmp_path: Path) -> None:
    """MLPerf Training does not state the recipe; where every one of the submitter's own config
    files for a system's layout is an NVFP4 recipe, that is the recipe. A layout with an FP8 file
    beside its FP4 one stays unknown, and a benchmark's size tag picks its files from a shared
    directory (the 8B's configs sit beside 405B-style ones)."""
    impl = tmp_path / "results" / "Acme" / "benchmarks" / "llama31_8b" / "implementations" / "nemo"
    impl.mkdir(parents=True)
    files = {
        "config_GB300_2x4x2xtp1pp1cp1_8b_fp4.sh": "source $(dirname ${BASH_SOURCE[0]})/config_common_fp4.sh\n",
        "config_GB200_2x4x2xtp1pp1cp1_8b.sh": "export FP8=True\n",
        "config_GB200_2x4x2xtp1pp1cp1_8b_fp4.sh": "export FP4=True\n",
        "config_GB300_128x4x1xtp2pp1cp4_8b.sh": "export FP8=True\n",
        "config_GB300_128x4x72xtp2pp8cp2_cg_fp4.sh": "source config_common_fp4.sh\n",
        "config_common_fp4.sh": "export FP4=True\n",
    }
    for name, text in files.items():
        (impl / name).write_text(text)
    repo = tmp_path / "results"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "x")
    snap = im.Snapshot(str(repo), im.resolve(str(repo)))
    assert im.recipes(snap, snap.files()) == {("Acme", "llama31_8b", "nvidia-gb300", 2, 4): "submitter-nvfp4"}


def test_a_config_named_for_the_system_decides_its_recipe(tmp_path: Path) -> None:
    """Dell's ``config_1xXE9680Lx8B200-SXM-180GB.sh`` (named for the result directory's system)
    sources the NVFP4 settings: that system ran NVFP4. A system whose named file is FP8 stays
    unknown even where its layout's other files are all NVFP4, and a system with no named file
    is left to the layout rule."""
    root = tmp_path / "results"
    impl = root / "Acme" / "benchmarks" / "llama31_8b" / "implementations" / "nemo"
    impl.mkdir(parents=True)
    files = {
        "config_1xBOX8-B200.sh": "source $(dirname ${BASH_SOURCE[0]})/config_common_fp4.sh\nexport MINIBS=2\n",
        "config_2xBOX8-B200_2x8x2xtp1pp1cp1_8b.sh": "export MINIBS=2\n",
        "config_common_fp4.sh": "export FP4=True\n",
    }
    for name, text in files.items():
        (impl / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    _git(root, "add", "-A")
    _git(root, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "x")
    snap = im.Snapshot(str(root), im.resolve(str(root)))
    results = [("Acme", system, "llama31_8b") for system in ("1xBOX8-B200", "2xBOX8-B200", "OTHER-B200")]
    assert im.system_recipes(snap, snap.files(), results) == {
        ("Acme", "1xBOX8-B200", "llama31_8b"): "submitter-nvfp4",
        ("Acme", "2xBOX8-B200", "llama31_8b"): "submitter",
    }


def test_a_log_that_prints_fp4_on_ran_nvfp4() -> None:
    """Some result logs print the run's NeMo configuration: ``fp4: true`` everywhere it appears
    names the recipe; a log that says false anywhere, or says nothing, does not."""
    on, off = "0:       fp4: true\n0:       fp4_recipe: nvfp4\n", " 0:   fp4: false\n"
    assert im.logged_nvfp4([on, on]) and not im.logged_nvfp4([on, off]) and not im.logged_nvfp4(["x"])


def test_counts_read_as_the_summaries_write_them() -> None:
    """MLPerf Inference v4.1's summary writes accelerators per node as a float (``8.0``): read as
    1, it made every v4.1 row an 8-GPU system counted as one GPU."""
    assert im._int(8) == 8 and im._int("8") == 8 and im._int(8.0) == 8 and im._int(" 4.0 ") == 4
    assert im._int("") == 1 and im._int(None) == 1 and im._int("2.5") == 1 and im._int("x", 0) == 0
