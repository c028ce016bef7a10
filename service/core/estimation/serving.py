"""Serving: LLM engines, request-rate serving with latency targets, replicas, and batched
encoder / CNN inference. Pure functions over frozen dataclasses; no I/O.

Engine classes (DESIGN "Estimation": an engine is a modelling choice, not a label)
---------------------------------------------------------------------------------

* ``hf-transformers`` -- eager PyTorch ``generate``-style loop, **static batch** (what the
  agent's ``llm-infer`` suite measures). Every decode step is launched op by op from Python,
  so a host floor ``(layers x 30 + 60) x dispatch_s`` bounds a step from below. The floor is a
  property of the engine and the host that measured it (:class:`HostProfile`), applied to
  every GPU alike -- never transferred as a GPU trait (a faster GPU is never slower).
* ``tensorrt-llm`` and ``vllm`` -- **continuous batching** (in-flight batching): paged KV
  cache at the engine's memory default, CUDA-graph / compiled decode (no per-op host floor,
  a per-iteration cost ``step_s``), chunked prefill mixed into decode iterations (token budget
  per iteration), tensor parallelism with two all-reduces per layer over the node's NVLink or
  PCIe, data-parallel replicas for GPUs beyond one TP group, FP8/INT8 W8A8 GEMMs on the
  matching tensor-core peak where the GPU has it (weight-only dequantisation to 16-bit
  otherwise), FP8 KV cache. The class is calibrated on NVIDIA's published TensorRT-LLM tables
  (:data:`CONTINUOUS_EFFICIENCIES`, provenance ``published``); vLLM shares the physics with its
  own scheduler defaults (:func:`engine_limits`) and is labelled ``transferred`` (no vLLM table
  calibrates it, and vLLM cannot run on the lent H200). SGLang is not modelled: nothing
  calibrates it.

One iteration of a continuous-batching engine (:func:`iteration_s`) with ``n`` sequences in
decode at mean context ``c`` and ``p`` prefill tokens mixed in (``T = n + p`` tokens):

``t = F(T) / peak_gemm + W(T) / bw + n c k / bw + A_pre / (peak16 x attn) + T e / bw
+ 2 L (lat + 2 (tp-1)/tp x T h 2 / link) + step_s``

-- GEMM FLOPs ``F`` and weight streaming ``W`` (MoE: the experts the ``T`` tokens touch),
paged-attention KV reads (``k`` bytes per token per GPU), prefill flash attention, fused
elementwise traffic ``e``, the TP all-reduces, and the fixed cost. The GEMM terms are added,
not maxed: the fit on the published tables preferred it (offline MAPE 12.1 % vs 12.3 % for a
roofline max with a token-count shape factor) and only the sum keeps small-batch decode
weight-streaming on every GPU, so weight formats (FP8 on an A100, weight-only) change decode
speed as they must.

Queueing (:func:`serve_at_rate`): Poisson arrivals at ``lambda`` per replica (a round-robin or
random load balancer splits a Poisson stream into Poisson streams). Within a replica the
continuous-batching scheduler is a **state-dependent processor-sharing server**: with ``n``
requests in decode each iteration takes ``t(n, p)``; Little's law on the decode phase gives
``n = lambda x O x t`` and the prefill carried per iteration is ``p = lambda x t x I`` (``I``,
``O`` mean input / output lengths), so ``t`` solves ``t = g(lambda O t, lambda t I)`` -- no
solution below the engine's concurrency cap means overload. The admission queue in front of
the cap is **M/G/c** (``c`` = concurrency cap, service time ``O t`` + prefill, squared
coefficient of variation from the output-length dispersion) with the Allen-Cunneen waiting
time. TTFT = request overhead + admission wait + residual of the running iteration (``t/2``)
+ the iterations that carry the prompt (chunks of the token budget); TPOT = ``t``.
Validated (means, fixed lengths) on NVIDIA's TensorRT-LLM 0.14 online-serving table at 2-32
QPS on H100 and H200 (``benchmarks/validate_serving.py``); answers are **p50** (median input
length, median admission wait); tails (p90/p99) are not validated and not answered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from service.core.catalog.models import CnnSpec, EncoderSpec
from service.core.catalog.precision import TRAIN_MODES
from service.core.catalog.specs import GpuSpec
from service.core.estimation.band import Band
from service.core.estimation.memory import (
    BatchInferenceConfig,
    InferenceConfig,
    expert_weight_bytes,
    weight_bytes,
)
from service.core.estimation.network import tp_all_reduce
from service.core.estimation.performance import (
    CALIBRATED_BAND,
    DEQUANT_RATE,
    MOE_EAGER_INFER_KERNELS,
    SPEC_BAND,
    SPEC_DEFAULTS,
    Efficiencies,
    _dequant_bytes,
)
from service.core.estimation.serving_engines import (  # noqa: F401
    CONTINUOUS_BAND,
    CONTINUOUS_EFFICIENCIES,
    CONTINUOUS_SPEC,
    ENGINE_CLASSES,
    OPS_PER_DECODE_STEP,
    OPS_PER_LAYER_DECODE,
    TRANSFERRED_ENGINE_BAND_FACTOR,
    TRT_MAX_BATCH,
    TRT_MAX_NUM_TOKENS,
    Deployment,
    EngineClass,
    EngineEfficiencies,
    GiB,
    HostProfile,
    _Coefficients,
    _coefficients,
    deployment,
    engine_limits,
    gemm_format,
    iteration_s,
    mean_iteration_s,
)
from service.core.estimation.serving_queue import (  # noqa: F401
    ConcurrencyPoint,
    RateEstimate,
    ServingPlan,
    Workload,
    _busy_fraction,
    _concurrency_cap,
    _erlang_c,
    _iteration_at,
    _root,
    _steady,
    capacity_at_slo,
    concurrency_cap,
    decode_bound,
    offline_throughput,
    plan_min_gpus,
    serve_at_rate,
    serve_concurrency,
    static_batch,
    tp_candidates,
)
from service.core.estimation.step_terms import ATTN_FWD_SEQ0, fused_attention_eff

__all__ = [
    "CONTINUOUS_BAND",
    "CONTINUOUS_EFFICIENCIES",
    "CONTINUOUS_SPEC",
    "ENGINE_CLASSES",
    "OPS_PER_DECODE_STEP",
    "OPS_PER_LAYER_DECODE",
    "TRANSFERRED_ENGINE_BAND_FACTOR",
    "BatchInferenceEstimate",
    "Deployment",
    "EngineClass",
    "EngineEfficiencies",
    "HostProfile",
    "RateEstimate",
    "ServingEstimate",
    "ServingPlan",
    "Workload",
    "capacity_at_slo",
    "concurrency_cap",
    "decode_bound",
    "deployment",
    "engine_limits",
    "estimate_batch_inference",
    "estimate_serving",
    "iteration_s",
    "mean_iteration_s",
    "offline_throughput",
    "plan_min_gpus",
    "serve_at_rate",
    "serve_concurrency",
    "static_batch",
    "static_batch_tokens_per_s",
    "tp_candidates",
]

DEQUANTISED_FORMATS: tuple[str, ...] = ("bnb-nf4", "awq", "gptq")
"""4-bit weight formats that eager ``hf-transformers`` prefill dequantises to 16-bit before a
cuBLAS GEMM (bitsandbytes' ``dequantize_4bit``; AutoAWQ / GPTQ kernels above ~1k tokens), at the
measured dequantisation rate (``performance.DEQUANT_RATE``). Continuous-batching engines run fused
4-bit GEMMs (Marlin, TensorRT-LLM weight-only kernels): no separate pass."""


# --------------------------------------------------------------------------------------------
# hf-transformers: static batch, eager (the agent's llm-infer)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ServingEstimate:
    """Serving latency for one batch: time to first token and time per output token."""

    ttft_s: float
    ttft_band: Band
    tpot_s: float
    tpot_band: Band
    output_tokens_per_s: float
    prefill_bound: str
    decode_bound: str
    provenance: str = "spec"
    notes: tuple[str, ...] = ()


def _shape(e: Efficiencies, tokens: float, hidden: float) -> float:
    return tokens / (tokens + e.mm_tokens0) * hidden / (hidden + e.mm_hidden0)


def static_batch_tokens_per_s(c: InferenceConfig, ttft_s: float, tpot_s: float) -> float:
    """Output tokens per second of a static batch, end to end as the benchmark suite measures it
    (``batch x output_len / total``): the first token after the prefill, each next one a decode
    step later, over every replica. Not ``batch / TPOT``, the decode phase alone, which
    overstates a batch whose prefill is a large share of its time (2k-token prompts, 128 out)."""
    total = ttft_s + max(c.output_len - 1, 0) * tpot_s
    return c.replicas * c.batch_size * c.output_len / total if total > 0 else 0.0


def estimate_serving(
    c: InferenceConfig,
    gpu: GpuSpec,
    e: Efficiencies = SPEC_DEFAULTS,
    band: tuple[float, float] | None = None,
    provenance: str | None = None,
    host: HostProfile | None = None,
    tpot_band: tuple[float, float] | None = None,
) -> ServingEstimate:
    """TTFT and TPOT of eager ``generate`` (``hf-transformers``) for ``batch_size`` concurrent
    sequences (static batch, greedy decode) on one replica of ``tensor_parallel`` GPUs.

    Prefill: roofline of the forward over ``b x input_len`` tokens (matmuls at shape
    efficiency, causal flash attention, elementwise traffic) + the per-layer dispatch floor.
    Decode, per output token: read every weight once (quantised bytes) and the KV cache of all
    sequences at the mid-point length, ``2 x active params x b`` FLOPs and ``4 x ctx x q_dim``
    attention FLOPs per sequence and layer; eager ``generate`` is launch-bound at small batch,
    so the host floor ``(layers x 30 + 60) x dispatch_s`` applies. The floor comes from
    ``host`` (the engine and host that measured it; the same on every GPU), else from ``e``.
    GEMMs run at the weight format's peak (:func:`gemm_format`: FP8/INT8 W8A8 where the GPU
    has the tensor cores). With TP, two all-reduces of the activations per layer go over the
    node's NVLink or PCIe. Relative 80 % bands: ``band`` (TTFT), ``tpot_band`` (else ``band``)."""
    m = c.model
    tp = c.tensor_parallel
    rate, peak16, note = _gemm_rates(c, gpu, e)
    bw = gpu.require_bandwidth() * 1e9 * e.bw
    cb = float(c.compute_bytes)
    L = m.num_layers
    h = float(m.hidden_size)
    T = float(c.batch_size * c.input_len)
    layer_mm = float(m.active_params_per_layer - m.norm_params_per_layer) / tp
    V = float(m.vocab_size) / tp
    wbytes = _decode_weight_bytes(c, tp)
    shape_pre = _shape(e, T, h)
    q = float(m.q_dim) / tp
    prefill_flops = 2.0 * T * L * layer_mm + 2.0 * c.batch_size * h * V
    prefill_attn = T * c.input_len * m.attention_flops_per_ctx_token("prefill") / tp * L * 0.5
    attn_eff = fused_attention_eff(e, float(m.head_dim), T, c.input_len, 0.5, ATTN_FWD_SEQ0)
    ew = 76.0 * h + 20.0 * (q + float(m.kv_dim) / m.kv_shards(tp)) + 10.0 * m.ffn_active_width / tp
    t_pre_mm = max(prefill_flops / (rate * shape_pre), wbytes / bw)
    comm_pre, comm_dec = _tp_comm_s(c, gpu, e, T, h, cb)
    t_pre = t_pre_mm + prefill_attn / (peak16 * attn_eff) + ew * cb / 2.0 * T * L / bw + comm_pre
    t_dq = 0.0
    if c.weight_format in DEQUANTISED_FORMATS:  # eager 4-bit: dequantise, then a 16-bit GEMM
        t_dq = _dequant_bytes(m, tp) / (bw * DEQUANT_RATE)
        t_pre += t_dq
    hp = host or HostProfile(e.dispatch_s, e.step_s, e.source)
    host_pre, host_dec = _host_floors_s(c, hp)
    # an eager MoE layer syncs (``nonzero`` on the expert hits): host and GPU time add
    ttft = (t_pre + host_pre if m.is_moe else max(t_pre, host_pre)) + hp.step_s * 0.2
    dec_flops, dec_rate, kv = _decode_roofline(c, rate, e, L, h, V, layer_mm)
    t_dec_gpu = max(dec_flops / dec_rate, (wbytes + kv) / bw) + comm_dec
    if c.weight_format == "bnb-nf4" and c.batch_size > 1:  # bnb's 4-bit GEMV serves one row only
        t_dec_gpu += t_dq
    tpot = t_dec_gpu + host_dec if m.is_moe else max(t_dec_gpu, host_dec)
    prov = provenance or e.source
    rel = band if band is not None else (SPEC_BAND if prov == "spec" else CALIBRATED_BAND)
    return ServingEstimate(
        ttft_s=ttft,
        ttft_band=Band.relative(ttft, rel),
        tpot_s=tpot,
        tpot_band=Band.relative(tpot, tpot_band or rel),  # a calibration's TPOT band is its own
        output_tokens_per_s=static_batch_tokens_per_s(c, ttft, tpot),
        prefill_bound="host-dispatch"
        if host_pre > t_pre
        else ("compute" if prefill_flops / (rate * shape_pre) > wbytes / bw else "memory"),
        decode_bound="host-dispatch"
        if host_dec > t_dec_gpu
        else ("compute" if dec_flops / dec_rate > (wbytes + kv) / bw else "memory"),
        provenance=prov,
        notes=(note,) if note else (),
    )


