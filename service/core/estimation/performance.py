"""Step time, throughput and time to train: a roofline per operation group (serving lives in
:mod:`service.core.estimation.serving`).

Every phase of a step is split into groups of kernels that share a bound:

* **matmuls** (linear layers, LM head): ``FLOPs / (peak x e_mm x shape)`` or, when the
  weights dominate (decode, tiny batches), ``bytes / (bandwidth x e_bw)``; ``shape`` is
  ``T/(T + T0) * h/(h + h0)`` -- GEMMs with few rows (tokens ``T``) or a narrow hidden size
  ``h`` reach less of the peak;
* **attention** (SDPA's fused kernels): ``FLOPs / (peak x e_attn)``, causal rows nearer the
  kernel's ceiling the longer they are (``step_terms.ATTN_SEQ0``); eager attention adds the
  ``s^2`` score/softmax tensors as memory traffic;
* **elementwise** (norms, RoPE, casts, residual adds, SiLU, loss, optimizer): bytes moved
  ``/ (bandwidth x e_bw)``;
* **host dispatch**: PyTorch eager launches every op from Python; ``ops x t_dispatch`` is a
  floor under the GPU time (small models are launch-bound).

A step takes ``max(sum of GPU group times, dispatch time) + t_step`` plus the communication
that does not overlap with compute. Communication uses the node shape: NVLink per-direction
bandwidth inside an NVLink domain, otherwise PCIe, and the network between nodes.

FLOP conventions: a matmul of ``M x K`` by ``K x N`` is ``2MKN``; backward of a trainable
linear is twice its forward (input and weight gradients), of a frozen one once (input
gradient only); causal flash attention skips the upper triangle (``2 * 2 * s * d`` per query
token, halved), its backward is 2.5x its forward (it recomputes ``QK^T``); gradient
checkpointing adds one more forward.

The efficiencies live in :class:`Efficiencies`. :data:`SPEC_DEFAULTS` are the figures used
with datasheet peaks alone (provenance ``spec``); they were committed before any fitting and
are never edited to fit data -- calibration (``core/estimation/calibration.py``) produces new
:class:`Efficiencies` instead.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from service.core.catalog.models import CnnSpec
from service.core.catalog.precision import TRAIN_MODES as _MODES
from service.core.catalog.specs import GpuSpec
from service.core.estimation.band import Band
from service.core.estimation.efficiencies import H200_SXM, SPEC_DEFAULTS, Efficiencies, StepEstimate
from service.core.estimation.memory import NETWORK_GBIT_PER_S_PER_GPU, TrainConfig
from service.core.estimation.network import (
    PCIE_ASSUMED_PER_DIRECTION_GB_PER_S,
    Layout,
    collective_s,
    exposed_s,
    layout_of,
)
from service.core.estimation.step_model import TIME_TERMS, _bound, _step
from service.core.estimation.step_terms import (
    DEQUANT_BYTES_PER_PARAM,
    DEQUANT_HALF_PARAMS,
    DEQUANT_RATE,
    H200_BANDWIDTH_GB_PER_S,
    HOST_CHECKPOINT_WRAPPER,
    HOST_COST_FORWARD,
    HOST_COST_RECOMPUTE,
    HOST_DISPATCH_MEASURED_S,
    MOE_EAGER_GPU_S_PER_KERNEL,
    MOE_EAGER_HOST_UNITS,
    MOE_EAGER_INFER_KERNELS,
    MOE_EAGER_KERNELS_BWD,
    MOE_EAGER_KERNELS_FWD,
    NF4_PASS_BYTES_PER_PARAM,
    OPS_ENCODER_LAYER_BWD,
    OPS_ENCODER_LAYER_FWD,
    OPS_HEAD,
    OPS_HEAD_BWD,
    OPS_PER_FSDP_UNIT,
    OPS_PER_LAYER_BWD,
    OPS_PER_LAYER_FWD,
    OPT_ACCESSES,
    OPT_KERNELS_PER_TENSOR_FORLOOP,
    _dequant_bytes,
)

__all__ = [
    "CALIBRATED_BAND",
    "DEQUANT_BYTES_PER_PARAM",
    "DEQUANT_HALF_PARAMS",
    "DEQUANT_RATE",
    "H200_BANDWIDTH_GB_PER_S",
    "H200_SXM",
    "HOST_CHECKPOINT_WRAPPER",
    "HOST_COST_FORWARD",
    "HOST_COST_RECOMPUTE",
    "HOST_DISPATCH_MEASURED_S",
    "MOE_EAGER_GPU_S_PER_KERNEL",
    "MOE_EAGER_HOST_UNITS",
    "MOE_EAGER_INFER_KERNELS",
    "MOE_EAGER_KERNELS_BWD",
    "MOE_EAGER_KERNELS_FWD",
    "NETWORK_GBIT_PER_S_PER_GPU",
    "NF4_PASS_BYTES_PER_PARAM",
    "OPS_ENCODER_LAYER_BWD",
    "OPS_ENCODER_LAYER_FWD",
    "OPS_HEAD",
    "OPS_HEAD_BWD",
    "OPS_PER_FSDP_UNIT",
    "OPS_PER_LAYER_BWD",
    "OPS_PER_LAYER_FWD",
    "OPT_ACCESSES",
    "OPT_KERNELS_PER_TENSOR_FORLOOP",
    "PCIE_ASSUMED_PER_DIRECTION_GB_PER_S",
    "SPEC_BAND",
    "SPEC_DEFAULTS",
    "TIME_TERMS",
    "Efficiencies",
    "StepEstimate",
    "StepSummary",
    "_dequant_bytes",
    "estimate_step",
    "step_summary",
    "time_to_train",
]


class StepSummary(NamedTuple):
    """What an answer reads of a step (:func:`step_summary`): the :class:`StepEstimate` fields of
    the same names, without the phase breakdown, model FLOPs and assumptions."""

    step_time_s: float
    step_time_band: Band
    accumulation_steps: int
    tokens_per_s: float
    samples_per_s: float
    mfu: float
    bound: str
    shares: tuple[float, float, float, float, float]
    """Fractions of the step: :data:`TIME_TERMS`, then the pipeline bubble."""
    layout: Layout | None


HOST_BAND = (0.25, 0.30)
"""Relative band of the host's share of a step: the host time per kernel varied by about
+/-30 % between repeats of the same kernel count on the H200 host (issue-25 probe), and hosts
differ more than that; a launch-bound answer's band is at least this times its host share."""


