"""The pure renderer on plans the recommender rarely answers: a serving replica spanning nodes
(a LeaderWorkerSet over Ray), an engine other than vLLM, quantisation flags; and the YAML
writer's round trip."""

from __future__ import annotations

import pytest
import yaml

from service.core.deploy import DeployOption, DeployPlan, NotRenderable, SchedulerNames, render
from service.core.deploy.commands import shm_bytes
from service.core.deploy.yamltext import dump
from tests.artifacts import validate

H100 = SchedulerNames(vendor="nvidia", gfd="NVIDIA-H100-80GB-HBM3", skypilot="H100")


def _option(**kw: object) -> DeployOption:
    base: dict[str, object] = dict(
        rank=1, gpu_slug="nvidia-h100-sxm", gpu_name="NVIDIA H100 SXM", names=H100, gpu_count=32,
        nodes=4, gpus_per_node=8, tensor_parallel=16, replicas=2, engine="vllm", quant_method="fp8",
        kv_cache_dtype="fp8_e4m3", precision="fp8", sharding=None, micro_batch=None, global_batch=None,
        accumulation_steps=None, gradient_checkpointing=None, mixed_precision=None, finetune=None,
        walltime_s=None,
    )  # fmt: skip
    base.update(kw)
    return DeployOption(**base)  # type: ignore[arg-type]


def _plan(*options: DeployOption) -> DeployPlan:
    return DeployPlan(
        "rec_0123456789abcdef01234567", "c1.m2.e1.9.0", "org/model", "inference", 4352, True, 400.0, options
    )


def test_a_replica_spanning_nodes_is_a_leader_worker_set_with_every_figure() -> None:
    plan = _plan(_option())
    docs = validate.kubernetes(render(plan, "kubernetes").content)
    lws = docs[0]
    assert lws["kind"] == "LeaderWorkerSet" and lws["spec"]["replicas"] == 2
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    script = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["args"][0]
    for flag in (
        "--tensor-parallel-size 16",
        "--quantization fp8",
        "--kv-cache-dtype fp8",
        "--max-model-len 4352",
    ):
        assert flag in script
    sbatch = render(plan, "slurm").content
    validate.shellcheck(sbatch)
    assert "#SBATCH --nodes=2\n" in sbatch and "#SBATCH --array=0-1\n" in sbatch
    assert "RDMA (InfiniBand/RoCE/EFA) at 400 Gbit/s per node" in sbatch


def test_tensorrt_llm_and_hf_engines_carry_tp_and_length() -> None:
    for engine, flag in (("tensorrt-llm", "--tp_size 2"), ("hf-transformers", "--num-shard 2")):
        plan = _plan(
            _option(engine=engine, tensor_parallel=2, replicas=3, gpu_count=6, nodes=1, quant_method=None)
        )
        art = render(plan, "kubernetes")
        d = validate.kubernetes(art.content)[0]
        assert d["kind"] == "Deployment" and d["spec"]["replicas"] == 3
        assert flag in d["spec"]["template"]["spec"]["containers"][0]["args"][0]


def test_sglang_and_expert_parallel_plans_render_as_sized() -> None:
    """An SGLang option runs SGLang's server (it ran Hugging Face's TGI), and an expert-parallel
    option carries each engine's EP flags: the layout whose memory and latency were estimated."""
    sg = _option(engine="sglang", tensor_parallel=8, replicas=1, gpu_count=8, nodes=1, expert_parallel=True)
    args = validate.kubernetes(render(_plan(sg), "kubernetes").content)[0]["spec"]["template"]["spec"]
    script = args["containers"][0]["args"][0]
    assert "sglang.launch_server" in script and "text-generation-launcher" not in script
    for flag in (
        "--tp 8",
        "--quantization fp8",
        "--kv-cache-dtype fp8_e4m3",
        "--enable-dp-attention",
        "--ep-size 8",
    ):
        assert flag in script, flag
    sbatch = render(_plan(sg), "slurm").content
    validate.shellcheck(sbatch)
    assert "sglang.launch_server" in sbatch
    vl = _option(tensor_parallel=8, replicas=1, gpu_count=8, nodes=1, expert_parallel=True)
    vllm = render(_plan(vl), "kubernetes").content
    for flag in ("--tensor-parallel-size 1", "--data-parallel-size 8", "--enable-expert-parallel"):
        assert flag in vllm, flag  # DP attention, as the memory (each sequence on one GPU) assumed
    trt = _option(
        engine="tensorrt-llm", tensor_parallel=8, replicas=1, gpu_count=8, nodes=1, expert_parallel=True
    )
    assert "--ep_size 8" in render(_plan(trt), "kubernetes").content


