"""/v1/estimate against the real app, with the committed H200 and H100 SXM measurements seeded."""

from __future__ import annotations

import math
import re
from typing import Any

from fastapi.testclient import TestClient

GIB = 2**30


def est(client: TestClient, **body: Any) -> dict[str, Any]:
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


def test_exact_measured_cell_answers_measured(client: TestClient) -> None:
    # the measured cell ran fused AdamW (the agent's reference loop); the default is foreach
    j = est(client, model="llama3-8b", gpu="NVIDIA H200", batch_size=1, seq_len=2048, optimizer_impl="fused")
    assert j["gpu"]["slug"] == "nvidia-h200-sxm"
    assert j["memory"]["fits"] is True and j["memory"]["provenance"] == "measured"
    measured = j["memory"]["measured_peak_allocated_bytes"]
    assert measured and abs(j["memory"]["peak_allocated_bytes"] - measured) / measured < 0.08
    t = j["time"]
    assert t["provenance"] == "measured" and t["measured_step_time_s"] == t["step_time_s"]
    assert t["step_time_band"]["low"] <= t["step_time_s"] <= t["step_time_band"]["high"]


def test_measured_oom_is_reported_as_not_fitting(client: TestClient) -> None:
    j = est(
        client, model="llama3-8b", gpu="nvidia-h200-sxm", batch_size=2, seq_len=2048, optimizer_impl="fused"
    )
    assert j["memory"]["fits"] is False
    assert "measured_oom" in [w["code"] for w in j["warnings"]]
    assert j["memory"]["headroom_bytes"] < 0


def test_a_fit_with_less_room_than_the_fp32_logits_warns_of_fragmentation(client: TestClient) -> None:
    """The H100 SXM ran out of memory on gt-llama-3b, 4 x 4,096 with checkpointing and foreach
    AdamW, asking for the loss's 7.83 GiB of fp32 logits with 11.8 GiB reserved but unallocated:
    the model's upper end fits 80 GB, the block did not. An 80 GB Hopper nobody measured (H800
    SXM) is told so; the H200 (141 GB) and a smaller batch are not; the H100 itself answers its
    measurement, without claiming the model's figure is over the memory."""
    body = {
        "model": "gt-llama-3b",
        "precision": "amp_bf16",
        "seq_len": 4096,
        "gradient_checkpointing": True,
        "optimizer_impl": "foreach",
    }
    h800 = est(client, gpu="nvidia-h800-sxm", batch_size=4, **body)
    assert h800["memory"]["fits"] is True
    w = next(w for w in h800["warnings"] if w["code"] == "tight_for_largest_request")
    assert round(4 * 4 * 4096 * 128256 / GIB, 1) == 7.8  # batch x sequence x vocabulary x fp32
    m = re.search(r"one ([\d.]+) GiB allocation and only ([\d.]+) GiB is left", w["message"])
    assert m and float(m.group(1)) == 7.8 and float(m.group(2)) < 7.8
    assert "expandable_segments:True" in w["message"]
    for other in (
        est(client, gpu="nvidia-h200-sxm", batch_size=4, **body),
        est(client, gpu="nvidia-h800-sxm", batch_size=1, **body),
    ):
        assert other["memory"]["fits"] is True
        assert "tight_for_largest_request" not in [w["code"] for w in other["warnings"]]
    h100 = est(client, gpu="nvidia-h100-sxm", batch_size=4, **body)
    codes = {w["code"]: w for w in h100["warnings"]}
    assert h100["memory"]["fits"] is False and "measured_oom" in codes
    said = re.search(
        r"^it ran out of memory where this configuration was measured, though the model's upper end is "
        r"([\d.]+) GiB per GPU of the ([\d.]+) GiB usable",
        codes["does_not_fit"]["message"],
    )
    assert said and float(said.group(1)) <= float(said.group(2))
    zh = client.post(
        "/v1/estimate",
        json={**body, "gpu": "nvidia-h800-sxm", "batch_size": 4},
        headers={"Accept-Language": "zh-CN"},
    ).json()
    assert (
        "expandable_segments"
        in next(w for w in zh["warnings"] if w["code"] == "tight_for_largest_request")["message"]
    )


def test_provenance_interpolated_then_transferred_with_wider_bands(client: TestClient) -> None:
    body = {"model": "gt-llama-1b-v128k", "batch_size": 3, "seq_len": 1536}
    own = est(client, gpu="nvidia-h200-sxm", **body)["time"]
    h100 = est(client, gpu="nvidia-h100-sxm", **body)["time"]  # measured by the agent too (2026-12-07)
    same_arch = est(client, gpu="nvidia-h800-sxm", **body)["time"]  # the H100's peaks; nobody measured it
    other_arch = est(client, gpu="nvidia-l40s", **body)["time"]
    assert own["provenance"] == "interpolated" and own["source_gpus"] == ["nvidia-h200-sxm"]
    assert own["calibration_points"] >= 40  # the main ground-truth stack, not a small side dataset
    assert h100["provenance"] == "interpolated" and h100["source_gpus"] == ["nvidia-h100-sxm"]
    # across architectures the ratio comes from the published tables: 'published', the tables named
    assert same_arch["provenance"] == "transferred" and other_arch["provenance"] == "published"
    assert same_arch["source_gpus"] == ["nvidia-h100-sxm"]  # the H800 has the H100's figures
    assert other_arch["source_gpus"] == ["nvidia-h100-sxm"] and other_arch["sources"]

    def rel(t: dict[str, Any]) -> float:
        b = t["step_time_band"]
        return (b["high"] - b["low"]) / b["mid"]  # type: ignore[no-any-return]

    assert rel(own) < rel(same_arch) < rel(other_arch)
    # the H800 SXM has the H200's compute but less bandwidth: not faster
    assert same_arch["step_time_s"] >= own["step_time_s"] * 0.98


