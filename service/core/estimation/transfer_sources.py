"""Cross-GPU ratios by operator class, fitted and checked across published *sources* (issue 27).

:mod:`~service.core.estimation.transfer` is fitted on the single-GPU ResNet/BERT training tables
and checked leave-one-GPU-out inside them. Asked on other sources (other harnesses, stacks,
years: MLPerf, TensorRT-LLM, NeMo) that check says little. This module is the transfer the
way it is used: a GPU's speed on a workload relative to another's, from datasheet figures and
a few per-class and per-architecture constants fitted on *other* sources.

The model
---------
A step of workload class ``w`` on GPU ``g`` spends a share ``s_w`` (at the reference GPU's
ceilings) in work bounded by tensor throughput and the rest in work bounded by memory
bandwidth -- the step-time terms of :mod:`~service.core.estimation.step_terms` grouped by the
resource that bounds them (large GEMMs, convolutions and prefill attention: compute;
elementwise, normalisation, optimizer and decode weight/KV reads: bandwidth)::

    t_w(g) ~ s_w * P_ref / (P_f(g) * e^(c_a + d_af)) + (1 - s_w) * k_p * B_ref / (B(g) * e^(m_a))

* ``P_f(g)``: the dense datasheet peak of the precision that ran (precision handling per
  architecture, :func:`~.transfer_precision.effective_precision`: a row's own precision where the source states it;
  MLPerf Training recipes are not stated, so LLM training runs FP8 where the GPU has an FP8
  peak (Ada, Hopper, Blackwell, CDNA 3+) and 16-bit otherwise -- NVFP4 where the submitter's own
  configuration files for the system's layout leave no other recipe (``submitter-nvfp4``); FP32 on Volta/Turing and TF32 on
  Ampere+ where the source says so; 4-bit weights on FP4 tensor cores where the part has them,
  else weight-only at the 16-bit peak, as the serving estimator times them -- the H200's gpt-oss
  rows, held at its FP8 peak before, moved the pooled held-out error 12.6 % -> 12.4 %);
* ``B(g)``: datasheet memory bandwidth, its usable share where ECC is inline (GDDR data-centre
  cards: :func:`~.transfer_serving.data_bandwidth_gb_per_s`);
* ``k_p``: bytes the memory-bound kernels move per element against 16-bit storage (physics, not
  fitted: 2 for FP32/TF32 rows, whose activations are 4-byte; 1/2 for 8-bit); left out one source
  at a time it moved the pooled error 16.4 % -> 15.9 % (cnn-infer 35.0 -> 30.6 %);
* ``s_w = sigmoid(z_w)``: per workload class (:data:`CLASSES`), fitted;
* ``c_a``, ``d_af``, ``m_a``: how far architecture ``a``'s kernels get from its datasheet compute
  (overall, per precision family) and bandwidth, fitted with a ridge prior toward 0 (an
  architecture no source holds gets 0: the same fraction of its peaks as the average part).

Three more terms add to ``t_w``, each falling as its resource grows: a host cost per step where
the source fixes the batch (a per-class level over the batch, the same on every GPU); for
multi-GPU configurations, communication over the link (NVLink inside its domain, else PCIe);
and, where a training source states each GPU's own batch (the Lambda tables: the largest that
fit its memory), the **per-step parameter traffic** (:func:`_step`)::

    + e^(o_w) * k_p * B_ref / (B(g) * e^(m_a)) / batch(g)

Optimizer state, gradient unscaling and clipping and the backward pass's weight reads move
parameter-sized buffers once a step whatever the batch, at the bandwidth; per sample they fall
as 1 / batch, so a GPU whose memory held a batch of 2 (an 8 GB RTX 3070 on BERT-large) runs
slower per sample than its peaks say. ``o_w`` is fitted per class, in reference sample-times a
step: BERT 3.3, ResNet-50 1.0. Taking the H100 SXM (about the reference ceilings) at Lambda's
measured 3.3 ms per BERT-large sample and 0.38 ms per ResNet-50 image, that is ~100 bytes per
parameter a step for BERT-large and BERT-base alike and ~40 for ResNet-50 -- a few times the
optimizer's own state traffic (AdamW ~30 B, SGD with momentum ~16 B), the rest the other passes.
A term bound by compute instead, or a host term over the batch, fits worse. Left out one source at a
time it moved BERT training 16.1 % -> 11.5 % and the pooled error 13.7 % -> 12.6 % (12.3 % with
the all-reduce latency below).

LLM serving at maximum throughput where the model's shape and the lengths are known
(TensorRT-LLM Perf Overview rows; MLPerf Inference's LLM rows at their benchmark's mean length
and an assumed group, :func:`~.transfer_serving.benchmark_shape`) is timed from physics instead
of a class share
(:func:`serve_terms`): per output token, decode GEMMs and the prompt's prefill at the compute
ceiling; the weights read once per step for the batch that the memory left beside the weights
holds, and attention's read of the KV cache of the mean context, at the bandwidth. The GEMMs are
a roofline of their compute and weight reads (bound by one or the other); attention and prefill
are kernels of their own and add (:data:`PNORM`); tensor parallelism adds two
all-reduces per layer, their bytes over the link and their latency (``2 (tp - 1)`` ring steps
each, once per decode step) over the batch in flight. Memory capacity enters through the batch:
Llama-3-70B in FP8 on one H100 leaves ~5 GB of KV cache, on an H200 ~60 GB, and TensorRT-LLM
measured the H200 5.6-8.8x faster. Fitted for these points: one compute/memory tilt and one
all-reduce level (key ``llm-serve/roofline``), and one latency per ring step for every link
(about 2 us). Every term falls as its resource (peak, bandwidth, memory, link) grows and the
shares are bounded, so no fitted constant makes a faster or larger GPU slower.

Only ratios inform the fit (:mod:`.transfer_class_fit`): each configuration's level (its stack's
speed) is eliminated as the mean log residual of its group.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Final

from service.core.catalog.specs import GpuSpec
from service.core.estimation.transfer_accuracy import CLASSES, factor_key
from service.core.estimation.transfer_precision import baseline_precision, effective_precision
from service.core.estimation.transfer_serving import (
    ALLREDUCE_HOP_S,
    LOG_B_REF,
    LOG_P_REF,
    ServeTerms,
    _bytes_scale,
    _precision_class,
    benchmark_shape,
    data_bandwidth_gb_per_s,
    link_gb_per_s,
    serve_terms,
)
from service.core.evidence.published import LOWER_IS_BETTER, WORK_RATES, PublishedRow, PublishedTable

__all__ = [
    "CLASSES",
    "RIDGE",
    "WORK_RATES",
    "ClassModel",
    "ServeTerms",
    "SourcePoint",
    "data_bandwidth_gb_per_s",
    "effective_precision",
    "fit_classes",
    "link_gb_per_s",
    "measured_points",
    "points_from",
    "serve_terms",
    "workload_class",
]


_BY_MODEL: Final[dict[str, str]] = {
    "resnet": "cnn",
    "ssd": "detection",
    "retinanet": "detection",
    "bert": "bert",
    "gpt3": "llm",
    "llama": "llm",
    "mixtral": "llm",
    "deepseek": "llm",
    "gpt-oss": "llm",
    "qwen": "llm",  # Qwen3-VL: a mixture-of-experts decoder behind a vision encoder
    "wan": "diffusion",  # Wan 2.2: a diffusion transformer (text to video)
    "stable": "diffusion",
    "flux": "diffusion",
    "dlrm": "recsys",
    "gnn": "gnn",
    "rgat": "gnn",
    "unet": "unet3d",
    "3d-unet": "unet3d",
    "whisper": "speech",
}


def workload_class(r: PublishedRow) -> str | None:
    """The operator class mix a row's workload belongs to (None: not one the model covers)."""
    w, m = r.workload, r.model.removeprefix("mlperf/")
    if w in ("resnet50-train",):
        return "cnn-train"
    if w == "resnet50-infer":
        return "cnn-infer"
    if w.startswith("bert-"):
        return "bert-train"
    if w == "llm-pretrain":
        return "llm-train"
    if w.startswith("llm-serve"):
        if r.metric == "ttft_ms":
            return "llm-prefill"
        if r.metric not in ("output_tokens_per_s", "output_tokens_per_s_per_gpu"):
            return None
        return "llm-online" if w == "llm-serve-online" else "llm-serve"
    if not w.startswith("mlperf-"):
        return None
    train = w.startswith("mlperf-train-")
    for prefix, base in sorted(_BY_MODEL.items(), key=lambda kv: -len(kv[0])):
        if m.startswith(prefix):
            if base in ("cnn", "bert", "llm"):
                return f"{base}-{'train' if train else ('infer' if base == 'cnn' else 'serve')}"
            return base
    return None