def test_a_disaggregated_option_is_not_rendered_as_aggregated_replicas() -> None:
    dis = _option(
        tensor_parallel=4, replicas=2, gpu_count=8, nodes=1, disaggregated="4 prefill + 4 decode GPUs"
    )
    for target in ("kubernetes", "slurm", "skypilot"):
        with pytest.raises(NotRenderable, match="disaggregated pools"):
            render(_plan(dis), target)


def test_shm_covers_nccl_buffers() -> None:
    assert shm_bytes(1) == 2**30
    assert shm_bytes(8) == 8 * 2**30  # 56 pairs x 32 channels x 4 MiB = 7 GiB, + 1 GiB


def test_yaml_writer_round_trips() -> None:
    doc = {
        "a": [1, {"b": "x: y # z", "c": []}, [2, 3]],
        "run": "echo 1\n  two\n\nthree\n",
        "e": {},
        "n": None,
    }
    assert yaml.safe_load(dump(doc, ["head"])) == doc


def test_tensorrt_llm_fp8_needs_an_fp8_checkpoint_where_vllm_quantises_itself() -> None:
    """trtllm-serve reads the weight format from the checkpoint (no on-the-fly FP8): an FP8
    plan's MODEL is a FILL-IN naming an FP8 checkpoint; vLLM's keeps the model id."""
    o = _option(tensor_parallel=2, replicas=1, gpu_count=2, nodes=1, engine="tensorrt-llm")
    art = render(_plan(o), "kubernetes")
    env = validate.kubernetes(art.content)[0]["spec"]["template"]["spec"]["containers"][0]["env"]
    model = next(e["value"] for e in env if e["name"] == "MODEL")
    assert model.startswith("FILL-IN") and "FP8" in model and "org/model" in model, model
    assert any(f.startswith("MODEL: an FP8") for f in art.fill_in)


def test_the_gres_type_is_the_slug_without_its_vendor_one_rule_for_every_gpu() -> None:
    """The Slurm gres type placeholder was the catalog's short alias where a GPU had one
    (``a100`` for one A100 variant, ``a100-40gb`` for another) and the whole slug elsewhere
    (``nvidia-b200``); now the artifact and the answer's scheduling hint both write the slug
    without its vendor prefix."""
    sbatch = render(_plan(_option(tensor_parallel=8, replicas=1, gpu_count=8, nodes=1)), "slurm").content
    assert "--gres=gpu:h100-sxm:8" in sbatch
    b200 = _option(gpu_slug="nvidia-b200", tensor_parallel=8, replicas=1, gpu_count=8, nodes=1)
    assert "--gres=gpu:b200:8" in render(_plan(b200), "slurm").content


def test_a_plan_sized_for_prequantised_weights_asks_for_that_checkpoint() -> None:
    """An NVFP4, INT8 or AWQ plan was sized for those bytes; rendered with the 16-bit model id it
    would run out of memory. The MODEL is a FILL-IN naming the format the checkpoint must have
    (FP8, which the engine quantises as it loads, keeps the model id)."""
    for fmt, words in (("nvfp4", "NVFP4"), ("int8", "INT8 W8A8"), ("awq", "AWQ 4-bit")):
        o = _option(tensor_parallel=2, replicas=1, gpu_count=2, nodes=1, quant_method=fmt)
        art = render(_plan(o), "kubernetes")
        env = validate.kubernetes(art.content)[0]["spec"]["template"]["spec"]["containers"][0]["env"]
        model = next(e["value"] for e in env if e["name"] == "MODEL")
        assert model.startswith("FILL-IN") and words in model and "org/model" in model, model
        assert any(f.startswith(f"MODEL: an {words}") for f in art.fill_in)  # an NVFP4, an INT8, an AWQ
        sbatch = render(_plan(o), "slurm").content
        validate.shellcheck(sbatch)
        assert "MODEL=org/model" not in sbatch
    fp8 = _option(tensor_parallel=2, replicas=1, gpu_count=2, nodes=1)
    env = validate.kubernetes(render(_plan(fp8), "kubernetes").content)[0]["spec"]["template"]["spec"][
        "containers"
    ][0]["env"]
    assert next(e["value"] for e in env if e["name"] == "MODEL") == "org/model"
