"""Carrying a calibration to another GPU (the published-table transfer), anchoring on a published
table, and the provenance label (``calibration`` describes the rules)."""

from __future__ import annotations

import math
from dataclasses import replace

from service.core.catalog.precision import precision_family
from service.core.catalog.specs import GpuSpec
from service.core.estimation.accuracy import Accuracy, accuracy_for
from service.core.estimation.calibration_fit import (
    BAND_FLOOR,
    CROSS_ARCH_BAND,
    SAME_ARCH_BAND_FACTOR,
    Calibration,
)
from service.core.estimation.mlperf_anchor import TrainingAnchor, training_anchor
from service.core.estimation.performance import (
    SPEC_DEFAULTS,
    Efficiencies,
)
from service.core.estimation.transfer import (
    TransferFactors,
    TransferModel,
    arch_key,
    arch_name,
    published_model,
    transfer_family,
)
from service.core.estimation.transfer_architectures import (
    FACTOR_ENVELOPE,
    cross_source_factors,
    fitted_on,
    sources_of,
)


def _scale_efficiencies(e: Efficiencies, compute: float, memory: float, source: str) -> Efficiencies:
    """``e`` with every compute efficiency (matmul, attention, convolution) times ``compute`` and
    the bandwidth efficiency times ``memory``, each capped at 0.98 of the ceiling."""
    return replace(
        e,
        mm={k: min(0.98, v * compute) for k, v in e.mm.items()},
        attn=min(0.98, e.attn * compute),
        conv=min(0.98, e.conv * compute),
        bw=min(0.98, e.bw * memory),
        source=source,
    )