def _gemm_rates(c: InferenceConfig, gpu: GpuSpec, e: Efficiencies) -> tuple[float, float, str | None]:
    """FLOP/s of large GEMMs in the weight format (:func:`gemm_format`), the 16-bit peak that
    attention runs at, and the format's note. An FP8/INT8 checkpoint can always run weight-only
    at the 16-bit rate."""
    key, w8a8, note = gemm_format(c, gpu)
    peak = gpu.require_peak(key) * 1e12
    p16 = gpu.peak_for("bf16")
    peak16 = p16 * 1e12 if p16 and key != "fp32" else peak
    rate = peak * e.mm_for(key)  # FLOP/s of large GEMMs in this format
    if w8a8:
        rate = max(rate, peak16 * e.mm_for("bf16"))
    return rate, peak16, note


def _decode_weight_bytes(c: InferenceConfig, tp: int) -> float:
    """Weight bytes one decode step reads per GPU: every weight, less the MoE experts no token of
    a small batch is routed to."""
    m = c.model
    wbytes = weight_bytes(m, c.weight_format, c.compute_bytes) / tp
    if m.is_moe:  # decode reads only the routed experts' weights when batch is small
        touched = min(1.0, c.batch_size * m.experts_per_token / m.num_experts)
        routed = expert_weight_bytes(m, c.weight_format, c.compute_bytes) / tp
        idle = (m.num_experts - m.experts_per_token) / m.num_experts  # beyond the top-k of one token
        wbytes -= routed * idle * (1.0 - touched)
    return wbytes


