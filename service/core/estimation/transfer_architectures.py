"""Per-architecture efficiency factors of the cross-source transfer, for an architecture the
training-table transfer does not hold (issue 27).

:mod:`.transfer` carries the H200's calibrated efficiencies to another GPU with factors fitted on
single-GPU ResNet/BERT training tables; those hold Volta to Hopper only, so a Blackwell, CDNA or
Gaudi part was assumed to reach the same fractions of its datasheet peaks and bandwidth as the
H200. The operator-class model of :mod:`.transfer_sources` is fitted across every shipped source
(MLPerf Training and Inference, the TensorRT-LLM Perf Overview, NeMo) and checked by leaving
each source out; its per-architecture compute (overall and per precision) and bandwidth factors
are what those sources say about these parts -- MLPerf Inference runs the MI300X's FP8 at
0.72x and its bandwidth at 0.65x of the average part's fractions (compute per precision and
kind of stack: a training question reads the ``/train`` factors, :data:`~.transfer_sources.STACK_KINDS`). ``validate_transfer.py
--write-accuracy`` ships them in ``transfer_accuracy.json`` (``architectures``: multipliers
against the average architecture, and the sources each was fitted on); the fit's clock under
the power cap is the same fixed physics as here (:func:`~.transfer.clock_factor` at
:data:`~.transfer.EPS0_W_PER_TFLOP`). Pure: the file is read once; without it, no factors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Final

from service.core.catalog.precision import PEAK_KEY
from service.core.catalog.specs import GpuSpec
from service.core.estimation.efficiencies import H200_SXM
from service.core.estimation.transfer import (
    EPS0_W_PER_TFLOP,
    TransferFactors,
    arch_key,
    arch_name,
    clock_factor,
)
from service.core.estimation.transfer_accuracy import factor_key, loso_table

__all__ = [
    "ENGINE_FIT_ARCHS",
    "ArchFactors",
    "EngineArchFactors",
    "arch_factors",
    "class_family",
    "cross_source_factors",
    "engine_arch_factors",
    "fitted_on",
    "sources_of",
]

_CLASS_FAMILY: Final[dict[str, str]] = {
    **PEAK_KEY,
    "int4": "bf16",  # weight-only: the GEMM runs at the 16-bit peak
    "mxfp8": "fp8",
    "nvfp4": "fp4",
    "mxfp4": "fp4",
    "fp4": "fp4",
}


def class_family(precision: str | None) -> str:
    """The peak a precision's math runs at, in the cross-source fit's vocabulary (``amp_bf16``
    -> ``bf16``, NVFP4 / MXFP4 -> ``fp4``); 16-bit where unstated or weight-only (AWQ, GPTQ)."""
    return _CLASS_FAMILY.get(precision or "", "bf16")


@dataclass(frozen=True, slots=True)
class ArchFactors:
    """One architecture's fitted multipliers on the average part's fractions of its peaks."""

    compute: float
    families: Mapping[str, float]
    memory: float
    sources: tuple[str, ...]  # every source with the architecture: its bandwidth factor's
    compute_sources: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The sources of the compute factors per kind of stack (``train``, ``infer``): a training
    question's compute factor was fitted on training rows alone (:data:`~.transfer_sources.STACK_KINDS`)."""

    def compute_for(self, family: str) -> float:
        return self.compute * self.families.get(family, 1.0)


@cache
def _table() -> Mapping[str, ArchFactors]:
    """The shipped factors, parsed once: every serving deployment asks (twice)."""
    return _parse(loso_table())


def _parse(doc: Mapping[str, Any]) -> dict[str, ArchFactors]:
    out: dict[str, ArchFactors] = {}
    kinds = (doc.get("fitted_on") or {}).get("compute_terms") or {}  # "cdna3/train" -> sources
    for arch, v in (doc.get("architectures") or {}).items():
        if not isinstance(v, dict):
            continue
        out[str(arch)] = ArchFactors(
            compute=float(v.get("compute", 1.0)),
            families={str(k): float(x) for k, x in (v.get("families") or {}).items()},
            memory=float(v.get("memory", 1.0)),
            sources=tuple(str(s) for s in v.get("sources") or ()),
            compute_sources={
                str(key).split("/", 1)[1]: tuple(str(s) for s in srcs)
                for key, srcs in kinds.items()
                if str(key).split("/", 1)[0] == arch and "/" in str(key) and isinstance(srcs, list)
            },
        )
    return out


def arch_factors(arch: str) -> ArchFactors | None:
    """The shipped factors of an architecture key (``cdna3``, ``sm100``); None if not fitted."""
    return _table().get(arch)


def cross_source_factors(
    source: GpuSpec, target: GpuSpec, precision: str | None, stack: str = "infer"
) -> TransferFactors | None:
    """Multipliers turning ``source``'s efficiencies into ``target``'s from the cross-source fit:
    the ratio of the two architectures' compute factors for the precision's peak on that kind of
    stack (``train`` or ``infer``: :data:`~.transfer_sources.STACK_KINDS`), of their bandwidth
    factors, and of their sustained clocks; None when either is not fitted."""
    sa, ta = arch_key(source), arch_key(target)
    fs, ft = arch_factors(sa), arch_factors(ta)
    if fs is None or ft is None:
        return None
    fam = factor_key(class_family(precision), stack)
    cs, ct = clock_factor(source, EPS0_W_PER_TFLOP), clock_factor(target, EPS0_W_PER_TFLOP)
    compute = _within_envelope(ft.compute_for(fam) / fs.compute_for(fam) * ct / cs)
    memory = _within_envelope(ft.memory / fs.memory)
    return TransferFactors(compute, memory, "cross-source-architecture", sa, ta, cs, ct)


