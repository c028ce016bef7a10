"""``GET /v1/recommendations/{id}/artifacts``: a stored answer rendered for a scheduler.

Reads the answer as stored (so an artifact always matches what the caller was told, and is gone
when the answer is pruned) and the scheduler names of its GPUs from the current catalog; the
rendering is the pure :mod:`service.core.deploy`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.core.catalog.models import ModelNotFound, get_model
from service.core.catalog.records import GpuRecord
from service.core.deploy import (
    TARGETS,
    Artifact,
    NotRenderable,
    SchedulerNames,
    UnknownOption,
    plan_of,
    render,
)
from service.db.uow import UnitOfWork
from service.usecases.errors import FieldError, Invalid
from service.usecases.read_model import ReadModel
from service.usecases.recommend import get_recommendation

__all__ = ["TARGETS", "artifact", "checkpoint_of", "hub_id_of", "scheduler_names"]


def scheduler_names(r: GpuRecord) -> SchedulerNames:
    """A GPU's names for schedulers: the first catalog alias of each kind, and its PCI ids."""
    by_kind: dict[str, str] = {}
    for a in r.document.get("aliases") or []:
        by_kind.setdefault(str(a.get("kind")), str(a.get("name")))
    identity: Mapping[str, Any] = r.document.get("identity") or {}
    return SchedulerNames(
        vendor=str(r.document.get("vendor") or r.slug.split("-", 1)[0]),
        gfd=by_kind.get("gfd"),
        skypilot=by_kind.get("skypilot"),
        pci_device_ids=tuple(str(d) for d in identity.get("pci_device_ids") or ()),
    )


def hub_id_of(asked: object) -> str | None:
    """The Hugging Face id an artifact loads for the model a question named: the id itself, or
    a preset's (``llama3-8b`` -> ``meta-llama/Meta-Llama-3-8B``: the preset id loads nowhere);
    None where neither is known."""
    if not isinstance(asked, str):
        return None
    if "/" in asked:
        return asked
    try:
        return get_model(asked).hf_id
    except ModelNotFound:
        return None


def checkpoint_of(asked: object) -> str:
    """The weight format the named model's checkpoint ships in (``none`` where unknown)."""
    if not isinstance(asked, str):
        return "none"
    try:
        m = get_model(asked)
    except ModelNotFound:
        return "none"
    return getattr(m, "checkpoint_format", "none")


def artifact(
    uow: UnitOfWork,
    read: ReadModel,
    rec_id: str,
    *,
    target: str,
    rank: int,
    reader: int | None,
    admin: bool = False,
) -> tuple[Artifact, str, str]:
    """The artifact, with the answer's id and data version (who may read the answer may read
    its artifacts; anyone else gets the answer's own 404)."""
    stored = get_recommendation(uow, rec_id, reader=reader, admin=admin)
    records = read.snapshot(uow).catalog.records
    slugs = {str(o["gpu"]["slug"]) for o in stored.response.get("options") or ()}
    names = {s: scheduler_names(records[s]) for s in slugs if s in records}
    asked = (stored.request.get("workload") or {}).get("model")
    plan = plan_of(
        {**stored.response, "recommendation_id": stored.id}, names, hub_id_of(asked), checkpoint_of(asked)
    )
    try:
        return render(plan, target, rank), stored.id, stored.data_version
    except UnknownOption as exc:
        raise Invalid(str(exc), fields=[FieldError(("option",), str(exc), "query")]) from None
    except NotRenderable as exc:
        raise Invalid(str(exc), fields=[FieldError(("target",), str(exc), "query")]) from None