def arch_of(gpu: GpuSpec) -> str:
    cc = gpu.compute_capability
    return "sm" + cc.replace(".", "") if cc else gpu.family


@dataclass(frozen=True, slots=True)
class SourcePoint:
    """One GPU in one configuration of one source: its per-GPU throughput (median over the
    source's systems with that GPU), and the figures the model and the baseline use."""

    source: str
    group: tuple[object, ...]
    slug: str
    arch: str
    cls: str
    precision_class: str
    peak_family: str  # the peak key the model uses
    log_peak: float
    log_bandwidth: float
    log_baseline: float  # log of the datasheet baseline's speed (geometric mean of peak and bandwidth)
    log_throughput: float
    n_rows: int = 1
    batch: int | None = None  # the step's batch where the source fixes it (host cost per sample ~ 1/batch)
    log_link: float | None = None  # log GB/s of the link a multi-GPU configuration talks over (None: one GPU)
    serve: ServeTerms | None = None
    """LLM serving at maximum throughput timed from the model's shape (:func:`serve_terms`; None:
    the class share)."""
    step_batch: int | None = None
    """A training row's stated per-GPU batch where each GPU chose its own (memory-limited): the
    per-step parameter traffic per sample falls as 1 / batch (:func:`_step`)."""
    stack: str = "infer"
    """The kind of software stack that ran it: ``train`` (a training framework's kernels) or
    ``infer`` (an inference engine's); the compute factor is per kind (:data:`STACK_KINDS`)."""

    @property
    def family_key(self) -> str:
        """The key of the point's per-architecture compute factor: its peak family, per stack
        kind (``fp8``, ``fp8/train``)."""
        return factor_key(self.peak_family, self.stack)

    @property
    def key(self) -> str:
        """The class whose share, host and link terms the point uses: a serving configuration
        timed from its shape has its own (its compute/memory split comes from physics), and BERT
        training one per precision class (:data:`SPLIT_BY_PRECISION`)."""
        if self.serve is not None:
            return f"{self.cls}{ROOFLINE}"
        if self.cls in SPLIT_BY_PRECISION:
            return f"{self.cls}|{self.precision_class}"
        return self.cls

    @property
    def share_key(self) -> str:
        """The class whose compute-bound share the point uses (:data:`SHARED_SHARE`)."""
        return SHARED_SHARE.get(self.key, self.key)


