"""Plans priced as deployed, through the real app and database (issue 24): a node is one
instance that holds it with the link the plan's estimate assumed; several nodes only on types
with a stated network; otherwise NO_MATCHING_INSTANCE. Owned inventory is costed by TCO."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi.testclient import TestClient

from tests.conftest import auth

FSDP_13B = {
    "model": "meta-llama/Llama-2-13b-hf",
    "mode": "training",
    "precision": "amp_bf16",
    "optimizer": "adamw",
    "seq_len": 2048,
    "batch_size": 4,
    "tokens": 1e8,
}
SERVE_70B = {
    "model": "meta-llama/Llama-2-70b-hf",
    "mode": "inference",
    "precision": "bf16",
    "input_len": 3840,
    "output_len": 256,
    "batch_size": 8,
}


def _ask(client: TestClient, body: dict[str, Any]) -> dict[str, Any]:
    r = client.post("/v1/recommend", json=body)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _price(
    client: TestClient, key: str, slug: str, provider: str, instance: str, gpus: int, amount: str
) -> None:
    r = client.post(
        f"/v1/gpus/{slug}/prices",
        headers=auth(key),
        json={
            "provider": provider,
            "region": "test-1",
            "instance_type": instance,
            "gpus_per_instance": gpus,
            "pricing_model": "on_demand",
            "currency": "USD",
            "amount": amount,
            "effective_date": "2026-11-01",
            "source": "test price sheet",
        },
    )
    assert r.status_code == 204, r.text


def _per_instance(cost: dict[str, Any]) -> int:
    return int(cost["gpus_paid"] // cost["instances"])


def test_one_node_of_eight_a100_is_one_eight_gpu_instance(client: TestClient) -> None:
    """FSDP over 8 A100 80 GB: RunPod's 3-GPU shape is the cheapest per GPU-hour and would have
    been rented three times (3+3+2, three hosts); the plan is one NVLink node of 8."""
    doc = _ask(
        client,
        {
            "workload": FSDP_13B,
            "constraints": {"allowed_gpus": ["nvidia-a100-sxm4-80gb"], "max_gpus": 8},
            "objective": "fastest",
            "limit": 10,
        },
    )
    eights = [o for o in doc["options"] if o["strategy"]["gpu_count"] == 8]
    assert eights, [o["strategy"] for o in doc["options"]]
    for o in doc["options"]:
        c, s = o["cost"], o["strategy"]
        assert c is not None, o["strategy"]
        assert c["instances"] == s["nodes"] == 1 and _per_instance(c) >= s["gpus_per_node"], (s, c)
        assert c["instance_type"] != "3x_A100-80GB-SXM_SECURE" or s["gpu_count"] <= 3
        if s["gpu_count"] > 1:
            assert c["network"]["intra_node"] == "nvlink" and c["network"]["gpu_link_gpus"] >= s["gpu_count"]


def test_fsdp_over_nvlink_never_on_one_gpu_instances(client: TestClient, admin_key: str) -> None:
    """A provider that rents H100 SXM only one at a time cannot hold an FSDP node of several:
    every multi-GPU plan says NO_MATCHING_INSTANCE; the 13B run does not fit one GPU."""
    provider = f"single-{uuid.uuid4().hex[:6]}"
    _price(client, admin_key, "nvidia-h100-sxm", provider, "h100-x1", 1, "2.50")
    doc = _ask(
        client,
        {
            "workload": FSDP_13B,
            "constraints": {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 8, "providers": [provider]},
            "objective": "cheapest",
        },
    )
    assert doc["options"] == []
    ex = [e for e in doc["excluded"] if e["gpu"]["slug"] == "nvidia-h100-sxm"]
    assert ex and ex[0]["code"] == "NO_MATCHING_INSTANCE", ex
    p = ex[0]["params"]
    assert p["gpus_per_node"] > 1 and p["needs_nvlink"] is True
    assert "1 GPUs per instance" in p["detail"] and "NVLink" in ex[0]["message"]


def test_tensor_parallel_serving_never_on_single_gpu_vms(client: TestClient, admin_key: str) -> None:
    """Llama-2-70B in bf16 needs TP over 80 GB cards: one-GPU VMs cannot hold a TP replica even
    when they are the cheapest per GPU-hour; 8-GPU instances can."""
    provider = f"tp-{uuid.uuid4().hex[:6]}"
    _price(client, admin_key, "nvidia-h100-sxm", provider, "h100-x1", 1, "1.50")
    _price(client, admin_key, "nvidia-h100-sxm", provider, "h100-x8", 8, "24.00")
    doc = _ask(
        client,
        {
            "workload": SERVE_70B,
            "constraints": {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 8, "providers": [provider]},
            "objective": "cheapest",
            "limit": 10,
        },
    )
    assert doc["options"]
    for o in doc["options"]:
        s, c = o["strategy"], o["cost"]
        assert s["tensor_parallel"] >= 2
        assert c["instance_type"] == "h100-x8" and _per_instance(c) >= s["tensor_parallel"], (s, c)
    # without the 8-GPU shape, no TP replica has a home
    only1 = f"tp1-{uuid.uuid4().hex[:6]}"
    _price(client, admin_key, "nvidia-h100-sxm", only1, "h100-x1", 1, "1.50")
    none = _ask(
        client,
        {
            "workload": SERVE_70B,
            "constraints": {"allowed_gpus": ["nvidia-h100-sxm"], "max_gpus": 8, "providers": [only1]},
            "objective": "cheapest",
        },
    )
    ex = [e for e in none["excluded"] if e["gpu"]["slug"] == "nvidia-h100-sxm"]
    assert ex and ex[0]["code"] == "NO_MATCHING_INSTANCE" and ex[0]["params"]["replicas"] is True


def test_several_nodes_only_where_a_network_is_stated(client: TestClient) -> None:
    """16 GPUs in two nodes of 8: of the shipped providers only AWS p5 states a network for H100
    (3,200 Gb/s EFA), so the fastest 2-node H100 plan is priced on two p5.48xlarge and carries that
    network; B200 is sold in 8s with no network stated, so its 2-node plan is ranked without a
    cost and says NO_MATCHING_INSTANCE."""

    def fastest(slug: str) -> dict[str, Any]:
        doc = _ask(
            client,
            {
                "workload": {**FSDP_13B, "tokens": 2e10},
                "constraints": {"allowed_gpus": [slug], "max_gpus": 16},
                "objective": "fastest",
                "limit": 20,
            },
        )
        multi = [o for o in doc["options"] if o["strategy"]["nodes"] == 2]
        assert multi, [o["strategy"] for o in doc["options"]]
        return multi[0]

    h100 = fastest("nvidia-h100-sxm")
    c = h100["cost"]
    assert c["instance_type"] == "p5.48xlarge" and c["instances"] == 2 and c["gpus_paid"] == 16
    assert c["network"]["inter_node_gbps"] == 3200 and c["network"]["rdma"] == "efa"
    assert c["network"]["inter_basis"] == "table" and "efa-acc-inst-types" in c["network"]["source"]
    b200 = fastest("nvidia-b200")
    assert b200["cost"] is None
    why = [r for r in b200["reasons"] if r["code"] == "NO_MATCHING_INSTANCE"]
    assert why and why[0]["params"]["nodes"] == 2 and "inter-node network" in why[0]["params"]["detail"]


LORA_7B = {
    "model": "meta-llama/Llama-2-7b-hf",
    "mode": "fine-tuning",
    "finetune": "lora",
    "precision": "bf16",
    "seq_len": 2048,
    "batch_size": 4,
    "tokens": 1e8,
}


def test_owned_inventory_is_costed_by_tco_never_rent(client: TestClient) -> None:
    """RTX 4090s on hand (the catalog has its 1,599 USD list price; RunPod and Vast rent it): the
    options are costed by owning them -- amortised purchase plus energy -- not by a rental row."""
    doc = _ask(
        client,
        {
            "workload": LORA_7B,
            "constraints": {
                "inventory": [
                    {
                        "gpu": "nvidia-rtx-4090",
                        "gpus_per_node": 8,
                        "nodes": 2,
                        "network_gbps_per_node": 400,
                        "rdma": True,
                    }
                ]
            },
            "objective": "cheapest",
        },
    )
    assert doc["options"], [
        (e["gpu"]["slug"], e["code"]) for e in doc["excluded"] if e["code"] != "NOT_IN_INVENTORY"
    ]
    for o in doc["options"]:
        c = o["cost"]
        assert c["provider"] is None and c["instance_type"] is None, c  # no rental row
        t = c["tco"]
        assert t["available"] is True and t["per_hour"] > 0
        # 1,599 USD a card over 5 years of 8,766 h at 70 % use, per card, is the capex share
        n = o["strategy"]["gpu_count"]
        assert abs(t["capex_per_hour"] - n * 1599 / (5 * 8766) / 0.7) < 1e-6 * n
        assert o["objective_value"] == t["run"]["mid"]
        assert c["network"]["source"] == "the request's inventory pool"
        assert c["network"]["inter_node_gbps"] == 400 and c["network"]["rdma"] == "yes"
    # H100s on hand have no purchase price shipped: costed on electricity only, saying the
    # capital cost is unknown -- never given a rental price, never silently excluded
    h100 = _ask(
        client,
        {
            "workload": LORA_7B,
            "constraints": {"inventory": [{"gpu": "nvidia-h100-sxm", "gpus_per_node": 8}]},
            "objective": "cheapest",
        },
    )
    assert not [e for e in h100["excluded"] if e["gpu"]["slug"] == "nvidia-h100-sxm"]
    o = h100["options"][0]
    t = o["cost"]["tco"]
    assert o["cost"]["provider"] is None and t["capex"] == 0 and "capex_unknown" in t["notes"]
    assert t["per_hour"] == t["energy_per_hour"] > 0
    assert "CAPEX_UNKNOWN" in [r["code"] for r in o["reasons"]]


def test_inventory_network_fields_are_validated(client: TestClient) -> None:
    r = client.post(
        "/v1/recommend",
        json={
            "workload": FSDP_13B,
            "constraints": {
                "inventory": [{"gpu": "nvidia-h100-sxm", "gpus_per_node": 8, "network_gbps_per_node": -1}]
            },
        },
    )
    assert r.status_code == 422 and "network_gbps_per_node" in r.text
