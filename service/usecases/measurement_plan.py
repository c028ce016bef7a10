"""``GET /v1/measurement-plan``: the cells agents should measure next (issue 27).

Load: the read snapshot (catalog, measured cells, calibrations) and the recent stored
recommendations (their ids, then the documents of those not memoised). Compute: for each stored
question, the job as asked on each GPU its answer offered (the first :data:`GPUS_PER_QUESTION`
options), its band now and once the exact benchmark cell is measured (:func:`service.core.estimation.measurement_value.band_gain`); the
last measurement of every measured cell (for staleness); the ranking
(:func:`service.core.evidence.measurement_plan.rank_cells`). Read-only: nothing here commits.

Only stored recommendations are questions here: ``/v1/estimate`` answers are not stored.
A question whose job no preset benchmark cell measures (a model given by config or size, a
pipeline-parallel or non-eager training stack, tensor-parallel or rate-driven serving) is
counted, not planned: no single measurement answers it exactly.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from service.core.access.cursor import decode_position, encode_position
from service.core.catalog.models import ModelNotFound
from service.core.catalog.vocabulary import SUITE_VERSION
from service.core.errors import InvalidConfiguration
from service.core.estimation.estimate import benchmark_cell, build_job
from service.core.estimation.measurement_value import band_gain
from service.core.evidence.measurement_plan import Demand, LastMeasurement, PlanCell, rank_cells
from service.core.recommend.search import RecommendQuestion, StoredRecommendation
from service.db.uow import UnitOfWork
from service.usecases.catalog import resolve
from service.usecases.errors import NotFound
from service.usecases.estimate import data_version, measured_view
from service.usecases.read_model import ReadModel, Snapshot

__all__ = ["GPUS_PER_QUESTION", "MAX_QUESTIONS", "MeasurementPlan", "measurement_plan"]

MAX_QUESTIONS = 200
"""The newest stored recommendations read per plan: bounds the work (two estimates per question
and GPU) whatever the table holds."""
GPUS_PER_QUESTION = 5
"""GPUs of an answer whose band is considered: its first options (what the asker is choosing among)."""

QuestionOf = Callable[[Mapping[str, Any]], RecommendQuestion]
"""Turns a stored request document into the core question (the route passes the wire model's
parser); raises ``ValueError`` for a document that no longer parses."""


@dataclass(frozen=True, slots=True)
class MeasurementPlan:
    cells: tuple[PlanCell, ...]  # this page, in plan order
    position: int  # of the first cell of the page in the whole plan
    total: int  # cells on the whole plan (after the filters)
    next_cursor: str | None
    questions: int  # stored recommendations read
    questions_without_cell: int  # ... whose job no preset benchmark cell measures
    questions_unreadable: int  # ... whose stored request no longer parses
    visible_question_ids: frozenset[str]  # the ids the reader may see (its own; all for an admin)
    gpu_names: Mapping[str, str]  # slug -> name, of the page's GPUs
    since: dt.datetime
    suite_version: str
    data_version: str


@dataclass(frozen=True, slots=True)
class _Asked:
    """One stored question's demands (memoised per snapshot and question)."""

    asker_key_id: int | None
    demands: tuple[Demand, ...]
    without_cell: bool
    unreadable: bool


def _option_slugs(response: Mapping[str, Any], snap: Snapshot) -> list[str]:
    out: list[str] = []
    for o in response.get("options") or []:
        slug = (o.get("gpu") or {}).get("slug") if isinstance(o, Mapping) else None
        if isinstance(slug, str) and slug in snap.catalog.specs and slug not in out:
            out.append(slug)
        if len(out) == GPUS_PER_QUESTION:
            break
    return out


def _asked(snap: Snapshot, rec: StoredRecommendation, question_of: QuestionOf, k: int) -> _Asked:
    try:
        job = build_job(question_of(rec.request).job)
    except (ValueError, ModelNotFound, InvalidConfiguration):
        return _Asked(rec.api_key_id, (), False, True)
    cell = benchmark_cell(job)
    if cell is None:
        return _Asked(rec.api_key_id, (), True, False)
    workload, params, params_hash = cell
    demands: list[Demand] = []
    for slug in _option_slugs(rec.response, snap):
        gain = band_gain(snap.catalog.specs[slug], job, snap.calibrations, measured_view(snap, slug, cell, k))
        if gain is None:
            continue
        demands.append(
            Demand(
                question_id=rec.id,
                asker_key_id=rec.api_key_id,
                asked_at=rec.created_at,
                gpu_slug=slug,
                workload=workload,
                parameters=params,
                parameters_hash=params_hash,
                metric=gain.metric,
                provenance=gain.provenance,
                band_now_pct=gain.now_pct,
                band_after_pct=gain.after_pct,
            )
        )
    return _Asked(rec.api_key_id, tuple(demands), False, False)


