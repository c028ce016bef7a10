"""The processes an artifact runs: the serving engine with the option's flags, or torchrun with
the option's sharding, and what the user must fill in. Shared by every target."""

from __future__ import annotations

import math
from dataclasses import dataclass

from service.core.deploy.features import feature_args, feature_fill_ins
from service.core.deploy.plan import FILL as FILL
from service.core.deploy.plan import DeployOption, DeployPlan

"""The marker every placeholder carries (grep for it before applying an artifact)."""

SERVE_PORT = 8000
RDZV_PORT = 29500
NODE_RANK = "NODE_RANK_PLACEHOLDER"
HEAD_ADDR = "HEAD_ADDR_PLACEHOLDER"
"""Placeholders in a serving command over several nodes, filled per target by :func:`with_node`."""

VLLM_QUANTIZATION: dict[str, str] = {
    "awq": "awq",
    "gptq": "gptq",
    "fp8": "fp8",
    "bnb-int8": "bitsandbytes",
    "bnb-nf4": "bitsandbytes",
}
"""The answer's quantisation -> vLLM ``--quantization`` (vLLM engine arguments); ``int8``
(W8A8), ``nvfp4`` and ``mxfp4`` checkpoints carry their scheme and take no flag."""

SGLANG_QUANTIZATION: dict[str, str] = {"awq": "awq", "gptq": "gptq", "fp8": "fp8", "int8": "w8a8_int8"}
"""The answer's quantisation -> SGLang ``--quantization`` (SGLang server arguments); FP4
checkpoints carry their scheme."""

K8S_RESOURCE: dict[str, str] = {
    "nvidia": "nvidia.com/gpu",
    "amd": "amd.com/gpu",
    "intel": "habana.ai/gaudi",
}
"""Device-plugin resource names (NVIDIA, AMD ROCm and Intel Gaudi device plugins)."""

NCCL_BUFFSIZE_BYTES = 4 * 2**20
"""NCCL_BUFFSIZE default, 4 MiB (NCCL environment variables documentation)."""
NCCL_MAX_CHANNELS = 32
"""MAXCHANNELS in NCCL's device.h: the most channels one communicator opens."""


def shm_bytes(gpus_per_pod: int) -> int:
    """``/dev/shm`` for one pod: NCCL's shared-memory transport can hold one buffer per channel
    for every ordered pair of local ranks (NCCL_BUFFSIZE x MAXCHANNELS x g(g-1)), plus 1 GiB for
    the engine's or DataLoader's own segments; rounded up to whole GiB."""
    pairs = gpus_per_pod * max(0, gpus_per_pod - 1)
    total = pairs * NCCL_MAX_CHANNELS * NCCL_BUFFSIZE_BYTES + 2**30
    return math.ceil(total / 2**30) * 2**30


@dataclass(frozen=True, slots=True)
class FillIn:
    """One thing the user must provide before the artifact runs."""

    name: str
    what: str


PREQUANTISED: dict[str, str] = {
    "awq": "AWQ 4-bit",
    "gptq": "GPTQ 4-bit",
    "int8": "INT8 W8A8 (SmoothQuant-style)",
    "nvfp4": "NVFP4 (e.g. NVIDIA ModelOpt)",
    "mxfp4": "MXFP4",
}
"""Weight formats an engine loads from a checkpoint quantised beforehand (FP8 vLLM and SGLang
can quantise from 16-bit weights as they load them; TensorRT-LLM cannot:
:func:`prequantised`); the plan was sized for those bytes, so the model the artifact runs must
be that checkpoint."""


def prequantised(o: DeployOption, own: str = "none") -> str | None:
    """The checkpoint format ``o``'s engine must load, where it cannot quantise the 16-bit
    weights itself (None: the model's own checkpoint serves -- ``own`` is the format it ships in,
    gpt-oss's MXFP4, DeepSeek-V3's FP8)."""
    if not o.serving:
        return None
    fmt = o.quant_method or ""
    if fmt == own:
        return None
    if fmt == "fp8" and o.engine == "tensorrt-llm":  # trtllm-serve reads the format from the checkpoint
        return "FP8 (e.g. NVIDIA ModelOpt)"
    return PREQUANTISED.get(fmt)


def _article(initialism: str) -> str:
    """'an' before a letter read with a vowel sound (an AWQ, an INT8, an FP8, an MXFP4), else 'a'."""
    return "an" if initialism[:1].upper() in "AEFHILMNORSX" else "a"


