"""One serving replica over several nodes, through the real app on the test database: a model no
node holds is served tensor-parallel over whole nodes (SGLang ``--nnodes``, vLLM over Ray), its
all-reduces timed over the network of the instance it is priced on, and scheduled as those
nodes; training over rented nodes is timed on the rental's network too."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

DEEPSEEK = {
    "model": "deepseek-ai/DeepSeek-V3",
    "mode": "inference",
    "engine": "sglang",
    "input_len": 1024,
    "output_len": 1024,
    "requests_per_s": 0.5,
    "ttft_target_ms": 5000,
    "tpot_target_ms": 200,
}

ON_H100_OR_A100 = {
    "workload": DEEPSEEK,
    "constraints": {"allowed_gpus": ["nvidia-h100-sxm", "nvidia-a100-sxm4-80gb"], "max_gpus": 32},
    "objective": "cheapest",
}


def _post(client: TestClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def _option(doc: dict[str, Any], slug: str) -> dict[str, Any]:
    found = [o for o in doc["options"] if o["gpu"]["slug"] == slug]
    assert found, (
        slug,
        [(e["gpu"]["slug"], e["message"]) for e in doc["excluded"] if e["code"] != "NOT_ALLOWED"],
    )
    return found[0]


def _tpot_ms(client: TestClient, gpu: str, **layout: Any) -> float:
    body = {**DEEPSEEK, "gpu": gpu, "gpu_count": 16, "tensor_parallel": 16, **layout}
    return float(_post(client, "/v1/estimate", body)["serving"]["tpot_ms"])


def test_a_model_no_node_holds_is_served_over_two_nodes(client: TestClient) -> None:
    """DeepSeek-V3 (671B, FP8 checkpoint: 673 GB) holds on no 8-GPU H100 or A100 node; TP16 over
    two nodes holds 42 GB of weights per GPU. The plan says it spans 2 nodes of 8, is rented as
    two instances with a stated inter-node network, and is scheduled as 2 pods / Slurm nodes of
    8 GPUs -- not one pod of 16, which no node has."""
    doc = _post(client, "/v1/recommend", ON_H100_OR_A100)
    for slug in ("nvidia-h100-sxm", "nvidia-a100-sxm4-80gb"):
        o = _option(doc, slug)
        s = o["strategy"]
        assert (s["tensor_parallel"], s["nodes"], s["gpus_per_node"]) == (16, 2, 8)
        span = [r for r in o["reasons"] if r["code"] == "MULTI_NODE"]
        assert span and (span[0]["params"]["nodes"], span[0]["params"]["gpus_per_node"]) == (2, 8)
        # the network the replica's all-reduces were timed on, said on the plan itself
        assert "Gb/s" in span[0]["params"]["network"] and span[0]["params"]["network"] in span[0]["message"]
        assert o["cost"]["instances"] == 2 and o["cost"]["network"]["inter_node_gbps"]
        k8s, slurm = o["scheduling"]["kubernetes"], o["scheduling"]["slurm"]
        assert k8s["pods"] == 2 and k8s["resources"]["limits"]["nvidia.com/gpu"] == 8
        assert slurm[:2] == ["--nodes=2", f"--gres=gpu:{slurm[1].split(':')[1]}:8"]
        weights_per_gpu = 673e9 / 16
        bandwidth = {"nvidia-h100-sxm": 3.35e12, "nvidia-a100-sxm4-80gb": 2.039e12}[slug]
        active = 37.6 / 671.0  # decode reads the routed experts a step's tokens reach, at least
        assert o["serving"]["tpot"]["value"] / 1e3 > weights_per_gpu * active / bandwidth


def test_the_plan_is_timed_on_the_network_it_is_rented_on(client: TestClient) -> None:
    """The A100 plan is priced on GCP's a2-ultragpu-8g, 100 Gb/s between instances without RDMA:
    its TPOT is the estimate's on that network, slower than on a DGX node's 3,200 Gb/s RDMA
    default; the H100 plan (AWS p5, 3,200 Gb/s EFA) is the default's. A faster network is never
    slower."""
    doc = _post(client, "/v1/recommend", ON_H100_OR_A100)
    a100 = _option(doc, "nvidia-a100-sxm4-80gb")
    net = a100["cost"]["network"]
    assert (net["inter_node_gbps"], net["rdma"]) == (100.0, None)
    on_rental = _tpot_ms(client, "nvidia-a100-sxm4-80gb", network_gbps_per_node=100, rdma=False)
    default = _tpot_ms(client, "nvidia-a100-sxm4-80gb")
    assert a100["serving"]["tpot"]["value"] == on_rental > default
    h100 = _option(doc, "nvidia-h100-sxm")
    assert h100["cost"]["network"]["inter_node_gbps"] == 3200.0
    assert h100["serving"]["tpot"]["value"] == _tpot_ms(client, "nvidia-h100-sxm", network_gbps_per_node=3200)
    tpots = [_tpot_ms(client, "nvidia-h100-sxm", network_gbps_per_node=g) for g in (100, 400, 3200, 25600)]
    assert tpots == sorted(tpots, reverse=True) and tpots[0] > tpots[-1]


def test_an_estimate_over_two_nodes_says_so(client: TestClient) -> None:
    """TP16 on 8-GPU nodes: the answer names the nodes and the network it timed (here the default,
    as stated), its all-reduces no longer costed as if 16 GPUs shared one NVLink domain or PCIe;
    pipeline stages for serving are refused with the field named, not silently dropped."""
    body = {**DEEPSEEK, "gpu": "nvidia-h100-sxm", "gpu_count": 16, "tensor_parallel": 16}
    doc = _post(client, "/v1/estimate", body)
    notes = [n for n in doc["serving"]["notes"] if n.startswith("TP16 spans 2 node(s) of 8 GPUs")]
    assert notes and "3200 Gb/s per node, RDMA" in notes[0]
    one_node = _post(
        client, "/v1/estimate", {**body, "gpu_count": 8, "tensor_parallel": 8, "quant_method": "awq"}
    )
    assert not any("spans" in n for n in one_node["serving"]["notes"])
    r = client.post(
        "/v1/estimate",
        json={
            **DEEPSEEK,
            "gpu": "nvidia-h100-sxm",
            "gpu_count": 16,
            "tensor_parallel": 8,
            "pipeline_parallel": 2,
        },
    )
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"][-1] == "pipeline_parallel"
    pcie = _post(client, "/v1/estimate", {**body, "gpu": "nvidia-l40s", "quant_method": "awq"})
    assert "network_assumed" in {w["code"] for w in pcie["warnings"]}


def test_replicas_span_nodes_only_where_no_node_holds_one(client: TestClient) -> None:
    """A model one node holds is never spread over nodes (slower, and no cheaper); TensorRT-LLM,
    whose multi-node launch the artifacts do not write, is not spread either."""
    doc = _post(
        client,
        "/v1/recommend",
        {
            "workload": {**DEEPSEEK, "model": "llama3-70b", "engine": "vllm", "requests_per_s": 20},
            "constraints": {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 64},
            "objective": "cheapest",
        },
    )
    assert doc["options"] and all(o["strategy"]["tensor_parallel"] <= 8 for o in doc["options"])
    trt = _post(
        client,
        "/v1/recommend",
        {
            "workload": {**DEEPSEEK, "engine": "tensorrt-llm"},
            "constraints": {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 32},
        },
    )
    assert trt["options"] == []
    assert {e["code"] for e in trt["excluded"] if e["gpu"]["slug"] == "nvidia-h100-sxm"} == {
        "MEMORY_INSUFFICIENT"
    }


def test_training_over_rented_nodes_is_timed_on_their_network(client: TestClient) -> None:
    """Llama-3-8B data-parallel over two rented A100 nodes: the only A100 instance type with a
    stated inter-node network is GCP's a2 (100 Gb/s, no RDMA), where ZeRO-2's gradient traffic
    makes 16 GPUs slower than one node of 8 -- so the fastest plan is one node (timed on the
    3,200 Gb/s RDMA default, 16 GPUs on two nodes were ranked first at about twice the speed)."""
    doc = _post(
        client,
        "/v1/recommend",
        {
            "workload": {
                "model": "llama3-8b",
                "mode": "training",
                "batch_size": 2,
                "seq_len": 2048,
                "tokens": 2e10,
            },
            "constraints": {"allowed_gpus": ["nvidia-a100-sxm4-80gb"], "max_gpus": 16},
            "objective": "fastest",
        },
    )
    top = doc["options"][0]
    assert top["strategy"]["nodes"] == 1
    one = _post(
        client,
        "/v1/estimate",
        {
            "model": "llama3-8b",
            "mode": "training",
            "gpu": "nvidia-a100-sxm4-80gb",
            "batch_size": 2,
            "seq_len": 2048,
            "gpu_count": 16,
            "sharding": top["strategy"]["sharding"],
            "gradient_checkpointing": top["strategy"]["gradient_checkpointing"],
            "network_gbps_per_node": 100,
            "rdma": False,
        },
    )
    assert one["time"]["tokens_per_s"] < top["training"]["tokens_per_s"]


def _excluded(doc: dict[str, Any], slug: str) -> dict[str, Any]:
    (e,) = [e for e in doc["excluded"] if e["gpu"]["slug"] == slug]
    return e


def test_an_inventory_replica_needs_whole_free_nodes_and_waits_on_the_slowest(client: TestClient) -> None:
    """Owned H100s: two nodes of 8 whose networks differ are timed on the slower (every
    all-reduce waits on it: the estimate at 100 Gb/s without RDMA, not at 3,200); 8 + 4 + 4 free
    GPUs are not two nodes of 8 (no replica over them; the exclusion says why, and says so for a
    max_gpus or an engine that rules out the nodes too)."""
    mixed = [
        {
            "gpu": "nvidia-h100-sxm",
            "gpus_per_node": 8,
            "nodes": 1,
            "network_gbps_per_node": 3200,
            "rdma": True,
        },
        {
            "gpu": "nvidia-h100-sxm",
            "gpus_per_node": 8,
            "nodes": 1,
            "network_gbps_per_node": 100,
            "rdma": False,
        },
    ]
    doc = _post(client, "/v1/recommend", {"workload": DEEPSEEK, "constraints": {"inventory": mixed}})
    top = _option(doc, "nvidia-h100-sxm")
    assert top["strategy"]["tensor_parallel"] == 16
    slow = _tpot_ms(client, "nvidia-h100-sxm", network_gbps_per_node=100, rdma=False)
    assert (
        top["serving"]["tpot"]["value"]
        == slow
        > _tpot_ms(client, "nvidia-h100-sxm", network_gbps_per_node=3200)
    )
    assert any(
        "100 Gb/s per node, no RDMA" in a["message"]
        for a in doc["assumptions"]
        if a["code"] == "ASSUMED_NETWORK"
    )
    partial = [
        {"gpu": "nvidia-h100-sxm", "gpus_per_node": 8, "nodes": 1},
        {"gpu": "nvidia-h100-sxm", "gpus_per_node": 8, "free_gpus_per_node": 4, "nodes": 2},
    ]
    blocked = {
        "free_nodes": {"inventory": partial},
        "max_gpus": {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 12},
    }
    for why, constraints in blocked.items():
        doc = _post(client, "/v1/recommend", {"workload": DEEPSEEK, "constraints": constraints})
        assert doc["options"] == [], why
        e = _excluded(doc, "nvidia-h100-sxm")
        assert e["code"] == "MEMORY_INSUFFICIENT"
        assert (e["params"]["span_tensor_parallel"], e["params"]["span_blocked"]) == (16, why), e
    trt = {**DEEPSEEK, "engine": "tensorrt-llm"}
    doc = _post(
        client, "/v1/recommend", {"workload": trt, "constraints": {"allowed_gpus": ["nvidia-h100-sxm"]}}
    )
    assert _excluded(doc, "nvidia-h100-sxm")["params"]["span_blocked"] == "engine"


def test_min_gpus_is_solved_over_nodes_too(client: TestClient) -> None:
    """/v1/estimate's solve for the fewest GPUs considers one replica over whole nodes where no
    node holds the model, as the recommender does (it answered 0: "no degree up to one node")."""
    body = {**DEEPSEEK, "gpu": "nvidia-h100-sxm", "engine": "vllm", "solve_for": "min_gpus"}
    solve = _post(client, "/v1/estimate", body)["solve"]
    assert (solve["value"], solve["tensor_parallel"], solve["replicas"]) == (16, 16, 1), solve
    unloaded = {
        k: v for k, v in body.items() if k not in ("requests_per_s", "ttft_target_ms", "tpot_target_ms")
    }
    assert _post(client, "/v1/estimate", unloaded)["solve"]["value"] == 16


def test_a_model_that_holds_nowhere_as_asked_gets_the_quantised_plan_as_a_what_if(client: TestClient) -> None:
    """Llama-3.1-405B in bf16 on A100 or L40S within 16 GPUs: no option; with quantisation
    allowed there is one (INT8 on the A100: no FP8 tensor cores), offered as what to change."""
    body = {
        "workload": {**DEEPSEEK, "model": "llama3.1-405b", "engine": "vllm", "requests_per_s": 1},
        "constraints": {"allowed_gpus": ["nvidia-a100-sxm4-80gb", "nvidia-l40s"], "max_gpus": 16},
        "objective": "cheapest",
    }
    body["workload"].pop("ttft_target_ms")
    body["workload"].pop("tpot_target_ms")
    doc = _post(client, "/v1/recommend", body)
    assert doc["options"] == []
    (w, *_) = [w for w in doc["what_if"] if w["code"] == "WITH_QUANTIZATION"]
    assert w["change"] == {"constraints.allow_quantization": True}
    followed = _post(
        client, "/v1/recommend", {**body, "constraints": {**body["constraints"], "allow_quantization": True}}
    )
    top = followed["options"][0]
    assert (top["gpu"]["slug"], top["strategy"]["gpu_count"], top["strategy"]["quant_method"]) == (
        w["gpu"],
        w["gpu_count"],
        w["params"]["quant_method"],
    )


def test_the_question_asked_again_is_the_same_question(client: TestClient) -> None:
    """A load without an engine is served on vLLM (ENGINE_ASSUMED); the answer's ``asked`` says
    vllm, so the question re-sent from it (the page restores its form from it) is answerable --
    it said hf-transformers, and a rate on that engine is a 422."""
    workload = {k: v for k, v in DEEPSEEK.items() if k != "engine"} | {"model": "llama3-8b"}
    doc = _post(client, "/v1/recommend", {"workload": workload, "constraints": {"max_gpus": 8}})
    stored = client.get(f"/v1/recommendations/{doc['recommendation_id']}").json()
    assert stored["asked"]["workload"]["engine"] == "vllm"
    again = client.post("/v1/recommend", json=stored["asked"])
    assert again.status_code == 200, again.text


def test_jobs_over_inventory_nodes_state_and_wait_on_the_slowest_network(client: TestClient) -> None:
    """Two owned H100 nodes, one on 3,200 Gb/s RDMA, one on 100 Gb/s without: a replica over both
    shows the slow network in ``cost.network`` (what it was timed on, not the better pool's), and
    data-parallel training over both is slower than over two fast nodes (it was timed on the
    better pool's network alone)."""
    fast = [
        {
            "gpu": "nvidia-h100-sxm",
            "gpus_per_node": 8,
            "nodes": 1,
            "network_gbps_per_node": 3200,
            "rdma": True,
        },
    ] * 2
    mixed = [fast[0], {**fast[0], "network_gbps_per_node": 100, "rdma": False}]
    serving = _post(client, "/v1/recommend", {"workload": DEEPSEEK, "constraints": {"inventory": mixed}})
    net = _option(serving, "nvidia-h100-sxm")["cost"]["network"]
    assert (net["inter_node_gbps"], net["rdma"]) == (100.0, "no")
    training = {"model": "llama3-8b", "mode": "training", "batch_size": 2, "seq_len": 2048, "tokens": 1e10}
    top = {
        name: _post(client, "/v1/recommend", {"workload": training, "constraints": {"inventory": inventory}})[
            "options"
        ][0]
        for name, inventory in (("mixed", mixed), ("fast", fast))
    }
    assert top["fast"]["strategy"]["nodes"] == 2
    # over the slow node the job is slower than on the fast pair: one node of 8, or two nodes timed at 100 Gb/s
    assert top["mixed"]["training"]["tokens_per_s"] < top["fast"]["training"]["tokens_per_s"]
    if top["mixed"]["strategy"]["nodes"] == 2:
        assert top["mixed"]["cost"]["network"]["inter_node_gbps"] == 100.0