def _last_measurements(snap: Snapshot) -> tuple[LastMeasurement, ...]:
    """Every measured cell of a live GPU: its newest stack's time and versions (memoised)."""
    m = snap.measurements
    key = ("measurement-plan-last", snap.catalog.watermark)
    found: tuple[LastMeasurement, ...] | None = m.memo.get(key)
    if found is not None:
        return found
    out: list[LastMeasurement] = []
    for (slug, workload, params_hash), c in m.cells.items():
        if slug not in snap.catalog.specs or not c.stacks:
            continue
        newest = max(c.stacks, key=lambda s: (s.newest, s.fingerprint_hash))
        fp = m.fingerprints.get(newest.fingerprint_hash) or {}
        engines = fp.get("engine_versions") or {}
        out.append(
            LastMeasurement(
                gpu_slug=slug,
                workload=workload,
                parameters=c.params,
                parameters_hash=params_hash,
                measured_at=newest.newest,
                suite_version=fp.get("suite_version"),
                engine_versions={str(e): str(v) for e, v in engines.items() if v}
                if isinstance(engines, Mapping)
                else {},
            )
        )
    found = m.memo[key] = tuple(out)
    return found


def _gpu_slugs(uow: UnitOfWork, read: ReadModel, gpu: str) -> frozenset[str]:
    """Every slug the name stands for (an agent passes its PCI device id, which variants share);
    an unknown name is a 404 with close matches, as for the other GPU filters."""
    res = resolve(uow, read, gpu)
    if not res.slugs:
        hint = f"; did you mean {', '.join(res.close_matches)}?" if res.close_matches else ""
        raise NotFound(f"gpu: no GPU is known as {gpu!r}{hint}", close_matches=list(res.close_matches))
    return frozenset(res.slugs)


def _questions(
    uow: UnitOfWork, snap: Snapshot, question_of: QuestionOf, k: int, since: dt.datetime
) -> dict[str, _Asked]:
    """The recent stored questions' demands by id: memoised per snapshot (catalog and calibration
    watermarks) and question, so only the answers not seen before are read and estimated."""
    ids = uow.recommendations.recent_ids(since, MAX_QUESTIONS)
    memo = snap.measurements.memo

    def key(qid: str) -> tuple[Any, ...]:
        return ("measurement-plan", snap.catalog.watermark, snap.calibration_watermark, qid)

    for rec in uow.recommendations.get_many([i for i in ids if key(i) not in memo]):
        memo[key(rec.id)] = _asked(snap, rec, question_of, k)
    return {i: memo[key(i)] for i in ids if key(i) in memo}  # one pruned meanwhile is left out


def _filtered(
    cells: Iterable[PlanCell], slugs: frozenset[str] | None, workload: str | None
) -> list[PlanCell]:
    return [
        c
        for c in cells
        if (slugs is None or c.gpu_slug in slugs) and (workload is None or c.workload == workload)
    ]


def measurement_plan(
    uow: UnitOfWork,
    read: ReadModel,
    question_of: QuestionOf,
    *,
    now: dt.datetime,
    since_days: int,
    gpu: str | None = None,
    workload: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
    reader: int | None = None,
    admin: bool = False,
) -> MeasurementPlan:
    """The plan's page: filters by GPU (slug, alias or PCI id; every GPU a name stands for) and
    workload, ``limit`` cells from the position ``cursor`` names."""
    slugs = _gpu_slugs(uow, read, gpu) if gpu is not None else None
    snap = read.snapshot(uow)
    since = now - dt.timedelta(days=since_days)
    asked = _questions(uow, snap, question_of, read.min_points, since)
    ranked = rank_cells(
        (d for a in asked.values() for d in a.demands), _last_measurements(snap), suite_version=SUITE_VERSION
    )
    cells = _filtered(ranked, slugs, workload)
    start = decode_position(cursor)[0] if cursor else 0
    page = tuple(cells[start : start + limit])
    return MeasurementPlan(
        cells=page,
        position=start,
        total=len(cells),
        next_cursor=encode_position(start + limit) if start + limit < len(cells) else None,
        questions=len(asked),
        questions_without_cell=sum(a.without_cell for a in asked.values()),
        questions_unreadable=sum(a.unreadable for a in asked.values()),
        gpu_names={c.gpu_slug: snap.catalog.records[c.gpu_slug].name for c in page},
        visible_question_ids=frozenset(
            qid for qid, a in asked.items() if admin or (reader is not None and a.asker_key_id == reader)
        ),
        since=since,
        suite_version=SUITE_VERSION,
        data_version=data_version(snap),
    )