def sustained_clock(gpu: GpuSpec) -> float:
    """Fraction of the boost clock a part sustains under a saturating tensor load, from its board
    power against its dense 16-bit peak (``transfer.clock_factor``: P ~ f^3 near the top of the
    DVFS curve, 1 W per TFLOP/s at full clock; fixed physics, not fitted)."""
    from service.core.estimation.transfer import EPS0_W_PER_TFLOP, clock_factor

    return clock_factor(gpu, EPS0_W_PER_TFLOP)


def _ranks(t: PublishedTable, r: PublishedRow) -> int:
    """GPUs that exchange data every step: the whole system for training, the model-parallel
    group for serving (replicas do not talk)."""
    return r.gpu_count if t.kind == "training" else r.tp * r.pp


def _per_gpu_throughput(r: PublishedRow) -> float:
    v = r.value / max(1, r.gpu_count) if not r.metric.endswith("per_gpu") else r.value
    if r.metric in LOWER_IS_BETTER:  # time-like: per-GPU work rate is 1 / (time x GPUs)
        return 1.0 / (r.value * max(1, r.gpu_count))
    return v


def stack_of(r: PublishedRow) -> str:
    """Within a source that states the stack per row (MLPerf): the vendors' own optimised stacks
    (NGC, ROCm, Gaudi software) are compared with each other -- the question "what would this
    other part do" -- while a general-purpose compiler stack (tinygrad) is a different stack whose
    ratios to the vendors' say nothing about the GPUs. A source that runs every GPU under several
    engines (InferenceX: TensorRT-LLM, SGLang, ATOM) compares one engine across GPUs: the
    ``system``'s first word."""
    if "tinygrad" in r.system.lower():
        return "tinygrad"
    return r.system.split(" ", 1)[0] if r.workload == "llm-serve-online" else ""


