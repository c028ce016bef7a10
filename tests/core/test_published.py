"""The published tables: sourced, dated, one stack each, rows in the shared vocabulary, slugs known."""

from __future__ import annotations

import math
import re
from collections import Counter

import pytest

from service.catalog.loader import load_shipped
from service.core.catalog.models import PRESETS
from service.core.evidence import published
from service.core.evidence.published import (
    LOWER_IS_BETTER,
    METRICS,
    MLPERF_INFERENCE_MODELS,
    MLPERF_TRAINING_MODELS,
    PRECISIONS,
    TABLES,
    WORK_RATES,
    WORKLOADS,
    get_table,
    precision_family,
    rows,
    summary,
)
from service.core.evidence.published.schema import valid_date

CATALOG_SLUGS = {g["slug"] for g in load_shipped().gpus}
HEX40 = re.compile(r"^[0-9a-f]{40}$")


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_every_table_has_source_date_and_one_stack(t: published.PublishedTable) -> None:
    assert t.title and t.publisher and t.url.startswith("https://")
    assert t.files, "at least one source file with its commit"
    for f in t.files:
        assert "/" in f.repository and f.path and HEX40.match(f.commit), f
    assert valid_date(t.date) and t.date_note
    # one stack: a single non-empty description with a version number in it
    assert t.stack and re.search(r"\d", t.stack)
    assert t.engine and re.search(r"\d", t.engine)
    assert t.method and t.caveats
    assert t.kind in ("training", "serving")
    assert {r.table_id for r in t.rows} == {t.id}


def test_table_ids_are_unique_and_resolvable() -> None:
    ids = [t.id for t in TABLES]
    assert len(ids) == len(set(ids))
    for t in TABLES:
        assert get_table(t.id) is t
    with pytest.raises(KeyError):
        get_table("no-such-table")


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_rows_use_the_shared_vocabulary(t: published.PublishedTable) -> None:
    for r in t.rows:
        assert r.workload in WORKLOADS, r
        assert r.precision in PRECISIONS, r
        assert r.metric in METRICS and r.unit == METRICS[r.metric], r
        assert r.model in PRESETS or "/" in r.model, f"unknown model {r.model!r}"
        if t.kind == "training":
            assert r.workload in (
                "resnet50-train",
                "resnet50-infer",
                "bert-large-squad-finetune",
                "bert-base-squad-finetune",
                "llm-pretrain",
            ) or r.workload.startswith("mlperf-train-"), r
        elif r.workload.startswith("mlperf-infer-"):
            assert r.model.startswith("mlperf/") and r.system, r
        else:
            assert r.workload.startswith("llm-serve"), r
            assert r.input_len and r.output_len, r
        if r.workload.startswith("mlperf-"):
            # the MLPerf reference model, mapped to a preset where one exists; the system stated
            bench = r.model.removeprefix("mlperf/")
            models = MLPERF_TRAINING_MODELS if t.kind == "training" else MLPERF_INFERENCE_MODELS
            assert bench in models and (models[bench] is None or models[bench] in PRESETS), r
            assert re.search(r"\d+ x \d+ ", r.system), r


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_slugs_are_catalogued_or_null_with_a_name(t: published.PublishedTable) -> None:
    for r in t.rows:
        assert r.gpu_name.strip(), r
        assert r.slug is None or r.slug in CATALOG_SLUGS, f"{r.slug!r} is not in the catalog"
    # one GPU name maps to one slug within a table
    seen: dict[str, str | None] = {}
    for r in t.rows:
        assert seen.setdefault(r.gpu_name, r.slug) == r.slug, r.gpu_name


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_values_are_positive_finite_and_configs_consistent(t: published.PublishedTable) -> None:
    for r in t.rows:
        assert math.isfinite(r.value) and r.value > 0, r
        assert r.gpu_count >= 1 and r.tp >= 1 and r.pp >= 1, r
        assert r.gpu_count % (r.tp * r.pp) == 0, r
        for v in (r.batch_size, r.seq_len, r.input_len, r.output_len, r.concurrency):
            assert v is None or v > 0, r
        assert r.request_rate is None or r.request_rate > 0, r


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_no_duplicate_cells(t: published.PublishedTable) -> None:
    """Two rows with the same GPU, configuration and metric would be a transcription error."""
    keys = Counter(
        (
            r.gpu_name,
            r.workload,
            r.model,
            r.precision,
            r.metric,
            r.batch_size,
            r.seq_len,
            r.input_len,
            r.output_len,
            r.tp,
            r.pp,
            r.gpu_count,
            r.request_rate,
            r.concurrency,
            r.system,
        )
        for r in t.rows
    )
    dup = [k for k, n in keys.items() if n > 1]
    assert not dup, dup[:3]