def _combine(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """Two independent relative bands combined in quadrature in log space."""
    lo = math.hypot(-math.log(1.0 - min(a[0], 0.9)), -math.log(1.0 - min(b[0], 0.9)))
    hi = math.hypot(math.log1p(a[1]), math.log1p(b[1]))
    return (min(0.9, 1.0 - math.exp(-lo)), math.expm1(hi))


def transfer(
    cal: Calibration, target: GpuSpec, precision: str | None = None, workload: str = "*"
) -> Calibration:
    """Efficiencies for ``target`` from a calibration made on another GPU.

    Same GPU: unchanged (``interpolated``). Otherwise carried over by the published
    transfer model (:meth:`service.core.estimation.transfer.TransferModel.factors`) for the precision's
    family: within one architecture only the sustained clock under the power cap differs;
    across architectures the fitted compute and memory factors apply (the memory factor at most 1
    for :data:`STREAMING_WORKLOADS`); an architecture without published data is left
    uncorrected. Provenance ``published`` when the published fit supplied a factor (naming the
    tables in ``sources``), else ``transferred``. The band is the calibration's combined with the
    held-out error of that kind of transfer for the target's architecture (at least
    :data:`CROSS_ARCH_BAND` when the architecture is unseen; the old widening rules when no
    accuracy table ships).
    """
    if target.slug in cal.source_gpus and len(cal.source_gpus) == 1:
        return cal
    family = transfer_family(precision) if precision else ("fp32" if cal.family == "fp32" else "fp16/bf16")
    model = published_model()
    factors, f_compute, f_memory, scope = _factors(cal, target, family, model)
    anchor = _llm_training_anchor(cal, target, scope, workload)
    stack = stack_kind(workload)
    cross = _cross_source(cal, target, scope, precision, anchor, stack)
    if cross is not None:
        factors, f_compute, f_memory = cross, cross.compute, cross.memory
    streaming = workload in STREAMING_WORKLOADS and f_memory > 1.0
    if streaming:
        f_memory = 1.0
    ta = arch_key(target)
    band = _transfer_band(cal.band, accuracy_for(scope, ta, workload), scope)
    note, tables = _transfer_note(cal, target, model, factors, scope, (f_compute, f_memory), streaming, stack)
    if anchor is not None:
        f_compute *= anchor.factor
        note, tables = _anchor_note(cal, target, anchor), anchor.tables
    # the answer leans on the published tables whenever their fit supplied a factor (issue 13:
    # such answers say 'published' and name the tables); a transfer within the architecture
    # between GPUs of the same peaks and power (factors within 0.5 % of 1), or to an architecture
    # the tables do not hold, leans on none
    leans = bool(tables) and (
        abs(f_compute - 1.0) > 0.005
        or abs(f_memory - 1.0) > 0.005
        or scope == "cross-architecture"
        or anchor is not None
    )
    if not leans:
        tables = ()
    else:
        note += "; provenance 'published': the cross-GPU ratio comes from the published tables"
    return replace(
        cal,
        efficiencies=_scale_efficiencies(cal.efficiencies, f_compute, f_memory, "transferred"),
        band=band,
        provenance="published" if leans else "transferred",
        scope=scope,
        sources=tables,
        notes=(*cal.notes, note),
    )


def _factors(
    cal: Calibration, target: GpuSpec, family: str, model: TransferModel
) -> tuple[TransferFactors | None, float, float, str]:
    """The published model's compute and memory factors from the calibration's GPU to
    ``target`` and the transfer's scope; none (1, 1) for a calibration without one source GPU."""
    source = cal.source
    if source is None:
        scope = "same-architecture" if target.family == cal.architecture else "unseen-architecture"
        return None, 1.0, 1.0, scope
    factors = model.factors(source, target, family)
    scope = factors.scope
    if scope == "same-gpu":  # a multi-GPU calibration applied to one of its GPUs
        scope = "same-architecture"
    return factors, factors.compute, factors.memory, scope


def _cross_source(
    cal: Calibration,
    target: GpuSpec,
    scope: str,
    precision: str | None,
    anchor: TrainingAnchor | None,
    stack: str,
) -> TransferFactors | None:
    """The cross-source fit's architecture factors (:mod:`.transfer_architectures`) where the
    training tables hold one of the two architectures not and no MLPerf anchor applies, for the
    workload's kind of stack (:func:`stack_kind`); the scope stays ``unseen-architecture``, so
    the band stays the wide one."""
    if scope != "unseen-architecture" or cal.source is None or anchor is not None:
        return None
    return cross_source_factors(cal.source, target, precision, stack)


def stack_kind(workload: str) -> str:
    """The kind of stack that runs a workload: a ``*-train`` workload a training framework's."""
    return "train" if workload.endswith("-train") else "infer"


def _llm_training_anchor(
    cal: Calibration, target: GpuSpec, scope: str, workload: str
) -> TrainingAnchor | None:
    """MLPerf Training's anchor (:mod:`.mlperf_anchor`) for LLM training on an architecture the
    transfer's tables do not hold; None elsewhere (the fitted factors or the same architecture
    decide there)."""
    if workload != "llm-train" or scope != "unseen-architecture" or cal.source is None:
        return None
    return training_anchor(cal.source, target)


def _anchor_note(cal: Calibration, target: GpuSpec, a: TrainingAnchor) -> str:
    src = ", ".join(cal.source_gpus)
    rounds = ", ".join(t.removeprefix("mlperf-training-") for t in a.tables)
    return (
        f"from {src}: {arch_name(arch_key(target))} has no published single-GPU training tables; "
        f"MLPerf Training {rounds} (Llama-2-70B LoRA, 8-GPU systems) measured {target.slug} at "
        f"{a.measured_ratio:.2f}x {cal.source.slug if cal.source else src} per GPU against "
        f"{a.peak_ratio:.2f}x dense 16-bit peaks: compute x{a.factor:.2f}"
    )


def _transfer_band(band: tuple[float, float], acc: Accuracy | None, scope: str) -> tuple[float, float]:
    """The calibration's band combined with the held-out error of this kind of transfer (at
    least :data:`CROSS_ARCH_BAND` for an unseen architecture); without an accuracy table, the
    old widening rules."""
    lo, hi = band
    if acc is not None:
        out = _combine(band, acc.band())
        if scope == "unseen-architecture":
            out = (max(out[0], CROSS_ARCH_BAND[0]), max(out[1], CROSS_ARCH_BAND[1]))
        return out
    if scope == "same-architecture":
        return (min(0.9, lo * SAME_ARCH_BAND_FACTOR), hi * SAME_ARCH_BAND_FACTOR)
    return (max(CROSS_ARCH_BAND[0], lo * 2), max(CROSS_ARCH_BAND[1], hi * 2))


def _transfer_note(
    cal: Calibration,
    target: GpuSpec,
    model: TransferModel,
    factors: TransferFactors | None,
    scope: str,
    applied: tuple[float, float],
    streaming: bool,
    stack: str,
) -> tuple[str, tuple[str, ...]]:
    """What the transfer did, in words, and the published tables its factors came from (none
    when it applied no factor); ``applied`` the compute and memory factors as applied."""
    f_compute, f_memory = applied
    src = ", ".join(cal.source_gpus)
    ta = arch_key(target)
    sa = arch_key(cal.source) if cal.source is not None else cal.architecture
    if factors is None:
        return f"from {src}, efficiencies unchanged ({cal.architecture} -> {target.family})", ()
    if factors.scope == "cross-source-architecture":
        return _cross_source_note(cal, target, factors, applied, streaming, stack)
    if scope == "unseen-architecture":
        missing = arch_name(ta) if not model.knows(target) else arch_name(sa)
        return (
            f"from {src}: {missing} has no published training data, so {target.slug} is assumed to "
            f"reach the same fractions of its datasheet peaks and bandwidth as {src} (no correction)"
        ), ()
    what = (
        "same architecture"
        if scope == "same-architecture"
        else f"across architectures, {arch_name(sa)} -> {arch_name(ta)}"
    )
    note = (
        f"{what}, from {src}: compute x{f_compute:.2f}, memory x{f_memory:.2f}"
        f" (sustained clock under the power cap {factors.clock_target:.2f} vs {factors.clock_source:.2f}"
        f" of boost; per-architecture factors fitted jointly on the published tables "
        f"{', '.join(model.tables)})"
    )
    if streaming:
        note += (
            "; the memory factor is capped at 1: its gain is cache reuse of CNN/BERT activations, "
            "and this workload streams weights, optimizer state or KV cache far larger than any L2"
        )
    return note, model.tables


def _cross_source_note(
    cal: Calibration,
    target: GpuSpec,
    factors: TransferFactors,
    applied: tuple[float, float],
    streaming: bool,
    stack: str,
) -> tuple[str, tuple[str, ...]]:
    """The words and sources of a transfer by the cross-source architecture factors (the compute
    factors' sources for the workload's kind of stack, the bandwidth factors' all)."""
    assert cal.source is not None
    f_compute, f_memory = applied
    sources = sources_of(cal.source, target)
    note = (
        f"across architectures, {arch_name(factors.source_arch)} -> {arch_name(factors.target_arch)}, "
        f"from {', '.join(cal.source_gpus)}: the training tables hold no {arch_name(factors.target_arch)} "
        f"part, so the cross-source fit's architecture factors apply: compute x{f_compute:.2f}, "
        f"memory x{f_memory:.2f} (sustained clock {factors.clock_target:.2f} vs {factors.clock_source:.2f} "
        f"of boost; {fitted_on(cal.source, target, stack)}; leave-one-source-out checked; each kept within "
        f"{FACTOR_ENVELOPE - 1:.0%} of the source's share, where the fit may say more)"
    )
    if streaming:
        note += "; the memory factor is capped at 1 for a workload that streams weights or KV cache"
    return note, sources


STREAMING_WORKLOADS: tuple[str, ...] = ("llm-train", "llm-infer")
"""Workloads whose memory-bound traffic streams tensors far larger than any on-chip cache
(weights, optimizer state, KV cache): a transferred memory factor above 1 -- effective bandwidth
above the DRAM ratio, which only cache reuse can give -- is capped at 1 for them."""

PUBLISHED_WORKLOADS: dict[str, str] = {
    "resnet50-train": "resnet50-train",
    "bert-large-train": "bert-large-squad-finetune",
}
"""Estimator workload -> the published workload that can anchor it (BERT-Large MLM training
and SQuAD fine-tuning share the encoder; the heads differ by a few per cent of the FLOPs)."""


def published_calibration(gpu: GpuSpec, workload: str, precision: str) -> Calibration | None:
    """Efficiencies anchored on the newest shipped table holding ``workload`` in the
    precision's family, at ``gpu``'s architecture factors (provenance ``published``, the table
    named); None when no table does. Used only where no measurement fits the (workload, family):
    the table's stack (its year's framework) sets the speed, so its band is the held-out error of
    such anchors and the note says which stack it is."""
    from service.core.estimation.transfer import fit_points
    from service.core.evidence.published import get_table

    pw = PUBLISHED_WORKLOADS.get(workload)
    if pw is None:
        return None
    family = transfer_family(precision)
    model = published_model()
    anchor = model.anchor(pw, family)
    if anchor is None:
        return None
    tid, kc, km, kh = anchor
    kc *= math.exp(model.compute_log(gpu, family))
    km *= math.exp(model.memory_log(gpu))
    base = SPEC_DEFAULTS
    e = replace(
        base,
        mm={k: v * kc for k, v in base.mm.items()},
        attn=base.attn * kc,
        conv=base.conv * kc,
        bw=base.bw * km,
        dispatch_s=base.dispatch_s * kh,
        step_s=base.step_s * kh,
        source="published",
    )
    acc = accuracy_for("published-anchor", arch_key(gpu), workload)
    band = acc.band() if acc is not None else CROSS_ARCH_BAND
    band = (max(band[0], BAND_FLOOR), max(band[1], BAND_FLOOR))
    table = get_table(tid)
    gpus = tuple(sorted({p.gpu.slug for p in fit_points() if p.group == (tid, pw, family)}))
    factors = (
        f"at {arch_name(arch_key(gpu))} factors of the joint transfer fit"
        if model.knows(gpu)
        else f"at the average architecture's factors ({arch_name(arch_key(gpu))} has no published data)"
    )
    note = (
        f"anchored on the published table '{table.title}' ({table.date}; {table.engine}): "
        f"{pw} in {family} on {len(gpus)} GPUs, {factors} -- that stack's speed, not today's"
    )
    return Calibration(
        efficiencies=e,
        band=band,
        multipliers={},
        source_gpus=gpus,
        architecture=gpu.family,
        n_points=len(gpus),
        fit_mape=0.0,
        provenance="published",
        family=precision_family(precision),
        notes=(note,),
        scope="published-anchor",
        sources=(tid,),
    )


def provenance_for(target: GpuSpec, cal: Calibration | None, exact_cell_measured: bool = False) -> str:
    """The DESIGN provenance label for an estimate on ``target``."""
    if exact_cell_measured:
        return "measured"
    if cal is None:
        return "spec"
    if target.slug in cal.source_gpus and len(cal.source_gpus) == 1:
        return "interpolated"
    return "transferred"