def test_time_to_train_holds_global_batch(client: TestClient) -> None:
    a = est(client, model="gt-llama-350m", gpu="nvidia-h200-sxm", batch_size=4, seq_len=2048, tokens=1e9)[
        "time"
    ]
    b = est(client, model="gt-llama-350m", gpu="nvidia-h200-sxm", batch_size=4, seq_len=2048, tokens=2e9)[
        "time"
    ]
    assert 1.99 < b["time_to_train_s"] / a["time_to_train_s"] < 2.01
    g = est(
        client, model="gt-llama-350m", gpu="nvidia-h200-sxm", batch_size=4, seq_len=2048, global_batch=16
    )["time"]
    assert g["accumulation_steps"] == 4


def test_solve_for_max_micro_batch_is_the_fit_boundary(client: TestClient) -> None:
    base = {"model": "llama2-7b", "gpu": "nvidia-h200-sxm", "seq_len": 2048}
    j = est(client, **base, solve_for="max_micro_batch")
    n = j["solve"]["value"]
    assert n >= 1
    assert est(client, **base, batch_size=n)["memory"]["fits"] is True
    assert est(client, **base, batch_size=n + 1)["memory"]["fits"] is False


def test_min_gpus_and_max_concurrency_and_context(client: TestClient) -> None:
    j = est(
        client,
        model="llama3-70b",
        gpu="nvidia-h100-sxm",
        precision="bf16",
        gradient_checkpointing=True,
        solve_for="min_gpus",
    )
    n = j["solve"]["value"]
    assert j["memory"]["fits"] is False and n >= 2
    sharded = est(
        client,
        model="llama3-70b",
        gpu="nvidia-h100-sxm",
        precision="bf16",
        gradient_checkpointing=True,
        gpu_count=n,
        sharding="fsdp",
    )
    assert sharded["memory"]["fits"] is True
    chats = est(
        client,
        model="llama3-8b",
        gpu="l20",
        mode="inference",
        input_len=7168,
        output_len=1024,
        engine="vllm",
        solve_for="max_concurrency",
    )
    assert chats["solve"]["value"] >= 10
    # fused AdamW: with foreach's step temporaries (20 B/parameter) the 1.2B model fills an L4 by itself
    ctx = est(
        client,
        model="gt-llama-1b-v32k",
        gpu="nvidia-l4",
        batch_size=1,
        optimizer_impl="fused",
        solve_for="max_context",
    )
    assert ctx["solve"]["value"] % 128 == 0 and ctx["solve"]["value"] > 0


def test_lora_13b_on_two_l40s_fits_with_checkpointing(client: TestClient) -> None:
    body = {
        "model": "meta-llama/Llama-2-13b-hf",
        "gpu": "nvidia-l40",
        "gpu_count": 2,
        "mode": "fine-tuning",
        "precision": "bf16",
        "batch_size": 1,
        "seq_len": 2048,
    }
    with_ckpt = est(client, **body, gradient_checkpointing=True)
    assert (
        with_ckpt["configuration"]["finetune"] == "lora" and with_ckpt["configuration"]["sharding"] == "ddp"
    )
    assert with_ckpt["memory"]["fits"] is True
    assert "pcie_multi_gpu_unvalidated" in [w["code"] for w in with_ckpt["warnings"]]
    assert with_ckpt["time"]["tokens_per_s"] > with_ckpt["time"]["tokens_per_s_per_gpu"]


def test_inference_serving_estimate_and_quantisation(client: TestClient) -> None:
    bf16 = est(
        client,
        model="llama3-8b",
        gpu="nvidia-a100-sxm4-80gb",
        mode="inference",
        batch_size=8,
        input_len=512,
        output_len=128,
    )
    awq = est(
        client,
        model="llama3-8b",
        gpu="nvidia-a100-sxm4-80gb",
        mode="inference",
        batch_size=8,
        input_len=512,
        output_len=128,
        quant_method="awq",
    )
    assert bf16["serving"]["tpot_ms"] > 0 and bf16["serving"]["ttft_ms"] > 0
    # 4-bit linear weights; embeddings and the LM head stay 16-bit
    assert awq["memory"]["components"]["weights"] < bf16["memory"]["components"]["weights"] / 2.5


def test_invalid_inputs_are_precise_422s(client: TestClient) -> None:
    cases = [
        ({"model": "llama3-8bb", "gpu": "h100"}, ["body", "model"]),
        ({"model": "llama3-8b", "gpu": "h2oo"}, ["body", "gpu"]),
        ({"gpu": "h100"}, ["body", "model"]),
        ({"model": "llama3-8b", "params_billion": 7, "gpu": "h100"}, ["body", "model"]),
        (
            {"model": "llama3-8b", "gpu": "h100", "finetune": "qlora", "precision": "fp32"},
            ["body", "precision"],
        ),
        (
            {"model": "llama3-8b", "gpu": "h100", "gpu_count": 4, "tensor_parallel": 3},
            ["body", "tensor_parallel"],
        ),
        ({"model": "llama3-8b", "gpu": "nvidia-v100-sxm2-16gb", "precision": "bf16"}, ["body", "precision"]),
        ({"model": "llama3-8b", "gpu": "h100", "batch_size": 0}, ["body", "batch_size"]),
        (
            {
                "hf_config": {"model_type": "deepseek_v3", "kv_lora_rank": 512, "hidden_size": 7168},
                "gpu": "h100",
            },
            ["body", "hf_config"],
        ),
        ({"model": "bert-large", "gpu": "h100", "mode": "inference", "seq_len": 1024}, ["body", "seq_len"]),
        ({"model": "llama3-8b", "gpu": "h100", "mode": "inference", "engine": "tgi"}, ["body", "engine"]),
        (
            {"model": "llama3-8b", "gpu": "h100", "mode": "inference", "requests_per_s": 5},
            ["body", "requests_per_s"],
        ),
        (
            {"model": "llama3-8b", "gpu": "h100", "mode": "inference", "gpu_count": 6, "tensor_parallel": 4},
            ["body", "gpu_count"],
        ),
        ({"model": "llama3-8b", "gpu": "h100", "solve_for": "max_concurrency"}, ["body", "solve_for"]),
    ]
    for body, loc in cases:
        r = client.post("/v1/estimate", json=body)
        assert r.status_code == 422, (body, r.text)
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["errors"][0]["loc"] == loc, (body, r.json())