@pytest.mark.parametrize("t", TABLES, ids=lambda t: t.id)
def test_at_least_three_gpus_per_cross_gpu_table(t: published.PublishedTable) -> None:
    if t.cross_gpu:
        assert len(t.gpus()) >= 3, t.gpus()
    else:
        assert "cross_gpu" in t.caveats, "a table kept out of the cross-GPU check says why"


def test_registry_filters_and_families() -> None:
    train = list(rows("training"))
    serve = list(rows("serving"))
    assert train and serve
    assert all(get_table(r.table_id).kind == "training" for r in train)
    assert not any(r.table_id == "trtllm-online-serving-v0.14" for r in rows())
    assert any(r.table_id == "trtllm-online-serving-v0.14" for r in rows(include_non_cross_gpu=True))
    assert precision_family("amp_bf16") == "fp16/bf16" and precision_family("tf32") == "tf32"
    assert precision_family("mxfp8") == "fp8"
    # every precision family of the issue is represented by at least one cross-GPU table
    fams = {r.family for r in rows()}
    assert fams == {"fp32", "tf32", "fp16/bf16", "fp8", "int8", "fp4", "int4", "mixed"}
    # issue 27's additions: integer and 4-bit families, and the MLPerf training recipe
    assert precision_family("int8") == "int8" and precision_family("mxfp4") == "fp4"
    assert precision_family("int4") == "int4" and precision_family("submitter") == "mixed"


def test_summary_counts_pairs_per_family() -> None:
    s = {d["id"]: d for d in summary()}
    assert set(s) == {t.id for t in TABLES}
    lam = s["lambda-pytorch-train-ngc2210"]
    assert lam["gpus"] == 12 and lam["rows"] == 72
    pairs = lam["pairs_by_family"]
    assert isinstance(pairs, dict) and pairs["fp16/bf16"] == 66  # 12 GPUs, all with fp16 rows


def test_lambda_2023_rows_match_the_module_literals() -> None:
    from service.core.evidence.published.lambda_pytorch_train import GPUS

    t = get_table("lambda-pytorch-train-ngc2210")
    col = {
        "resnet50-train": "resnet50",
        "bert-large-squad-finetune": "bert_large_squad",
        "bert-base-squad-finetune": "bert_base_squad",
    }
    for r in t.rows:
        g = GPUS[r.gpu_name]
        table = g["fp16"] if r.precision == "amp_fp16" else g["fp32"]
        assert r.value == table[col[r.workload]]
        assert r.precision != "tf32" or g["tf32_tflops"] is not None
        assert r.precision != "fp32" or g["tf32_tflops"] is None


def _cell(table_id: str, **kw: object) -> float:
    hits = [r for r in get_table(table_id).rows if all(getattr(r, k) == v for k, v in kw.items())]
    assert len(hits) == 1, (kw, hits)
    return hits[0].value


