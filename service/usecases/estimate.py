"""``/v1/estimate``: resolve the GPU and the model, load the calibrations and the exact
measured cell, call the pure :func:`service.core.estimate.estimate`.

Calibration (``service.core.calibration.fit_calibrations``) is fitted per (GPU, workload,
precision family) from every measured cell's latest-measured medians (DESIGN's one rule) and
cached by ``data_version`` (one cheap query per request keeps replicas current).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from service.core.aggregate import CellView, latest_measured
from service.core.calibration import CALIBRATED_WORKLOADS, CalibrationSet, CellMeasurement, fit_calibrations
from service.core.errors import InvalidConfiguration
from service.core.estimate import ESTIMATOR_VERSION, Estimate, JobSpec, Notice, benchmark_cell, build_job
from service.core.estimate import estimate as core_estimate
from service.core.models import ModelNotFound
from service.core.specs import GpuSpec
from service.db.uow import UnitOfWork
from service.usecases.catalog import AliasIndexCache, resolve_gpu
from service.usecases.errors import Ambiguous, FieldError, Invalid, NotFound, UseCaseError

__all__ = ["CalibrationCache", "EstimateResult", "estimate", "estimate_batch", "invalid_configuration"]


@dataclass(frozen=True, slots=True)
class EstimateResult:
    """The core estimate plus what the answer states about its inputs."""

    estimate: Estimate
    warnings: tuple[Notice, ...]
    as_of: dt.datetime
    data_version: int
    estimator_version: str = ESTIMATOR_VERSION


class CalibrationCache:
    """Fitted calibrations, refitted when ``data_version`` moves."""

    def __init__(self, min_points: int = 3) -> None:
        self._set: CalibrationSet | None = None
        self._version: int | None = None
        self.min_points = min_points

    def get(self, uow: UnitOfWork) -> CalibrationSet:
        v = uow.data_version()
        if self._set is None or self._version != v:
            self._set = fit_calibrations(_cell_measurements(uow, self.min_points))
            self._version = v
        return self._set


def _cell_measurements(uow: UnitOfWork, k: int) -> list[CellMeasurement]:
    out: list[CellMeasurement] = []
    for cell in uow.measurements.cells(CALIBRATED_WORKLOADS):
        view = latest_measured(cell.points, k)
        medians = {name: s.median for name, s in view.metrics.items()}
        if medians:
            out.append(CellMeasurement(gpu=cell.gpu, workload=cell.workload, params=cell.params, medians=medians))
    return out


def invalid_configuration(exc: InvalidConfiguration) -> Invalid:
    extra = {"reason_code": exc.code} if exc.code else {}
    return Invalid(exc.message, fields=[FieldError((exc.field,), exc.message)], **extra)


def _measured_view(uow: UnitOfWork, gpu: GpuSpec, cell: tuple[str, object, str] | None, k: int) -> CellView | None:
    if cell is None:
        return None
    workload, _, params_hash = cell
    points = uow.measurements.cell_points(gpu.slug, workload, params_hash)
    return latest_measured(points, k) if points else None


def estimate(
    uow: UnitOfWork, aliases: AliasIndexCache, cals: CalibrationCache, spec: JobSpec, gpu: str, *, now: dt.datetime
) -> EstimateResult:
    """One configuration on one GPU. Refusals name the field (``model``, ``gpu``, ...)."""
    try:
        job = build_job(spec)
    except ModelNotFound as exc:
        raise Invalid(str(exc), fields=[FieldError(("model",), str(exc))], close_matches=exc.close_matches) from None
    except InvalidConfiguration as exc:
        raise invalid_configuration(exc) from None
    try:
        resolved = resolve_gpu(uow, aliases, gpu, use_default=True)
    except (NotFound, Ambiguous) as exc:
        raise Invalid(exc.detail, fields=[FieldError(("gpu",), exc.detail)],
                      **{k: v for k, v in exc.extra.items() if k != "query"}) from None
    measured = _measured_view(uow, resolved.spec, benchmark_cell(job), cals.min_points)
    try:
        est = core_estimate(resolved.spec, job, cals.get(uow), measured)
    except InvalidConfiguration as exc:
        raise invalid_configuration(exc) from None
    found = tuple(Notice(w.code, w.message) for w in resolved.warnings)
    return EstimateResult(estimate=est, warnings=(*found, *est.warnings), as_of=now,
                          data_version=uow.data_version())


def estimate_batch(
    uow: UnitOfWork, aliases: AliasIndexCache, cals: CalibrationCache, items: Sequence[tuple[JobSpec, str]],
    *, now: dt.datetime,
) -> list[EstimateResult | UseCaseError]:
    """Each item's answer, or the refusal the single call would give (field paths under
    ``items.<i>``)."""
    out: list[EstimateResult | UseCaseError] = []
    for i, (spec, gpu) in enumerate(items):
        try:
            out.append(estimate(uow, aliases, cals, spec, gpu, now=now))
        except UseCaseError as exc:
            out.append(exc.at("items", i))
    return out