def _own_words(own: str) -> str:
    return "16-bit" if own == "none" else own.upper()


def _model_fill(plan: DeployPlan, o: DeployOption) -> FillIn:
    model = plan.model_id or "the model"
    fmt = prequantised(o, plan.checkpoint_format)
    if fmt is None:
        return FillIn("MODEL", f"model path or hub id (the answer sized {model})")
    return FillIn(
        "MODEL",
        f"{_article(fmt)} {fmt} checkpoint of {model}: the plan was sized for {o.quant_method} weights, and the "
        f"published checkpoint ({_own_words(plan.checkpoint_format)} weights) is not that format (the engine "
        "reads the format from its config)",
    )


def model_value(plan: DeployPlan, o: DeployOption) -> str | None:
    """The MODEL an artifact sets: the answer's model, or None where the user must fill it in
    (no model id, or a plan sized for a checkpoint quantised beforehand)."""
    if not plan.model_id or prequantised(o, plan.checkpoint_format) is not None:
        return None
    return plan.model_id


def fill_ins(plan: DeployPlan, o: DeployOption) -> tuple[FillIn, ...]:
    common = (
        FillIn("IMAGE", f"container image with {_runtime(o)} for {o.names.vendor.upper()} GPUs"),
        _model_fill(plan, o),
        FillIn(
            "HF_TOKEN",
            "a Hugging Face token if the weights are gated (Kubernetes: secret 'hf-token', key 'token')",
        ),
    )
    if o.serving:
        return (*common, *(FillIn(n, w) for n, w in feature_fill_ins(plan, o)))
    return (*common, FillIn("TRAIN_SCRIPT", "your training entry point (reads the GPU_ADVISOR_* settings)"))


def _runtime(o: DeployOption) -> str:
    if not o.serving:
        return "PyTorch (torchrun)"
    return {"vllm": "vLLM", "tensorrt-llm": "TensorRT-LLM (trtllm-serve)", "sglang": "SGLang"}.get(
        o.engine or "vllm", "Text Generation Inference (the hf-transformers engine's server)"
    )


def serve_argv(plan: DeployPlan, o: DeployOption, model: str, tp: str | None = None) -> tuple[str, ...]:
    """The serving engine with the option's tensor parallelism (or ``tp``, a shell expression),
    quantisation and context."""
    tp = tp or str(o.tensor_parallel)
    length = plan.max_model_len
    if o.engine == "tensorrt-llm":
        argv = ["trtllm-serve", model, "--tp_size", tp, "--host", "0.0.0.0", "--port", str(SERVE_PORT)]
        argv += ["--ep_size", tp] if o.expert_parallel else []
        return (*argv, *(("--max_seq_len", str(length)) if length else ()), *feature_args(plan, o))
    if o.engine == "sglang":
        return _sglang_argv(plan, o, model, tp)
    if o.engine == "vllm" or o.engine is None:
        # expert parallelism as estimated: attention data-parallel over the replica's GPUs, the
        # experts spread over them (vLLM's DP+EP layout; TP+EP would shard attention instead)
        split = ["--tensor-parallel-size", "1", "--data-parallel-size", tp] if o.expert_parallel else []
        argv = ["vllm", "serve", model, *(split or ["--tensor-parallel-size", tp]), "--port", str(SERVE_PORT)]
        if length:
            argv += ["--max-model-len", str(length)]
        q = VLLM_QUANTIZATION.get(o.quant_method or "")
        if q:
            argv += ["--quantization", q]
        if o.kv_cache_dtype and o.kv_cache_dtype.startswith("fp8"):
            argv += ["--kv-cache-dtype", "fp8"]
        if o.expert_parallel:
            argv += ["--enable-expert-parallel"]
        if o.nodes_per_replica > 1:
            argv += ["--distributed-executor-backend", "ray"]
        return (*argv, *feature_args(plan, o))
    # hf-transformers: Hugging Face's own server (TGI) shards with --num-shard
    argv = ["text-generation-launcher", "--model-id", model, "--num-shard", tp, "--port", str(SERVE_PORT)]
    return (*argv, *(("--max-total-tokens", str(length)) if length else ()))


