"""Quarantine rules for benchmark results (DESIGN, "Latest measured, quarantine, provenance").

A quarantined result is kept but left out of aggregates, with a reason:

- ``above_catalog_peak``: a rate above what the catalog says the GPU can do -- a GEMM rate
  above the dense peak for its precision (TFLOP/s, or TOP/s for integer precisions), a copy
  bandwidth above the datasheet memory bandwidth (GB/s, 1e9 B/s), or an MFU above 1. This is
  evidence against the catalog as much as against the result, so an admin is alerted.
- ``above_usable_memory``: peak allocated / reserved / NVML-used bytes above the GPU's usable
  memory (what the driver reports with default ECC) -- impossible on that GPU.
- ``implausible``: a metric outside what the GPU (or ``gpu_count`` of them) can do at all --
  above a generous multiple of its roofline bound, far below it, or a time shorter than
  physics allows or longer than a day (:mod:`service.core.evidence.plausibility`): nonsense
  such as ``1e308`` or ``5e-324`` tokens/s never reaches an aggregate or a fit.
- ``statistical_outlier``: the MAD test within its (GPU, fingerprint, parameters) cell
  (:mod:`service.core.evidence.aggregate`), re-evaluated as data arrives.
- ``admin``: an admin quarantined it (with a reason). An admin release overrides every
  automatic reason; both admin decisions are sticky across re-evaluation.

Pure: no DB, web or clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from service.core.catalog.specs import GpuSpec
from service.core.evidence.plausibility import implausible

ABOVE_CATALOG_PEAK = "above_catalog_peak"
ABOVE_USABLE_MEMORY = "above_usable_memory"
IMPLAUSIBLE = "implausible"
STATISTICAL_OUTLIER = "statistical_outlier"
ADMIN = "admin"
REASONS: tuple[str, ...] = (ABOVE_CATALOG_PEAK, ABOVE_USABLE_MEMORY, IMPLAUSIBLE, STATISTICAL_OUTLIER, ADMIN)

REVIEW_RELEASED = "released"
REVIEW_QUARANTINED = "quarantined"

_MEMORY_FIELDS = ("peak_allocated_bytes", "peak_reserved_bytes", "nvml_used_bytes")
GIB = 2**30


@dataclass(frozen=True, slots=True)
class Finding:
    reason: str
    detail: str


def static_findings(
    workload: str,
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    memory: Mapping[str, int | None],
    spec: GpuSpec,
    *,
    gpu_count: int = 1,
) -> list[Finding]:
    """Catalog checks for one result on ``gpu_count`` GPUs of ``spec``: peaks, memory, then
    plausibility. Unknown catalog figures (``None``) check nothing but the outer fences."""
    out = _catalog_findings(workload, params, metrics, memory, spec)
    out.extend(
        Finding(IMPLAUSIBLE, x.detail)
        for x in implausible(workload, params, metrics, spec, gpu_count=gpu_count)
    )
    return out


def _catalog_findings(
    workload: str,
    params: Mapping[str, Any],
    metrics: Mapping[str, float],
    memory: Mapping[str, int | None],
    spec: GpuSpec,
) -> list[Finding]:
    out: list[Finding] = []
    if workload == "gemm":
        precision = str(params.get("precision", ""))
        peak = spec.peak_for(precision)
        if peak is not None:
            for name, unit in (("tflops", "TFLOP/s"), ("tops", "TOP/s")):
                v = metrics.get(name)
                if v is not None and v > peak:
                    out.append(
                        Finding(
                            ABOVE_CATALOG_PEAK,
                            f"gemm {precision}: {v:g} {unit} is above the catalog dense peak "
                            f"{peak:g} {unit} of {spec.slug}",
                        )
                    )
    if workload == "memory-bandwidth" and spec.bandwidth_gb_per_s is not None:
        v = metrics.get("bandwidth_gb_per_s")
        if v is not None and v > spec.bandwidth_gb_per_s:
            out.append(
                Finding(
                    ABOVE_CATALOG_PEAK,
                    f"copy bandwidth {v:g} GB/s is above the datasheet bandwidth "
                    f"{spec.bandwidth_gb_per_s:g} GB/s of {spec.slug}",
                )
            )
    mfu = metrics.get("mfu")
    if mfu is not None and mfu > 1.0:
        out.append(
            Finding(ABOVE_CATALOG_PEAK, f"MFU {mfu:g} is above 1 against the catalog peak of {spec.slug}")
        )
    usable = spec.usable_memory_bytes
    if usable is not None:
        for name in _MEMORY_FIELDS:
            b = memory.get(name)
            if b is not None and b > usable:
                out.append(
                    Finding(
                        ABOVE_USABLE_MEMORY,
                        f"{name} {b} B ({b / GIB:.2f} GiB) is above the usable memory {usable} B "
                        f"({usable / GIB:.2f} GiB) of {spec.slug}",
                    )
                )
    return out


@dataclass(frozen=True, slots=True)
class QuarantineState:
    quarantined: bool
    reason: str | None
    detail: str | None


NOT_QUARANTINED = QuarantineState(False, None, None)


def effective_state(
    *,
    check_reason: str | None,
    check_detail: str | None,
    outlier_detail: str | None,
    review_state: str | None,
    review_reason: str | None,
) -> QuarantineState:
    """Admin decisions win; then catalog checks; then the outlier test."""
    if review_state == REVIEW_QUARANTINED:
        return QuarantineState(True, ADMIN, review_reason)
    if review_state == REVIEW_RELEASED:
        return NOT_QUARANTINED
    if check_reason is not None:
        return QuarantineState(True, check_reason, check_detail)
    if outlier_detail is not None:
        return QuarantineState(True, STATISTICAL_OUTLIER, outlier_detail)
    return NOT_QUARANTINED


def in_outlier_baseline(
    status: str, check_reason: str | None, review_state: str | None, retracted: bool
) -> bool:
    """Which results form a cell's distribution for the MAD test: ok, not retracted, not
    quarantined for a non-statistical reason (an admin release puts a result back)."""
    if status != "ok" or retracted:
        return False
    if review_state == REVIEW_QUARANTINED:
        return False
    if review_state == REVIEW_RELEASED:
        return True
    return check_reason is None