def test_params_billion_states_the_assumed_shape(client: TestClient) -> None:
    j = est(client, params_billion=7, gpu="nvidia-h100-sxm")
    assert "assumed_shape" in [w["code"] for w in j["warnings"]]
    assert 6.5e9 < j["model"]["total_params"] < 7.5e9


def test_batch_answers_each_item(client: TestClient) -> None:
    items = [
        {"model": "llama3-8b", "gpu": "nvidia-h200-sxm"},
        {"model": "nope", "gpu": "nvidia-h200-sxm"},
        {"model": "mistral-7b", "gpu": "nvidia-l40s", "mode": "inference"},
    ]
    r = client.post("/v1/estimate/batch", json={"items": items})
    assert r.status_code == 200
    st = [i["status"] for i in r.json()["items"]]
    assert st == [200, 422, 200]
    assert r.json()["items"][1]["problem"]["errors"][0]["loc"] == ["body", "items", 1, "model"]
    too_many = client.post("/v1/estimate/batch", json={"items": [items[0]] * 257})
    assert too_many.status_code == 422


def test_batch_refuses_a_body_whose_item_breaks_the_schema_whole(client: TestClient) -> None:
    """An item without exactly one model input breaks the schema's ``oneOf``: the body is refused
    (422 naming each such item's field), like an item with a refused field value -- not a 200
    carrying per-item problems (the long fuzz run found the 200)."""
    ok = {"model": "llama3-8b", "gpu": "nvidia-h200-sxm"}
    r = client.post(
        "/v1/estimate/batch", json={"items": [ok, {"gpu": "nvidia-h200-sxm"}, {**ok, "params_billion": 7}]}
    )
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert [e["loc"] for e in r.json()["errors"]] == [
        ["body", "items", 1, "model"],
        ["body", "items", 2, "model"],
    ]
    assert client.post("/v1/estimate/batch", json={"items": [ok, {**ok, "batch_size": 0}]}).status_code == 422


def test_batch_refuses_an_hf_config_the_schema_refuses_whole(client: TestClient) -> None:
    """The schema states ``hf_config``'s shape fields as whole numbers in range: an item breaking
    that is refused with the body (422 naming the item's ``hf_config``), as the schema promises
    (schemathesis found a 200 carrying a per-item 422); ``8.0`` is JSON Schema's integer."""
    cfg = {
        "model_type": "qwen3",
        "hidden_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "intermediate_size": 2048,
        "vocab_size": 32000,
    }
    ok = {"hf_config": cfg, "gpu": "nvidia-h200-sxm"}
    bad = {"hf_config": {**cfg, "num_attention_heads": None}, "gpu": "nvidia-h200-sxm"}
    r = client.post("/v1/estimate/batch", json={"items": [ok, bad]})
    assert r.status_code == 422 and r.headers["content-type"].startswith("application/problem+json")
    assert [e["loc"] for e in r.json()["errors"]] == [["body", "items", 1, "hf_config"]]
    assert "num_attention_heads" in r.json()["errors"][0]["msg"]
    floaty = {"hf_config": {**cfg, "num_attention_heads": 8.0}, "gpu": "nvidia-h200-sxm"}
    r = client.post("/v1/estimate/batch", json={"items": [ok, floaty]})
    assert r.status_code == 200 and [i["status"] for i in r.json()["items"]] == [200, 200]
    assert r.json()["items"][0]["result"] == r.json()["items"][1]["result"]


def test_every_newly_sourced_gpu_answers_with_labelled_time(client: TestClient) -> None:
    """Issue 13: 'L40 or L20?' gets a time for both; the A10G and RTX 6000 Ada too; each time
    states its provenance, the published tables it leans on and its measured accuracy."""
    for gpu in ("nvidia-l20", "nvidia-l40", "nvidia-a10g", "nvidia-rtx-6000-ada"):
        j = est(client, model="llama3-8b", mode="fine-tuning", gpu=gpu, batch_size=1, seq_len=2048)
        t = j["time"]
        assert t is not None, (gpu, j["warnings"])
        # the nearest measured GPU: less bandwidth than either Hopper, so the H100 SXM
        assert t["provenance"] == "published" and t["source_gpus"] == ["nvidia-h100-sxm"]
        assert t["sources"] and all(s.startswith(("lambda-", "dle-")) for s in t["sources"])
        acc = t["accuracy"]
        assert acc["provenance"] == "published" and acc["scope"] == "cross-architecture"
        assert acc["n"] > 0 and "held-out predictions" in acc["statement"]