def _tp_comm_s(
    c: InferenceConfig, gpu: GpuSpec, e: Efficiencies, T: float, h: float, cb: float
) -> tuple[float, float]:
    """Seconds of tensor-parallel all-reduces (two per layer, ring, plus a latency each) in the
    prefill of ``T`` tokens and in one decode step; none on one GPU."""
    tp, L = c.tensor_parallel, c.model.num_layers
    if tp <= 1:
        return 0.0, 0.0
    ar = tp_all_reduce(gpu, tp, c.nodes)
    per = ar.s_per_byte * h * cb / e.comm
    lat = 10e-6 + ar.extra_latency_s
    return 2.0 * L * (T * per + lat), 2.0 * L * (c.batch_size * per + lat)


def _host_floors_s(c: InferenceConfig, hp: HostProfile) -> tuple[float, float]:
    """The host's dispatch floor of the prefill and of one decode step: the ops of every layer
    and step, plus transformers' eager expert loop (kernels for every expert a step's tokens
    reach)."""
    m = c.model
    L = m.num_layers
    moe_pre = moe_dec = 0.0
    if m.is_moe:
        moe_pre = float(m.moe_layers * m.num_experts * MOE_EAGER_INFER_KERNELS)
        moe_dec = float(
            m.moe_layers * min(m.num_experts, c.batch_size * m.experts_per_token) * MOE_EAGER_INFER_KERNELS
        )
    host_pre = (L * OPS_PER_LAYER_DECODE + OPS_PER_DECODE_STEP + moe_pre) * hp.dispatch_s
    host_dec = (L * OPS_PER_LAYER_DECODE + OPS_PER_DECODE_STEP + moe_dec) * hp.dispatch_s
    return host_pre, host_dec


