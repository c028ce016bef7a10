"""``POST /v1/recommend``: load from the read snapshot, search with the pure core, store the
answer once; ``GET /v1/recommendations/{id}``; pruning old answers.

A recommendation makes one watermark read (the snapshot) and one insert (the answer, skipped
by the database when the same question was already answered on the same data: the id is
derived from hash(question, data version)). Storing moves no watermark.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from service.core.catalog.models import ModelNotFound
from service.core.catalog.records import GpuRecord
from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.estimate import ESTIMATOR_VERSION, Job, benchmark_cell, build_job
from service.core.evidence.aggregate import CellView
from service.core.evidence.versions import DataVersion, Watermarks
from service.core.recommend import SEARCH_VERSION
from service.core.recommend.search import (
    Constraints,
    GpuNames,
    Pool,
    Recommendation,
    RecommendData,
    RecommendQuestion,
    StoredRecommendation,
)
from service.core.recommend.search import recommend as core_recommend
from service.db.uow import UnitOfWork
from service.usecases.catalog import resolve
from service.usecases.errors import CONFIGURATION, UNKNOWN_GPU, UNKNOWN_MODEL, FieldError, Invalid, NotFound
from service.usecases.estimate import invalid_configuration, measured_view
from service.usecases.read_model import ReadModel, Snapshot
from service.usecases.transaction import commits

__all__ = [
    "RecommendOutcome",
    "compute",
    "get_recommendation",
    "prune_recommendations",
    "recommend",
    "recommendation_id",
    "store_answer",
    "unstored",
]


@dataclass(frozen=True, slots=True)
class RecommendOutcome:
    """The core answer plus what the stored answer states about its inputs."""

    recommendation_id: str
    recommendation: Recommendation
    as_of: dt.datetime
    data_version: str
    watermarks: Watermarks
    calibration_watermark: int
    estimator_version: str = ESTIMATOR_VERSION


def recommendation_id(request: Mapping[str, Any], data_version: str, owner: int | None = None) -> str:
    """``rec_`` + 96 bits of sha256(asking key, canonical request JSON, data version, search
    version): the same question on the same data, models and search from the same asker gets
    the same id, so it is stored once; a new search stores its (possibly different) answer
    under a new id. Ids are not secrets: reading an answer a key asked for needs that key."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), default=str)
    key = f"{owner or ''}\n{canonical}\n{data_version}\n{SEARCH_VERSION}"
    return "rec_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def _names(snap: Snapshot) -> Mapping[str, GpuNames]:
    """Scheduler names per GPU from its aliases (GFD label, SkyPilot, short), once per catalog
    snapshot (its memo: a watermark alone names no catalog when one process reads two
    databases, as the tests' per-test copies do)."""
    found: dict[str, GpuNames] | None = snap.catalog.memo.get("scheduler_names")
    if found is None:
        found = {slug: _names_of(r) for slug, r in snap.catalog.records.items()}
        snap.catalog.memo["scheduler_names"] = found
    return found


def _names_of(r: GpuRecord) -> GpuNames:
    by_kind: dict[str, str] = {}
    for a in r.document.get("aliases") or []:
        by_kind.setdefault(str(a.get("kind")), str(a.get("name")))
    return GpuNames(gfd=by_kind.get("gfd"), skypilot=by_kind.get("skypilot"))


def _slugs(uow: UnitOfWork, read: ReadModel, names: tuple[str, ...], path: str) -> tuple[str, ...]:
    """Every slug each name stands for (an ambiguous name stands for all its variants)."""
    out: list[str] = []
    for i, name in enumerate(names):
        res = resolve(uow, read, name)
        if not res.slugs:
            hint = f"; did you mean {', '.join(res.close_matches)}?" if res.close_matches else ""
            msg = f"no GPU is known as {name!r}{hint}"
            raise Invalid(
                msg,
                fields=[FieldError(("constraints", path, i), msg, type=UNKNOWN_GPU)],
                close_matches=list(res.close_matches),
            )
        out.extend(sorted(res.slugs))
    return tuple(dict.fromkeys(out))


def _resolved(uow: UnitOfWork, read: ReadModel, c: Constraints) -> Constraints:
    pools = None
    if c.pools is not None:
        pools_out: list[Pool] = []
        for i, p in enumerate(c.pools):
            res = resolve(uow, read, p.gpu)
            slug = res.resolved or res.default_slug
            if slug is None:
                msg = (
                    f"no GPU is known as {p.gpu!r}"
                    if not res.slugs
                    else f"{p.gpu!r} names {len(res.slugs)} GPUs ({', '.join(sorted(res.slugs))}); pick one"
                )
                raise Invalid(
                    msg, fields=[FieldError(("constraints", "inventory", i, "gpu"), msg, type=UNKNOWN_GPU)]
                )
            pools_out.append(replace(p, gpu=slug))
        pools = tuple(pools_out)
    return replace(
        c,
        allowed_gpus=_slugs(uow, read, c.allowed_gpus, "allowed_gpus")
        if c.allowed_gpus is not None
        else None,
        excluded_gpus=_slugs(uow, read, c.excluded_gpus, "excluded_gpus"),
        pools=pools,
    )