def _sglang_argv(plan: DeployPlan, o: DeployOption, model: str, tp: str) -> tuple[str, ...]:
    """SGLang's server: ``--tp``, and for expert parallelism its DP-attention layout (experts
    whole over ``--ep-size`` GPUs, attention data-parallel), as the estimate modelled it."""
    argv = ["python3", "-m", "sglang.launch_server", "--model-path", model, "--tp", tp]
    argv += ["--host", "0.0.0.0", "--port", str(SERVE_PORT)]
    if plan.max_model_len:
        argv += ["--context-length", str(plan.max_model_len)]
    q = SGLANG_QUANTIZATION.get(o.quant_method or "")
    if q:
        argv += ["--quantization", q]
    if o.kv_cache_dtype and o.kv_cache_dtype.startswith("fp8"):
        argv += ["--kv-cache-dtype", "fp8_e4m3"]
    if o.expert_parallel:
        argv += ["--enable-dp-attention", "--dp", tp, "--ep-size", tp]
    argv += feature_args(plan, o)
    if o.nodes_per_replica > 1:  # every node runs the server, each with its rank
        argv += ["--nnodes", str(o.nodes_per_replica), "--node-rank", NODE_RANK]
        argv += ["--dist-init-addr", f"{HEAD_ADDR}:{RDZV_PORT}"]
    return tuple(argv)


def with_node(cmd: str, rank: str, head: str) -> str:
    """``cmd`` with the node's rank and the first node's address as the scheduler gives them
    (shell expressions)."""
    return cmd.replace(NODE_RANK, rank).replace(HEAD_ADDR, head)


def ray_cluster(o: DeployOption) -> bool:
    """A replica over several nodes started as one Ray cluster (vLLM's multi-node executor);
    SGLang instead runs its server on every node (:func:`with_node`)."""
    return o.nodes_per_replica > 1 and o.engine != "sglang"


def train_env(o: DeployOption) -> dict[str, str]:
    """The chosen training setup, for the user's script (torchrun passes the environment on)."""
    env = {
        "GPU_ADVISOR_SHARDING": o.sharding or "none",
        "GPU_ADVISOR_PRECISION": o.precision,
        "GPU_ADVISOR_TENSOR_PARALLEL": str(o.tensor_parallel),
        "GPU_ADVISOR_NODES": str(o.nodes),
        "GPU_ADVISOR_GPUS_PER_NODE": str(o.gpus_per_node),
    }
    extra = {
        "GPU_ADVISOR_MICRO_BATCH": o.micro_batch,
        "GPU_ADVISOR_GLOBAL_BATCH": o.global_batch,
        "GPU_ADVISOR_ACCUMULATION_STEPS": o.accumulation_steps,
        "GPU_ADVISOR_MIXED_PRECISION": o.mixed_precision,
        "GPU_ADVISOR_FINETUNE": o.finetune,
        "GPU_ADVISOR_GRADIENT_CHECKPOINTING": (
            None if o.gradient_checkpointing is None else str(o.gradient_checkpointing).lower()
        ),
    }
    env.update({k: str(v) for k, v in extra.items() if v is not None})
    return env


def torchrun_argv(o: DeployOption, *, master: str, node_rank: str, script: str) -> tuple[str, ...]:
    """torchrun for the option: standalone on one node, static rendezvous across nodes."""
    per_node = f"--nproc-per-node={o.gpus_per_node}"
    if o.nodes == 1:
        return ("torchrun", "--standalone", "--nnodes=1", per_node, script)
    return (
        "torchrun",
        f"--nnodes={o.nodes}",
        per_node,
        f"--node-rank={node_rank}",
        f"--master-addr={master}",
        f"--master-port={RDZV_PORT}",
        script,
    )


def network_note(plan: DeployPlan, o: DeployOption) -> str | None:
    """Multi-node: the interconnect the network model assumed, and what is (not) requested."""
    if (o.nodes_per_replica if o.serving else o.nodes) <= 1:
        return None  # serving replicas on one node each talk over NVLink/PCIe only
    gbps = o.network_gbps or plan.network_gbit_per_s  # the rental's or inventory's, else the question's
    rdma = o.network_rdma if o.network_gbps else plan.rdma
    speed = f"{gbps:g} Gbit/s per node" if gbps else "the default of 400 Gbit/s per GPU of the node"
    kind = "RDMA (InfiniBand/RoCE/EFA)" if rdma in (True, None) else "TCP (no RDMA)"
    return (
        f"network: the estimate assumed {kind} at {speed}; no RDMA/NIC resource is requested here, "
        f"add your cluster's (e.g. the network operator's rdma/<device> resource) to match it"
    )