_FIXED_BATCH: Final = frozenset({"resnet50-infer", "llm-serve-static-batch"})
"""Workloads whose sources sweep the batch (the same batch on every GPU): the batch is part of
the configuration. Elsewhere each GPU's batch is its own choice (memory-limited)."""


def _step_batch(t: PublishedTable, r: PublishedRow) -> int | None:
    """The per-GPU batch of a single-GPU training row whose source lets each GPU pick its own."""
    if t.kind != "training" or r.workload in _FIXED_BATCH or r.gpu_count != 1:
        return None
    return r.batch_size or None


def _group_key(t: PublishedTable, r: PublishedRow, cls: str) -> tuple[object, ...]:
    count = r.gpu_count if t.kind == "training" else None  # serving: per-GPU throughput
    return (
        r.batch_size if r.workload in _FIXED_BATCH else None,
        t.id,
        stack_of(r),
        cls,
        r.workload,
        r.model,
        _precision_class(r.precision),
        r.metric,
        r.seq_len,
        r.input_len,
        r.output_len,
        r.tp,
        count,
        r.request_rate,
        r.concurrency,
    )


ROOFLINE: Final = "/roofline"
SERVING: Final = frozenset({"llm-serve", "llm-online"})
"""Classes timed from the model's shape where it is known (:func:`serve_terms`): serving at
maximum throughput, and at a fixed client concurrency (a regime of its own: the batch is the
concurrency, and what a step costs beyond bytes and FLOPs weighs more)."""
ENGINE_BOUND: Final = frozenset({"llm-online"})
"""Classes whose points inform only their own class terms, not the architecture factors or the
all-reduce latency every class shares: decode at a concurrency of 4-256 clients is bound by what
each engine spends per step (launches, MoE routing, its all-reduce kernels) on each platform --
InferenceX measures the MI355X 1.9-2.7x faster than the MI300X in one engine (SGLang, FP8, TP8),
2.4-2.7x at 4-8 clients, where the step is bound by memory and latency and their bandwidths differ
1.5x -- so such points would carry one engine's maturity on one platform into
every other class on that architecture (left in, they move leave-one-source-out LLM training
16.7 % -> 18.9 %; the pooled figure is 14.84 % with them, 14.78 % without: a choice made on
those figures)."""
STACK_KINDS: Final = ("infer", "train")
"""An architecture's compute factor is fitted per (precision family, stack kind): a training row
runs a training framework's kernels (PyTorch / Megatron / Transformer Engine, cuDNN training
convolutions), an inference row an engine's (TensorRT-LLM, vLLM, SGLang, TensorRT), and one
architecture's two stacks do not share an efficiency any more than its precisions do
(:data:`~.transfer_class_fit.RIDGE` pulls each toward the average part). Shared, CDNA 4's FP8
carried MLPerf Inference's x1.22 into MLPerf Training, where the MI350X / MI355X run 0.22-0.34
(log) slower against the B200 than that. Left out one source at a time (fitted on the other
sources, a choice made on these figures): pooled 14.2 % -> 13.3 %, InferenceX 39.7 -> 30.1 %
(split, MLPerf Inference's CDNA 3 rows alone set its bandwidth factor, 0.86 -> 0.65, which
predicts SGLang's MI300X and MI325X), MLPerf Training v5.1 18.3 -> 15.7 %, LLM training 16.6 ->
15.2 %; worse: MLPerf Training v5.0 12.6 -> 13.8 %, NeMo 12.7 -> 15.8 % (8 pairs), MLPerf Inference
v6.0 / v6.1 +0.3 / +0.6 points. A training table's inference rows (DeepLearningExamples'
ResNet-50 inference) are ``infer``."""
TRAINING_TABLE_INFERENCE: Final = frozenset({"cnn-infer"})
"""Classes a training table may carry that an inference stack ran."""
SHARED_SHARE: Final[dict[str, str]] = {"cnn-infer": "cnn-train"}
"""Classes that run another's kernels share its compute-bound share (host and link terms stay per
class): CNN inference is training's forward pass, and the H200 probe measures nearly one share for
both (0.20-0.22, 0.25-0.27); else DeepLearningExamples, the one CNN inference source, left out
leaves that share at its prior."""
SPLIT_BY_PRECISION: Final = frozenset({"bert-train"})
"""Classes with a compute-bound share per precision class: one share cannot serve 16-bit and
FP32-storage BERT (measured on the H200, ``data/probes/h200-operator-shares-2026-12-04.jsonl``,
BERT-large's GEMM share of kernel time is 0.51 in bf16 and 0.81 in TF32). The fit finds that
order, lower (all sources: 0.16 for 16-bit, 0.22 for FP32/TF32, 0.51 for MLPerf's tuned
stacks; before the per-step term, 0.22 and 0.15: small batches' traffic read as bandwidth-bound
work). Left out one
source at a time, the split moves BERT from 17.4 % to 16.7 % (baseline 17.3 %), pooled unchanged
(16.6 %); splitting CNN training and inference as well costs cnn-infer 11 points (pooled 17.2 %),
so only BERT is split -- a choice made on the leave-one-source-out figures."""


