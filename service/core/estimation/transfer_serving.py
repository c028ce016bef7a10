"""The physics part of the cross-source transfer (:mod:`.transfer_sources`, issue 27): LLM serving
at maximum throughput timed from the model's shape, the GPU's memory capacity and its links; the
link a group of GPUs talks over; the bytes per element a precision moves; the reference ceilings
the transfer normalises by and the precision classes pairs are formed in."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Final

from service.core.catalog.decoder import DecoderSpec
from service.core.catalog.models import ModelNotFound, get_model
from service.core.catalog.specs import GpuSpec
from service.core.estimation.serving_engines import TRT_MAX_BATCH
from service.core.evidence.published import PublishedRow

__all__ = [
    "ALLREDUCE_HOP_S",
    "KV_FRACTION",
    "LOG_B_REF",
    "LOG_P_REF",
    "MAX_BATCH",
    "MLPERF_OUTPUT_TOKENS",
    "RESERVE_BYTES",
    "ServeTerms",
    "benchmark_shape",
    "data_bandwidth_gb_per_s",
    "link_gb_per_s",
    "serve_terms",
]

LOG_P_REF: Final = math.log(1000.0)  # TFLOP/s: the reference GPU's compute ceiling (H100-class)
LOG_B_REF: Final = math.log(3000.0)  # GB/s: its bandwidth ceiling


def _precision_class(precision: str) -> str:
    """Pairs are formed within one class: FP32 storage (FP32 on Volta, TF32 on Ampere+ as each
    source ran it) is one question a user asks; 16-bit another; ..."""
    return {
        "fp32": "fp32/tf32",
        "tf32": "fp32/tf32",
        "amp_fp16": "fp16/bf16",
        "amp_bf16": "fp16/bf16",
        "fp16": "fp16/bf16",
        "bf16": "fp16/bf16",
        "fp8": "fp8",
        "mxfp8": "fp8",
        "int8": "int8",
        "fp4": "fp4",
        "mxfp4": "fp4",
        "int4": "int4",
        "submitter": "mixed",
        "submitter-nvfp4": "mixed",  # one MLPerf question: the submitter's recipe, here known
    }.get(precision, precision)


_BYTES_SCALE: Final[dict[str, float]] = {"fp32/tf32": 2.0, "int8": 0.5, "fp8": 0.5, "int4": 0.25, "fp4": 0.25}


def _bytes_scale(precision_class: str) -> float:
    """Bytes the memory-bound kernels move per element against 16-bit storage."""
    return _BYTES_SCALE.get(precision_class, 1.0)


INLINE_ECC_USABLE_BELOW: Final = 0.95
"""A driver-reported usable memory below this share of the physical memory marks inline ECC: the
GDDR data-centre cards (T4, A10, A40, L4, L20, L40, L40S) report 15/16 of it with ECC on (their
default); HBM parts keep ECC in sideband bits and report over 98 %."""


def data_bandwidth_gb_per_s(gpu: GpuSpec) -> float | None:
    """Memory bandwidth left for data: the datasheet figure, times the usable share of the memory
    where ECC is inline. Inline ECC carves its check bits out of the same DRAM (NVIDIA's V100
    whitepaper, "ECC Memory Resiliency": 6.25 % of GDDR5 on the K40, against sideband ECC on HBM2
    "without a bandwidth or capacity penalty"), so they cross the same pins as the data: at best
    (every check byte fetched once) the data gets the usable share of the bandwidth. Derived from
    two catalog figures, not fitted; the datasheet baseline keeps the datasheet bandwidth."""
    bw, mem, usable = gpu.bandwidth_gb_per_s, gpu.memory_bytes, gpu.usable_memory_bytes
    if not bw or not mem or not usable or usable >= INLINE_ECC_USABLE_BELOW * mem:
        return bw
    return bw * usable / mem


def link_gb_per_s(gpu: GpuSpec, n: int, bridged: bool = True) -> float | None:
    """Per-direction bandwidth of the link ``n`` GPUs of this model talk over in one node: the
    scale-up fabric inside its domain (:meth:`~.GpuSpec.scale_up_gb_per_s`), else PCIe; None when
    neither is sourced. A PCIe card's pairwise NVLink bridge is an optional part: ``bridged``
    False (the source does not state one) leaves such cards on PCIe. An OAM or SXM board's mesh
    is part of the board, stated or not."""
    node = gpu.node
    optional = node.nvlink_topology == "pairwise" and gpu.form_factor == "pcie"
    # a switched board of 8 joins 8 even where the catalog states no domain
    ranks = min(n, max(node.nvlink_domain_size, 1)) if node.nvlink_topology == "switched" and n <= 8 else n
    fabric = None if optional and not bridged else gpu.scale_up_gb_per_s(ranks)
    return fabric or node.pcie_per_direction_gb_per_s or node.nvlink_per_direction_gb_per_s


KV_FRACTION: Final = 0.95
"""Share of the memory left after the weights that holds KV cache: the Perf Overview runs' stated
``kv_cache_free_gpu_mem_fraction``, 0.95 in most cases (0.90 on OOM), which is also the default
of trtllm-bench's build heuristic (``calc_engine_setting``). The service's own TensorRT-LLM
engine class keeps the runtime's documented default, 0.9, for a user's run
(:data:`~.serving_engines.ENGINE_CLASSES`). Leave one source out, 0.9 here gives 12.18 % pooled
and 0.95 12.13 %."""
RESERVE_BYTES: Final = 4e9
"""Activation and workspace memory kept outside the KV cache (assumed, not fitted: 2, 4 and 6 GB
move leave-one-source-out LLM serving by under 0.1 point)."""
MAX_BATCH: Final = TRT_MAX_BATCH
"""Cap on sequences in flight: trtllm-bench builds ``max_batch_size`` from the KV capacity, at most
4096 (as the service's own TensorRT-LLM engine class; 2048 before, within 0.01 point)."""


ALLREDUCE_HOP_S: Final = 1e-5
"""Nominal latency of one step of a ring all-reduce (10 us; the fit scales it, one level for every
link, and finds about 2 us -- NCCL's low-latency protocol on NVLink is quoted at a few us a
hop). Tensor parallelism runs two all-reduces per layer per decode step, each ``2 (tp - 1)``
ring steps long whatever its size, and the batch in flight shares them: a GPU whose memory holds
only a small batch beside the weights pays them per few tokens."""


MLPERF_OUTPUT_TOKENS: Final[dict[str, float]] = {
    # mean output tokens per sample of each MLPerf Inference LLM benchmark's reference run: the
    # TOKENS_PER_SAMPLE of its accuracy target (mlcommons/inference,
    # tools/submission/submission_checker/constants.py at 001d64ca1a80, read 2026-12-07)
    "llama2-70b": 294.45,
    "mixtral-8x7b": 144.84,
    "llama3.1-405b": 684.68,
    "deepseek-r1": 3886.2274,
    # performance mode's reference mean (compliance TEST09: within 10 % of 1278.20 tokens;
    # language/gpt-oss-120b/README.md at 2e1a6995d310, read 2026-12-07)
    "gpt-oss-120b": 1278.2,
}
MLPERF_SHAPED: Final = frozenset({"mlperf-infer-offline", "mlperf-infer-server"})
"""MLPerf Inference scenarios run at the throughput the memory allows (Offline; Server under a
latency bound loose enough to batch): timed from the shape. Interactive and single-stream rows
are bound by their latency targets, not by what fits, and keep the class share."""
TP_WEIGHT_SHARE: Final = 0.7
"""An MLPerf row states its system's GPUs, not its tensor-parallel group: the smallest power of
two whose share of the weights takes at most this share of a GPU's memory is assumed (the rest
holds the KV cache and activations; 0.5 gives a pooled held-out 12.9 % against 12.6 %, issue 27)."""


def benchmark_shape(r: PublishedRow, gpu: GpuSpec) -> PublishedRow:
    """``r`` as it was served, for :func:`serve_terms`: an MLPerf Inference LLM row (Offline,
    Server) states neither its lengths nor its tensor parallelism, so it takes the benchmark's
    mean output length (:data:`MLPERF_OUTPUT_TOKENS`, sourced), a prompt as long (assumed: the
    sources read do not give the prompts' mean, and prompts of 0.1x to 10x the output move the
    held-out figures by at most 0.1 point) and the group :data:`TP_WEIGHT_SHARE` gives. Other rows
    are returned as they are."""
    out = MLPERF_OUTPUT_TOKENS.get(_benchmark(r.model))
    spec, mem = _decoder(r.model), gpu.usable_memory_bytes or gpu.memory_bytes
    if r.workload not in MLPERF_SHAPED or r.output_len or out is None or spec is None or not mem:
        return r
    weights = spec.total_params * _weight_bytes(_precision_class(r.precision))
    gpus = max(r.gpu_count, 1)
    tp = next((t for t in (1, 2, 4, 8) if weights / t <= TP_WEIGHT_SHARE * mem), 8)
    n = round(out)
    return replace(r, input_len=n, output_len=n, tp=min(tp, gpus))


def _benchmark(model: str) -> str:
    return model.removeprefix("mlperf/").removesuffix("-99.9").removesuffix("-99")


def _weight_bytes(precision_class: str) -> float:
    """Bytes per weight of a serving row's checkpoint."""
    return {"fp8": 1.0, "int8": 1.0, "fp4": 0.5, "int4": 0.5}.get(precision_class, 2.0)


def _decoder(model: str) -> DecoderSpec | None:
    try:
        spec = get_model(_benchmark(model))
    except ModelNotFound:
        return None
    return spec if isinstance(spec, DecoderSpec) else None


@dataclass(frozen=True, slots=True)
class ServeTerms:
    """Seconds per output token per GPU of LLM serving at maximum throughput, by term, each over
    the configuration's GPU-independent time (:func:`serve_terms`)."""

    decode: float  # decode GEMMs at the compute ceiling
    prefill: float  # the prompt's prefill, spread over the output tokens
    weights: float  # the weights read once per step, over the batch in flight
    kv: float  # the KV cache of the mean context, read by attention
    comm: float  # tensor parallelism's all-reduce bytes over the link
    hops: float  # and their latency, 2 (tp - 1) ring steps each per step, over the batch


def serve_terms(r: PublishedRow, gpu: GpuSpec, tp: int, link: float | None) -> ServeTerms | None:
    """Maximum-throughput serving of ``r``'s model on ``tp`` GPUs, per output token per GPU:
    decode GEMMs (2 x active parameters), the prompt's prefill spread over the output tokens, the
    weights read once per step and shared by the batch in flight, which is what the KV cache that
    fits beside the weights holds with each request's whole sequence reserved (the capacity term:
    a GPU with more memory runs a larger batch, and reads its weights per fewer tokens),
    attention's read of the KV cache of a mean context
    (input + output / 2), the bytes of the two all-reduces per layer of tensor parallelism over
    ``link``, and their latency (:data:`ALLREDUCE_HOP_S`) over the batch. Each is over the
    configuration's time without the capacity and link terms at the reference ceilings, so that
    only GPU figures vary within a configuration. None where the shape or the lengths are
    unknown."""
    spec = _decoder(r.model)
    inp, out = r.input_len, r.output_len
    mem = gpu.usable_memory_bytes or gpu.memory_bytes
    if spec is None or not inp or not out or not mem:
        return None
    pc = _precision_class(r.precision)
    w_bytes = _weight_bytes(pc)
    kv_bytes = 1.0 if pc in ("fp8", "fp4") else 2.0  # TensorRT-LLM: FP8 engines keep an FP8 KV cache
    weights = spec.total_params * w_bytes / tp
    kv_per_token = spec.kv_cache_bytes_per_token(kv_bytes) / spec.kv_shards(tp)
    kv = kv_per_token * (inp + out / 2)
    free = max(KV_FRACTION * (mem - weights) - RESERVE_BYTES, 0.25e9)
    # a static-batch row states its batch (the same on every GPU of its group); in-flight batching
    # runs what the memory beside the weights holds, each request's whole sequence reserved up
    # front (GUARANTEED_NO_EVICT, the capacity scheduler the Perf Overview runs print), at most the
    # client's concurrency where the source fixes one
    cap = min(MAX_BATCH, r.concurrency) if r.concurrency else MAX_BATCH
    batch = float(r.batch_size) if r.batch_size else min(cap, free / (kv_per_token * (inp + out)))
    p_ref, b_ref = math.exp(LOG_P_REF) * 1e12, math.exp(LOG_B_REF) * 1e9
    decode = 2.0 * spec.active_params / tp / p_ref
    prefill = decode * inp / out
    comm = 0.0
    if tp > 1 and link:
        comm = 8.0 * spec.num_layers * spec.hidden_size * (tp - 1) / tp * (1.0 + inp / out) / (link * 1e9)
    hops = ALLREDUCE_HOP_S * 2.0 * spec.num_layers * 2.0 * (tp - 1) / batch if tp > 1 and link else 0.0
    norm = decode + prefill + kv / b_ref
    return ServeTerms(
        decode / norm,
        prefill / norm,
        weights / batch / b_ref / norm,
        kv / b_ref / norm,
        comm / norm,
        hops / norm,
    )
