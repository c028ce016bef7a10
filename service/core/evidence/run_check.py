"""The one vocabulary check of a benchmark run, used by the ingestion use case (and so the
API and the bootstrap) and by the agent before it sends: known workload, parameters, metrics
and units, finite non-negative numbers, fingerprint completeness, a PCI device id.

Every violation is collected with its path inside the run (``results.17.metrics.throughput.unit``),
then one :class:`RunInvalid` names them all: a client fixes a run in one round trip. What
passes comes back canonicalised (:class:`PreparedRun`): parameters, their hash and JSON, the
checked fingerprint and its hash.

Pure: the clock (``received_at``) and any cache of canonical parameters are passed in.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from math import isfinite
from typing import Any, NamedTuple

from service.core.catalog.fingerprint import check_fingerprint, fingerprint_hash, normalise_pci_id
from service.core.catalog.vocabulary import (
    FINGERPRINT_FIELDS,
    FINGERPRINT_NULLABLE,
    FINGERPRINT_REQUIRED,
    FINGERPRINT_UNHASHED,
    WORKLOADS,
    VocabularyError,
    WorkloadDef,
    canonical_parameters,
    check_metric,
    check_number,
    get_workload,
    parameters_identity,
    suite_definition_hash,
)
from service.core.evidence.results import NewResult
from service.core.evidence.submission import ResultSubmission, RunSubmission

Loc = tuple[str | int, ...]

CanonicalParameters = tuple[dict[str, Any], str, str]
"""Canonical parameters, their hash and their JSON (:func:`canonicalise`)."""

Canonicaliser = Callable[[str, Mapping[str, Any]], CanonicalParameters]


class RunProblem(NamedTuple):
    """One field at fault: its path inside the run and what is wrong."""

    loc: Loc
    message: str


class RunInvalid(ValueError):
    """A run outside the vocabulary; ``problems`` names every field at fault, in body order."""

    def __init__(self, problems: tuple[RunProblem, ...]) -> None:
        super().__init__("; ".join(f"{dotted(p.loc)}: {p.message}" for p in problems[:5]))
        self.problems = problems


def dotted(loc: Loc) -> str:
    """``("results", 3, "workload")`` -> ``results.3.workload``."""
    return ".".join(str(p) for p in loc)


@dataclass(frozen=True, slots=True)
class PreparedRun:
    """A run that passed the vocabulary check, canonicalised and ready to place and store."""

    run: RunSubmission
    pci_device_id: str
    fingerprint: dict[str, Any]
    fingerprint_hash: str
    stack_fields: dict[str, Any]
    results: tuple[NewResult, ...]
    warnings: tuple[str, ...] = ()


def canonicalise(workload: str, params: Mapping[str, Any]) -> CanonicalParameters:
    """Canonical parameters of a known workload with their hash and JSON (one serialisation)."""
    canon = canonical_parameters(workload, params, ("parameters",), typed=True)
    return (canon, *parameters_identity(workload, canon))


# metric units by (workload, metric) for the fast path of the unit check
_UNITS: dict[tuple[str, str], str] = {(w.name, m.name): m.unit for w in WORKLOADS.values() for m in w.metrics}


def aware(value: dt.datetime | None) -> dt.datetime | None:
    if value is None:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)


def _main_value(w: WorkloadDef, metrics: Mapping[str, float]) -> float | None:
    """The workload's main metric, else the first metric it defines that was reported
    (``tops`` for an integer GEMM)."""
    if w.main_metric in metrics:
        return metrics[w.main_metric]
    for m in w.metrics:
        if m.name in metrics:
            return metrics[m.name]
    return None


def _fingerprint(fp: Mapping[str, Any], problems: list[RunProblem]) -> dict[str, Any]:
    """Every missing or unknown key first (one answer names them all), then the value checks."""
    before = len(problems)
    for key in FINGERPRINT_REQUIRED:
        if key not in fp or fp[key] is None or fp[key] == "":
            problems.append(RunProblem(("fingerprint", key), f"fingerprint field {key!r} is required"))
    for key in FINGERPRINT_NULLABLE:
        if key not in fp:
            problems.append(
                RunProblem(
                    ("fingerprint", key), f"fingerprint field {key!r} is required (null where not applicable)"
                )
            )
    for key in fp:
        if key not in FINGERPRINT_FIELDS:
            problems.append(RunProblem(("fingerprint", key), f"unknown fingerprint field {key!r}"))
    if len(problems) > before:
        return {}
    try:
        return check_fingerprint(fp)
    except VocabularyError as exc:
        problems.append(RunProblem(exc.loc, exc.message))
        return {}


def _result(
    i: int,
    r: ResultSubmission,
    run_time: dt.datetime,
    canonical: Canonicaliser,
    problems: list[RunProblem],
) -> NewResult | None:
    """One result checked and canonicalised, or ``None`` with its problems recorded."""
    base: Loc = ("results", i)
    try:
        w = get_workload(r.workload, (*base, "workload"))
    except VocabularyError as exc:
        problems.append(RunProblem(exc.loc, exc.message))
        return None
    before = len(problems)
    hit: CanonicalParameters | None = None
    try:
        hit = canonical(w.name, r.parameters)
    except VocabularyError as exc:
        problems.append(RunProblem((*base, *exc.loc), exc.message))
    metrics: dict[str, float] = {}
    for name, mv in r.metrics.items():
        value, unit = mv.value, _UNITS.get((w.name, name))
        if unit is not None and unit == mv.unit and value >= 0 and isfinite(value):  # the common case
            metrics[name] = value
            continue
        try:
            metrics[name] = check_metric(w.name, name, value, mv.unit, (*base, "metrics", name))
        except VocabularyError as exc:
            problems.append(RunProblem(exc.loc, exc.message))
    memory: dict[str, int | None] = {
        "peak_allocated_bytes": r.peak_allocated_bytes,
        "peak_reserved_bytes": r.peak_reserved_bytes,
        "nvml_used_bytes": r.nvml_used_bytes,
    }
    for fname, v in [*memory.items(), ("step_time_s", r.step_time_s)]:
        if v is None or (v >= 0 and isfinite(v)):  # the common case, without a call
            continue
        try:
            check_number(v, (*base, fname), fname)
        except VocabularyError as exc:
            problems.append(RunProblem(exc.loc, exc.message))
    if len(problems) > before or hit is None:
        return None
    if r.step_time_s is not None and "step_time_s" in {m.name for m in w.metrics}:
        metrics.setdefault("step_time_s", float(r.step_time_s))
    return NewResult(
        position=i,
        workload=w.name,
        params=hit[0],
        params_hash=hit[1],
        params_json=hit[2],
        status=r.status,
        metrics=metrics,
        main_value=_main_value(w, metrics) if r.status == "ok" else None,
        step_time_s=r.step_time_s,
        memory=memory,
        repeats=r.repeats,
        error=r.error,
        measured_at=aware(r.measured_at) or run_time,
    )


def _warnings(run: RunSubmission, fp: Mapping[str, Any], pci: str) -> tuple[str, ...]:
    """What is kept but worth telling the agent: a stack that disagrees with itself."""
    out: list[str] = []
    if fp.get("suite_version") != run.suite_version:
        out.append(
            f"fingerprint.suite_version {fp.get('suite_version')!r} differs from suite_version {run.suite_version!r}"
        )
    if fp.get("workload_definition_hash") != suite_definition_hash():
        out.append(
            "fingerprint.workload_definition_hash is not this service's suite definition hash "
            f"({suite_definition_hash()}); results are kept under their own fingerprint"
        )
    fp_pci = fp.get("pci_device_id")
    if isinstance(fp_pci, str) and pci and fp_pci != pci:
        out.append(f"fingerprint.pci_device_id {fp_pci} differs from gpu.pci_device_id {pci}")
    return tuple(out)


def check_run(
    run: RunSubmission, *, received_at: dt.datetime, canonical: Canonicaliser = canonicalise
) -> PreparedRun:
    """The run checked against the vocabulary and canonicalised; :class:`RunInvalid` naming
    every problem otherwise. ``canonical`` may be a cached :func:`canonicalise`."""
    problems: list[RunProblem] = []
    fp = _fingerprint(run.fingerprint, problems)
    pci = ""
    try:
        pci = normalise_pci_id(run.gpu.pci_device_id, ("gpu", "pci_device_id"))
    except VocabularyError as exc:
        problems.append(RunProblem(exc.loc, exc.message))
    run_time = aware(run.finished_at) or aware(run.started_at) or received_at
    results = [_result(i, r, run_time, canonical, problems) for i, r in enumerate(run.results)]
    if problems:
        raise RunInvalid(tuple(problems))
    return PreparedRun(
        run=run,
        pci_device_id=pci,
        fingerprint=fp,
        fingerprint_hash=fingerprint_hash(fp),
        stack_fields={k: v for k, v in fp.items() if k not in FINGERPRINT_UNHASHED},
        results=tuple(r for r in results if r is not None),
        warnings=_warnings(run, fp, pci),
    )