def points_from(
    tables: Iterable[PublishedTable], figures: Mapping[str, GpuSpec], named: Mapping[str, str] | None = None
) -> list[SourcePoint]:
    """One point per (source, configuration, GPU) over every cross-GPU table, for GPUs with
    sourced figures (``figures`` by slug; ``named`` maps a table's GPU name to an id in
    ``figures`` for rows without a catalog slug). An MLPerf Training system counts by its runs'
    work rate where they log one (:data:`~service.core.evidence.published.WORK_RATES`), not by
    its time to train: DLRM on one NVL72's 64 GB200s converged at a global batch of 135,168, which
    no GPU figure predicts."""
    acc: dict[tuple[object, ...], list[float]] = {}
    meta: dict[tuple[object, ...], SourcePoint] = {}
    for t in tables:
        if not t.cross_gpu:
            continue
        rated = {(r.system, r.workload) for r in t.rows if r.metric in WORK_RATES}
        for r in t.rows:
            if r.metric in LOWER_IS_BETTER and (r.system, r.workload) in rated:
                continue  # its runs' work rate stands in for it: speed, not speed and convergence
            cls = workload_class(r)
            gid = r.slug or (named or {}).get(r.gpu_name)
            gpu = figures.get(gid) if gid else None
            if cls is None or gpu is None or not gpu.bandwidth_gb_per_s or r.value <= 0:
                continue
            pf, bf = effective_precision(r, cls, gpu), baseline_precision(r, gpu)
            peak, bpeak = gpu.peak_for(pf), gpu.peak_for(bf)
            if not peak or not bpeak:
                continue
            peak *= sustained_clock(gpu)
            served = benchmark_shape(r, gpu) if cls in SERVING else r  # grouped as stated
            n = _ranks(t, served)
            link = link_gb_per_s(gpu, n, "nvlink" in r.system.lower()) if n > 1 else None
            if n > 1 and not link:
                continue
            key = (*_group_key(t, r, cls), gpu.slug, pf)  # rows of one recipe make one point
            serve = serve_terms(served, gpu, n, link) if cls in SERVING else None
            trained = t.kind == "training" and cls not in TRAINING_TABLE_INFERENCE
            acc.setdefault(key, []).append(math.log(_per_gpu_throughput(r)))
            meta[key] = SourcePoint(
                t.id,
                key[:-2],
                gpu.slug,
                arch_of(gpu),
                cls,
                _precision_class(r.precision),
                pf,
                math.log(peak),
                math.log(data_bandwidth_gb_per_s(gpu) or gpu.bandwidth_gb_per_s),
                0.5 * (math.log(bpeak) + math.log(gpu.bandwidth_gb_per_s)),
                0.0,
                batch=r.batch_size if r.workload in _FIXED_BATCH else None,
                log_link=math.log(link) if link else None,
                serve=serve,
                step_batch=_step_batch(t, r),
                stack="train" if trained else "infer",
            )
    out = []
    for key, logs in acc.items():
        m = meta[key]
        s = sorted(logs)
        med = s[len(s) // 2] if len(s) % 2 else 0.5 * (s[len(s) // 2 - 1] + s[len(s) // 2])
        out.append(replace(m, log_throughput=med, n_rows=len(logs)))  # the median of its systems
    # keep configurations that hold at least two GPUs: only they inform ratios
    gpus: dict[tuple[object, ...], set[str]] = {}
    for p in out:
        gpus.setdefault(p.group, set()).add(p.slug)
    return [p for p in out if len(gpus[p.group]) >= 2]


def measured_peak_key(precision: str) -> str:
    """The peak key of a precision as the agent names it (``amp_bf16`` runs bf16 tensor cores)."""
    return {"amp_bf16": "bf16", "amp_fp16": "fp16"}.get(precision, precision)


def measured_points(
    source: str, gpu: GpuSpec, cls: str, precision: str, by_batch: Mapping[int, float]
) -> list[SourcePoint]:
    """One GPU's own batch sweep (samples/s by batch, e.g. the agent's ResNet-50 inference runs on
    the H200) as points of one group: no GPU pairs, but the shape of throughput against batch
    tells the fit how large the per-step host cost is against the GPU's work (the host term)."""
    peak_key = measured_peak_key(precision)
    peak = gpu.peak_for(peak_key)
    bw = data_bandwidth_gb_per_s(gpu)
    if not peak or not bw or not gpu.bandwidth_gb_per_s:
        return []
    lb = math.log(bw)
    group: tuple[object, ...] = (source, "", cls, precision)
    return [
        SourcePoint(
            source,
            group,
            gpu.slug,
            arch_of(gpu),
            cls,
            _precision_class(precision),
            peak_key,
            math.log(peak),
            lb,
            0.5 * (math.log(peak) + math.log(gpu.bandwidth_gb_per_s)),
            math.log(v),
            1,
            b,
            None,
        )
        for b, v in sorted(by_batch.items())
        if v > 0 and b > 0
    ]


# --------------------------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------------------------

SHARE_PRIOR: Final[dict[str, float]] = {
    # compute-bound share at the reference ceilings before any fit, from arithmetic intensity
    # (FLOPs per byte moved) against the reference machine balance (1000 TFLOP/s / 3 TB/s ~ 330):
    "llm-prefill": 0.9,  # thousands of tokens per weight read: intensity ~ prompt length
    "llm-train": 0.9,  # the same GEMMs, forward and backward, at thousands of tokens per step
    "detection": 0.8,  # large-image convolutions
    "diffusion": 0.8,  # UNet / DiT convolutions and attention at high resolution
    "unet3d": 0.8,  # 3D convolutions on large volumes
    "llm-serve": 0.2,  # decode: every weight and the KV cache read per generated token
    "llm-online": 0.2,  # the same decode at the batch the clients allow
    "recsys": 0.3,  # embedding gathers dominate, MLPs small
    "gnn": 0.3,  # neighbour gathers
    # CNN and BERT: measured on the H200 (data/probes/h200-operator-shares-2026-12-04.jsonl, eager
    # PyTorch bf16, GEMM/convolution kernel time against the rest, the memory-bound part scaled
    # from 4.8 to the reference 3 TB/s): ResNet-50 training 0.20-0.22, inference 0.25-0.27,
    # BERT-large 0.39 (the assumed 0.3 / 0.3 / 0.4 before; the CNN priors moved leave-one-source-out
    # cnn-infer 38.4 % -> 35.0 %, pooled 16.6 % -> 16.4 %)
    "cnn-train": 0.2,  # batch-norm, activations and optimizer traffic around cuDNN convolutions
    "cnn-infer": 0.25,
    "bert-train": 0.4,  # seq 384-512 GEMMs, but layer norms, softmax and optimizer traffic
    "speech": 0.5,  # encoder (compute) + autoregressive decoder (bandwidth)
}
"""Only a class no fit point holds uses its prior alone (a source with a class of its own, left out);
elsewhere the prior is a weak pull (``RIDGE["z"]``)."""


def _logit(x: float) -> float:
    return math.log(x / (1.0 - x))


LOG_L_REF: Final = math.log(450.0)  # GB/s per direction: its NVLink
HOST0: Final = math.log(0.01)
"""Prior of the host term (log of its time per sample at batch 1, in units of the reference GPU's
compute-bound time): small, so a class without fixed-batch rows keeps none."""
PNORM: Final = 4.0
"""Decode GEMMs' roofline: the smooth maximum ``(compute^k + weights^k)^(1/k)`` of their compute
and weight-read time (a GEMM is bound by one or the other, never their sum; k = 2 and 8 move LLM
serving by under 0.2 point). Attention's KV read and the prefill are kernels of their own and
add: with the KV read inside the maximum, a large batch's compute-bound GEMMs hid it (leave one
source out, LLM serving 12.6 % -> 12.1 %, pooled 12.3 % -> 12.2 %)."""


def _prior(key: str) -> float:
    """The share prior of a parameter key: the class's (:data:`SHARE_PRIOR`); even for a serving
    configuration timed from its shape, whose split is physics already."""
    if key.endswith(ROOFLINE):
        return 0.5
    return SHARE_PRIOR.get(key.split("|")[0], 0.5)


def _core(p: SourcePoint, s: float, cf: float, mf: float) -> tuple[float, float, float]:
    """Compute- plus memory-bound time of ``p`` at share ``s``, compute and memory factors ``cf``,
    ``mf`` (reference ceiling over the GPU's, after efficiency), and the parts of it that scale
    with ``cf`` and with ``mf`` (its derivatives in log ``cf`` and log ``mf``)."""
    if p.serve is None:
        a, b = s * cf, (1.0 - s) * mf * _bytes_scale(p.precision_class)
        return a + b, a, b
    t = p.serve
    dc, mw, pc, kv = s * cf * t.decode, (1.0 - s) * mf * t.weights, s * cf * t.prefill, (1.0 - s) * mf * t.kv
    roof = (dc**PNORM + mw**PNORM) ** (1.0 / PNORM)
    return roof + pc + kv, dc * (dc / roof) ** (PNORM - 1.0) + pc, mw * (mw / roof) ** (PNORM - 1.0) + kv


def _link(p: SourcePoint, q: float) -> float:
    """Communication time: all-reduce bytes of its shape over the link for a serving point timed
    from its shape, else a per-class level over the link's bandwidth."""
    if p.serve is not None:
        return math.exp(q - HOST0) * p.serve.comm
    return math.exp(q + LOG_L_REF - p.log_link) if p.log_link is not None else 0.0


def _host(p: SourcePoint, level: float) -> float:
    """Host time per sample: a per-class level over the batch where the source fixes it."""
    return math.exp(level) / p.batch if p.batch else 0.0


def _hops(p: SourcePoint, level: float) -> float:
    """All-reduce latency of a serving point timed from its shape: its ring steps per token
    (:func:`~.transfer_serving.serve_terms`) at the fitted latency per step."""
    return math.exp(level) * p.serve.hops if p.serve is not None else 0.0


def _step(p: SourcePoint, level: float, mf: float) -> float:
    """Per-step parameter traffic per sample of a training row with a stated per-GPU batch: a
    per-class level, bound by bandwidth (``mf``: the reference ceiling over the GPU's, as in
    :func:`_core`) at the row's bytes per element, paid once per step and so shared by the batch
    (module docstring)."""
    if not p.step_batch:
        return 0.0
    return math.exp(level) * mf * _bytes_scale(p.precision_class) / p.step_batch


@dataclass(frozen=True, slots=True)
class Levels:
    """Log levels of a point's fitted terms (:func:`parts`): named, so that no two can trade
    places unnoticed."""

    host: float
    link: float
    hop: float
    step: float


@dataclass(frozen=True, slots=True)
class Parts:
    """One point's time per unit of work by term, at given constants (reference units)."""

    core: float  # compute- plus memory-bound
    compute: float  # the part of ``core`` that scales with the compute ceiling
    memory: float  # the part of ``core`` that scales with the bandwidth
    host: float
    link: float
    hops: float
    step: float

    @property
    def total(self) -> float:
        return self.core + self.host + self.link + self.hops + self.step


def parts(p: SourcePoint, s: float, c: float, m: float, levels: Levels) -> Parts:
    """The terms of ``p`` at compute share ``s``, log compute and bandwidth factors ``c`` and
    ``m`` and the log levels of its host, link, all-reduce latency and per-step terms."""
    mf = math.exp(LOG_B_REF - p.log_bandwidth - m)
    core, a, b = _core(p, s, math.exp(LOG_P_REF - p.log_peak - c), mf)
    return Parts(
        core,
        a,
        b,
        _host(p, levels.host),
        _link(p, levels.link),
        _hops(p, levels.hop),
        _step(p, levels.step, mf),
    )


@dataclass(frozen=True, slots=True)
class ClassModel:
    """Fitted constants and what they were fitted on."""

    share: Mapping[str, float]  # class -> s_w (compute-bound share at the reference ceilings)
    compute: Mapping[str, float]  # arch -> c_a
    compute_family: Mapping[tuple[str, str], float]  # (arch, peak family per stack kind) -> d_af
    memory: Mapping[str, float]  # arch -> m_a
    sources: tuple[str, ...]
    n_points: int
    rms_log_error: float = 0.0
    gpus: tuple[str, ...] = field(default=())
    host: Mapping[str, float] = field(default_factory=dict)  # class -> log host time per step
    link: Mapping[str, float] = field(default_factory=dict)  # class -> log communication time
    step: Mapping[str, float] = field(default_factory=dict)  # class -> log per-step traffic level
    hop: float = 0.0  # log all-reduce latency per ring step over ALLREDUCE_HOP_S

    @property
    def hop_s(self) -> float:
        """The fitted latency of one all-reduce ring step, seconds."""
        return ALLREDUCE_HOP_S * math.exp(self.hop)

    def log_speed(self, p: SourcePoint) -> float:
        """Log per-GPU speed of ``p``'s GPU on its workload, up to the configuration's level."""
        s = self.share.get(p.share_key, _prior(p.share_key))
        c = self.compute.get(p.arch, 0.0) + self.compute_family.get((p.arch, p.family_key), 0.0)
        levels = Levels(
            host=self.host.get(p.key, HOST0),
            link=self.link.get(p.key, HOST0),
            hop=self.hop,
            step=self.step.get(p.cls, 0.0),
        )
        return -math.log(parts(p, s, c, self.memory.get(p.arch, 0.0), levels).total)

    def log_ratio(self, a: SourcePoint, b: SourcePoint) -> float:
        """Predicted log(speed of b / speed of a) in a configuration both ran."""
        return self.log_speed(b) - self.log_speed(a)


# the fit builds on the names above
from service.core.estimation.transfer_class_fit import RIDGE, fit_classes  # noqa: E402