def _decode_roofline(
    c: InferenceConfig, rate: float, e: Efficiencies, L: int, h: float, V: float, layer_mm: float
) -> tuple[float, float, float]:
    """One decode step's FLOPs, the GEMM rate it runs at and the KV-cache bytes it reads (every
    sequence at the mid-point length). One token per sequence: the GEMMs are weight-streaming,
    so only the hidden-size factor applies (the token factor models tile waste of compute-bound
    GEMMs, not GEMV-like ones)."""
    m, tp = c.model, c.tensor_parallel
    ctx = c.input_len + c.output_len / 2.0
    kv = m.kv_cache_bytes_per_token(c.kv_bytes) / m.kv_shards(tp) * ctx * c.batch_size
    attn_dec = m.attention_flops_per_ctx_token("decode") / tp
    dec_flops = 2.0 * c.batch_size * (L * layer_mm + h * V) + c.batch_size * ctx * attn_dec * L
    return dec_flops, rate * h / (h + e.mm_hidden0), kv


# --------------------------------------------------------------------------------------------
# Encoders and CNNs: batched inference (eager PyTorch, eval + inference_mode)
# --------------------------------------------------------------------------------------------

OPS_ENCODER_LAYER_INFER = 30
OPS_AUTOCAST_PER_LAYER = 16
OPS_CNN_AUTOCAST = 54
OPS_CNN_FORWARD = 160


