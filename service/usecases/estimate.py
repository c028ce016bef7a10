"""``/v1/estimate``: resolve the GPU and the model, take the calibrations and the exact
measured cell from the read snapshot, call the pure :func:`service.core.estimation.estimate.estimate`.

The snapshot (:mod:`service.usecases.read_model`) holds every measured cell's stack summaries
and the calibrations fitted from them (per GPU, workload and precision family, from each
cell's latest-measured medians -- DESIGN's one rule); an estimate makes one database round
trip, the watermark read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from service.core.catalog.models import ModelNotFound
from service.core.errors import InvalidConfiguration
from service.core.estimation.estimate import (
    ESTIMATOR_VERSION,
    Estimate,
    JobSpec,
    Notice,
    benchmark_cell,
    build_job,
)
from service.core.estimation.estimate import estimate as core_estimate
from service.core.evidence.aggregate import CellView
from service.core.evidence.versions import DataVersion
from service.core.pricing.token_cost import TokenCosts, serving_token_costs
from service.db.uow import UnitOfWork
from service.usecases.catalog import resolve_gpu
from service.usecases.errors import (
    CONFIGURATION,
    UNKNOWN_GPU,
    UNKNOWN_MODEL,
    Ambiguous,
    FieldError,
    Invalid,
    NotFound,
    UseCaseError,
)
from service.usecases.read_model import ReadModel, Snapshot

__all__ = ["EstimateResult", "estimate", "estimate_batch", "invalid_configuration", "measured_view"]


@dataclass(frozen=True, slots=True)
class EstimateResult:
    """The core estimate plus what the answer states about its inputs."""

    estimate: Estimate
    warnings: tuple[Notice, ...]
    as_of: dt.datetime
    data_version: str
    calibration_watermark: int = 0
    estimator_version: str = ESTIMATOR_VERSION
    token_costs: TokenCosts | None = None
    """Cost per million input / output tokens when the request priced a GPU-hour."""


def invalid_configuration(exc: InvalidConfiguration) -> Invalid:
    extra = {"reason_code": exc.code} if exc.code else {}
    path = tuple(exc.field.split("."))  # a nested field ("lora.max_loras") as its path
    return Invalid(exc.message, fields=[FieldError(path, exc.message, type=CONFIGURATION)], **extra)


def measured_view(snap: Snapshot, slug: str, cell: tuple[str, object, str] | None, k: int) -> CellView | None:
    """The latest-measured view of a benchmark cell on a GPU, from the snapshot."""
    if cell is None:
        return None
    workload, _, params_hash = cell
    found = snap.measurements.cell(slug, workload, params_hash)
    return found.view(k) if found is not None else None


def data_version(snap: Snapshot) -> str:
    return str(DataVersion(snap.watermarks, ESTIMATOR_VERSION))


def estimate(
    uow: UnitOfWork, read: ReadModel, spec: JobSpec, gpu: str, *, now: dt.datetime
) -> EstimateResult:
    """One configuration on one GPU. Refusals name the field (``model``, ``gpu``, ...)."""
    try:
        job = build_job(spec)
    except ModelNotFound as exc:
        raise Invalid(
            str(exc),
            fields=[FieldError(("model",), str(exc), type=UNKNOWN_MODEL)],
            close_matches=exc.close_matches,
        ) from None
    except InvalidConfiguration as exc:
        raise invalid_configuration(exc) from None
    try:
        resolved = resolve_gpu(uow, read, gpu, use_default=True)
    except (NotFound, Ambiguous) as exc:
        raise Invalid(
            exc.detail,
            fields=[FieldError(("gpu",), exc.detail, type=UNKNOWN_GPU)],
            **{k: v for k, v in exc.extra.items() if k != "query"},
        ) from None
    snap = read.snapshot(uow)
    spec_of_gpu = snap.catalog.specs[resolved.record.slug]
    cell = benchmark_cell(job)
    measured = measured_view(snap, spec_of_gpu.slug, cell, read.min_points)
    try:
        est = core_estimate(
            spec_of_gpu,
            job,
            snap.calibrations,
            measured,
            measured_on=lambda slug: measured_view(snap, slug, cell, read.min_points),
        )
    except InvalidConfiguration as exc:
        raise invalid_configuration(exc) from None
    found = tuple(Notice(w.code, w.message, dict(w.data)) for w in resolved.warnings)
    sv = est.serving
    costs = (
        serving_token_costs(
            spec.price_per_gpu_hour,
            est.job.config.gpu_count,
            sv.input_tokens_per_s,
            sv.output_tokens_per_s,
            sv.prefill_time_share,
        )
        if sv is not None
        else None
    )
    return EstimateResult(
        token_costs=costs,
        estimate=est,
        warnings=(*found, *est.warnings),
        as_of=now,
        data_version=data_version(snap),
        calibration_watermark=snap.calibration_watermark,
    )


def estimate_batch(
    uow: UnitOfWork,
    read: ReadModel,
    items: Sequence[tuple[JobSpec, str]],
    *,
    now: dt.datetime,
) -> list[EstimateResult | UseCaseError]:
    """Each item's answer, or the refusal the single call would give (field paths under
    ``items.<i>``)."""
    out: list[EstimateResult | UseCaseError] = []
    for i, (spec, gpu) in enumerate(items):
        try:
            out.append(estimate(uow, read, spec, gpu, now=now))
        except UseCaseError as exc:
            out.append(exc.at("items", i))
    return out
