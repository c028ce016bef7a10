"""Serving answers anchored on a published run of the exact configuration asked, through the real
HTTP app (``service.core.evidence.published_serving``; ``estimate_time._published``).

Before: DeepSeek-R1 FP8 on 8 MI300X under SGLang, 32 concurrent 1k/1k requests, was answered at
151 output tokens/s per GPU and ranked above the H200 (143), where InferenceX measured 92.8 and
166: the transfer cannot know an engine's maturity on a platform."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.core.evidence.published import get_table

IX = get_table("inferencex-3a600f1")


def _published(slug: str, engine: str, concurrency: int = 32) -> float:
    (value,) = (
        r.value
        for r in IX.rows
        if r.slug == slug
        and r.system.startswith(f"{engine} ")
        and r.model == "deepseek-r1"
        and r.precision == "fp8"
        and r.tp == 8
        and (r.input_len, r.output_len, r.concurrency) == (1024, 1024, concurrency)
    )
    return value


def _serving(client: TestClient, gpu: str, **over: Any) -> dict[str, Any]:
    body = {
        "model": "deepseek-ai/DeepSeek-R1",
        "gpu": gpu,
        "gpu_count": 8,
        "tensor_parallel": 8,
        "mode": "inference",
        "engine": "sglang",
        "quant_method": "fp8",
        "concurrency": 32,
        "input_len": 1024,
        "output_len": 1024,
        **over,
    }
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json()["serving"])


def test_the_same_engine_s_published_run_anchors_the_throughput(client: TestClient) -> None:
    sv = _serving(client, "amd-mi300x")
    per_gpu = _published("amd-mi300x", "sglang")
    assert sv["provenance"] == "published" and sv["sources"] == [IX.id]
    assert sv["output_tokens_per_s"] == pytest.approx(8 * per_gpu)
    # 32 sequences in flight share that rate: one token each every 32 / rate seconds
    assert sv["tpot_ms"] == pytest.approx(32 / (8 * per_gpu) * 1e3, rel=0.02)
    assert sv["tpot_band_ms"]["low"] < sv["tpot_ms"] < sv["tpot_band_ms"]["high"]
    notes = [n for n in sv["notes"] if "published" in n]
    assert any(f"{per_gpu:.4g} output tokens/s per GPU" in n and "2026-02-27" in n for n in notes), notes
    assert any(n.startswith("throughput and TPOT anchored") for n in notes), notes


def test_another_engine_s_runs_are_named_not_used(client: TestClient) -> None:
    """vLLM has no published run here: the answer stays the model's and names SGLang's."""
    sv = _serving(client, "amd-mi300x", engine="vllm")
    assert sv["provenance"] != "published" and sv["sources"] == []
    per_gpu = _published("amd-mi300x", "sglang")
    assert sv["output_tokens_per_s"] != pytest.approx(8 * per_gpu)
    assert any(n.startswith("published: sglang on 8 x AMD Instinct MI300X") for n in sv["notes"]), sv["notes"]
    assert not any(n.startswith("throughput and TPOT anchored") for n in sv["notes"])


def test_a_configuration_nobody_ran_is_the_model_s(client: TestClient) -> None:
    for over in (
        {"concurrency": 24},
        {"speculative": {"method": "mtp", "draft_tokens": 1, "acceptance_rate": 0.7}},
    ):
        sv = _serving(client, "amd-mi300x", **over)
        assert sv["provenance"] != "published", over
        assert not any(n.startswith("published:") for n in sv["notes"]), (over, sv["notes"])


def test_the_recommendation_follows_the_published_runs(client: TestClient) -> None:
    """Asked for the fastest 8-GPU plan between the two, the model alone put the MI300X first."""
    body = {
        "workload": {
            "model": "deepseek-ai/DeepSeek-R1",
            "mode": "inference",
            "engine": "sglang",
            "quant_method": "fp8",
            "input_len": 1024,
            "output_len": 1024,
            "concurrency": 32,
        },
        "constraints": {"allowed_gpus": ["amd-mi300x", "nvidia-h200-sxm"], "max_gpus": 8},
        "objective": "fastest",
    }
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    first = r.json()["options"][0]
    assert first["gpu"]["slug"] == "nvidia-h200-sxm"
    assert first["serving"]["sources"] == [IX.id]
    assert first["serving"]["output_tokens_per_s"] == pytest.approx(
        8 * _published("nvidia-h200-sxm", "sglang")
    )
    (reason,) = (r for r in first["reasons"] if r["code"] == "PUBLISHED_RUN")
    assert reason["params"] == {
        "gpu": "NVIDIA H200 SXM 141GB",
        "engine": "sglang",
        "tokens_per_s_per_gpu": round(_published("nvidia-h200-sxm", "sglang"), 1),
        "source": IX.id,
    }
    assert "published run of this exact configuration" in reason["message"]
    # the MI300X plan offered beside it is not a published configuration (expert parallelism)
    others = [o for o in r.json()["options"] if o["gpu"]["slug"] == "amd-mi300x"]
    assert others and not any(x["code"] == "PUBLISHED_RUN" for o in others for x in o["reasons"])


def test_plans_tell_their_engine_s_published_record_beside_the_model_s_figure(client: TestClient) -> None:
    """Llama-3-8B under vLLM at 16 clients: no run anchors either GPU, but LLM-Inference-Bench's
    vLLM batches give each a record, told as ``PUBLISHED_RECORD`` with the tables' dates; the plan
    keeps the model's figure (the MI300X still ranks by its datasheet). An anchored plan tells
    only its run."""
    from service.catalog.loader import load_shipped
    from service.core.catalog.models import get_model
    from service.core.catalog.specs import gpu_spec_from_doc
    from service.core.estimation.memory_inference import InferenceConfig
    from service.core.estimation.serving_record import engine_record

    body = {
        "workload": {"model": "llama3-8b", "mode": "inference", "engine": "vllm", "input_len": 1024,
                     "output_len": 1024, "concurrency": 16},
        "constraints": {"allowed_gpus": ["amd-mi300x", "nvidia-h100-sxm"], "max_gpus": 8},
        "objective": "fastest",
    }  # fmt: skip
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    options = {o["gpu"]["slug"]: o for o in r.json()["options"]}
    gpus = {g["slug"]: gpu_spec_from_doc(g) for g in load_shipped().gpus}
    model = get_model("llama3-8b")
    for slug in ("amd-mi300x", "nvidia-h100-sxm"):
        (reason,) = (x for x in options[slug]["reasons"] if x["code"] == "PUBLISHED_RECORD")
        tp = options[slug]["strategy"]["tensor_parallel"]
        record = engine_record(InferenceConfig(model=model, engine="vllm", tensor_parallel=tp), gpus[slug])  # type: ignore[arg-type]
        assert record is not None
        assert reason["params"]["runs"] == record.runs and reason["params"]["engine"] == "vllm"
        assert reason["params"]["ratio"] == round(record.median_ratio, 2) < 1
        assert reason["params"].get("tensor_parallel") == record.tensor_parallel  # told where narrowed
        assert "llm-inference-bench-vllm-ae7e7a4 of 2024-09-27" in reason["params"]["source"]
        assert options[slug]["serving"]["sources"] == []
    assert r.json()["options"][0]["gpu"]["slug"] == "amd-mi300x"  # told, never applied
    asked = {
        "workload": {"model": "deepseek-ai/DeepSeek-R1", "mode": "inference", "engine": "sglang",
                     "quant_method": "fp8", "input_len": 1024, "output_len": 1024, "concurrency": 32},
        "constraints": {"allowed_gpus": ["nvidia-h200-sxm"], "max_gpus": 8},
        "objective": "fastest",
    }  # fmt: skip
    anchored = client.post("/v1/recommend", json=asked).json()["options"][0]
    codes = [x["code"] for x in anchored["reasons"]]
    assert "PUBLISHED_RUN" in codes and "PUBLISHED_RECORD" not in codes


def _one_gpu_70b_fp8_runs() -> list[Any]:
    """Every TensorRT-LLM perf-overview run of Llama-3(.1)-70B with FP8 weights on one H100 SXM."""
    from service.core.evidence.published import TABLES

    return [
        r
        for t in TABLES
        if t.id.startswith("trtllm-perf")
        for r in t.rows
        if r.slug == "nvidia-h100-sxm"
        and r.tp == 1
        and r.model in ("llama3-70b", "llama3.1-70b")
        and r.precision == "fp8"
    ]


def test_70b_fp8_fits_one_h100_at_every_length_nvidia_published_it_at(client: TestClient) -> None:
    """The band of a quantized footprint is the weights' (counted from the format's layout, as
    unquantized weights are) plus the hand-set one on the rest: one +12 % band on the whole peak
    put 72.7 GB of weights 8.7 GB higher and answered "does not fit" where NVIDIA ran it."""
    runs = _one_gpu_70b_fp8_runs()
    assert len(runs) >= 20
    for r in {(r.model, r.input_len, r.output_len) for r in runs}:
        body = {
            "model": r[0],
            "gpu": "nvidia-h100-sxm",
            "mode": "inference",
            "engine": "tensorrt-llm",
            "quant_method": "fp8",
            "kv_cache_dtype": "fp8",
            "input_len": r[1],
            "output_len": r[2],
            "concurrency": 1,
        }
        doc = client.post("/v1/estimate", json=body).json()
        mem = doc["memory"]
        assert mem["fits"] and doc["serving"] is not None, (r, mem["device_memory_band"])
        # the weights' share of the band: no more than the rest's +12 % on what is not weights
        w = mem["components"]["weights"]
        rest = mem["peak_allocated_bytes"] - w
        assert mem["peak_allocated_band"]["high"] - mem["peak_allocated_bytes"] <= 0.04 * w + 0.12 * rest
    # two GPUs' worth of the same weights still do not fit one
    big = client.post(
        "/v1/estimate",
        json={"model": "llama3.1-405b", "gpu": "nvidia-h100-sxm", "mode": "inference", "quant_method": "fp8"},
    ).json()
    assert big["memory"]["fits"] is False


def test_sequences_the_engine_admits_fit_as_inferencex_ran_them(client: TestClient) -> None:
    """DeepSeek-R1 NVFP4 on 8 B200 under TensorRT-LLM at 256 clients of 1k in / 8k out: the
    engine sizes its KV pool to what the weights leave and admits them; the memory answer's band
    and allocator slack on top of that pool refused the run InferenceX published."""
    (row,) = (
        r
        for r in IX.rows
        if r.slug == "nvidia-b200"
        and r.system.startswith("trt")
        and r.model == "deepseek-r1"
        and r.precision == "fp4"
        and (r.tp, r.input_len, r.output_len, r.concurrency) == (8, 1024, 8192, 256)
    )
    body = {
        "model": "deepseek-r1",
        "gpu": "nvidia-b200",
        "gpu_count": 8,
        "tensor_parallel": 8,
        "mode": "inference",
        "engine": "tensorrt-llm",
        "quant_method": "nvfp4",
        "input_len": 1024,
        "output_len": 8192,
        "concurrency": row.concurrency,
    }
    doc = client.post("/v1/estimate", json=body).json()
    sv = doc["serving"]
    assert doc["memory"]["fits"] is True and sv is not None
    assert sv["max_concurrency_per_replica"] >= 128
    # what the engine admits is held in its pool: the KV cache counted is that of the admitted
    admitted = min(256, sv["max_concurrency_per_replica"])
    per_seq = doc["memory"]["components"]["kv_cache"] / admitted
    assert per_seq * admitted < doc["memory"]["usable_memory_bytes"]