def test_a_gpu_nobody_measured_is_answered_from_the_nearest_measured_one(client: TestClient) -> None:
    """Two GPUs are measured (H200 SXM, H100 SXM). A transfer carries the modelled ratio's error,
    which grows with the ratio, so each other GPU is answered from the one nearest in dense
    16-bit peak and bandwidth: the H800 (the H100's figures) and the L40S (864 GB/s) from the
    H100, the B200 (7.7 TB/s) and the MI300X (5.3 TB/s) from the H200. Before the H100 was
    measured the A100 / H100 ratio of MPT training (llm-foundry, benchmarks/outside_check.py)
    erred 11.9 %; with the H100 measured and the A100 still answered from the H200, 18.5 %
    (two GPUs' levels mixed); from the nearest GPU, 10.0 %."""
    body = {"model": "llama3-8b", "mode": "fine-tuning", "batch_size": 1, "seq_len": 2048}
    expected = {
        "nvidia-h800-sxm": "nvidia-h100-sxm",
        "nvidia-l40s": "nvidia-h100-sxm",
        "nvidia-a100-sxm4-80gb": "nvidia-h100-sxm",
        "nvidia-b200": "nvidia-h200-sxm",
        "amd-mi300x": "nvidia-h200-sxm",
    }
    for gpu, source in expected.items():
        t = est(client, gpu=gpu, **body)["time"]
        assert t["source_gpus"] == [source], (gpu, t["source_gpus"])


def test_published_provenance_reaches_answers(client: TestClient) -> None:
    """A100 from the H200's measurements: the cross-architecture ratio is the published tables' fit,
    so the answer says 'published' and names them."""
    t = est(client, model="resnet50", gpu="nvidia-a100-sxm4-80gb", precision="amp_fp16", batch_size=256)[
        "time"
    ]
    assert t["provenance"] == "published" and "lambda-pytorch-train-ngc2210" in t["sources"]
    assert any("published tables" in n for n in t["notes"])
    assert t["accuracy"]["scope"] == "cross-architecture"


def test_unmeasured_gpu_quotes_leave_one_source_out_accuracy(client: TestClient) -> None:
    """Issue 27: an answer for a GPU without measurements names the GPUs and tables it leans on
    and the leave-one-source-out accuracy of its family, beside datasheet arithmetic; the H200
    (measured here) does not."""
    from service.core.estimation.transfer_accuracy import loso_table

    doc = loso_table()
    fam = doc["by_family"]["llm-train"]
    t = est(client, model="llama3-8b", mode="fine-tuning", gpu="nvidia-l40s", batch_size=1, seq_len=2048)[
        "time"
    ]
    assert t["source_gpus"] == ["nvidia-h100-sxm"] and t["sources"]
    (note,) = [n for n in t["notes"] if "leave one source out" in n]
    assert f"{fam['mape']:.0%}" in note and f"{fam['baseline_mape']:.0%}" in note and str(fam["n"]) in note
    assert f"over {len(doc['sources'])} published sources" in note
    assert note.endswith("a check beside this answer, not the model that computed it")
    h = est(client, model="llama3-8b", mode="fine-tuning", gpu="nvidia-h200-sxm", batch_size=1, seq_len=2048)[
        "time"
    ]
    assert not any("leave one source out" in n for n in h["notes"])


def test_an_architecture_no_training_table_holds_takes_the_cross_source_factors(client: TestClient) -> None:
    """Issue 27: BERT-large on an MI300X (CDNA 3, in no single-GPU training table) was assumed to
    reach the H200's fractions of its peaks; it now takes the cross-source fit's CDNA 3 factors
    (fitted on MLPerf), names those sources and says so, and keeps the unseen-architecture band."""
    t = est(client, model="bert-large", mode="training", gpu="amd-mi300x", batch_size=32, seq_len=512)["time"]
    assert t["provenance"] == "published" and t["source_gpus"] == ["nvidia-h200-sxm"]
    (note,) = [n for n in t["notes"] if "cross-source fit's architecture factors" in n]
    assert "mlperf-inference-v5.1" in note and "mlperf-inference-v5.1" in t["sources"]
    assert t["accuracy"]["scope"] == "unseen-architecture"
    h100 = est(client, model="bert-large", mode="training", gpu="nvidia-h100-sxm", batch_size=32, seq_len=512)
    # 1.32x the H100's dense 16-bit peak and 1.58x its bandwidth; MLPerf says CDNA 3 gets less of both
    assert t["step_time_s"] < h100["time"]["step_time_s"] < 1.45 * t["step_time_s"]


def test_derived_peak_answers_derived(client: TestClient) -> None:
    t = est(
        client, model="llama3-8b", mode="fine-tuning", gpu="nvidia-rtx-a5000", batch_size=1, seq_len=2048
    )["time"]
    assert t["provenance"] == "derived"
    assert any("derived from nvidia-rtx-a6000" in n for n in t["notes"])
    b = t["step_time_band"]
    assert b["high"] > 1.4 * t["step_time_s"]  # spans the RTX 3090-rate alternative (half the tensor peak)