FACTOR_ENVELOPE: Final = 1.1
"""The most a fitted architecture factor may move a GPU against the source's datasheet share,
either way -- about 10 %, as the training-table transfer's own factors stay (:mod:`.transfer`).
The house rule that no fitted constant makes a faster GPU slower, in the form the catalog
property test holds every transfer to (``tests/core/test_transfer.py``: GPUs of different
architectures may swap places only where their datasheet figures differ by less than 25 %, the
sustained clocks under the power cap included, which differ up to ~12 % within Hopper). The fit
says more for some parts -- MLPerf Inference puts the MI300X's FP8 kernels at 0.65x the H200's
share of its peak (0.54x before compute was fitted per kind of stack, 1.28.0), and an outside
MLPerf Inference v4.1 check agrees (CHANGELOG 1.26.0) -- and the envelope keeps the first tenth
of it."""


def _within_envelope(factor: float) -> float:
    return min(FACTOR_ENVELOPE, max(1.0 / FACTOR_ENVELOPE, factor))


def sources_of(source: GpuSpec, target: GpuSpec) -> tuple[str, ...]:
    """The published sources the two architectures' factors were fitted on (every one: the
    bandwidth factors'; :func:`fitted_on` says which informed the compute factors)."""
    out: list[str] = []
    for a in (arch_key(target), arch_key(source)):
        f = arch_factors(a)
        for s in f.sources if f else ():
            if s not in out:
                out.append(s)
    return tuple(out)


def fitted_on(source: GpuSpec, target: GpuSpec, stack: str) -> str:
    """Which sources the factors were fitted on, in words: the target architecture's compute
    factor on that kind of stack's sources (:data:`~.transfer_sources.STACK_KINDS`), its bandwidth
    factor on every source that holds it, and the reference architecture's by count."""
    ta, sa = arch_key(target), arch_key(source)
    t, s = arch_factors(ta), arch_factors(sa)
    compute = t.compute_sources.get(stack, ()) if t else ()
    also = [x for x in (t.sources if t else ()) if x not in compute]
    kind = "training" if stack == "train" else "inference"
    if compute:
        out = f"{arch_name(ta)} compute on {kind} stacks fitted on {', '.join(compute)}"
        out += f", its bandwidth also on {', '.join(also)}" if also else ""
    else:
        out = f"{arch_name(ta)} compute on {kind} stacks: no source holds it (the average part's)"
        out += f"; its bandwidth fitted on {', '.join(also)}" if also else ""
    if s is not None and sa != ta:
        out += f"; {arch_name(sa)}'s factors on {len(s.sources)} sources"
    return out


ENGINE_FIT_ARCHS: Final = frozenset({"sm80", "sm89", "sm90"})
"""Architectures of the GPUs the continuous-batching class was fitted on (A100, L40S, H100, H200:
:data:`~.serving_engines.CONTINUOUS_EFFICIENCIES`); their fractions of the datasheet are its own."""


@dataclass(frozen=True, slots=True)
class EngineArchFactors:
    """Multipliers on a serving deployment's datasheet figures for an architecture the engine
    class was not fitted on, and the sentence that says so."""

    gemm: float  # the GEMM format's peak
    gemm16: float  # the 16-bit peak (attention, weight-only GEMMs)
    memory: float  # the bandwidth, at most 1
    note: str


def engine_arch_factors(gpu: GpuSpec, gemm_key: str) -> EngineArchFactors | None:
    """The cross-source factors from the H200 (the engine class's reference part) to ``gpu``
    for its GEMM peak and its 16-bit peak, the bandwidth factor capped at 1 as for every
    workload that streams weights and KV cache far larger than any cache
    (:data:`~.calibration_transfer.STREAMING_WORKLOADS`); None for an architecture the class
    was fitted on or the fit does not hold."""
    if arch_key(gpu) in ENGINE_FIT_ARCHS:
        return None
    g = cross_source_factors(H200_SXM, gpu, gemm_key)
    g16 = cross_source_factors(H200_SXM, gpu, "bf16" if gpu.peak_for("bf16") else "fp16")
    if g is None or g16 is None:
        return None
    memory = min(1.0, g.memory)
    note = (
        f"{gpu.slug} ({g.target_arch}): the engine class was fitted on NVIDIA Ampere, Ada and Hopper "
        f"parts; the cross-source fit's factors against the H200 apply ({gemm_key} GEMMs x{g.compute:.2f}, "
        f"16-bit x{g16.compute:.2f}, bandwidth x{memory:.2f}, each within {FACTOR_ENVELOPE - 1:.0%} of the "
        f"datasheet share; {fitted_on(H200_SXM, gpu, 'infer')})"
    )
    return EngineArchFactors(g.compute, g16.compute, memory, note)
