"""Continuous-batching engine classes, their efficiencies and scheduler limits, and one
iteration's time (``service.core.estimation.serving`` describes the model)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from service.core.catalog.models import DecoderSpec
from service.core.catalog.precision import PEAK_KEY
from service.core.catalog.specs import GpuSpec
from service.core.errors import MissingFigure
from service.core.estimation import serving_moe
from service.core.estimation.fp4 import FP4_WEIGHT_FORMATS, fp4_gemm_peak
from service.core.estimation.memory import (
    InferenceConfig,
    draft_weight_factor,
    expert_weight_bytes,
    weight_bytes,
)
from service.core.estimation.network import link_bytes_per_s, link_name, replica_layout, tp_all_reduce
from service.core.estimation.serving_disagg_layout import NodeNetwork
from service.core.estimation.serving_ep import EXPERT_LOAD_IMBALANCE, ep_terms
from service.core.estimation.serving_features import draft_share
from service.core.estimation.serving_lora import (
    LORA_BYTES_PER_ELEMENT,
    LoraServing,
    distinct_adapters,
    lora_slot_elements,
)
from service.core.estimation.serving_memory import MiB, memory_setting, sglang_defaults
from service.core.estimation.transfer_architectures import engine_arch_factors

GiB = 2**30

# --------------------------------------------------------------------------------------------
# Engine classes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineClass:
    """What an engine does that the time and memory model must know.

    ``kv_memory``: ``device`` -- the engine takes ``memory_fraction`` of the device's memory and
    the KV cache gets what the weights and activations leave (vLLM ``gpu_memory_utilization``);
    ``free`` -- the KV cache gets ``memory_fraction`` of the memory left after the weights and
    activations (TensorRT-LLM ``kv_cache_free_gpu_mem_fraction``); ``static`` -- weights and KV
    pool share ``memory_fraction`` of the memory free at start, activations and CUDA-graph buffers
    live in the rest (SGLang ``mem_fraction_static``, picked per GPU where the launch does not set
    it: :func:`~.serving_memory.sglang_mem_fraction_static`). ``memory_fraction`` is the default a
    request's own setting replaces (``Deployment.memory_fraction``). ``kv_reservation``: ``full``
    -- a running request holds blocks for its whole prompt + output (TensorRT-LLM's default
    ``GUARANTEED_NO_EVICT``); ``on_demand`` -- blocks are taken as tokens appear (vLLM; a
    request holds ``I + O/2`` on average).
    """

    name: str
    batching: Literal["static", "continuous"]
    cuda_graphs: bool
    kv_memory: Literal["device", "free", "static"]
    memory_fraction: float
    kv_reservation: Literal["full", "on_demand"]
    source: str
    provenance: str


ENGINE_CLASSES: Mapping[str, EngineClass] = {
    "hf-transformers": EngineClass(
        "hf-transformers",
        "static",
        False,
        "device",
        1.0,
        "full",
        "transformers generate-style loop, eager PyTorch, dynamic cache (the agent's llm-infer suite)",
        "spec",
    ),
    "tensorrt-llm": EngineClass(
        "tensorrt-llm",
        "continuous",
        True,
        "free",
        0.90,
        "full",
        "TensorRT-LLM in-flight batching: kv_cache_free_gpu_mem_fraction 0.9 (docs: default; the "
        "published runs used 0.95), GUARANTEED_NO_EVICT capacity scheduler (default), max_num_tokens "
        "8192 (default), max_batch_size from trtllm-bench's heuristic (KV capacity, at most 4096)",
        "published",
    ),
    "vllm": EngineClass(
        "vllm",
        "continuous",
        True,
        "device",
        0.90,
        "on_demand",
        "vLLM V1: gpu_memory_utilization 0.9, paged KV (blocks of 16) allocated on demand, CUDA graphs, "
        "chunked prefill; max_num_seqs / max_num_batched_tokens from EngineArgs.get_batch_defaults "
        "(1024 / 8192 for the API server on GPUs with >= 70 GiB that are not A100, else 256 / 2048)",
        "transferred",
    ),
    "sglang": EngineClass(
        "sglang",
        "continuous",
        True,
        "static",
        0.88,
        "on_demand",
        "SGLang: mem_fraction_static (weights + KV pool; activations and CUDA graphs in the rest) from its "
        "GPU-memory heuristic (0.835 on one H100 80 GB, 0.818 on eight, 0.907 / 0.897 on the H200, 0.85 on "
        "the B200), RadixAttention paged KV (tokens allocated as they appear), CUDA graphs, chunked "
        "prefill of 8192 tokens on GPUs of 60-160 GB (16384 above, 4096 / 2048 below), max_running_requests "
        "bounded by the KV pool",
        "transferred",
    ),
}

ENGINE_VERSIONS: Mapping[str, str] = {
    "hf-transformers": "transformers as the agent measured it (each measurement's fingerprint records it)",
    "tensorrt-llm": "0.14-0.17 (the published NVIDIA tables the continuous class is fitted on)",
    "vllm": "0.8+ (V1 engine: the scheduler and memory defaults above)",
    "sglang": "0.5 (the scheduler and memory defaults above)",
}
"""The engine version an answer's figures assume, by engine: stated in every serving answer
(``engine_version``) beside the version a request names (``engine_version_requested``), which
no calibration distinguishes yet."""

TRT_MAX_BATCH = 4096
TRT_MAX_NUM_TOKENS = 8192


def engine_limits(engine: EngineClass, gpu: GpuSpec, offline: bool = False) -> tuple[int, int]:
    """(max concurrent sequences, token budget per iteration) of the engine's scheduler on this
    GPU, before the KV-cache limit. vLLM: ``EngineArgs.get_batch_defaults`` (API server);
    TensorRT-LLM: ``max_batch_size`` 4096 at most (trtllm-bench sets it from the KV capacity,
    :func:`kv_capacity_tokens`) and ``max_num_tokens`` 8192."""
    if engine.name == "vllm":
        big = (gpu.fit_memory_bytes or 0) >= 70 * GiB and "a100" not in (gpu.slug + gpu.name).lower()
        if offline:
            return (1024, 16384) if big else (256, 8192)
        return (1024, 8192) if big else (256, 2048)
    if engine.name == "tensorrt-llm":
        return TRT_MAX_BATCH, TRT_MAX_NUM_TOKENS
    if engine.name == "sglang":  # ServerArgs' chunked_prefill_size by GPU memory; requests: the KV pool
        chunk, _ = sglang_defaults((gpu.fit_memory_bytes or 0) / MiB, 1)
        return TRT_MAX_BATCH, chunk
    return 1 << 30, 1 << 30


# --------------------------------------------------------------------------------------------
# Efficiencies of the continuous-batching class
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineEfficiencies:
    """Fractions of datasheet figures a continuous-batching engine reaches, and its fixed costs.

    * ``mm16`` / ``mm8``: GEMM fraction of the dense 16-bit / 8-bit (FP8, INT8) peak;
    * ``attn``: prefill flash-attention fraction of the 16-bit peak;
    * ``bw``: fraction of datasheet bandwidth reached streaming weights and the paged KV cache;
    * ``step_s``: fixed cost of one iteration (scheduler, sampling, graph launch);
    * ``request_s``: fixed latency a request pays before its first token beyond the GPU work
      (runtime enqueue, first-token sampling, and the harness in front: gRPC/HTTP);
    * ``allreduce_s``: latency of one tensor-parallel all-reduce; ``comm``: fraction of the
      link's per-direction bandwidth it reaches (NVLink, or PCIe beyond the NVLink domain);
    * ``reserve_gib``: device memory per GPU the runtime holds beyond the weights, the KV cache
      and the activation estimate (decoder buffers, cuBLAS/NCCL workspaces, CUDA graphs), GiB.

    Every figure scales a datasheet figure the same way on every GPU, so a GPU with a higher
    peak or bandwidth is never predicted slower (``tests/core/test_serving.py`` checks it).
    """

    mm16: float
    mm8: float
    attn: float
    bw: float
    step_s: float
    request_s: float
    allreduce_s: float
    comm: float
    reserve_gib: float = 2.0
    source: str = "spec"


CONTINUOUS_SPEC = EngineEfficiencies(
    mm16=0.75,
    mm8=0.60,
    attn=0.50,
    bw=0.85,
    step_s=1.0e-3,
    request_s=3.0e-3,
    allreduce_s=10e-6,
    comm=0.70,
    reserve_gib=2.0,
    source="spec",
)
"""Spec defaults of the continuous-batching class, committed before any fitting: tuned GEMMs at
~75 % of the 16-bit peak and ~60 % of the FP8 peak (cuBLASLt/CUTLASS
figures on A100/H100), decode weight streaming at ~85 % of datasheet bandwidth, ~1 ms of
scheduler + sampling per iteration, ~3 ms of fixed latency per request, NCCL/custom all-reduce
latency ~10 us at small messages and ~70 % of the per-direction link rate, ~2 GiB per GPU of runtime buffers outside the KV cache."""

CONTINUOUS_EFFICIENCIES = EngineEfficiencies(
    mm16=0.6900,
    mm8=0.6406,
    attn=0.5304,
    bw=0.7795,
    step_s=0.001083,
    request_s=0.002064,
    allreduce_s=1.115e-05,
    comm=0.5162,
    reserve_gib=2.051,
    source="published",
)
"""Fitted on the published TensorRT-LLM tables (:func:`~service.core.estimation.serving_calibration.fit_engine`
on 796 offline / static / first-token points of v0.9, v0.14 and v0.17 on H200, H100, A100 SXM,
A100 PCIe and L40S, with the per-MoE-layer latency of :mod:`.serving_moe` in the model; in-sample
MAPE offline 11.3 %, static 15.9 %, first token 12.4 %). Refitting
reproduces these figures (``tests/core/test_serving_calibration.py``); the online table was not
used."""

CONTINUOUS_BAND: Mapping[str, tuple[float, float]] = {
    "throughput": (0.19, 0.19),
    "ttft": (0.16, 0.21),
    "tpot": (0.10, 0.25),
}
"""Relative 80 % bands of continuous-batching answers: the 10th-90th percentile of the
leave-one-GPU-out residuals on the published tables (``benchmarks/validate_serving.py``)."""

TRANSFERRED_ENGINE_BAND_FACTOR = 1.5
"""vLLM answers come from the TensorRT-LLM-calibrated class: band widened by this factor."""


# --------------------------------------------------------------------------------------------
# Host profile (hf-transformers)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HostProfile:
    """Host-side cost of eager ``generate``: per-op dispatch and a per-step constant (s). A
    property of the engine and the host that measured it; the same on every GPU."""

    dispatch_s: float
    step_s: float
    source: str = "spec"


OPS_PER_LAYER_DECODE = 30
OPS_PER_DECODE_STEP = 60  # generate(): logits processing, sampling, cache bookkeeping


# --------------------------------------------------------------------------------------------
# Deployment: per-GPU constants of one (model, GPU, formats, TP) choice
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Deployment:
    """Per-GPU constants of one replica, computed once (:func:`deployment`) so that an
    iteration costs a few dozen float operations.

    Bytes and FLOPs are per GPU of the tensor-parallel group. ``w_dense`` is the weight bytes
    every iteration reads; ``w_experts`` the routed experts' bytes (MoE), of which ``T`` tokens
    touch a fraction ``1 - (1 - k/E)^T``.
    """

    model: DecoderSpec
    gpu: GpuSpec
    engine: EngineClass
    tp: int
    weight_format: str
    kv_bytes: float
    w_dense: float
    w_experts: float
    experts: int
    top_k: int
    flops_per_token: float  # layer GEMMs outside the routed experts, per GPU
    expert_flops_per_token: float  # routed-expert GEMMs (MoE), per GPU
    head_flops_per_seq: float  # LM head for one sequence's next token, per GPU
    attn_flops_per_ctx: float  # 4 q_dim L / tp: attention FLOPs per query token per context token
    kv_per_token: float  # KV bytes per token per GPU
    ew_per_token: float  # fused elementwise bytes per token per GPU
    peak_gemm: float  # FLOP/s before efficiency (the format's peak; times the architecture's factor)
    peak_gemm16: float  # 16-bit peak (weight-only fallback, attention)
    w8a8: bool
    bandwidth: float  # B/s datasheet (times the architecture's factor, :func:`engine_arch_factors`)
    link: float  # B/s per direction between two GPUs of the replica (EP all-to-all)
    link_kind: str  # the scale-up fabric's name, "PCIe" or "network" ("" on one GPU)
    hidden: int
    layers: int
    act_per_token: float  # activation workspace bytes per token of the iteration budget, per GPU
    act_fixed: float  # fp32 logits of a few hundred sequences, per GPU
    notes: tuple[str, ...] = ()
    missing: str | None = None  # a datasheet figure the time model needs and the catalog lacks
    attn_flops_per_ctx_prefill: float = 0.0  # prefill's, where it differs (MLA expands K/V); 0: the same
    prefix_hit_rate: float = 0.0  # share of each prompt's tokens served from the prefix cache
    spec_tokens: int = 0  # speculative decoding: tokens drafted per step (0: none)
    spec_acceptance: float = 0.0  # probability each drafted token is accepted (i.i.d.)
    spec_draft_share: float = 0.0  # the draft head's share of the parameters (serving_steps.draft_pass_s)
    lora: LoraServing | None = None  # multi-LoRA serving (None: the base model only)
    lora_slot_bytes: float = 0.0  # one adapter slot per GPU (16-bit); max_loras are resident
    ep_a2a_bytes: float = 0.0  # expert parallelism: all-to-all bytes per replica token per GPU (0: TP)
    ep_a2a_count: int = 0  # expert parallelism: all-to-alls per forward
    memory_fraction: float = 0.0  # the engine's memory setting it runs with (0: the class default)
    w_resident: float = 0.0  # weights held but not streamed each iteration (MTP draft layers), per GPU
    moe_floor_s: float = 0.0  # fixed MoE cost of one iteration (serving_moe), s
    ar_s_per_byte: float = (
        0.0  # one TP all-reduce, s per byte per rank before efficiency (network.tp_all_reduce)
    )
    ar_latency_s: float = 0.0  # its network hops where the replica spans nodes, s


def _link_bytes_per_s(gpu: GpuSpec, tp: int, nodes: NodeNetwork) -> tuple[float, str]:
    """The link between two GPUs of a replica (:func:`.network.link_bytes_per_s`) and its name;
    a replica spanning nodes: a GPU's share of the node's network, the slowest hop."""
    if tp <= 1:
        return math.inf, ""
    layout = replica_layout(nodes, gpu, tp)
    if layout.nodes > 1:
        return layout.network_bytes_per_s / layout.gpus_per_node, "network"
    return link_bytes_per_s(gpu, tp), link_name(gpu, tp)


def gemm_format(c: InferenceConfig, gpu: GpuSpec) -> tuple[str, bool, str | None]:
    """(peak key the GEMMs run at, W8A8?, note). FP8/INT8 weights run W8A8 on the matching
    tensor-core peak where the GPU supports it; otherwise they are dequantised to 16-bit in the
    GEMM (weight-only, the 16-bit peak). NVFP4/MXFP4 weights run on FP4 tensor cores at the
    dense FP4 peak where the GPU has both (the FP8 peak where its FP4 peak is not sourced), else
    weight-only."""
    fmt = c.weight_format
    base = "fp32" if c.precision == "fp32" else PEAK_KEY.get(c.precision, "bf16")
    if base not in ("fp32", "fp16", "bf16"):
        base = "bf16"
    if fmt in FP4_WEIGHT_FORMATS:
        key = fp4_gemm_peak(fmt, gpu)
        if key == "fp4":
            return "fp4", True, None
        if key == "fp8":
            return (
                "fp8",
                True,
                f"{fmt} GEMMs counted at the FP8 peak (no sourced dense FP4 peak for {gpu.slug})",
            )
        return base, False, f"{fmt} weights dequantised to 16-bit in the GEMM (weight-only) on {gpu.slug}"
    if fmt in ("fp8", "int8"):
        if gpu.support_for(fmt) == "yes" and gpu.peak_for(fmt):
            return fmt, True, None
        return (
            base,
            False,
            (
                f"{gpu.slug} has no {fmt} tensor cores (or no sourced {fmt} peak): {fmt} weights "
                "are dequantised to 16-bit in the GEMM (weight-only), at the 16-bit peak"
            ),
        )
    return base, False, None


def _missing_figure(gpu: GpuSpec, key: str, peak: float) -> str | None:
    """The datasheet figure the time model needs and the catalog lacks (None: both sourced)."""
    if peak > 0 and gpu.bandwidth_gb_per_s:
        return None
    return "memory bandwidth" if peak > 0 else f"{PEAK_KEY.get(key, key)} peak"


def deployment(c: InferenceConfig, gpu: GpuSpec) -> Deployment:
    """The per-GPU constants of serving ``c`` (one replica of ``c.tensor_parallel`` GPUs). A GPU
    without a sourced peak or bandwidth still gets its memory figures (KV capacity); time
    functions raise :class:`~service.core.errors.MissingFigure` for it."""
    m = c.model
    tp = c.tensor_parallel
    engine = ENGINE_CLASSES[c.engine]
    key, w8a8, note = gemm_format(c, gpu)
    arch = engine_arch_factors(gpu, key)
    peak = (gpu.peak_for(key) or 0.0) * 1e12 * (arch.gemm if arch else 1.0)
    p16 = gpu.peak_for("bf16") or gpu.peak_for("fp16")
    peak16 = p16 * 1e12 * (arch.gemm16 if arch else 1.0) if p16 else peak
    missing = _missing_figure(gpu, key, peak)
    cb = 4 if c.precision == "fp32" else 2
    w_all = weight_bytes(m, c.weight_format, cb) / tp
    expert_bytes = 0.0
    if m.is_moe:  # the routed experts (shared experts and dense layers are read every iteration)
        expert_bytes = expert_weight_bytes(m, c.weight_format, cb) / tp
    h = m.hidden_size
    q = float(m.q_dim) / tp
    kvd = float(m.kv_dim) / m.kv_shards(tp)
    f_act = m.ffn_active_width / tp
    layer_mm = float(m.active_params_per_layer - m.norm_params_per_layer) / tp
    expert_flops = 2.0 * m.moe_layers * m.experts_per_token * m.expert_params / tp if m.is_moe else 0.0
    ar = tp_all_reduce(gpu, tp, c.nodes)
    link, link_kind = _link_bytes_per_s(gpu, tp, c.nodes)
    fraction, memory_note = memory_setting(c, engine, gpu)
    notes = (*((note,) if note else ()), *((arch.note,) if arch else ()), *_spanning_note(c, gpu, ar.nodes))
    notes += memory_note
    kv_token = m.kv_cache_bytes_per_token(c.kv_bytes) / m.kv_shards(tp)
    ep = None
    if c.expert_parallel:  # whole experts per GPU, attention data-parallel (serving_ep)
        ep = ep_terms(m, w_all * tp, expert_bytes * tp, c.kv_bytes, tp)
        w_all, expert_bytes, kv_token = ep.w_dense + ep.w_experts, ep.w_experts, ep.kv_per_token
        expert_flops *= EXPERT_LOAD_IMBALANCE
    return Deployment(
        model=m,
        gpu=gpu,
        engine=engine,
        tp=tp,
        weight_format=c.weight_format,
        kv_bytes=c.kv_bytes,
        w_dense=w_all - expert_bytes,
        w_experts=expert_bytes,
        experts=m.num_experts,
        top_k=m.experts_per_token,
        flops_per_token=2.0 * m.num_layers * layer_mm - expert_flops,
        expert_flops_per_token=expert_flops,
        head_flops_per_seq=2.0 * h * m.vocab_size / tp,
        attn_flops_per_ctx=m.attention_flops_per_ctx_token("decode") / tp * m.num_layers,
        attn_flops_per_ctx_prefill=m.attention_flops_per_ctx_token("prefill") / tp * m.num_layers,
        prefix_hit_rate=c.prefix_cache_hit_rate,
        spec_tokens=c.draft_tokens if c.speculative else 0,
        spec_acceptance=c.acceptance_rate,
        spec_draft_share=draft_share(m, c.speculative),
        lora=c.lora,
        lora_slot_bytes=lora_slot_elements(m, c.lora.rank, tp) * LORA_BYTES_PER_ELEMENT if c.lora else 0.0,
        kv_per_token=kv_token,
        ep_a2a_bytes=ep.a2a_bytes_per_token if ep else 0.0,
        ep_a2a_count=ep.a2a_count if ep else 0,
        w_resident=w_all * (draft_weight_factor(c) - 1.0),
        moe_floor_s=serving_moe.moe_floor_s(m),
        ew_per_token=2.0 * m.num_layers * (8.0 * h + 2.0 * (q + 2.0 * kvd) + 3.0 * f_act),
        peak_gemm=peak,
        peak_gemm16=peak16,
        w8a8=w8a8,
        bandwidth=(gpu.bandwidth_gb_per_s or 0.0) * 1e9 * (arch.memory if arch else 1.0),
        link=link,
        link_kind=link_kind,
        ar_s_per_byte=ar.s_per_byte,
        ar_latency_s=ar.extra_latency_s,
        hidden=h,
        layers=m.num_layers,
        act_per_token=2.0 * (4.0 * h + 3.0 * float(m.ffn_peak_width) / tp + 2.0 * (q + 2.0 * kvd)),
        act_fixed=256.0 * 4.0 * m.vocab_size / tp,
        notes=notes,
        missing=missing,
        memory_fraction=fraction,
    )


def _spanning_note(c: InferenceConfig, gpu: GpuSpec, nodes: int) -> tuple[str, ...]:
    """What a replica over several nodes is timed on."""
    if nodes <= 1:
        return ()
    layout = replica_layout(c.nodes, gpu, c.tensor_parallel)
    return (
        f"TP{c.tensor_parallel} spans {layout.describe()}: every all-reduce of the replica crosses "
        "the network (hierarchical, plus NCCL's network hops)",
    )


class _Coefficients:
    """Per-(deployment, efficiencies) constants of :func:`iteration_s`, so that the queueing
    model's fixed point costs a few float operations per evaluation."""

    __slots__ = (
        "attn_dec",
        "attn_pre",
        "comm0",
        "comm1",
        "computed",
        "ew",
        "expert_flops",
        "flops",
        "head",
        "kv",
        "kv_bytes",
        "lora",
        "lora_bytes",
        "lora_flops",
        "moe",
        "rate",
        "reach",
        "step",
        "topk_e",
        "w_dense",
        "w_experts",
    )

    def __init__(self, d: Deployment, e: EngineEfficiencies) -> None:
        if d.missing:
            raise MissingFigure(d.gpu.slug, d.missing)
        bw = d.bandwidth * e.bw
        rate = d.peak_gemm * (e.mm8 if d.w8a8 else e.mm16)
        if d.w8a8:  # an FP8/INT8 checkpoint can always run weight-only at the 16-bit rate
            rate = max(rate, d.peak_gemm16 * e.mm16)
        attn = d.attn_flops_per_ctx / (d.peak_gemm16 * e.attn)
        attn_pre = (d.attn_flops_per_ctx_prefill or d.attn_flops_per_ctx) / (d.peak_gemm16 * e.attn)
        self.rate = rate
        self.flops = d.flops_per_token / rate
        self.head = d.head_flops_per_seq / rate
        self.expert_flops = d.expert_flops_per_token / rate
        self.moe = bool(d.w_experts)
        self.topk_e = d.top_k / d.experts
        self.w_dense = d.w_dense / bw
        self.w_experts = d.w_experts / bw
        self.kv = max(d.kv_per_token / bw, attn)  # decode attention: KV reads or its FLOPs, per (seq x ctx)
        self.kv_bytes, self.attn_dec = d.kv_per_token / bw, attn
        self.attn_pre = attn_pre
        self.ew = d.ew_per_token / bw
        self.comm0 = 2.0 * d.layers * (e.allreduce_s + d.ar_latency_s) if d.tp > 1 else 0.0
        self.comm1 = 2.0 * d.layers * 2.0 * d.hidden * d.ar_s_per_byte / e.comm  # 16-bit activations
        if d.ep_a2a_count:  # expert parallelism: dispatch + combine per MoE layer, no all-reduce
            self.comm0 = d.ep_a2a_count * e.allreduce_s
            self.comm1 = d.ep_a2a_bytes / (d.link * e.comm)
        self.step = e.step_s + d.moe_floor_s
        # prefix cache: a prompt computes only its uncached (1 - h) tail, whose tokens attend the
        # cached head too: mean context h I + (1 - h) I / 2 = (1 + h) I / 2
        self.computed = 1.0 - d.prefix_hit_rate
        self.reach = 1.0 + d.prefix_hit_rate
        # multi-LoRA (serving_lora): 2 FLOPs per slot element per token at the 16-bit GEMM rate,
        # and each distinct adapter of the batch streamed once per iteration
        self.lora = d.lora
        self.lora_flops = 2.0 * d.lora_slot_bytes / LORA_BYTES_PER_ELEMENT / (d.peak_gemm16 * e.mm16)
        self.lora_bytes = d.lora_slot_bytes / bw

    def iteration(
        self, n_dec: float, ctx: float, pre_tokens: float, pre_ctx: float, pre_seqs: float
    ) -> float:
        pre_tokens *= self.computed
        pre_ctx *= self.reach
        T = n_dec + pre_tokens
        if T <= 0:
            return self.step
        t_flops = T * (self.flops + self.expert_flops) + (n_dec + pre_seqs) * self.head
        w = self.w_dense
        if self.moe:  # the experts the T tokens are routed to (k of E each, uniformly)
            w += self.w_experts * (1.0 - (1.0 - self.topk_e) ** max(T, 1.0))
        if self.lora is not None:
            seqs = min(float(self.lora.max_loras), distinct_adapters(self.lora.adapters, n_dec + pre_seqs))
            w += T * self.lora_flops + seqs * self.lora_bytes
        return (
            t_flops
            + w
            + n_dec * ctx * self.kv
            + pre_tokens * pre_ctx * self.attn_pre
            + T * self.ew
            + self.comm0
            + self.comm1 * T
            + self.step
        )