def test_serving_at_a_request_rate_and_min_gpus(client: TestClient) -> None:
    body = {
        "model": "Qwen/Qwen2.5-72B-Instruct",
        "gpu": "nvidia-h200-sxm",
        "mode": "inference",
        "engine": "vllm",
        "gpu_count": 8,
        "tensor_parallel": 4,
        "input_len": 1024,
        "output_len": 256,
        "input_len_cv": 0.5,
        "output_len_cv": 0.8,
        "requests_per_s": 5,
        "ttft_target_ms": 1000,
        "tpot_target_ms": 50,
    }
    j = est(client, **body)
    sv = j["serving"]
    assert sv["engine"] == "vllm" and sv["replicas"] == 2 and sv["tensor_parallel"] == 4
    assert sv["provenance"] == "transferred" and sv["rate"]["percentile"] == "p50"
    assert sv["rate"]["stable"] and sv["rate"]["meets_ttft"] and sv["rate"]["meets_tpot"]
    assert j["configuration"]["replicas"] == 2 and j["configuration"]["requests_per_s"] == 5
    solved = est(client, **{**body, "requests_per_s": 20, "solve_for": "min_gpus"})["solve"]
    assert solved["value"] == solved["replicas"] * solved["tensor_parallel"] and solved["headroom"] >= 0
    overload = est(client, **{**body, "gpu_count": 4, "requests_per_s": 500})["serving"]
    assert overload["rate"]["stable"] is False and overload["ttft_ms"] is None
    bert = est(client, model="bert-large", gpu="h100", mode="inference", batch_size=32, seq_len=128)
    assert bert["time"]["samples_per_s"] > 0 and bert["configuration"]["seq_len"] == 128


def test_layout_network_pipeline_and_stack_through_the_api(client: TestClient) -> None:
    """Issue 25's training inputs: the node layout and network change FSDP's time and are stated;
    pipeline stages answer a bubble share; the stack is named; bound is one of four terms."""
    body = {
        "model": "llama2-70b",
        "gpu": "nvidia-l40",
        "mode": "fine-tuning",
        "sharding": "fsdp",
        "gpu_count": 8,
    }
    one = est(client, **body)["time"]
    four = est(client, **body, gpus_per_node=2, network_gbps_per_node=100)["time"]
    assert four["step_time_s"] != one["step_time_s"]
    assert four["network"] is not None and "100 Gb/s per node" in four["network"]
    assert one["network"] is None and one["stack"] == "hf-eager"
    for t in (one, four):
        assert t["bound"] in ("compute", "memory", "communication", "host")
        assert abs(sum(t["time_shares"].values()) - 1.0) < 0.005
    pp = est(
        client, model="llama3-8b", gpu="nvidia-h100-sxm", gpu_count=8, pipeline_parallel=4, global_batch=16
    )
    assert pp["configuration"]["pipeline_parallel"] == 4
    assert pp["time"]["time_shares"]["pipeline_bubble"] > 0
    st = est(client, model="llama3-8b", gpu="nvidia-h100-sxm", stack="megatron")["time"]
    assert st["stack"] == "megatron" and any(n.startswith("stack megatron") for n in st["notes"])


def test_layout_inputs_out_of_range_are_422_naming_the_field(client: TestClient) -> None:
    for field, value in (
        ("pipeline_parallel", 0),
        ("gpus_per_node", 0),
        ("network_gbps_per_node", -1),
        ("stack", "deepspeed-magic"),
        ("rdma", "yes"),
    ):
        r = client.post("/v1/estimate", json={"model": "llama3-8b", "gpu": "nvidia-h100-sxm", field: value})
        assert r.status_code == 422, (field, r.text)
        assert field in r.text
    r = client.post(
        "/v1/estimate",
        json={"model": "llama3-8b", "gpu": "nvidia-h100-sxm", "gpu_count": 6, "pipeline_parallel": 4},
    )
    assert r.status_code == 422 and "pipeline_parallel" in r.text


def test_hf_config_states_the_sparse_rules(client: TestClient) -> None:
    """Issue 28: MLA keys are taken with a DeepSeek model_type and refused on any other (422 at
    hf_config); a llama4 wrapper's sizes are read from its text_config."""
    from service.core.catalog.sparse_models import _SPECS

    published = {pid: cfg for pid, _, cfg, _, _ in _SPECS}
    base = {"gpu": "nvidia-h200-sxm", "gpu_count": 8, "tensor_parallel": 8, "mode": "inference"}
    ds = client.post(
        "/v1/estimate", json={**base, "hf_config": published["deepseek-v3"], "quant_method": "fp8"}
    )
    assert ds.status_code == 200, ds.text
    bad = {**published["qwen3-30b-a3b"], "kv_lora_rank": 512}
    r = client.post("/v1/estimate", json={**base, "hf_config": bad})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "hf_config"]
    text = {k: v for k, v in published["llama4-scout"].items() if k != "model_type"}
    wrapped = {"model_type": "llama4", "text_config": text}
    assert client.post("/v1/estimate", json={**base, "hf_config": wrapped}).status_code == 200
    r = client.post("/v1/estimate", json={**base, "hf_config": {"model_type": "llama4", "text_config": {}}})
    assert r.status_code == 422 and "text_config.hidden_size" in r.text


def test_mixtral_8x22b_is_asked_by_its_hugging_face_id(client: TestClient) -> None:
    """The preset answers by its repository id: 141B parameters do not fit one H100 in bf16 and
    fit eight in FP8 with room for KV cache."""
    one = est(client, model="mistralai/Mixtral-8x22B-Instruct-v0.1", gpu="nvidia-h100-sxm", mode="inference")
    assert one["memory"]["fits"] is False
    eight = est(
        client,
        model="mistralai/Mixtral-8x22B-Instruct-v0.1",
        gpu="nvidia-h100-sxm",
        gpu_count=8,
        tensor_parallel=8,
        mode="inference",
        quant_method="fp8",
        input_len=1000,
        output_len=1000,
    )
    assert eight["memory"]["fits"] is True
    assert 15 * GIB < eight["memory"]["components"]["weights"] < 20 * GIB  # ~141 GB over 8 GPUs
    assert eight["serving"]["tpot_ms"] > 0