def test_pinned_cells_as_published() -> None:
    """A few cells per table, re-read from the source text at the cited commit."""
    # Lambda NGC 20.01: V100 32GB ResNet-50 FP32 368 img/s at batch 296 (log: 296)
    assert (
        _cell(
            "lambda-pytorch-train-ngc2001",
            gpu_name="Tesla V100 32GB",
            workload="resnet50-train",
            precision="fp32",
        )
        == 368
    )
    r = [
        x
        for x in get_table("lambda-pytorch-train-ngc2001").rows
        if x.gpu_name == "Tesla V100 32GB" and x.workload == "resnet50-train"
    ]
    assert {(x.precision, x.batch_size) for x in r} == {("fp32", 296), ("fp16", 596)}
    # Lambda NGC 20.10: A100 40GB PCIe ResNet-50 TF32 744 img/s (log batch 360), A40 FP16 653 (batch 912)
    assert (
        _cell(
            "lambda-pytorch-train-ngc2010",
            slug="nvidia-a100-pcie-40gb",
            workload="resnet50-train",
            precision="tf32",
        )
        == 744
    )
    assert (
        _cell("lambda-pytorch-train-ngc2010", slug="nvidia-a40", workload="resnet50-train", precision="fp16")
        == 653
    )
    # TensorRT-LLM v0.14: Llama 3.1 8B 128/128 TP1: H200 FP8 27778.8885, L40S FP8 8639.7933
    kw: dict[str, object] = {"model": "llama3.1-8b", "input_len": 128, "output_len": 128, "tp": 1}
    assert _cell("trtllm-perf-overview-v0.14", slug="nvidia-h200-sxm", precision="fp8", **kw) == 27778.8885
    assert _cell("trtllm-perf-overview-v0.14", slug="nvidia-l40s", **kw) == 8639.7933
    assert _cell("trtllm-perf-overview-v0.14", slug="nvidia-h100-sxm", precision="fp16", **kw) == 15571.6549
    # TensorRT-LLM v0.17: Llama 3.1 70B TP4 500/2000: H200 12452.79, L40S 1634.72, A100 FP16 2275.79
    kw = {"model": "llama3.1-70b", "input_len": 500, "output_len": 2000, "tp": 4}
    assert _cell("trtllm-perf-overview-v0.17", slug="nvidia-h200-sxm", **kw) == 12452.79
    assert _cell("trtllm-perf-overview-v0.17", slug="nvidia-l40s", **kw) == 1634.72
    assert _cell("trtllm-perf-overview-v0.17", slug="nvidia-a100-sxm4-80gb", **kw) == 2275.79
    # TensorRT-LLM v0.9: H100 Llama-2-70B TP2 2048/2048 batch 64: 1,011 tok/s/GPU; L40S GPT-J TTFT 61.7 ms
    assert (
        _cell(
            "trtllm-perf-overview-v0.9",
            slug="nvidia-h100-sxm",
            model="llama2-70b",
            input_len=2048,
            output_len=2048,
            metric="output_tokens_per_s_per_gpu",
        )
        == 1011
    )
    assert (
        _cell(
            "trtllm-perf-overview-v0.9",
            slug="nvidia-l40s",
            model="EleutherAI/gpt-j-6b",
            input_len=2048,
            metric="ttft_ms",
        )
        == 61.7
    )
    # online serving v0.14: H200 Llama 3.1 8B 467/16 at INF: 81 req/s, mean TTFT 3227 ms
    kw = {
        "slug": "nvidia-h200-sxm",
        "model": "llama3.1-8b",
        "input_len": 467,
        "output_len": 16,
        "request_rate": None,
    }
    assert _cell("trtllm-online-serving-v0.14", metric="requests_per_s", **kw) == 81
    assert _cell("trtllm-online-serving-v0.14", metric="ttft_ms", **kw) == 3227
    # DLE TensorFlow 20.06: V100 16GB 1-GPU FP32 + XLA 412 img/s at 128; T4 FP32 inference batch 64 424.42
    assert (
        _cell(
            "dle-tf-resnet50-ngc2006",
            slug="nvidia-v100-sxm2-16gb",
            workload="resnet50-train",
            precision="fp32",
            gpu_count=1,
        )
        == 412
    )
    assert (
        _cell(
            "dle-tf-resnet50-ngc2006",
            slug="nvidia-t4",
            workload="resnet50-infer",
            precision="fp32",
            batch_size=64,
            metric="images_per_s",
        )
        == 424.42
    )
    assert (
        _cell(
            "dle-tf-resnet50-ngc2006",
            gpu_name="V100 32GB (DGX-2)",
            workload="resnet50-infer",
            precision="fp32",
            batch_size=16,
            metric="latency_ms",
        )
        == 15.209
    )
    # NeMo 25.11: Llama 3 8B FP8-CS on 8x B200 30624 tokens/s/GPU, MXFP8 29521; 8x H100 14451
    kw = {"model": "llama3-8b", "metric": "tokens_per_s_per_gpu"}
    assert _cell("nemo-megatron-bridge-pretrain-25.11", slug="nvidia-b200", precision="fp8", **kw) == 30624
    assert _cell("nemo-megatron-bridge-pretrain-25.11", slug="nvidia-b200", precision="mxfp8", **kw) == 29521
    assert _cell("nemo-megatron-bridge-pretrain-25.11", slug="nvidia-h100-sxm", **kw) == 14451