_COEFF_CACHE: dict[tuple[int, int], tuple[Deployment, EngineEfficiencies, _Coefficients]] = {}


def _coefficients(d: Deployment, e: EngineEfficiencies) -> _Coefficients:
    key = (id(d), id(e))
    hit = _COEFF_CACHE.get(key)
    if hit is not None and hit[0] is d and hit[1] is e:
        return hit[2]
    k = _Coefficients(d, e)
    if len(_COEFF_CACHE) > 4096:
        _COEFF_CACHE.clear()
    _COEFF_CACHE[key] = (d, e, k)
    return k


def iteration_s(
    d: Deployment,
    e: EngineEfficiencies,
    n_dec: float,
    ctx: float,
    pre_tokens: float = 0.0,
    pre_ctx: float = 0.0,
    pre_seqs: float = 0.0,
) -> float:
    """Seconds of one continuous-batching iteration (module docstring): ``n_dec`` sequences
    decoding one token each at mean context ``ctx``, plus ``pre_tokens`` prompt tokens of
    ``pre_seqs`` sequences whose mean attention context is ``pre_ctx`` (``I/2`` for whole
    prompts: causal). GEMMs: ``FLOPs / rate + weight bytes / bw`` -- streaming the weights and
    the tensor-core work do not overlap perfectly, and the sum is never below the roofline's max
    nor above twice it; small-batch decode is weight-streaming, large prefill compute-bound (MoE:
    the experts the tokens touch); decode attention: the larger of the KV reads
    and its FLOPs; prefill flash attention; fused elementwise bytes; ``2 L`` all-reduces of
    ``T h`` 16-bit activations (latency + ``2 (tp-1)/tp`` volume over the link); the fixed
    ``step_s``."""
    return _coefficients(d, e).iteration(n_dec, ctx, pre_tokens, pre_ctx, pre_seqs)