def test_a_serving_engine_that_cannot_hold_the_model_answers_does_not_fit(client: TestClient) -> None:
    """Llama-3-70B in FP8 on one H100 under vLLM leaves no KV cache (vLLM takes 90 % of the
    device, and 72.7 GB of weights leave its pool no room): the answer is the memory breakdown
    with ``fits: false`` and a warning pointing at min_gpus, as eager serving's is -- not a 422,
    which says the request was malformed. The sequences' own memory would fit, and TensorRT-LLM,
    whose pool is 90 % of what the weights leave, serves them (as NVIDIA's tables ran it)."""
    body = {
        "gpu": "nvidia-h100-sxm",
        "model": "llama3-70b",
        "mode": "inference",
        "engine": "vllm",
        "quant_method": "fp8",
        "input_len": 1024,
        "output_len": 256,
        "batch_size": 8,
    }
    r = client.post("/v1/estimate", json=body)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["memory"]["fits"] is False and doc["serving"] is None
    assert "no_serving_as_given" in [w["code"] for w in doc["warnings"]]
    trt = client.post("/v1/estimate", json={**body, "engine": "tensorrt-llm"}).json()
    assert trt["memory"]["fits"] is True and trt["serving"]["max_concurrency_per_replica"] >= 8


def test_clients_beyond_what_a_replica_admits_wait_and_are_said_to(client: TestClient) -> None:
    """1,500 clients of Llama-3.1-8B (4k in) on one H100: the replica admits what its KV cache
    and scheduler hold, the rest wait (TTFT includes the wait), and the memory is that of the
    admitted sequences -- it fits; it said "does not fit" (886 GB of KV for all 1,500) beside a
    serving answer, with no warning."""
    body = {
        "model": "llama3.1-8b",
        "gpu": "nvidia-h100-sxm",
        "mode": "inference",
        "engine": "vllm",
        "input_len": 4096,
        "output_len": 512,
        "concurrency": 1500,
    }
    doc = client.post("/v1/estimate", json=body).json()
    sv, mem = doc["serving"], doc["memory"]
    w = next(w for w in doc["warnings"] if w["code"] == "concurrency_queued")
    cap = sv["max_concurrency_per_replica"]
    assert cap < 1500 and w["message"].startswith(f"{1500 - cap} of the 1500 clients per replica wait")
    assert mem["fits"] is True
    few = client.post("/v1/estimate", json={**body, "concurrency": 16}).json()
    assert "concurrency_queued" not in [w["code"] for w in few["warnings"]]
    assert sv["ttft_ms"] > 100 * few["serving"]["ttft_ms"]


def test_a_static_batch_that_does_not_fit_has_no_latency(client: TestClient) -> None:
    """Llama-3-8B, batch 32 x (2048 + 128) under eager transformers on an RTX 4090: 31 GiB of
    24 do not fit, so there is no TTFT or tokens/s (compare marks the same cell OOM) and the
    warning says why; it gave 213 tokens/s beside fits: false."""
    body = {
        "model": "llama3-8b",
        "gpu": "nvidia-rtx-4090",
        "mode": "inference",
        "engine": "hf-transformers",
        "batch_size": 32,
        "input_len": 2048,
        "output_len": 128,
    }
    doc = client.post("/v1/estimate", json=body).json()
    assert doc["memory"]["fits"] is False and doc["serving"] is None
    assert "no_serving_as_given" in [w["code"] for w in doc["warnings"]]
    trt = client.post("/v1/estimate", json={**body, "engine": "tensorrt-llm"}).json()
    assert trt["memory"]["fits"] is True and trt["serving"]["max_concurrency_per_replica"] >= 8
    small = client.post("/v1/estimate", json={**body, "batch_size": 1}).json()
    assert small["memory"]["fits"] is True and small["serving"]["output_tokens_per_s"] > 0


def test_a_training_step_that_does_not_fit_says_so_beside_its_time(client: TestClient) -> None:
    """Full fine-tuning of Llama-3-8B on one L4 (22.5 GiB usable) needs ~79 GiB: the time is still
    given (for comparison) but a warning names both figures; the fitting case has none."""
    j = est(client, model="llama3-8b", gpu="nvidia-l4", finetune="full", tokens=1e8, seq_len=2048)
    assert j["memory"]["fits"] is False and j["time"] is not None
    (w,) = [w["message"] for w in j["warnings"] if w["code"] == "does_not_fit"]
    assert f"needs {j['memory']['fit_bytes'] / GIB:.1f} GiB" in w
    assert f"{j['memory']['usable_memory_bytes'] / GIB:.1f} GiB usable" in w
    fits = est(
        client,
        model="llama3-8b",
        gpu="nvidia-l4",
        finetune="qlora",
        tokens=1e8,
        seq_len=2048,
        gradient_checkpointing=True,
    )
    assert fits["memory"]["fits"] is True
    assert "does_not_fit" not in [w["code"] for w in fits["warnings"]]


def test_an_encoder_trains_within_its_learned_positions(client: TestClient) -> None:
    """BERT's position table has 512 rows: 1,024 tokens cannot be embedded (422 naming seq_len),
    and the training default is 512, not a decoder's 2,048 (an answer for a step that cannot run)."""
    body = {"gpu": "nvidia-h100-sxm", "model": "bert-large", "mode": "fine-tuning", "finetune": "full"}
    r = client.post("/v1/estimate", json={**body, "seq_len": 1024})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"][-1] == "seq_len", r.text
    assert "512" in r.json()["detail"]
    assert est(client, **body)["configuration"]["seq_len"] == 512