def test_mlperf_inference_v6_0_is_mlcommons_results_commit() -> None:
    """MLPerf Inference v6.0 is read from a fork that carries MLCommons' results commits: the
    commit named is MLCommons' own (its summary is the same blob as the 'Publishing Results'
    commit's), and cells re-read from that summary match."""
    t = get_table("mlperf-inference-v6.0")
    (f,) = t.files
    assert f.commit == "4d3916ac9cf474b679cdfcf492d43a0559418ad1" and f.path == "summary_results.json"
    assert f.repository == "gbeezybez/inference_results_v6.0" and t.date == "2026-03-26"
    # 6.0-0021 Dell XE7740, 8 x H200 NVL, Llama-2-70B (99 %) Offline 32,004 tokens/s, FP8
    (r,) = [
        x
        for x in t.rows
        if x.note.startswith("6.0-0021;")
        and x.model == "mlperf/llama2-70b-99"
        and x.workload == "mlperf-infer-offline"
    ]
    assert (r.slug, r.gpu_count, r.value, r.precision) == ("nvidia-h200-nvl", 8, 32004.0, "fp8")
    # 6.0-0078 NVIDIA GB300 NVL72, 18 x 4 GPUs, DeepSeek-R1 Offline 647,076 tokens/s, FP4
    rows = [x for x in t.rows if x.note.startswith("6.0-0078;") and x.model == "mlperf/deepseek-r1"]
    assert {(x.slug, x.gpu_count, x.value) for x in rows if x.workload == "mlperf-infer-offline"} == {
        ("nvidia-gb300", 72, 647076.0)
    }
    # results MLPerf marks inferred are not measurements: 6.0-0002's Interactive Llama-2-70B is one
    assert not [
        x for x in t.rows if x.note.startswith("6.0-0002;") and x.workload == "mlperf-infer-interactive"
    ]
    # a part run under a power cap keeps its name and no slug
    assert all(x.slug is None for x in t.rows if "Power Cap" in x.gpu_name)


def test_mlperf_tables_state_system_stack_and_inverted_metric() -> None:
    """Issue 27: the MLPerf rows carry their system (the stack is per row), time to train is a
    lower-is-better metric, and the new precision families are used by the inference table."""
    assert "minutes_to_train" in LOWER_IS_BETTER and METRICS["minutes_to_train"] == "min"
    assert set(METRICS) >= LOWER_IS_BETTER
    train = [r for t in TABLES if t.id.startswith("mlperf-training-") for r in t.rows]
    infer = [r for r in get_table("mlperf-inference-v5.1").rows]
    assert {r.table_id for r in train} == {f"mlperf-training-v{v}" for v in ("4.0", "4.1", "5.0", "5.1")}
    assert all(r.metric in ("minutes_to_train", *WORK_RATES) for r in train)
    assert {r.precision for r in train} == {"submitter", "submitter-nvfp4"}
    # the recipe is known only where the submitter's configs for the layout are all NVFP4, or the
    # runs' logs print fp4: true (v5.1: NVIDIA's GB200/GB300, Nebius' and Supermicro's B200/B300)
    fp4 = {(r.table_id, r.slug) for r in train if r.precision == "submitter-nvfp4"}
    assert {t for t, _ in fp4} == {"mlperf-training-v5.1"}
    assert {s for _, s in fp4} == {"nvidia-gb200", "nvidia-gb300", "nvidia-b200", "nvidia-b300"}
    # every work rate sits beside its system's time to train: the same runs, another quantity
    timed = {(r.table_id, r.system, r.workload) for r in train if r.metric == "minutes_to_train"}
    rates = [r for r in train if r.metric in WORK_RATES]
    assert len(rates) > len(timed) * 0.9 and all((r.table_id, r.system, r.workload) in timed for r in rates)
    assert all("framework" in r.system and "host" in r.system for r in train)
    assert {r.family for r in infer} >= {"int8", "fp4", "fp8"}
    # the CDNA 3 submissions ship, under their catalog slugs
    assert {"amd-mi300x", "amd-mi325x"} <= {r.slug for r in train + infer}


def test_llm_inference_bench_rows_are_output_tokens_from_the_published_latency() -> None:
    """Each row is batch x n / latency of the group of ``tp`` devices, from the line it came from;
    the one configuration published twice is one row at its mean latency."""
    from service.core.evidence.published import llm_inference_bench as lib

    rows = lib.TABLE.rows
    assert len(lib.DATA) == 850 and len(rows) == 849 and not lib.TABLE.cross_gpu
    (g, model, tp, batch, n, latency), r = lib.DATA[0], rows[0]
    assert (r.gpu_name, r.model, r.tp, r.gpu_count, r.batch_size, r.input_len, r.output_len) == (
        lib.GPUS[g][0],
        model,
        tp,
        tp,
        batch,
        n,
        n,
    )
    assert r.value == pytest.approx(batch * n / latency)
    twice = [x[5] for x in lib.DATA if x[:5] == ("H100", "llama2-7b", 1, 32, 1024)]
    row = next(
        x
        for x in rows
        if (x.gpu_name, x.model, x.tp, x.batch_size, x.input_len)
        == ("Nvidia H100 GPU", "llama2-7b", 1, 32, 1024)
    )
    assert len(twice) == 2 and row.value == pytest.approx(32 * 1024 / (sum(twice) / 2))
    assert "published twice" in row.note
    assert {x.system.split(" ", 1)[0] for x in rows} == {"vllm"}