def _band(
    step: float,
    e: Efficiencies,
    band: tuple[float, float] | None,
    provenance: str | None,
    host_share: float = 0.0,
) -> tuple[Band, str]:
    prov = provenance or e.source
    lo, hi = band if band is not None else (SPEC_BAND if prov == "spec" else CALIBRATED_BAND)
    if host_share > 0.0:
        lo = max(lo, HOST_BAND[0] * host_share)
        hi = max(hi, HOST_BAND[1] * host_share)
    return Band(step * (1 - lo), step, step * (1 + hi)), prov


def estimate_step(
    c: TrainConfig,
    gpu: GpuSpec,
    e: Efficiencies = SPEC_DEFAULTS,
    band: tuple[float, float] | None = None,
    provenance: str | None = None,
) -> StepEstimate:
    """Time of one optimizer step (``accumulation_steps`` micro-steps + optimizer + the
    communication left exposed) per GPU, with the model FLOPs and MFU.

    ``band`` is the relative (low, high) 80 % band; by default the spec band
    (:data:`SPEC_BAND`) or, for fitted efficiencies, :data:`CALIBRATED_BAND`.
    """
    m = c.model
    if isinstance(m, CnnSpec):
        return _cnn_step(c, m, gpu, e, band, provenance)
    r = _step(c, gpu, e)
    step_band, prov = _band(r.step, e, band, provenance, r.shares[3])
    return StepEstimate(
        step_time_s=r.step,
        step_time_band=step_band,
        micro_step_time_s=r.micro,
        accumulation_steps=r.accum,
        tokens_per_s=r.tokens / r.step,
        samples_per_s=r.samples / r.step,
        model_flops_per_step=r.model_flops,
        mfu=r.mfu,
        phases={
            "forward": r.gpu_fwd,
            "backward": r.gpu_bwd,
            "weight_casts": r.casts,
            "optimizer": r.optimizer,
            "host_dispatch": r.host,
            "communication": r.communication,
        },
        communication_s=r.communication,
        bound=r.bound,
        provenance=prov,
        assumptions=tuple(r.notes),
        time_shares=time_shares(r.shares),
    )