def test_serving_memory_at_a_rate_holds_the_sequences_in_flight(client: TestClient) -> None:
    """Llama-3-8B at 5 req/s of 2,000 + 500 tokens on one H100: ~43 sequences are in flight
    (Little's law), so the KV cache stated is theirs -- not one sequence's 0.3 GB."""
    j = est(
        client,
        model="llama3-8b",
        gpu="nvidia-h100-sxm",
        mode="inference",
        engine="vllm",
        input_len=2000,
        output_len=500,
        requests_per_s=5,
    )
    held = j["serving"]["concurrency_per_replica"]
    per_seq = 2500 * 131072  # 32 layers x 8 KV heads x 128 x (K, V) x 2 B per token
    assert held > 10 and j["memory"]["fits"] is True
    assert j["memory"]["components"]["kv_cache"] >= held * per_seq


def test_llm_training_on_cdna3_leans_on_mlperf_not_on_datasheet_peaks(client: TestClient) -> None:
    """MLPerf Training v5.0 measured MI300X at ~0.80x the H200 per GPU on Llama-2-70B LoRA (8-GPU
    systems) where the datasheet peaks say 1.32x: the transferred answer follows the runs (within
    the model's own layout effects), says so, and names the table; the H100 (an architecture the
    training tables hold) is not anchored."""
    body = dict(
        model="llama2-70b", gpu_count=8, mode="fine-tuning", finetune="lora", sharding="fsdp", seq_len=8192
    )
    h200 = est(client, gpu="nvidia-h200-sxm", **body)["time"]
    mi300x = est(client, gpu="amd-mi300x", **body)["time"]
    ratio = mi300x["tokens_per_s"] / h200["tokens_per_s"]
    assert 0.7 < ratio < 0.95, ratio
    assert mi300x["provenance"] == "published" and "mlperf-training-v5.0" in mi300x["sources"]
    assert any("MLPerf Training v5.0" in n for n in mi300x["notes"])
    h100 = est(client, gpu="nvidia-h100-sxm", **body)["time"]
    assert not any("MLPerf" in n for n in h100["notes"])


def test_a_pcie_cards_multi_node_job_says_the_network_was_assumed(client: TestClient) -> None:
    """16 A10 span two nodes: with no network stated the DGX/HGX default (400 Gb/s RDMA per GPU)
    is timed, which PCIe servers rarely have -- the answer says so; stated, or on SXM, it does not."""
    body = dict(
        model="qwen2.5-14b",
        gpu="nvidia-a10",
        gpu_count=16,
        tensor_parallel=8,
        mode="fine-tuning",
        finetune="full",
        seq_len=4096,
        global_batch=16,
    )
    (w,) = [w for w in est(client, **body)["warnings"] if w["code"] == "network_assumed"]
    assert "2 nodes" in w["message"] and "network_gbps_per_node" in w["message"]
    stated = est(client, **body, network_gbps_per_node=100, rdma=False)
    assert "network_assumed" not in [w["code"] for w in stated["warnings"]]
    node_only = est(client, **body, gpus_per_node=8)  # the node size, not the network between nodes
    assert "network_assumed" in [w["code"] for w in node_only["warnings"]]
    sxm = est(client, **{**body, "gpu": "nvidia-h100-sxm"})
    assert "network_assumed" not in [w["code"] for w in sxm["warnings"]]


def test_memory_that_fits_beside_an_engine_with_no_room_says_why(client: TestClient) -> None:
    """DeepSeek-V3 in bf16 on 8 B200 with SGLang: the sequences' memory fits the card (187 of 192
    GB) but SGLang takes 85 % of it (its own pick on eight B200s, 1.32.0; 88 % before), which the
    weights fill -- the answer said "fits" and "no KV cache for one request" side by side; the
    warning now gives the engine's share and the request field that makes room, and since 1.30.0
    the memory answer says what the engine does: it does not fit as configured."""
    j = est(
        client,
        model="deepseek-v3",
        gpu="nvidia-b200",
        gpu_count=8,
        tensor_parallel=8,
        mode="inference",
        engine="sglang",
        quant_method="none",
        input_len=2048,
        output_len=512,
        concurrency=32,
    )
    assert j["memory"]["fits"] is False and j["serving"] is None
    assert j["memory"]["device_memory_band"]["high"] < j["memory"]["usable_memory_bytes"]  # the sequences'
    (w,) = [w["message"] for w in j["warnings"] if w["code"] == "no_serving_as_given"]
    assert "sglang takes 85%" in w and "or more holds one, a larger tensor_parallel more" in w


def test_a_rate_over_what_the_deployment_carries_is_warned_about(client: TestClient) -> None:
    """Llama-3.1-8B at 1 req/s of 1,024 + 256 tokens on one L4 is over its capacity: the rate's
    own fields said stable false, the warnings nothing; at a rate it carries there is no warning."""
    body = dict(
        model="llama3.1-8b", gpu="nvidia-l4", mode="inference", engine="vllm", input_len=1024, output_len=256
    )
    over = est(client, **body, requests_per_s=1)
    assert over["serving"]["rate"]["stable"] is False
    (w,) = [w for w in over["warnings"] if w["code"] == "overloaded"]
    assert "min_gpus" in w["message"]
    light = est(client, **body, requests_per_s=0.1)
    assert light["serving"]["rate"]["stable"] is True
    assert "overloaded" not in [w["code"] for w in light["warnings"]]