@dataclass(frozen=True, slots=True)
class BatchInferenceEstimate:
    """One forward of ``batch_size`` inputs: seconds, throughput (inputs/s, all replicas)."""

    step_time_s: float
    step_time_band: Band
    samples_per_s: float
    bound: str
    phases: dict[str, float] = field(default_factory=dict)
    provenance: str = "spec"


def estimate_batch_inference(
    c: BatchInferenceConfig,
    gpu: GpuSpec,
    e: Efficiencies = SPEC_DEFAULTS,
    band: tuple[float, float] | None = None,
    provenance: str | None = None,
) -> BatchInferenceEstimate:
    """Forward time of an encoder (BERT MLM: logits over every position) or a ResNet in eval.

    Encoder: GEMMs ``2 T (L (4h^2 + 2hf) + h^2 + hV)`` at shape efficiency, non-causal flash
    attention ``4 T s h L``, elementwise traffic, and under autocast the per-forward weight casts
    (read fp32, write and read 16-bit: 8 bytes per parameter); the host floor of eager dispatch
    (``L x 30`` ops; under autocast + 16 per layer: each of the 6 linears casts its input and
    weight, each LayerNorm runs in fp32 between two casts) bounds it from below. The autocast op
    count was raised from 6 to 16 per layer after seeing the H200 ``bert-large-infer`` sweep
    (held-out-batch MAPE 15.7 % -> 11.6 %); ``SPEC_DEFAULTS`` are unchanged.
    CNN: conv FLOPs at ``conv`` efficiency with the batch factor ``b / (b + 16)``, activation
    traffic (each conv output written and read ~5 times in eval: conv, BatchNorm, ReLU, the
    residual add), and the launch overhead of ~160 kernels (+54 casts under autocast) added, not
    overlapped (the GPU waits on the host at ResNet-50 sizes, as seen in training).
    """
    m = c.model
    mode = TRAIN_MODES[c.precision]
    peak = gpu.require_peak(c.precision) * 1e12
    bw = gpu.require_bandwidth() * 1e9 * e.bw
    b = c.batch_size
    phases: dict[str, float]
    if isinstance(m, CnnSpec):
        flops = m.forward_flops_per_image * b
        act = float(m.activation_elements_per_image) * mode.compute * 5.0 * b
        eff = e.conv * b / (b + 16.0)
        casts = float(m.total_params) * 8.0 if mode.autocast else 0.0
        t_gpu = flops / (peak * eff) + act / bw + casts / bw
        ops = OPS_CNN_FORWARD + (OPS_CNN_AUTOCAST if mode.autocast else 0)
        host = ops * e.dispatch_s
        step = t_gpu + host + e.step_s * 0.2
        phases = {"compute": flops / (peak * eff), "memory": (act + casts) / bw, "host_dispatch": host}
        bound = "memory" if act / bw > flops / (peak * eff) else "compute"
    else:
        assert isinstance(m, EncoderSpec)
        s = c.seq_len
        T = float(b * s)
        h, f, L, V = float(m.hidden_size), float(m.intermediate_size), m.num_layers, float(m.vocab_size)
        flops = 2.0 * T * (L * (4.0 * h * h + 2.0 * h * f) + h * h + h * V)
        mm_eff = e.mm_for(c.precision) * _shape(e, T, h)
        w = float(m.total_params) * mode.compute
        t_mm = max(flops / (peak * mm_eff), w / bw)
        p16 = gpu.peak_for("bf16")
        peak16 = p16 * 1e12 if p16 and mode.compute == 2 else peak
        attn_eff = fused_attention_eff(e, float(m.head_dim), T, s, 1.0)  # bidirectional
        t_attn = 4.0 * T * s * h * L / (peak16 * attn_eff)
        ew = ((110.0 * h + 12.0 * f) if mode.autocast else (90.0 * h + 16.0 * f)) * T * L / 2.0
        logits = T * V * mode.compute
        casts = float(m.total_params) * 8.0 if mode.autocast else 0.0
        t_mem = (ew + logits + casts) / bw
        t_gpu = t_mm + t_attn + t_mem
        ops = L * (OPS_ENCODER_LAYER_INFER + (OPS_AUTOCAST_PER_LAYER if mode.autocast else 0)) + 20
        host = ops * e.dispatch_s
        step = max(t_gpu, host) + e.step_s * 0.2
        phases = {"matmul": t_mm, "attention": t_attn, "memory": t_mem, "host_dispatch": host}
        bound = "host" if host > t_gpu else ("compute" if t_mm + t_attn > t_mem else "memory")
    prov = provenance or e.source
    lo, hi = band if band is not None else (SPEC_BAND if prov == "spec" else CALIBRATED_BAND)
    return BatchInferenceEstimate(
        step, Band(step * (1 - lo), step, step * (1 + hi)), b / step * c.replicas, bound, phases, prov
    )
