"""``GET /v1/recommendations/{id}/artifacts``: a stored answer rendered for a scheduler.

Reads the answer as stored (so an artifact always matches what the caller was told, and is gone
when the answer is pruned) and the scheduler names of its GPUs from the current catalog; the
rendering is the pure :mod:`service.core.deploy`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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

__all__ = ["TARGETS", "artifact", "scheduler_names"]


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
    hub_id = asked if isinstance(asked, str) and "/" in asked else None
    plan = plan_of({**stored.response, "recommendation_id": stored.id}, names, hub_id)
    try:
        return render(plan, target, rank), stored.id, stored.data_version
    except UnknownOption as exc:
        raise Invalid(str(exc), fields=[FieldError(("option",), str(exc), "query")]) from None
    except NotRenderable as exc:
        raise Invalid(str(exc), fields=[FieldError(("target",), str(exc), "query")]) from None