def _job(q: RecommendQuestion) -> Job:
    try:
        return build_job(q.job)
    except ModelNotFound as exc:
        raise Invalid(
            str(exc),
            fields=[FieldError(("workload", "model"), str(exc), type=UNKNOWN_MODEL)],
            close_matches=exc.close_matches,
        ) from None
    except InvalidConfiguration as exc:
        raise _invalid(exc) from None


def _invalid(exc: InvalidConfiguration) -> Invalid:
    """A core refusal, its field placed under ``workload`` unless it names its section."""
    field = exc.field
    path: tuple[str | int, ...] = tuple(field.split(".")) if "." in field else ("workload", field)
    err = invalid_configuration(exc)
    return Invalid(err.detail, fields=[FieldError(path, exc.message, type=CONFIGURATION)], **err.extra)


def compute(
    uow: UnitOfWork,
    read: ReadModel,
    q: RecommendQuestion,
    request: Mapping[str, Any],
    *,
    now: dt.datetime,
    price_stale_days: int | None = None,
    owner: int | None = None,
) -> RecommendOutcome:
    """The answer, not stored (the CLI, and the first half of :func:`recommend`). Prices are
    read from the snapshot's price book of ``now``'s day."""
    job = _job(q)
    snap = read.snapshot(uow)
    q = replace(q, constraints=_resolved(uow, read, q.constraints))
    if price_stale_days is not None:
        q = replace(q, cost=replace(q.cost, stale_after_days=price_stale_days))
    measured_gpus = snap.measurements.by_gpu
    k = read.min_points

    def measured(gpu: GpuSpec, j: Job) -> CellView | None:
        if gpu.slug not in measured_gpus:
            return None
        return measured_view(snap, gpu.slug, benchmark_cell(j), k)

    data = RecommendData(
        specs=snap.catalog.specs,
        calibrations=snap.calibrations,
        names=_names(snap),
        measured=measured,
        prices=snap.price_book(now.date()),
    )
    try:
        rec = core_recommend(job, q, data)
    except InvalidConfiguration as exc:
        raise _invalid(exc) from None
    version = str(DataVersion(snap.watermarks, ESTIMATOR_VERSION))
    return RecommendOutcome(
        recommendation_id=recommendation_id(request, version, owner),
        recommendation=rec,
        as_of=now,
        data_version=version,
        watermarks=snap.watermarks,
        calibration_watermark=snap.calibration_watermark,
    )


@commits
def recommend(
    uow: UnitOfWork,
    read: ReadModel,
    q: RecommendQuestion,
    request: Mapping[str, Any],
    *,
    now: dt.datetime,
    present: Callable[[RecommendOutcome], dict[str, Any]],
    price_stale_days: int | None = None,
    owner: int | None = None,
) -> tuple[RecommendOutcome, dict[str, Any]]:
    """Compute, then store the answer ``present`` makes of it for ``owner`` (the asking key's
    id; one insert, skipped when this id is already stored). Returns the outcome and the
    stored document."""
    outcome = compute(uow, read, q, request, now=now, price_stale_days=price_stale_days, owner=owner)
    doc = present(outcome)
    _add_answer(uow, outcome, doc, request, now=now, owner=owner)
    return outcome, doc


# ---- issue 26: storing an answer is best-effort ----------------------------------------------
# The API computes on a read transaction (no write lock held during the search; a read-only or
# full disk does not stop it) and then stores with store_answer in a short write transaction of
# its own. When the database cannot write, the answer is still given, without an id and saying
# why (unstored) -- the recommendation itself needs no disk.


def _add_answer(
    uow: UnitOfWork,
    outcome: RecommendOutcome,
    doc: Mapping[str, Any] | str,
    request: Mapping[str, Any],
    *,
    now: dt.datetime,
    owner: int | None,
) -> None:
    uow.recommendations.add(
        outcome.recommendation_id,
        api_key_id=owner,
        data_version=outcome.data_version,
        request=dict(request),
        response=doc if isinstance(doc, str) else dict(doc),
        created_at=now,
    )


@commits
def store_answer(
    uow: UnitOfWork,
    outcome: RecommendOutcome,
    request: Mapping[str, Any],
    *,
    now: dt.datetime,
    owner: int | None,
    doc_json: str,
) -> None:
    """Store an answer computed by :func:`compute` (one insert, skipped when stored before);
    ``doc_json``: the document as sent, already serialised, stored as it is."""
    _add_answer(uow, outcome, doc_json, request, now=now, owner=owner)


def unstored(doc: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """The answer as sent when it could not be stored: no id, and why."""
    return {**doc, "recommendation_id": None, "not_stored": f"the answer was not stored: {reason}"}


def get_recommendation(
    uow: UnitOfWork, rec_id: str, *, reader: int | None, admin: bool = False
) -> StoredRecommendation:
    """A stored answer. One asked with a key is read with that key (or an admin's); to anyone
    else it does not exist (404, the same as an unknown id: nothing is revealed)."""
    found = uow.recommendations.get(rec_id)
    if found is None or (found.api_key_id is not None and not admin and reader != found.api_key_id):
        raise NotFound(f"no stored recommendation {rec_id!r} (answers are kept for a limited time)")
    return found


@commits
def prune_recommendations(uow: UnitOfWork, *, retention_days: int, now: dt.datetime) -> int:
    """Delete stored answers older than ``retention_days``; the number deleted."""
    return uow.recommendations.prune(now - dt.timedelta(days=retention_days))