def test_cards_without_pcie_peer_to_peer_say_their_collectives_go_through_the_host(
    client: TestClient,
) -> None:
    """The RTX 4090 has no PCIe P2P (catalog): a TP4 plan's all-reduces are staged through host
    memory, which the PCIe-bandwidth timing does not show -- said; one card, or an L40S, not."""
    body = dict(model="qwen2.5-32b", mode="inference", engine="vllm", quant_method="awq", concurrency=8)
    four = est(client, gpu="nvidia-rtx-4090", gpu_count=4, tensor_parallel=4, **body)
    assert "no_peer_to_peer" in [w["code"] for w in four["warnings"]]
    one = est(client, gpu="nvidia-rtx-4090", **{**body, "model": "qwen2.5-7b"})
    l40s = est(client, gpu="nvidia-l40s", gpu_count=4, tensor_parallel=4, **body)
    assert "no_peer_to_peer" not in [w["code"] for w in one["warnings"] + l40s["warnings"]]


def test_a_disaggregated_estimate_at_a_rate_holds_its_decode_replicas_sequences(client: TestClient) -> None:
    """Llama-3.1-70B FP8, 8,000-token prompts, 2 prefill + 2 decode H100: the KV stated grows with
    the sequences a decode replica holds (it stayed at one sequence's 1.31 GB at every rate)."""
    body = dict(
        model="llama3.1-70b",
        gpu="nvidia-h100-sxm",
        gpu_count=4,
        tensor_parallel=2,
        mode="inference",
        engine="vllm",
        quant_method="fp8",
        input_len=8000,
        output_len=256,
        disaggregated={"prefill_gpus": 2, "decode_gpus": 2},
    )
    low, high = est(client, **body, requests_per_s=0.5), est(client, **body, requests_per_s=1.2)
    one_seq = 8256 * 327680 / 2  # 80 layers x 8 KV heads x 128 x (K, V) x 2 B per token, over TP2
    for j in (low, high):
        held = math.ceil(j["serving"]["rate"]["in_flight_per_replica"])
        assert j["memory"]["components"]["kv_cache"] >= 0.99 * held * one_seq * (8000 / 8256)
    assert high["memory"]["components"]["kv_cache"] > 2 * low["memory"]["components"]["kv_cache"]


def test_min_gpus_replicates_kv_heads_as_the_engines_do(client: TestClient) -> None:
    """Qwen3-235B-A22B has 4 KV heads: TP8 replicates each on 2 ranks (vLLM, SGLang), and bf16
    holds on 8 H100s (58.8 GB of weights each) -- the solve tried only divisors of the KV heads
    and answered TP16, two nodes, twice the hardware the recommender ranks first."""
    r = client.post(
        "/v1/estimate",
        json={
            "model": "qwen3-235b-a22b",
            "gpu": "nvidia-h100-sxm",
            "mode": "inference",
            "engine": "vllm",
            "solve_for": "min_gpus",
        },
    )
    assert r.status_code == 200, r.text
    assert (r.json()["solve"]["value"], r.json()["solve"]["tensor_parallel"]) == (8, 8)


def test_an_assumed_large_shape_has_grouped_query_attention(client: TestClient) -> None:
    """``params_billion: 70`` assumed multi-head attention (70 KV heads: 2.5 MB of KV a token, 8x a
    real 70B's), so a 70B served 5 sequences where Llama-2-70B serves ~42; from 30B the assumed
    shape has 8 KV heads, as Llama 2 70B, Llama 3, Qwen2.5 and Mixtral do. Small shapes keep
    Llama 2 7B/13B's multi-head attention."""
    body = {
        "gpu": "nvidia-h200-sxm",
        "mode": "inference",
        "engine": "vllm",
        "quant_method": "fp8",
        "input_len": 4096,
    }
    body |= {"output_len": 512, "solve_for": "max_concurrency"}
    assumed = client.post("/v1/estimate", json={**body, "params_billion": 70}).json()
    real = client.post("/v1/estimate", json={**body, "model": "llama2-70b"}).json()
    assert "(8 KV)" in assumed["model"]["description"], assumed["model"]
    assert 0.95 < assumed["model"]["total_params"] / 70e9 < 1.05
    assert 0.7 < assumed["solve"]["value"] / real["solve"]["value"] < 1.4, (assumed["solve"], real["solve"])
    small = client.post("/v1/estimate", json={**body, "params_billion": 7}).json()
    assert "32 heads (32 KV)" in small["model"]["description"]


def test_tensor_parallel_must_split_the_attention_heads_too(client: TestClient) -> None:
    """Qwen2.5-32B (40 attention heads, 8 KV heads) at TP16: each KV head would sit on two ranks,
    but 40 query heads do not split over 16 (vLLM refuses it); TP8 does both."""
    body = {
        "model": "qwen2.5-32b",
        "gpu": "nvidia-l40s",
        "mode": "inference",
        "engine": "vllm",
        "concurrency": 8,
        "input_len": 1024,
        "output_len": 256,
    }
    r = client.post("/v1/estimate", json={**body, "gpu_count": 16, "tensor_parallel": 16})
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"][-1] == "tensor_parallel" and "(40)" in r.json()["detail"]
    ok = client.post("/v1/estimate", json={**body, "gpu_count": 8, "tensor_parallel": 8})
    assert ok.status_code == 200, ok.text


def test_post_trained_releases_resolve_to_the_shape_they_share(client: TestClient) -> None:
    """Llama-3.3-70B-Instruct and DeepSeek's R1 distillations have their base's config.json."""
    for hf_id, preset in (
        ("meta-llama/Llama-3.3-70B-Instruct", "llama3.1-70b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Llama-70B", "llama3.1-70b"),
        ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "qwen2.5-32b"),
    ):
        r = client.post(
            "/v1/estimate",
            json={
                "model": hf_id,
                "gpu": "nvidia-h200-sxm",
                "mode": "inference",
                "engine": "vllm",
                "concurrency": 1,
            },
        )
        assert r.status_code == 200, (hf_id, r.text)
        assert r.json()["model"]["id"] == preset
