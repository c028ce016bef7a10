"""Cross-GPU transfer: per-architecture efficiencies fitted jointly on the shipped published tables.

Almost every answer is for a GPU nobody here measured, so its time is the H200's calibrated
efficiencies carried to another GPU. This module says *how* they carry over, from physics with
a few constants fitted on every shipped single-GPU training table at once (Lambda 2020 / 2021 /
2023, NVIDIA DeepLearningExamples 20.06), never per GPU.

The model
---------
A step's time on GPU ``g`` splits, at given efficiencies, into a compute-bound part ``C`` (matmul,
convolution and attention FLOPs over the dense peak of the precision), a memory-bound part ``M``
(bytes over the datasheet bandwidth) and the rest ``R`` (host dispatch, fixed per-step costs)
-- :func:`profile` reads the three off :func:`~service.core.estimation.performance.estimate_step` by
perturbing the efficiencies, so the split is the estimator's own roofline. Each part is scaled by
its own ceiling::

    t = e^-l [ C / (e^s * K_c(g, f)) + M / K_m(g) + R ]
    K_c(g, f) = e^(c_a + d_af) * phi(g)              compute: architecture a, precision family f
    K_m(g)    = e^(m_a)                              memory: architecture a
    phi(g)    = min(1, (TDP / (P16 * eps_a))^gamma)  clock under the power cap

* ``c_a`` / ``d_af``: how close the architecture's kernels get to its datasheet peak, overall and
  per precision family (fp32, tf32, fp16/bf16, fp8) -- relative to the average architecture;
* ``m_a``: the same for bandwidth (caches, memory controllers: an Ada part with 72-96 MB of L2
  moves a CNN's activations with fewer DRAM bytes than a Volta part with 6 MB);
* ``phi``: a part whose board power cannot feed its dense 16-bit peak ``P16`` at boost clock runs
  slower. Dynamic power goes as ``f V^2`` and voltage tracks frequency near the top of the DVFS
  curve, so ``P ~ f^3`` and the sustained clock scales as ``P^(1/3)``: ``gamma`` is fixed at 1/3
  (:data:`CLOCK_EXPONENT`), never fitted, which also keeps a higher peak from ever making a GPU
  slower (the capped rate goes as ``P16^(2/3)``). ``eps_a`` (W per dense 16-bit TFLOP/s at full
  clock) is fitted per architecture, pulled toward :data:`EPS0_W_PER_TFLOP` (1.0) where the data
  say little. Evidence for the cap in the tables: the A100 40 GB PCIe (250 W) trails the SXM4
  (400 W) by 7-15 % at the same peaks and bandwidth;
* ``s`` (per workload and family) and ``l`` (per table, workload and family): the published
  stack's own split between compute- and memory-bound time and its overall speed. They are
  nuisance parameters for the service -- the H200 calibration supplies the split of today's
  stack -- except where no measurement exists and the answer is anchored on a table
  (:meth:`TransferModel.anchor`). ``l`` is eliminated in closed form (the mean log residual of its
  group), so only cross-GPU *ratios* inform the physics.

Fit: Levenberg-Marquardt on the log residuals with ridge priors (:data:`RIDGE`) pulling ``c``,
``d``, ``m`` (weight 1) and ``log eps_a / eps0`` (0.3) toward zero and ``s`` only weakly (1e-3).
What the tables can and cannot tell (leave-one-GPU-out, pooled ratio error over the baseline's,
``benchmarks/validate_estimates.py``): the split ``s`` carries most of the gain (0.53 -> 0.88
without it) -- these stacks' cross-GPU ratios follow bandwidth far more than FLOPs; the memory
factors ``m`` add 0.06; the compute factors ``c``/``d`` and the power cap leave it unchanged (the
tables cannot tell architectures' compute efficiencies apart, so the prior keeps ``c`` within
+/-0.1 and the cap stays the physics above, not a fitted knob). The weights were set after a
first look at that check and barely matter (weights 0.1 to 10 move it by about one point).
The fit takes well under a second and is cached per process (:func:`published_model`).

Using it
--------
:meth:`TransferModel.factors` turns the model into multipliers on another GPU's fitted
efficiencies: compute efficiencies (matmul, attention, convolution) by
``K_c(target) / K_c(source)``, bandwidth efficiency by ``K_m(target) / K_m(source)``. Host costs
are not transferred (a host trait, DESIGN "Estimation"). An architecture absent from the tables
(Blackwell, CDNA, Gaudi) gets no correction -- the same fractions of its peaks as the source GPU
-- and a wider band. :func:`leave_one_gpu_out` is the check: every GPU in turn is removed from
every table, the model refitted, and its throughput predicted from each other GPU of the same
table and configuration, beside the datasheet baseline (geometric mean of the tensor-peak and
bandwidth ratios).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from functools import cache
from typing import Final

from service.core.catalog.models import get_model
from service.core.catalog.specs import GpuSpec
from service.core.estimation.memory import TrainConfig
from service.core.estimation.performance import SPEC_DEFAULTS, Efficiencies, estimate_step

__all__ = [
    "ARCH_NAMES",
    "CLOCK_EXPONENT",
    "EPS0_W_PER_TFLOP",
    "FAMILIES",
    "AnchorResult",
    "FitPoint",
    "LooReport",
    "PairResult",
    "Profile",
    "TransferFactors",
    "TransferModel",
    "arch_key",
    "arch_name",
    "clock_factor",
    "fit",
    "fit_points",
    "leave_one_gpu_out",
    "log_quantile",
    "profile",
    "published_model",
    "transfer_family",
]

# --------------------------------------------------------------------------------------------
# Architectures and precision families
# --------------------------------------------------------------------------------------------

ARCH_NAMES: Final[dict[str, str]] = {
    "sm70": "Volta",
    "sm75": "Turing",
    "sm80": "Ampere GA100",
    "sm86": "Ampere GA10x",
    "sm87": "Ampere Orin",
    "sm89": "Ada Lovelace",
    "sm90": "Hopper",
    "sm100": "Blackwell",
    "sm103": "Blackwell Ultra",
    "sm120": "Blackwell GB20x",
    "cdna2": "CDNA 2",
    "cdna3": "CDNA 3",
    "cdna4": "CDNA 4",
    "gaudi2": "Gaudi 2",
    "gaudi3": "Gaudi 3",
}


def arch_key(gpu: GpuSpec) -> str:
    """The architecture the transfer model keys on: the NVIDIA compute capability (``sm80`` for
    GA100, ``sm86`` for GA10x -- same marketing name, different SM and memory system), else the
    normalised architecture name (``cdna3``, ``gaudi2``)."""
    cc = gpu.compute_capability
    if cc:
        return "sm" + cc.replace(".", "")
    return gpu.family


def arch_name(key: str) -> str:
    return ARCH_NAMES.get(key, key)


FAMILIES: Final[tuple[str, ...]] = ("fp32", "tf32", "fp16/bf16", "fp8")
"""Precision families of the transfer (the published tables' vocabulary)."""

_FAMILY_OF: Final[dict[str, str]] = {
    "fp32": "fp32",
    "tf32": "tf32",
    "amp_fp16": "fp16/bf16",
    "amp_bf16": "fp16/bf16",
    "fp16": "fp16/bf16",
    "bf16": "fp16/bf16",
    "fp8": "fp8",
    "mxfp8": "fp8",
    "int8": "fp8",
    "int4": "fp16/bf16",
}


def transfer_family(precision: str) -> str:
    """``amp_bf16`` -> ``fp16/bf16``; ``int8`` runs on the 8-bit tensor path like ``fp8``;
    weight-only ``int4`` computes in 16 bits."""
    return _FAMILY_OF.get(precision, "fp16/bf16")


_PEAK_OF: Final[dict[str, str]] = {"fp32": "fp32", "tf32": "tf32", "fp16/bf16": "fp16", "fp8": "fp8"}

# --------------------------------------------------------------------------------------------
# Physics constants (not fitted)
# --------------------------------------------------------------------------------------------

CLOCK_EXPONENT: Final = 1.0 / 3.0
"""Sustained clock vs board power under the cap: ``P ~ f V^2`` with ``V ~ f`` near the top of the
DVFS curve gives ``f ~ P^(1/3)``. Fixed, not fitted: below 1 it keeps the capped compute rate
(``P16^(1 - gamma)``) increasing with the peak."""

EPS0_W_PER_TFLOP: Final = 1.0
"""Prior for the board power (W) one dense 16-bit TFLOP/s needs at full clock, per architecture
where the tables cannot tell: an A100 SXM4 (400 W, 312 TFLOP/s) just sustains boost, an
H100 SXM (700 W, 989.5) is mildly capped (0.89 of boost). Fixed: a free fit drove it to ~2.6 W,
which would cap every datacenter part at 40-60 % of its boost clock. Measured, the cap bites
harder than 1.0 says: a 45 s bf16 GEMM loop on an H100 SXM settles at 1,350 MHz, 0.74 of the
peak's 1,830, and 680 TFLOP/s (``data/probes/h100-sustained-clock-2026-12-07.json``; the agent's
H200 GEMM cells, 662 TFLOP/s at 700 W), which implies 1.76 W; as the prior for every
architecture that moves the held-out cross-source figure 12.6 -> 12.7 %, so 1.0 stays until a
non-Hopper part is measured the same way."""

RIDGE: Final[dict[str, float]] = {"s": 1e-3, "c": 1.0, "d": 1.0, "m": 1.0, "e": 0.3}
"""Prior weights (per squared log unit) of each parameter kind: the split ``s`` is free, the
per-architecture factors are pulled toward the average architecture."""


def _p16(gpu: GpuSpec) -> float | None:
    return gpu.peak_for("fp16") or gpu.peak_for("bf16")


def clock_factor(gpu: GpuSpec, eps_w_per_tflop: float) -> float:
    """``min(1, (TDP / (P16 x eps))^(1/3))``: the fraction of its boost clock a GPU sustains
    under a saturating load; 1 when the board power or the 16-bit peak is not sourced."""
    p16 = _p16(gpu)
    if not gpu.tdp_w or not p16 or eps_w_per_tflop <= 0:
        return 1.0
    z = math.log(gpu.tdp_w) - math.log(p16 * eps_w_per_tflop)
    return math.exp(CLOCK_EXPONENT * min(0.0, z))


# --------------------------------------------------------------------------------------------
# Time profile: compute-bound, memory-bound and other seconds of a step
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Profile:
    """Seconds of one step bound by compute, by memory and by neither (host, fixed costs)."""

    compute_s: float
    memory_s: float
    other_s: float

    @property
    def total_s(self) -> float:
        return self.compute_s + self.memory_s + self.other_s


def _scaled(e: Efficiencies, compute: float = 1.0, memory: float = 1.0) -> Efficiencies:
    return replace(
        e,
        mm={k: v * compute for k, v in e.mm.items()},
        attn=e.attn * compute,
        conv=e.conv * compute,
        bw=e.bw * memory,
    )


def profile(config: TrainConfig, gpu: GpuSpec, e: Efficiencies = SPEC_DEFAULTS) -> Profile:
    """The estimator's step time split into its compute-bound and memory-bound parts: the time
    saved by doubling every compute efficiency is half the compute-bound time, likewise for
    bandwidth; the remainder is host and fixed cost. Exact where the parts add, a local
    linearisation where a ``max`` picks one."""
    t0 = estimate_step(config, gpu, e).step_time_s
    tc = estimate_step(config, gpu, _scaled(e, compute=2.0)).step_time_s
    tm = estimate_step(config, gpu, _scaled(e, memory=2.0)).step_time_s
    c = max(0.0, 2.0 * (t0 - tc))
    m = max(0.0, 2.0 * (t0 - tm))
    return Profile(c, m, max(0.0, t0 - c - m))


# --------------------------------------------------------------------------------------------
# Fit data: the shipped training tables
# --------------------------------------------------------------------------------------------

_WORKLOAD_MODEL: Final[dict[str, str]] = {
    "resnet50-train": "resnet50",
    "bert-large-squad-finetune": "bert-large",
    "bert-base-squad-finetune": "bert-base",
}
_PRECISIONS: Final[frozenset[str]] = frozenset({"fp32", "tf32", "amp_fp16", "amp_bf16", "fp16", "bf16"})


@dataclass(frozen=True, slots=True)
class FitPoint:
    """One published single-GPU training figure with its GPU's figures and its time profile."""

    table_id: str
    gpu: GpuSpec
    gpu_name: str
    workload: str
    model: str
    precision: str
    seq_len: int
    batch_size: int
    throughput: float  # samples/s as published
    profile: Profile  # at the spec-default efficiencies

    @property
    def arch(self) -> str:
        return arch_key(self.gpu)

    @property
    def family(self) -> str:
        return transfer_family(self.precision)

    @property
    def step_s(self) -> float:
        return self.batch_size / self.throughput

    @property
    def group(self) -> tuple[str, str, str]:
        """The stack a level is fitted for: (table, workload, family)."""
        return (self.table_id, self.workload, self.family)

    @property
    def pair_key(self) -> tuple[str, str, str, str, int]:
        """GPUs with equal keys ran the same configuration (batch is each GPU's own choice)."""
        return (self.table_id, self.workload, self.model, self.family, self.seq_len)

    @property
    def peak(self) -> float:
        """The dense peak of the precision it ran at (the baseline's compute ratio)."""
        return self.gpu.require_peak(_PEAK_OF[self.family])


def _points_from(tables: Iterable[object]) -> tuple[FitPoint, ...]:
    from service.core.evidence.published import PublishedTable
    from service.core.evidence.published.gpus import figures_for

    out: list[FitPoint] = []
    for t in tables:
        assert isinstance(t, PublishedTable)
        if t.kind != "training" or not t.cross_gpu:
            continue
        for r in t.rows:
            if (
                r.workload not in _WORKLOAD_MODEL
                or r.gpu_count != 1
                or not r.batch_size
                or r.value <= 0
                or r.precision not in _PRECISIONS
                or r.metric not in ("images_per_s", "sequences_per_s")
            ):
                continue
            gpu = figures_for(r)
            if (
                gpu is None
                or gpu.bandwidth_gb_per_s is None
                or gpu.peak_for(_PEAK_OF[transfer_family(r.precision)]) is None
            ):
                continue
            seq = r.seq_len or 1
            cfg = TrainConfig(
                model=get_model(r.model),
                precision=r.precision,
                batch_size=r.batch_size,
                seq_len=seq,
                optimizer="sgd" if r.workload == "resnet50-train" else "adamw",
            )
            out.append(
                FitPoint(
                    t.id,
                    gpu,
                    r.gpu_name,
                    r.workload,
                    r.model,
                    r.precision,
                    seq,
                    r.batch_size,
                    r.value,
                    profile(cfg, gpu),
                )
            )
    return tuple(out)


ANSWER_TABLES: Final = frozenset(
    {
        "lambda-pytorch-train-ngc2001",
        "lambda-pytorch-train-ngc2010",
        "lambda-pytorch-train-ngc2210",
        "dle-tf-resnet50-ngc2006",
        "dle-pt-resnet50-ngc2103",
        "nemo-megatron-bridge-pretrain-25.11",
        "mlperf-training-v4.0",
        "mlperf-training-v4.1",
        "mlperf-training-v5.0",
        "mlperf-training-v5.1",
    }
)
"""The training tables this fit (and so every transferred training answer) is made of. A table
added later first enters the cross-source check only (``benchmarks/validate_transfer.py``);
moving answers with it is a change of its own, with its golden differences and held-out figures
(DeepLearningExamples' PyTorch ResNet-50, 21.03: CHANGELOG "Data 2026-12-05q")."""


@cache
def fit_points() -> tuple[FitPoint, ...]:
    """Every usable row of the answer tables (:data:`ANSWER_TABLES`, cached): single GPU,
    ResNet-50 / BERT training, a precision the estimator models, a GPU with sourced figures."""
    from service.core.evidence.published import TABLES

    return _points_from(t for t in TABLES if t.id in ANSWER_TABLES)


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransferFactors:
    """Multipliers on a source GPU's efficiencies for a target GPU, and why."""

    compute: float
    memory: float
    scope: str  # same-gpu | same-architecture | cross-architecture | unseen-architecture
    source_arch: str
    target_arch: str
    clock_source: float = 1.0
    clock_target: float = 1.0

    @property
    def identity(self) -> bool:
        return self.compute == 1.0 and self.memory == 1.0


@dataclass(frozen=True, slots=True)
class TransferModel:
    """The fitted constants (log units unless named otherwise) and what they were fitted on."""

    split: Mapping[tuple[str, str], float]  # (workload, family) -> s
    compute: Mapping[str, float]  # arch -> c
    compute_family: Mapping[tuple[str, str], float]  # (arch, family) -> d
    memory: Mapping[str, float]  # arch -> m
    energy: Mapping[str, float]  # arch -> eps (W per dense 16-bit TFLOP/s)
    level: Mapping[tuple[str, str, str], float]  # (table, workload, family) -> l
    gpus: Mapping[str, tuple[str, ...]]  # arch -> GPU ids fitted on
    tables: tuple[str, ...]
    n_points: int
    rms_log_error: float
    iterations: int = 0

    # ---- per GPU
    def knows(self, gpu: GpuSpec) -> bool:
        """Whether the tables hold the GPU's architecture."""
        return arch_key(gpu) in self.compute

    def eps(self, gpu: GpuSpec) -> float:
        return self.energy.get(arch_key(gpu), EPS0_W_PER_TFLOP)

    def clock(self, gpu: GpuSpec) -> float:
        """Sustained fraction of the boost clock under the power cap."""
        return clock_factor(gpu, self.eps(gpu))

    def compute_log(self, gpu: GpuSpec, family: str) -> float:
        """``c_a + d_af + log phi``: log compute-efficiency factor against the average architecture."""
        a = arch_key(gpu)
        return (
            self.compute.get(a, 0.0) + self.compute_family.get((a, family), 0.0) + math.log(self.clock(gpu))
        )

    def memory_log(self, gpu: GpuSpec) -> float:
        return self.memory.get(arch_key(gpu), 0.0)

    def factors(self, source: GpuSpec, target: GpuSpec, family: str) -> TransferFactors:
        """Multipliers turning ``source``'s efficiencies into ``target``'s. An architecture the
        tables do not hold gets none (``unseen-architecture``); within one architecture only the
        power cap differs."""
        sa, ta = arch_key(source), arch_key(target)
        if source.slug == target.slug:
            return TransferFactors(1.0, 1.0, "same-gpu", sa, ta)
        if not self.knows(target) or not self.knows(source):
            return TransferFactors(1.0, 1.0, "unseen-architecture", sa, ta)
        kc = math.exp(self.compute_log(target, family) - self.compute_log(source, family))
        km = math.exp(self.memory_log(target) - self.memory_log(source))
        scope = "same-architecture" if sa == ta else "cross-architecture"
        return TransferFactors(kc, km, scope, sa, ta, self.clock(source), self.clock(target))

    # ---- per fit point
    def _stack_logs(self, p: FitPoint, like: GpuSpec | None = None) -> tuple[float, float]:
        g = p.gpu if like is None else like
        lc = self.split.get((p.workload, p.family), 0.0) + self.compute_log(g, p.family)
        return lc, self.memory_log(g)

    def unlevelled(self, p: FitPoint, like: GpuSpec | None = None) -> float:
        """Step seconds before the table's level; ``like``: run ``p``'s profile at another GPU's
        efficiency factors (architecture and clock) -- what an uncorrected transfer assumes."""
        lc, lm = self._stack_logs(p, like)
        pr = p.profile
        return pr.compute_s * math.exp(-lc) + pr.memory_s * math.exp(-lm) + pr.other_s

    def predict(self, p: FitPoint) -> float | None:
        """Step seconds for ``p`` at its table's fitted speed (None: no level for its group)."""
        lv = self.level.get(p.group)
        return None if lv is None else self.unlevelled(p) * math.exp(-lv)

    # ---- a published anchor
    def anchor(self, workload: str, family: str) -> tuple[str, float, float, float] | None:
        """(table id, compute, memory, host) efficiency multipliers on the spec defaults that
        reproduce the newest shipped table holding ``workload`` in ``family`` for the average
        architecture; None when no table does."""
        from service.core.evidence.published import get_table

        best: tuple[str, str] | None = None
        for tid, wl, fam in self.level:
            if wl == workload and fam == family:
                date = get_table(tid).date
                if best is None or date > best[0]:
                    best = (date, tid)
        if best is None:
            return None
        tid = best[1]
        lv = self.level[(tid, workload, family)]
        s = self.split.get((workload, family), 0.0)
        return tid, math.exp(lv + s), math.exp(lv), math.exp(-lv)


# the fit and its leave-one-GPU-out check build on the names above
from service.core.estimation.transfer_check import (  # noqa: E402, F401
    AnchorResult,
    LooReport,
    PairResult,
    _mean,
    leave_one_gpu_out,
    log_quantile,
)
from service.core.estimation.transfer_fit import fit, published_model  # noqa: E402
