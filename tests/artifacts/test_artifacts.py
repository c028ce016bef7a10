"""``GET /v1/recommendations/{id}/artifacts`` through the real app: for the answers of the
recommend scenarios (tests/api/test_recommend.py's questions), every option's artifact of every
target validates with its tool (kubernetes-validate + vendored CRDs, SkyPilot's task schema,
shellcheck) and states the option's replicas, TP degree and node count."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from tests.artifacts import validate
from tests.conftest import auth

SCENARIOS: dict[str, dict[str, Any]] = {
    "llama2_13b_full_fine_tuning": {
        "workload": {
            "model": "meta-llama/Llama-2-13b-hf",
            "mode": "training",
            "precision": "amp_bf16",
            "optimizer": "adamw",
            "seq_len": 2048,
            "batch_size": 4,
        },
        "constraints": {"max_gpus": 2},
    },
    "llama2_7b_lora": {
        "workload": {
            "model": "meta-llama/Llama-2-7b-hf",
            "mode": "fine-tuning",
            "finetune": "lora",
            "precision": "bf16",
            "seq_len": 2048,
            "batch_size": 4,
        },
        "constraints": {"max_gpus": 1, "allow_gradient_checkpointing": True},
    },
    "llama2_70b_inference_4k": {
        "workload": {
            "model": "meta-llama/Llama-2-70b-hf",
            "mode": "inference",
            "precision": "bf16",
            "input_len": 3840,
            "output_len": 256,
            "batch_size": 8,
        },
        "constraints": {"max_gpus": 8},
        "limit": 50,
    },
    "pcie_300w": {
        "workload": {"model": "llama3-8b", "mode": "fine-tuning", "batch_size": 2, "seq_len": 2048},
        "constraints": {"max_power_w_per_gpu": 300, "form_factors": ["pcie"], "max_gpus": 4},
        "limit": 50,
    },
    "7b_chat_tpot": {
        "workload": {
            "model": "meta-llama/Llama-2-7b-hf",
            "mode": "inference",
            "engine": "vllm",
            "input_len": 512,
            "output_len": 256,
            "requests_per_s": 2,
            "tpot_target_ms": 30,
        },
        "constraints": {"max_gpus": 1, "vendors": ["nvidia"]},
        "objective": "fastest",
        "limit": 12,
    },
    "qwen25_72b_20_rps": {
        "workload": {
            "model": "Qwen/Qwen2.5-72B-Instruct",
            "mode": "inference",
            "engine": "vllm",
            "input_len": 1024,
            "input_len_cv": 0.5,
            "output_len": 256,
            "output_len_cv": 0.8,
            "requests_per_s": 20,
            "ttft_target_ms": 1000,
            "tpot_target_ms": 50,
        },
        "constraints": {
            "allowed_gpus": ["H100 SXM", "nvidia-h200-sxm", "nvidia-a100-sxm4-80gb"],
            "max_gpus": 64,
        },
        "objective": "fastest",
    },
    "eight_l40_llama3_8b": {
        "workload": {
            "model": "llama3-8b",
            "mode": "inference",
            "engine": "vllm",
            "input_len": 1024,
            "output_len": 256,
            "requests_per_s": 4,
        },
        # aggregated replicas (a disaggregated answer is refused by every target, tested above)
        "constraints": {
            "inventory": [{"gpu": "L40", "gpus_per_node": 1, "nodes": 8}],
            "max_gpus": 8,
            "allow_disaggregation": False,
        },
    },
    "deadline_8b_training": {
        "workload": {
            "model": "llama3-8b",
            "mode": "training",
            "batch_size": 2,
            "seq_len": 2048,
            "tokens": 2e9,
        },
        "constraints": {"deadline_hours": 24, "allowed_gpus": ["H100 SXM", "L40"], "max_gpus": 8},
        "objective": "perf_per_watt",
    },
    # beyond test_recommend: several nodes (a JobSet, rendezvous across nodes), and AMD parts
    "llama2_70b_full_training_multi_node": {
        "workload": {
            "model": "meta-llama/Llama-2-70b-hf",
            "mode": "training",
            "precision": "amp_bf16",
            "seq_len": 2048,
            "batch_size": 1,
            "tokens": 1e9,
        },
        "constraints": {"inventory": [{"gpu": "H100 SXM", "gpus_per_node": 8, "nodes": 4}], "max_gpus": 32},
        "limit": 3,
    },
    "mi300x_serving": {
        "workload": {
            "model": "llama3-8b",
            "mode": "inference",
            "engine": "vllm",
            "input_len": 1024,
            "output_len": 256,
            "requests_per_s": 8,
        },
        # the MI300X itself: the newer CDNA parts (MI325X, MI350X, MI355X) rank above it and have
        # no SkyPilot name in the catalog, so AMD alone would leave SkyPilot nothing to check
        "constraints": {"vendors": ["amd"], "allowed_gpus": ["amd-mi300x"], "max_gpus": 8},
        "limit": 3,
    },
    # one replica over two nodes: SGLang's server on every node (--nnodes, --node-rank), vLLM's
    # Ray cluster (a LeaderWorkerSet; Slurm head + workers)
    "deepseek_v3_two_nodes_sglang": {
        "workload": {
            "model": "deepseek-ai/DeepSeek-V3",
            "mode": "inference",
            "engine": "sglang",
            "input_len": 1024,
            "output_len": 1024,
            "requests_per_s": 0.5,
        },
        "constraints": {"allowed_gpus": ["nvidia-h100-sxm", "nvidia-a100-sxm4-80gb"], "max_gpus": 32},
        "objective": "cheapest",
    },
    # the serving features the plan was sized with reach the engine (LoRA slots, speculation)
    "lora_and_eagle_sglang": {
        "workload": {
            "model": "llama3.1-8b",
            "mode": "inference",
            "engine": "sglang",
            "input_len": 4096,
            "output_len": 256,
            "concurrency": 16,
            "speculative": {"method": "eagle", "draft_tokens": 3, "acceptance_rate": 0.75},
            "lora": {"adapters": 8, "max_loras": 4},
        },
        "constraints": {"allowed_gpus": ["nvidia-h100-sxm", "nvidia-a100-sxm4-80gb"], "max_gpus": 1},
        "objective": "fastest",
    },
    "llama31_405b_two_nodes_vllm": {
        "workload": {
            "model": "llama3.1-405b",
            "mode": "inference",
            "engine": "vllm",
            "input_len": 2048,
            "output_len": 512,
            "requests_per_s": 0.2,
        },
        "constraints": {"allowed_gpus": ["nvidia-h100-sxm", "nvidia-a100-sxm4-80gb"], "max_gpus": 16},
        "objective": "cheapest",
    },
}


def _ask(client: TestClient, body: dict[str, Any], **headers: str) -> dict[str, Any]:
    r = client.post("/v1/recommend", json=body, headers=headers)
    assert r.status_code == 200, r.text
    doc = r.json()
    assert doc["options"], (body, doc["excluded"][:3])
    return doc


def _skypilot_name(client: TestClient, slug: str) -> str | None:
    aliases = client.get(f"/v1/gpus/{slug}").json()["aliases"]
    return next((a["name"] for a in aliases if a["kind"] == "skypilot"), None)


def _artifact(client: TestClient, rec_id: str, target: str, rank: int, **headers: str) -> dict[str, Any]:
    r = client.get(
        f"/v1/recommendations/{rec_id}/artifacts", params={"target": target, "option": rank}, headers=headers
    )
    assert r.status_code == 200, r.text
    art = r.json()
    assert art["recommendation_id"] == rec_id and art["option"] == rank and art["target"] == target
    assert rec_id in art["content"] and art["data_version"] in art["content"]
    assert art["fill_in"] and "FILL-IN" in art["content"]
    return art


def _kubernetes_states_the_option(docs: list[dict[str, Any]], o: dict[str, Any]) -> None:
    s = o["strategy"]
    main = docs[0]
    pod = _pod_specs(main)
    c = pod[0]["containers"][0]
    script = c["args"][0]
    gpus = next(iter(c["resources"]["limits"].values()))
    if o["serving"] is not None:
        assert main["spec"]["replicas"] == s["replicas"]
        assert (
            f"--tensor-parallel-size {s['tensor_parallel']}" in script
            or f"--tp_size {s['tensor_parallel']}" in script
            or f"--num-shard {s['tensor_parallel']}" in script
            or f"--tp {s['tensor_parallel']}" in script
        )
        if main["kind"] == "Deployment":
            assert gpus == s["tensor_parallel"]
        else:
            size = main["spec"]["leaderWorkerTemplate"]["size"]
            assert size * gpus == s["tensor_parallel"]
            if "sglang.launch_server" in script:  # leader rank 0; each worker its LWS index
                worker = main["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]
                assert '--node-rank 0 --dist-init-addr "$LWS_LEADER_ADDRESS":29500' in script
                assert '--node-rank "$LWS_WORKER_INDEX"' in worker["args"][0]
    else:
        nodes = (
            main["spec"]["replicatedJobs"][0]["template"]["spec"]["parallelism"]
            if main["kind"] == "JobSet"
            else 1
        )
        assert nodes == s["nodes"] and gpus == s["gpus_per_node"]
        assert f"--nproc-per-node={s['gpus_per_node']}" in script and f"--nnodes={s['nodes']}" in script
        env = {e["name"]: e.get("value") for e in c["env"]}
        assert env["GPU_ADVISOR_TENSOR_PARALLEL"] == str(s["tensor_parallel"])
        assert env["GPU_ADVISOR_SHARDING"] == (s["sharding"] or "none")


def _pod_specs(d: dict[str, Any]) -> list[dict[str, Any]]:
    if d["kind"] == "Deployment":
        return [d["spec"]["template"]["spec"]]
    if d["kind"] == "Job":
        return [d["spec"]["template"]["spec"]]
    if d["kind"] == "JobSet":
        return [d["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]]
    t = d["spec"]["leaderWorkerTemplate"]
    return [t["leaderTemplate"]["spec"], t["workerTemplate"]["spec"]]


def _slurm_states_the_option(text: str, o: dict[str, Any]) -> None:
    s = o["strategy"]
    if o["serving"] is not None:
        per_replica_nodes = max(1, -(-s["tensor_parallel"] // s["gpus_per_node"]))
        assert f"#SBATCH --nodes={per_replica_nodes}\n" in text
        assert (f"#SBATCH --array=0-{s['replicas'] - 1}\n" in text) == (s["replicas"] > 1)
        assert (
            f"--tensor-parallel-size {s['tensor_parallel']}" in text
            or f"--num-shard {s['tensor_parallel']}" in text
            or f"--tp {s['tensor_parallel']}" in text
        )
        if per_replica_nodes > 1 and "sglang.launch_server" in text:  # the server on every node, ranked
            assert f"srun --nodes={per_replica_nodes} --ntasks={per_replica_nodes}" in text
            assert '--node-rank "$SLURM_NODEID" --dist-init-addr "$HEAD":29500' in text
    else:
        assert f"#SBATCH --nodes={s['nodes']}\n" in text
        assert f":{s['gpus_per_node']}\n" in text.split("--gres=gpu:")[1].split("\n")[0] + "\n"
        assert f"--nproc-per-node={s['gpus_per_node']}" in text
        assert f"GPU_ADVISOR_TENSOR_PARALLEL={s['tensor_parallel']}" in text


def _skypilot_python() -> str | None:
    exe = os.environ.get("GPU_ADVISOR_SKYPILOT_PYTHON")
    if exe:
        return exe
    if os.environ.get("GPU_ADVISOR_REQUIRE_TOOLS") == "1":
        pytest.fail("GPU_ADVISOR_SKYPILOT_PYTHON is not set (.ci/run builds the SkyPilot venv)")
    return None


def _skypilot_check(paths: list[Path]) -> list[dict[str, Any]]:
    exe = _skypilot_python()
    if exe is None:
        return []
    home = paths[0].parent / "home"
    home.mkdir(exist_ok=True)
    r = subprocess.run(
        [exe, str(Path(validate.__file__).with_name("skypilot_check.py")), *map(str, paths)],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "HOME": str(home),
            "PYTHONWARNINGS": "ignore",
            "SKYPILOT_DISABLE_USAGE_COLLECTION": "1",
        },
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_artifact_of_every_option_validates(client: TestClient, scenario: str, tmp_path: Path) -> None:
    doc = _ask(client, SCENARIOS[scenario])
    rec_id = doc["recommendation_id"]
    sky_files: list[tuple[Path, dict[str, Any], dict[str, Any]]] = []
    for o in doc["options"]:
        if o["strategy"].get("disaggregated"):  # two pools and a router: refused, never mis-rendered
            r = client.get(
                f"/v1/recommendations/{rec_id}/artifacts",
                params={"target": "kubernetes", "option": o["rank"]},
            )
            assert r.status_code == 422 and "disaggregated pools" in r.json()["detail"]
            continue
        k8s = _artifact(client, rec_id, "kubernetes", o["rank"])
        _kubernetes_states_the_option(validate.kubernetes(k8s["content"]), o)
        sbatch = _artifact(client, rec_id, "slurm", o["rank"])
        validate.shellcheck(sbatch["content"])
        _slurm_states_the_option(sbatch["content"], o)
        r = client.get(
            f"/v1/recommendations/{rec_id}/artifacts", params={"target": "skypilot", "option": o["rank"]}
        )
        if r.status_code == 422:  # a GPU without a SkyPilot name: the problem names the field
            assert r.json()["errors"][0]["loc"] == ["query", "target"]
            continue
        sky = _artifact(client, rec_id, "skypilot", o["rank"])
        task = yaml.safe_load(sky["content"])
        path = tmp_path / sky["filename"]
        path.write_text(sky["content"])
        sky_files.append((path, task, o))
    assert sky_files, f"{scenario}: no option has a SkyPilot accelerator name to check"
    checked = _skypilot_check([p for p, _, _ in sky_files])
    for i, (_, task, o) in enumerate(sky_files):
        s = o["strategy"]
        first = task["resources"]["ordered"][0]["accelerators"]
        if o["serving"] is not None:  # a replica larger than a node: its nodes, whole
            per = min(s["tensor_parallel"], s["gpus_per_node"])
            assert task["service"]["replicas"] == s["replicas"] and first.endswith(f":{per}")
            assert task.get("num_nodes", 1) == s["tensor_parallel"] // per
        else:
            assert task["num_nodes"] == s["nodes"] and first.endswith(f":{s['gpus_per_node']}")
        if checked:
            assert checked[i]["num_nodes"] == task["num_nodes"]
            assert checked[i]["replicas"] == (s["replicas"] if o["serving"] is not None else None)


def test_skypilot_lists_the_ranked_options_in_order(client: TestClient) -> None:
    """Single-GPU serving options share one shape: the task lists them all, best first, each once;
    an option it cannot list (no SkyPilot name, a repeated accelerator) is named with the reason."""
    doc = _ask(client, SCENARIOS["7b_chat_tpot"])
    named = [o["rank"] for o in doc["options"] if _skypilot_name(client, o["gpu"]["slug"])]
    unnamed = [o["rank"] for o in doc["options"] if o["rank"] < named[0]]
    for rank in unnamed:  # a rack part (GB200, GB300) ranks first and has no SkyPilot name
        r = client.get(
            f"/v1/recommendations/{doc['recommendation_id']}/artifacts",
            params={"target": "skypilot", "option": rank},
        )
        assert r.status_code == 422 and "has no SkyPilot accelerator name" in r.json()["detail"]
    sky = _artifact(client, doc["recommendation_id"], "skypilot", named[0])
    task = yaml.safe_load(sky["content"])
    listed = [r["accelerators"] for r in task["resources"]["ordered"]]
    assert len(listed) >= 5 and len(set(listed)) == len(listed)
    comments = [x.removeprefix("# ") for x in sky["content"].splitlines() if x.startswith("# ")]
    ranks_listed = [int(x.split(":")[0].removeprefix("rank ")) for x in comments if x.startswith("rank ")]
    ranks_left = [int(x.split()[3]) for x in comments if x.startswith("not listed: rank ")]
    assert ranks_listed == sorted(ranks_listed) and len(ranks_listed) == len(listed)
    assert sorted(ranks_listed + ranks_left) == [o["rank"] for o in doc["options"]]


def test_raw_format_is_the_content_alone(client: TestClient) -> None:
    doc = _ask(client, SCENARIOS["llama2_7b_lora"])
    url = f"/v1/recommendations/{doc['recommendation_id']}/artifacts"
    full = client.get(url, params={"target": "slurm"}).json()
    raw = client.get(url, params={"target": "slurm", "format": "raw"})
    assert raw.status_code == 200 and raw.text == full["content"]
    assert raw.headers["content-type"].startswith("text/x-shellscript")
    assert raw.headers["x-data-version"] == doc["data_version"]


def test_a_preset_model_loads_by_its_hugging_face_id(client: TestClient) -> None:
    """A question that names a preset (``llama3-8b``) gets the preset's hub id in MODEL, not the
    preset id, which no engine can load."""
    body = {
        "workload": {"model": "llama3-8b", "mode": "inference", "engine": "vllm", "requests_per_s": 2},
        "constraints": {"allowed_gpus": ["nvidia-h100-sxm"]},
    }
    doc = _ask(client, body)
    art = _artifact(client, doc["recommendation_id"], "slurm", 1)
    assert 'MODEL="${MODEL:-meta-llama/Meta-Llama-3-8B}"' in art["content"], art["content"]
    assert "llama3-8b" not in art["content"]


def test_a_plan_in_the_checkpoints_own_format_loads_that_checkpoint(client: TestClient) -> None:
    """gpt-oss ships MXFP4 weights and is served in them by default: MODEL is its hub id, not a
    fill-in asking for "an MXFP4 checkpoint" (it is one); asked for AWQ, the fill-in stays."""
    body = {
        "workload": {"model": "gpt-oss-20b", "mode": "inference", "engine": "vllm", "requests_per_s": 2},
        "constraints": {"allowed_gpus": ["nvidia-h100-sxm"]},
    }
    doc = _ask(client, body)
    assert doc["options"][0]["strategy"]["quant_method"] == "mxfp4"
    art = _artifact(client, doc["recommendation_id"], "slurm", 1)
    assert 'MODEL="${MODEL:-openai/gpt-oss-20b}"' in art["content"], art["content"]
    (model,) = [f for f in art["fill_in"] if f.startswith("MODEL:")]
    assert "checkpoint of" not in model
    awq = _ask(client, {**body, "workload": {**body["workload"], "quant_method": "awq"}})
    fills = _artifact(client, awq["recommendation_id"], "slurm", 1)["fill_in"]
    assert [f for f in fills if f.startswith("MODEL:") and "AWQ" in f]


def test_bad_queries_name_the_field(client: TestClient) -> None:
    doc = _ask(client, SCENARIOS["llama2_7b_lora"])
    url = f"/v1/recommendations/{doc['recommendation_id']}/artifacts"
    r = client.get(url, params={"target": "nomad"})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "target"]
    r = client.get(url, params={"target": "kubernetes", "option": len(doc["options"]) + 1})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "option"]
    r = client.get(url, params={"target": "kubernetes", "option": 0})
    assert r.status_code == 422 and r.json()["errors"][0]["loc"] == ["query", "option"]
    r = client.get("/v1/recommendations/rec_000000000000000000000000/artifacts", params={"target": "slurm"})
    assert r.status_code == 404


def test_artifacts_are_read_like_the_answer(client: TestClient, read_key: str, submit_key: str) -> None:
    """An answer asked with a key: its artifacts are that key's (or an admin's); 404 to others."""
    body = {**SCENARIOS["llama2_7b_lora"], "limit": 2}
    doc = _ask(client, body, **auth(read_key))
    url = f"/v1/recommendations/{doc['recommendation_id']}/artifacts"
    assert client.get(url, params={"target": "kubernetes"}, headers=auth(read_key)).status_code == 200
    assert client.get(url, params={"target": "kubernetes"}, headers=auth(submit_key)).status_code == 404
    assert client.get(url, params={"target": "kubernetes"}).status_code == 404


def test_the_engine_is_started_with_the_features_the_plan_was_sized_with(client: TestClient) -> None:
    """LoRA slots and speculative decoding change memory and TPOT; the server every target starts
    carries them (vLLM and SGLang flags; the draft head and adapters are fill-ins), not a plain
    server that cannot load the adapters and decodes at the speed without speculation."""
    flags = {
        "vllm": [
            "--enable-lora --max-loras 4 --max-lora-rank 16",
            "--speculative-config",
            '"num_speculative_tokens":3',
        ],
        "sglang": [
            "--enable-lora --max-loras-per-batch 4 --max-lora-rank 16",
            "--speculative-algorithm EAGLE --speculative-draft-model-path FILL-IN --speculative-num-steps 3",
            "--speculative-num-draft-tokens 4",
        ],
    }
    for engine, expected in flags.items():
        body = SCENARIOS["lora_and_eagle_sglang"]
        doc = _ask(client, {**body, "workload": {**body["workload"], "engine": engine}})
        for target in ("kubernetes", "slurm", "skypilot"):
            art = _artifact(client, doc["recommendation_id"], target, 1)
            for flag in expected:
                assert flag in art["content"].replace('\\"', '"'), (engine, target, flag)
            fills = " ".join(art["fill_in"])
            assert "LORA_ADAPTERS" in fills and "DRAFT_MODEL" in fills, (engine, target, fills)
    plain = _ask(client, SCENARIOS["7b_chat_tpot"])
    art = _artifact(client, plain["recommendation_id"], "slurm", 1)
    assert "--enable-lora" not in art["content"] and "--speculative" not in art["content"]


def test_the_engine_is_started_at_the_memory_setting_the_plan_was_sized_at(client: TestClient) -> None:
    """DeepSeek-R1 FP8 on four B200s under SGLang is sized at InferenceX's 0.95 (SGLang's own
    0.855 leaves its weights no KV pool): every target starts the server at 0.95, each engine
    with its own flag; a plan at the engine's default starts it without one."""
    body = {
        "workload": {
            "model": "deepseek-r1",
            "mode": "inference",
            "engine": "sglang",
            "input_len": 8192,
            "output_len": 1024,
            "concurrency": 24,
            "memory_fraction": 0.95,
            "kv_cache_dtype": "fp8",
        },
        "constraints": {"allowed_gpus": ["nvidia-b200"], "max_gpus": 4},
        "objective": "cheapest",
    }
    doc = _ask(client, body)
    assert doc["options"][0]["strategy"]["gpu_count"] == 4
    for target in ("kubernetes", "slurm", "skypilot"):
        art = _artifact(client, doc["recommendation_id"], target, 1)
        assert "--mem-fraction-static 0.95" in art["content"], target
        assert "--kv-cache-dtype fp8_e4m3" in art["content"], target
    flags = {
        "vllm": "--gpu-memory-utilization 0.8",
        "tensorrt-llm": "--kv_cache_free_gpu_memory_fraction 0.8",
    }
    chat = SCENARIOS["7b_chat_tpot"]
    for engine, flag in flags.items():
        asked = {**chat, "workload": {**chat["workload"], "engine": engine, "memory_fraction": 0.8}}
        art = _artifact(client, _ask(client, asked)["recommendation_id"], "slurm", 1)
        assert flag in art["content"], engine
    plain = _artifact(client, _ask(client, chat)["recommendation_id"], "slurm", 1)["content"]
    assert not any(
        f in plain for f in ("--gpu-memory-utilization", "--mem-fraction-static", "memory_fraction")
    )


