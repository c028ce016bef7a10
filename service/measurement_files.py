"""Committed measurement datasets: every ``*.json`` file of a directory (a JSON list of
benchmark runs) loaded at start-up, idempotently by run id, as the built-in trusted agent.

This is the bootstrap side of ingestion: each run is validated against the wire model
(:class:`~service.schemas.benchmarks.BenchmarkRunIn`) here, as the API layer does for a
submission, and reaches the use case as a core input. A run that does not validate or
conflicts with a stored one is reported and skipped; start-up goes on.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy import Engine

from service.db.engine import make_session_factory
from service.db.uow import UnitOfWork
from service.schemas.benchmarks import BenchmarkRunIn
from service.settings import Settings
from service.usecases import benchmarks
from service.usecases.errors import UseCaseError
from service.usecases.keys import Principal
from service.usecases.read_model import ReadModel

log = logging.getLogger("gpu_advisor.benchmarks")


@dataclass
class SeedMeasurementsReport:
    files: int = 0
    stored: int = 0
    replayed: int = 0
    refused: list[str] = field(default_factory=list)


def load_measurement_files(
    engine: Engine, settings: Settings, directory: Path | None = None
) -> SeedMeasurementsReport:
    """Load every ``*.json`` (a JSON list of ``BenchmarkRunIn`` objects) from the directory
    (default: ``settings.seed_measurements_dir``), each run in its own transaction."""
    report = SeedMeasurementsReport()
    d = directory if directory is not None else settings.seed_measurements_dir
    if d is None or not Path(d).is_dir():
        return report
    factory = make_session_factory(engine)
    cache = ReadModel(background=False)
    policy = settings.outlier_policy()
    principal: Principal | None = None  # created on first use: an empty directory writes nothing
    for path in sorted(Path(d).glob("*.json")):
        report.files += 1
        try:
            runs = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            report.refused.append(f"{path.name}: not readable JSON: {exc}")
            continue
        if not isinstance(runs, list):
            report.refused.append(f"{path.name}: expected a JSON list of runs")
            continue
        for i, raw in enumerate(runs):
            where = f"{path.name}[{i}]"
            try:
                body = BenchmarkRunIn.model_validate(raw)
            except ValidationError as exc:
                report.refused.append(f"{where}: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}")
                continue
            with UnitOfWork(factory, stack_window=settings.measurement_window) as uow:
                if principal is None:
                    principal = benchmarks.builtin_principal(uow)
                try:
                    out = benchmarks.submit_run(
                        uow,
                        cache,
                        principal,
                        body.to_core(),
                        policy=policy,
                        max_results=settings.max_results_per_run,
                    )
                except UseCaseError as exc:
                    report.refused.append(f"{where} ({body.run_id}): {exc.detail}")
                    continue
            if out.replayed:
                report.replayed += 1
            else:
                report.stored += 1
    for line in report.refused:
        log.warning("committed measurements: %s", line)
    log.info(
        "committed measurements: %d file(s), %d run(s) stored, %d already present, %d refused",
        report.files,
        report.stored,
        report.replayed,
        len(report.refused),
    )
    return report


def seed_measurements(engine: Engine, settings: Settings) -> None:
    """Bootstrap hook (``service.bootstrap.EXTRA_SEEDERS``)."""
    load_measurement_files(engine, settings)