def mean_iteration_s(
    d: Deployment,
    e: EngineEfficiencies,
    n_dec: float,
    ctx: float,
    prompts: float,
    prompt_len: float,
    budget: float,
) -> float:
    """Mean iteration time when ``prompts`` prompts of ``prompt_len`` tokens join an iteration on
    average (Poisson). A prompt is prefilled whole (in chunks of at most the token budget), so
    an iteration either carries none (probability ``exp(-mu)``) or ``mu / (1 - exp(-mu))`` on
    average: the prefill is not spread thinly over memory-bound decode iterations, it makes
    some of them compute-bound and long (what inter-token latency under load sees)."""
    k = _coefficients(d, e)
    chunks = max(1.0, math.ceil(prompt_len / max(budget, 1.0)))
    mu = prompts * chunks
    chunk = prompt_len / chunks
    if mu <= 0:
        return k.iteration(n_dec, ctx, 0.0, 0.0, 0.0)
    p0 = math.exp(-mu)
    if p0 < 1e-6:
        return k.iteration(n_dec, ctx, mu * chunk, prompt_len / 2.0, prompts)
    p_busy = -math.expm1(-mu)  # 1 - p0 without cancellation: exp(-1e-20) is exactly 1.0
    m = mu / p_busy
    busy = k.iteration(n_dec, ctx, m * chunk, prompt_len / 2.0, m / chunks)
    return p0 * k.iteration(n_dec, ctx, 0.0, 0.0, 0.0) + p_busy * busy