def test_a_replica_over_nodes_starts_on_every_node_with_the_network_it_was_timed_on(
    client: TestClient,
) -> None:
    """vLLM over two nodes on SkyPilot (which runs ``run`` on every node): rank 0 heads a Ray
    cluster the other joins, and only rank 0 serves -- each node ran its own ``vllm serve`` on an
    8-GPU Ray that cannot place TP16. Every target names the network the option was timed on
    (the rental's: AWS p5 3,200 Gb/s EFA; GCP a2 100 Gb/s without RDMA), not "the default"."""
    doc = _ask(client, SCENARIOS["llama31_405b_two_nodes_vllm"])
    seen = set()
    for o in doc["options"]:
        if o["strategy"]["tensor_parallel"] <= o["strategy"]["gpus_per_node"]:
            continue
        net = o["cost"]["network"]
        words = f"{net['inter_node_gbps']:g} Gbit/s per node"
        for target in ("kubernetes", "slurm", "skypilot"):
            art = _artifact(client, doc["recommendation_id"], target, o["rank"])
            assert words in art["content"], (target, words)
            if net["rdma"] is None:
                assert "TCP (no RDMA)" in art["content"]
            if target == "skypilot":
                run = yaml.safe_load(art["content"])["run"]
                assert 'if [ "$SKYPILOT_NODE_RANK" = "0" ]; then' in run
                assert 'ray start --address="$HEAD_ADDR:6379" --block' in run and "ray start --head" in run
                assert run.count("vllm serve") == 1
        seen.add(o["gpu"]["slug"])
    assert seen, "the scenario holds a replica over nodes"


def test_tensorrt_llm_is_pointed_at_the_options_file_the_features_need(client: TestClient) -> None:
    """TensorRT-LLM takes LoRA and speculation from an ``--extra_llm_api_options`` YAML: the
    command passes the file (a fill-in) -- a fill-in the command never read changed nothing."""
    body = SCENARIOS["lora_and_eagle_sglang"]
    doc = _ask(client, {**body, "workload": {**body["workload"], "engine": "tensorrt-llm"}})
    art = _artifact(client, doc["recommendation_id"], "slurm", 1)
    assert "trtllm-serve" in art["content"] and "--extra_llm_api_options FILL-IN" in art["content"]
    assert any("EXTRA_LLM_API_OPTIONS" in f for f in art["fill_in"])