def step_summary(
    c: TrainConfig,
    gpu: GpuSpec,
    e: Efficiencies = SPEC_DEFAULTS,
    band: tuple[float, float] | None = None,
    provenance: str | None = None,
) -> StepSummary:
    """:func:`estimate_step`'s step time, band, throughput, MFU and bound alone (the same
    figures): what an estimate answers, without building the phase breakdown it does not show."""
    m = c.model
    if isinstance(m, CnnSpec):
        st = _cnn_step(c, m, gpu, e, band, provenance)
        return StepSummary(
            step_time_s=st.step_time_s,
            step_time_band=st.step_time_band,
            accumulation_steps=st.accumulation_steps,
            tokens_per_s=st.tokens_per_s,
            samples_per_s=st.samples_per_s,
            mfu=st.mfu,
            bound=st.bound,
            shares=_cnn_shares(st),
            layout=layout_of(c, gpu) if c.gpu_count > 1 else None,
        )
    r = _step(c, gpu, e)
    step_band, _ = _band(r.step, e, band, provenance, r.shares[3])
    # positional (a named tuple built from keywords goes through Python-level argument matching)
    return StepSummary(
        r.step, step_band, r.accum, r.tokens / r.step, r.samples / r.step, r.mfu, r.bound, r.shares, r.layout
    )


def _cnn_shares(st: StepEstimate) -> tuple[float, float, float, float, float]:
    """The CNN step's shares from its phases (compute, memory; host dispatch and the fixed costs)."""
    step = st.step_time_s
    c, m = st.phases.get("compute", 0.0), st.phases.get("memory", 0.0)
    k = st.phases.get("communication", 0.0)
    return (c / step, m / step, k / step, max(0.0, 1.0 - (c + m + k) / step), 0.0)


def time_shares(shares: tuple[float, ...]) -> dict[str, float]:
    """The shares as an answer shows them (:data:`TIME_TERMS`, and the pipeline bubble when there
    is one): each term's fraction of the step."""
    out = {"compute": shares[0], "memory": shares[1], "communication": shares[2], "host": shares[3]}
    if len(shares) > 4 and shares[4] > 0:
        out["pipeline_bubble"] = shares[4]
    return out


SPEC_BAND = (0.30, 0.45)
"""80 % band of a spec-default estimate, relative (low, high): datasheet peaks with default
efficiencies are usually optimistic, so the band leans high."""

CALIBRATED_BAND = (0.12, 0.12)
"""80 % band of an estimate from efficiencies fitted on the same GPU (``interpolated``)."""


