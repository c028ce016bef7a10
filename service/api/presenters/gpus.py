"""GPU catalog answers: the wire model of a GPU with its links, the response with its ETag
and ``X-Data-Version`` headers and resolution warnings, candidates of an ambiguous name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi.responses import JSONResponse

from service.core.catalog.records import GpuCandidate, GpuRecord, GpuWarning
from service.schemas.gpus import GpuOut


def gpu_url(slug: str) -> str:
    return f"/v1/gpus/{slug}"


def gpu_links(slug: str) -> dict[str, str]:
    base = gpu_url(slug)
    return {"self": base, "prices": f"{base}/prices", "measurements": f"{base}/measurements"}


def gpu_out(record: GpuRecord) -> GpuOut:
    return GpuOut.from_core(record, links=gpu_links(record.slug))


def warning_json(w: GpuWarning) -> dict[str, Any]:
    return {"code": w.code, "message": w.message, "data": dict(w.data)}


def candidate_json(c: GpuCandidate) -> dict[str, Any]:
    return {"slug": c.slug, "name": c.name, "url": gpu_url(c.slug), "default": c.default}


_BODIES: dict[tuple[str, str], dict[str, Any]] = {}
"""Serialised GPU documents by (slug, ETag): an ETag names one revision of one document, so
a cached body is never stale; bounded (the catalog has tens of GPUs)."""


def gpu_body(record: GpuRecord) -> dict[str, Any]:
    key = (record.slug, record.etag)
    body = _BODIES.get(key)
    if body is None:
        if len(_BODIES) > 4096:
            _BODIES.clear()
        body = _BODIES[key] = gpu_out(record).model_dump(mode="json")
    return body


def gpu_response(
    record: GpuRecord, data_version: str, *, warnings: Sequence[GpuWarning] = (), status_code: int = 200
) -> JSONResponse:
    """The GPU as served: ``GpuOut`` plus ``warnings`` when resolving its name assumed
    something; ``ETag`` and ``X-Data-Version`` headers."""
    body = gpu_body(record)
    if warnings:
        body = dict(body)
        body["warnings"] = [warning_json(w) for w in warnings]
    headers = {"ETag": record.etag, "X-Data-Version": str(data_version)}
    return JSONResponse(body, status_code=status_code, headers=headers)
