"""Issue 28, slice 2: memory and time of the sparse models through ``/v1/estimate``."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from service.core.catalog.models import DecoderSpec, get_model
from service.core.estimation.memory import weight_bytes


def _serve(client: TestClient, **body: Any) -> dict[str, Any]:
    req = {
        "mode": "inference",
        "engine": "vllm",
        "batch_size": 1,
        "input_len": 1024,
        "output_len": 256,
        **body,
    }
    r = client.post("/v1/estimate", json=req)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _fits(client: TestClient, **body: Any) -> bool:
    """The fit decision: ``memory.fits``, or vLLM's refusal when the weights leave no KV cache."""
    req = {
        "mode": "inference",
        "engine": "vllm",
        "batch_size": 1,
        "input_len": 1024,
        "output_len": 256,
        **body,
    }
    r = client.post("/v1/estimate", json=req)
    if r.status_code == 422:
        assert r.json()["reason_code"] == "MEMORY_INSUFFICIENT", r.text
        return False
    assert r.status_code == 200, r.text
    return bool(r.json()["memory"]["fits"])


def test_deepseek_v3_fits_as_the_deployment_guides_say(client: TestClient) -> None:
    """SGLang's DeepSeek V3/R1 guide (https://docs.sglang.io/docs/basic_usage/deepseek_v3.md,
    "recommended settings"): FP8 on 8 x H200 or 2 x 8 x H100; BF16 on 2 x 8 x H200 or
    4 x 8 x H100. vLLM's recipe (https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/
    DeepSeek-V3.html): "8xH200 with fp8". Arithmetic: 671.0B parameters, FP8 linears with bf16
    embeddings and head = 672.9 GB (84.1 GB per GPU of 8: fits in an H200's 141 GB, not in an
    H100's 80 GB); bf16 = 1,342 GB, over 8 x 141 GB = 1,128 GB."""
    fp8 = {"model": "deepseek-ai/DeepSeek-V3", "gpu_count": 8, "tensor_parallel": 8, "quant_method": "fp8"}
    h200 = _serve(client, gpu="nvidia-h200-sxm", **fp8)
    assert h200["memory"]["fits"] is True
    assert _fits(client, gpu="h100", **fp8) is False
    bf16 = {**fp8, "quant_method": "none"}
    assert _fits(client, gpu="nvidia-h200-sxm", **bf16) is False
    assert _fits(client, gpu="h100", **bf16) is False
    # the same decisions from the answer's own memory figures, eager engine (no KV refusal)
    eager = {**fp8, "engine": "hf-transformers"}
    assert _serve(client, gpu="h100", **eager)["memory"]["fits"] is False
    m = get_model("deepseek-v3")
    assert isinstance(m, DecoderSpec)
    per_gpu = h200["memory"]["components"]["weights"]
    assert abs(per_gpu * 8 - weight_bytes(m, "fp8")) < 8 * 1e3
    assert 672e9 < per_gpu * 8 < 674e9
    assert 2 * m.total_params > 8 * 141e9  # bf16 fits on no 8-GPU H200 node


def test_mla_latent_is_whole_on_every_rank_and_small(client: TestClient) -> None:
    """KV per token: the 576-wide latent on each of 61 layers, 69 KiB in bf16, not split by TP
    (each rank attends all 128 heads' share over the same latent); a GQA model's is split."""
    long = {"batch_size": 16, "input_len": 16384, "output_len": 1024, "gpu_count": 8, "tensor_parallel": 8}
    ds = _serve(client, model="deepseek-v3", gpu="nvidia-h200-sxm", quant_method="fp8", **long)
    assert any("69 KiB per token (MLA latent" in a for a in ds["memory"]["assumptions"])
    tokens = 16 * (16384 + 1024)
    assert abs(ds["memory"]["components"]["kv_cache"] - 70_272 * tokens) < 1e3
    qwen = _serve(client, model="qwen3-235b-a22b", gpu="nvidia-h200-sxm", quant_method="fp8", **long)
    # 94 layers x 4 KV heads x 128 x 2 (K, V) x 2 B = 192,512 B per token; 8 ranks share 4 KV
    # heads, each head kept on two ranks (vLLM replicates KV heads when tp > num_kv_heads)
    assert abs(qwen["memory"]["components"]["kv_cache"] - 192_512 / 4 * tokens) < 1e3


def test_decode_reads_the_activated_experts_not_all_of_them(client: TestClient) -> None:
    """Batch 1 decode streams the dense part and the experts one token is routed to: slower than
    reading the 37.6B activated parameters alone, far faster than reading all 671B."""
    ds = _serve(
        client, model="deepseek-v3", gpu="nvidia-h200-sxm", gpu_count=8, tensor_parallel=8, quant_method="fp8"
    )
    m = get_model("deepseek-v3")
    bw = 4.8e12  # H200 SXM datasheet, B/s
    tpot_s = ds["serving"]["tpot_ms"] / 1e3
    assert m.active_params / 8 / bw < tpot_s < weight_bytes(m, "fp8") / 8 / bw
    assert any(w["code"] == "sparse_time_unvalidated" for w in ds["warnings"])