def _cnn_step(
    c: TrainConfig,
    m: CnnSpec,
    gpu: GpuSpec,
    e: Efficiencies,
    band: tuple[float, float] | None,
    provenance: str | None,
) -> StepEstimate:
    """ResNet training step: conv FLOPs (3x forward) at ``conv`` efficiency, plus activation
    traffic (each activation written and read ~12 times across forward and backward: conv out,
    BN read twice, ReLU, and their gradients), plus ~160 kernel launches per forward."""
    mode = _MODES[c.precision]
    peak = gpu.require_peak(c.precision) * 1e12
    bw = gpu.require_bandwidth() * 1e9 * e.bw
    b = c.batch_size
    flops = 3.0 * m.forward_flops_per_image * b
    act_bytes = float(m.activation_elements_per_image) * mode.compute * 12.0 * b
    eff = e.conv * b / (b + 16.0)
    gpu_t = flops / (peak * eff) + act_bytes / bw
    host = 160 * 3 * e.dispatch_s
    # Launch overhead is added, not overlapped: at ResNet-50 sizes an H200 finishes most
    # kernels faster than eager PyTorch launches them, so the GPU waits on the host for much
    # of the step (seen on the H200: a ~10 ms intercept under a linear per-image cost). This
    # structure was changed after seeing that data; SPEC_DEFAULTS are unchanged.
    t_comm = _cnn_allreduce_s(c, m, gpu, e, backward_s=gpu_t * 2.0 / 3.0)
    step = gpu_t + host + float(m.total_params) * 16.0 / bw + e.step_s + t_comm
    prov = provenance or e.source
    lo, hi = band if band is not None else (SPEC_BAND if prov == "spec" else CALIBRATED_BAND)
    t_compute = flops / (peak * eff)
    t_memory = act_bytes / bw + float(m.total_params) * 16.0 / bw
    shares = (t_compute / step, t_memory / step, t_comm / step, (host + e.step_s) / step, 0.0)
    return StepEstimate(
        step_time_s=step,
        step_time_band=Band(step * (1 - lo), step, step * (1 + hi)),
        micro_step_time_s=step,
        accumulation_steps=1,
        tokens_per_s=b / step,
        samples_per_s=b / step,
        model_flops_per_step=flops,
        mfu=flops / step / peak,
        phases={"compute": t_compute, "memory": t_memory, "communication": t_comm},
        communication_s=t_comm,
        bound=_bound(shares),
        provenance=prov,
        time_shares=time_shares(shares),
    )


def _cnn_allreduce_s(c: TrainConfig, m: CnnSpec, gpu: GpuSpec, e: Efficiencies, backward_s: float) -> float:
    """Exposed time of data parallelism's gradient all-reduce (DDP): every parameter's gradient
    (fp32 under autocast) ring-reduced over the node's links and,
    across nodes, the network (:func:`~.network.collective_s`), overlapped with the backward pass
    as the decoder path does (:func:`~.network.exposed_s`). ResNet-50's 102 MB of gradients per step over a 100 Gb/s network is
    not free; a single-GPU step has none."""
    if c.gpu_count <= 1:
        return 0.0
    lay = layout_of(c, gpu)
    grad_bytes = float(m.total_params) * _MODES[c.precision].grad  # all-reduced as DDP whatever the sharding
    t = collective_s(grad_bytes, c.gpu_count, 1, True, gpu, lay, e.comm, min(c.gpu_count, lay.gpus_per_node))
    return exposed_s(t, e.overlap, backward_s)


def time_to_train(
    c: TrainConfig,
    tokens: float,
    gpu: GpuSpec,
    e: Efficiencies = SPEC_DEFAULTS,
    band: tuple[float, float] | None = None,
) -> tuple[float, Band, StepEstimate]:
    """Seconds to train on ``tokens`` tokens with the global batch held fixed: optimizer
    steps ``= ceil(tokens / (global_batch x seq_len))``; each step is ``accumulation_steps``
    micro-steps on every data-parallel rank (DESIGN "Recommendation": the global batch does not
    change with the GPU count)."""
    st = estimate_step(c, gpu, e, band)
    per_step = c.effective_global_batch * c.seq_len
    steps = math.ceil(tokens / per_step)
    t = steps * st.step_time_s
    return t, st.step_time_band.scaled(steps), st
