"""GPU catalog answers: the wire model of a GPU with its links, the response with its ETag
and ``X-Data-Version`` headers and resolution warnings, candidates of an ambiguous name."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from service.api.presenters.notice_words import notice_text
from service.core.catalog.records import GpuCandidate, GpuRecord, GpuWarning, PriceView
from service.schemas.gpus import GpuOut, PriceOut, SuspectReasonOut

if TYPE_CHECKING:
    from fastapi import Response


def gpu_url(slug: str) -> str:
    return f"/v1/gpus/{slug}"


def gpu_links(slug: str) -> dict[str, str]:
    base = gpu_url(slug)
    return {"self": base, "prices": f"{base}/prices", "measurements": f"{base}/measurements"}


def gpu_out(record: GpuRecord) -> GpuOut:
    return GpuOut.model_validate(
        {
            **record.document,
            "origin": record.origin,
            "overridden_fields": record.overridden_fields,
            "revision": record.revision,
            "catalog_version": record.catalog_version,
            "updated_at": record.updated_at,
            "links": gpu_links(record.slug),
        }
    )


def warning_json(w: GpuWarning, lang: str = "en") -> dict[str, Any]:
    return {"code": w.code, "message": notice_text(w.code, w.message, w.data, lang), "data": dict(w.data)}


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
    record: GpuRecord,
    data_version: str,
    *,
    warnings: Sequence[GpuWarning] = (),
    status_code: int = 200,
    lang: str = "en",
) -> Response:
    """The GPU as served: ``GpuOut`` plus ``warnings`` when resolving its name assumed
    something; ``ETag`` and ``X-Data-Version`` headers."""
    # FastAPI only here: the CLI's compare and gpus use this module's JSON, not responses
    from service.api.answers import answer

    body = gpu_body(record)
    headers = {"ETag": record.etag}
    if warnings:
        body = dict(body)
        body["warnings"] = [warning_json(w, lang) for w in warnings]
        headers["Vary"] = "Accept-Language"  # the warnings' sentences; the entity (ETag) is the same
    return answer(body, data_version, status_code=status_code, headers=headers)


def price_out(view: PriceView) -> PriceOut:
    p = view.row
    return PriceOut(
        id=p.id,
        gpu_slug=p.gpu_slug,
        provider=p.provider,
        region=p.region,
        instance_type=p.instance_type,
        gpus_per_instance=p.gpus_per_instance,
        pricing_model=p.pricing_model,
        currency=p.currency,
        amount=p.amount,
        effective_date=p.effective_date,
        source=p.source,
        is_estimate=p.is_estimate,
        date_basis="retrieved" if p.date_basis == "retrieved" else "effective",
        age_is_lower_bound=p.date_basis == "retrieved",
        suspect=bool(view.suspect),
        suspect_reasons=SuspectReasonOut.of(view.suspect),
        per_gpu_hour=view.per_gpu_hour,
        age_days=view.age_days,
        stale=view.stale,
        converted=dict(view.converted),
        fx_date=view.fx_date,
    )