def test_training_a_sparse_layout_is_refused_at_mode(client: TestClient) -> None:
    r = client.post(
        "/v1/estimate", json={"model": "qwen3-30b-a3b", "gpu": "nvidia-h200-sxm", "mode": "fine-tuning"}
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "mode"]


def test_fp4_weights_and_kv_through_the_api(client: TestClient) -> None:
    """vLLM's DeepSeek recipe: "4xB200 with fp4" (NVFP4); OpenAI's gpt-oss card: gpt-oss-120b
    (MXFP4) "fits into a single 80GB GPU" -- on Hopper it runs weight-only. NVFP4 on Hopper and
    an NVFP4 KV cache off Blackwell are refused naming the field."""
    r1 = {"model": "deepseek-r1", "gpu": "nvidia-b200", "gpu_count": 4, "tensor_parallel": 4}
    nv = _serve(client, quant_method="nvfp4", **r1)
    assert nv["memory"]["fits"] is True
    assert not any("FP8 peak" in n for n in nv["serving"]["notes"])  # B200's own FP4 peak
    fp8 = _serve(client, quant_method="fp8", **{**r1, "gpu_count": 8, "tensor_parallel": 8})
    assert nv["memory"]["components"]["weights"] * 4 < fp8["memory"]["components"]["weights"] * 8
    oss = _serve(client, model="gpt-oss-120b", gpu="h100", quant_method="mxfp4")
    assert oss["memory"]["fits"] is True
    assert 60e9 < oss["memory"]["components"]["weights"] < 66e9
    assert any("weight-only" in n for n in oss["serving"]["notes"])
    r = client.post(
        "/v1/estimate",
        json={
            "model": "deepseek-r1",
            "gpu": "nvidia-h200-sxm",
            "gpu_count": 8,
            "tensor_parallel": 8,
            "mode": "inference",
            "engine": "vllm",
            "quant_method": "nvfp4",
        },
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "quant_method"]
    assert r.json()["reason_code"] == "PRECISION_UNSUPPORTED" and "Blackwell" in r.text
    kv = {"model": "llama3.1-8b", "mode": "inference", "engine": "vllm", "batch_size": 8, "input_len": 8192}
    r = client.post("/v1/estimate", json={**kv, "gpu": "nvidia-h200-sxm", "kv_cache_dtype": "nvfp4"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "kv_cache_dtype"]
    b16 = _serve(client, gpu="nvidia-b200", **{k: v for k, v in kv.items() if k != "mode"})
    b4 = _serve(
        client, gpu="nvidia-b200", kv_cache_dtype="nvfp4", **{k: v for k, v in kv.items() if k != "mode"}
    )
    assert (
        abs(b4["memory"]["components"]["kv_cache"] / b16["memory"]["components"]["kv_cache"] - 0.5625 / 2)
        < 1e-6
    )


def test_sglang_and_the_engine_version_are_stated(client: TestClient) -> None:
    body = {"model": "llama3.1-8b", "gpu": "nvidia-h200-sxm", "concurrency": 8}
    sg = _serve(client, engine="sglang", engine_version="0.5.2", **body)["serving"]
    assert sg["engine"] == "sglang" and sg["engine_version"].startswith("0.5")
    assert sg["engine_version_requested"] == "0.5.2"
    assert any("sglang 0.5.2 asked for" in n for n in sg["notes"])
    assert any("sglang's scheduler" in n for n in sg["notes"])
    vl = _serve(client, engine="vllm", **body)["serving"]
    assert vl["engine_version_requested"] is None and vl["engine_version"]
    assert not any("asked for" in n for n in vl["notes"])
    r = client.post(
        "/v1/estimate", json={**body, "mode": "inference", "engine": "vllm", "engine_version": "x" * 33}
    )
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["body", "engine_version"]


def test_prefill_time_share_splits_input_and_output_cost(client: TestClient) -> None:
    """Long prompts with short answers spend more of the GPU on prefill than chat turns do; and
    at the engine's operating point a prompt token costs less than an output token (each output
    token pays a share of a weight-streaming decode iteration), as providers' prices have it."""
    from service.core.pricing.token_cost import token_costs

    base = {"model": "llama3.1-8b", "gpu": "nvidia-h200-sxm", "concurrency": 32}
    rag = _serve(client, **{**base, "input_len": 8192, "output_len": 64})["serving"]
    chat = _serve(client, **{**base, "input_len": 256, "output_len": 1024})["serving"]
    assert 0.0 < chat["prefill_time_share"] < rag["prefill_time_share"] < 1.0
    mid = _serve(client, **{**base, "input_len": 1024, "output_len": 256})["serving"]
    out_tps = mid["output_tokens_per_s"]
    c = token_costs(
        4.0,
        input_tokens_per_s=out_tps * 1024 / 256,
        output_tokens_per_s=out_tps,
        prefill_time_share=mid["prefill_time_share"],
    )
    assert c.per_million_input < c.per_million_output


def test_prefix_cache_and_speculative_inputs(client: TestClient) -> None:
    body = {
        "model": "llama3.1-8b",
        "gpu": "nvidia-h200-sxm",
        "concurrency": 16,
        "input_len": 4096,
        "output_len": 256,
    }
    cold = _serve(client, **body)["serving"]
    warm = _serve(client, prefix_cache_hit_rate=0.75, **body)["serving"]
    assert warm["ttft_ms"] < cold["ttft_ms"] and warm["prefill_time_share"] < cold["prefill_time_share"]
    spec = {"method": "eagle", "draft_tokens": 3, "acceptance_rate": 0.75}
    fast = _serve(client, speculative=spec, **body)["serving"]
    none = _serve(client, speculative={**spec, "acceptance_rate": 0.0}, **body)["serving"]
    assert fast["tpot_ms"] < cold["tpot_ms"] <= none["tpot_ms"]
    mtp = {
        "model": "deepseek-v3",
        "gpu": "nvidia-h200-sxm",
        "gpu_count": 8,
        "tensor_parallel": 8,
        "quant_method": "fp8",
    }
    assert _serve(client, speculative={**spec, "method": "mtp"}, **mtp)["serving"]["tpot_ms"] > 0
    refusals = [
        ({**body, "speculative": {**spec, "method": "mtp"}}, "speculative"),  # Llama ships no MTP module
        ({**body, "speculative": spec, "requests_per_s": 2.0, "concurrency": None}, "speculative"),
        (
            {**body, "engine": "hf-transformers", "concurrency": None, "prefix_cache_hit_rate": 0.5},
            "prefix_cache_hit_rate",
        ),
        ({**body, "prefix_cache_hit_rate": 1.0}, "prefix_cache_hit_rate"),
    ]
    for req, field in refusals:
        r = client.post("/v1/estimate", json={"mode": "inference", "engine": "vllm", **req})
        assert r.status_code == 422, (field, r.text)
        assert r.json()["errors"][0]["loc"][:2] == ["body", field], r.text


def test_mtp_speculation_loads_the_checkpoints_draft_layer(client: TestClient) -> None:
    """MTP drafting runs DeepSeek-R1's next-token module: one more MoE decoder layer (about 11.5B
    parameters; embedding and head shared) resident beside the model, and its own KV per token --
    the weights were the same with and without it."""
    body = {
        "model": "deepseek-r1",
        "gpu": "nvidia-b200",
        "gpu_count": 8,
        "tensor_parallel": 8,
        "mode": "inference",
        "engine": "tensorrt-llm",
        "quant_method": "nvfp4",
        "concurrency": 64,
        "input_len": 1024,
        "output_len": 1024,
    }
    plain = client.post("/v1/estimate", json=body).json()
    mtp = client.post(
        "/v1/estimate",
        json={**body, "speculative": {"method": "mtp", "draft_tokens": 3, "acceptance_rate": 0.8}},
    ).json()
    extra_gb = (mtp["memory"]["components"]["weights"] - plain["memory"]["components"]["weights"]) / 1e9
    assert 0.6 < extra_gb < 1.2, extra_gb  # ~11.5B x 0.5625 B / 8 GPUs
    assert mtp["memory"]["components"]["kv_cache"] > plain["memory"]["components"]["kv_cache"]
    assert mtp["serving"]["max_concurrency_per_replica"] <= plain["serving"]["max_concurrency_per_replica"]


def test_an_eagle_draft_head_is_resident_too(client: TestClient) -> None:
    """EAGLE drafts with one decoder layer on the target's features (embedding and LM head
    shared): Llama-3.1-8B's is ~218M parameters, 0.44 GB in bf16 beside the 16.06 GB model, plus
    one layer's KV per token (1/32 more) -- both were left out, so the memory was the same with
    and without speculation. n-gram drafting runs on the host and holds nothing."""
    body = {
        "model": "llama3.1-8b",
        "gpu": "nvidia-h100-sxm",
        "mode": "inference",
        "engine": "sglang",
        "input_len": 4096,
        "output_len": 256,
        "concurrency": 16,
    }
    plain = client.post("/v1/estimate", json=body).json()["memory"]["components"]
    answers = {
        method: client.post(
            "/v1/estimate",
            json={**body, "speculative": {"method": method, "draft_tokens": 3, "acceptance_rate": 0.7}},
        ).json()["memory"]["components"]
        for method in ("eagle", "ngram")
    }
    extra_gb = (answers["eagle"]["weights"] - plain["weights"]) / 1e9
    assert 0.4 < extra_gb < 0.5, extra_gb  # one decoder layer in bf16
    assert answers["eagle"]["kv_cache"] == plain["kv_cache"] * 33 / 32
    assert (
        answers["ngram"]["weights"] == plain["weights"] and answers["ngram"]["kv_cache"] == plain["kv_cache"]
    )
