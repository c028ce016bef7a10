"""GPU catalog routes: list, get by slug/alias/PCI id, admin create/update/delete, prices."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from fastapi import APIRouter, Body, Header, Path, Query, Response, status

from service.api import validation
from service.api.answers import answer
from service.api.conditional import etag_matches
from service.api.deps import AcceptLanguage, AdminAuth, ReadAuth, ReadDep, SettingsDep, UowDep
from service.api.offload import answer_from
from service.api.presenters.gpus import gpu_out, gpu_response, gpu_url, price_out
from service.api.presenters.recommend_words import language
from service.api.routing import UnitOfWorkRoute
from service.core.catalog.records import SORT_KEYS, GpuFilters
from service.schemas.common import INT64_MAX, CatalogCursor, JsonObject, NameStr, PageLimit, Problem, SafeStr
from service.schemas.gpus import (
    AmbiguousGpu,
    FxRateIn,
    GpuAnswer,
    GpuList,
    GpuOut,
    PriceIn,
    PriceList,
)
from service.usecases import catalog

router = APIRouter(prefix="/v1", tags=["gpus"], route_class=UnitOfWorkRoute)

SORT_PATTERN = rf"^-?(?:{'|'.join(sorted(SORT_KEYS))})$"
GpuName = Annotated[
    NameStr, Path(max_length=200, description="slug, alias (nvidia-smi name, GFD label, ...) or PCI id")
]
Slug = Annotated[SafeStr, Path(max_length=100, description="catalog slug")]
IF_MATCH_HELP = (
    "the GPU's current ETag (from GET), as given (a strong entity tag, or a comma-separated list of them); "
    "required: 428 without it, 412 when stale; `*` is refused (422): an edit names the version it changes"
)
IF_MATCH_PATTERN = r'^"[\x21\x23-\x7E]*"(?:[ \t]*,[ \t]*"[\x21\x23-\x7E]*")*$'
"""One or more strong entity tags (RFC 9110 section 8.8.3); not ``*``, not a weak tag."""


@router.get("/gpus", response_model=GpuList, operation_id="listGpus", summary="List catalog GPUs")
async def list_gpus(
    uow: UowDep,
    read: ReadDep,
    settings: SettingsDep,
    _auth: ReadAuth,
    vendor: Annotated[Literal["nvidia", "amd", "intel"] | None, Query()] = None,
    architecture: Annotated[
        SafeStr | None, Query(max_length=64, description="e.g. Hopper, Ada Lovelace")
    ] = None,
    min_usable_memory_bytes: Annotated[int | None, Query(ge=0, le=INT64_MAX)] = None,
    min_usable_memory_gib: Annotated[
        float | None,
        Query(
            ge=0,
            le=8e9,
            allow_inf_nan=False,
            description="convenience: GiB (2^30 B); at most 8e9 (a 64-bit byte count)",
        ),
    ] = None,
    supports: Annotated[
        list[Literal["fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "int4"]] | None,
        Query(description="repeatable; each must be 'yes'"),
    ] = None,
    form_factor: Annotated[Literal["pcie", "sxm", "oam"] | None, Query()] = None,
    nvlink_topology: Annotated[Literal["switched", "pairwise", "none"] | None, Query()] = None,
    sort: Annotated[
        str,
        Query(
            pattern=SORT_PATTERN,
            description="slug, usable_memory_bytes, bandwidth_gb_per_s, tdp_w, bf16_tflops, fp32_tflops, fp8_tflops, launch_year; prefix '-' for descending",
        ),
    ] = "slug",
    limit: Annotated[PageLimit | None, Query(ge=1, le=500)] = None,
    cursor: Annotated[CatalogCursor | None, Query()] = None,
) -> Response:
    min_mem = min_usable_memory_bytes
    if min_usable_memory_gib is not None:
        gib = int(min_usable_memory_gib * 2**30)
        min_mem = max(min_mem or 0, gib)
    filters = GpuFilters(
        vendor=vendor,
        architecture=architecture,
        min_usable_memory_bytes=min_mem,
        supports=tuple(supports or ()),
        form_factor=form_factor,
        nvlink_topology=nvlink_topology,
    )
    size = min(limit or settings.page_size_default, settings.page_size_max)
    page = await answer_from(
        uow,
        read,
        lambda: catalog.list_gpus(uow, read, filters, sort=sort, limit=size, cursor=cursor),
        calibrated=False,
    )
    items = [gpu_out(r) for r in page.items]
    version = uow.data_version()
    return answer(
        GpuList(items=items, next_cursor=page.next_cursor, count=len(items), data_version=version), version
    )


@router.get(
    "/gpus/{ident}",
    response_model=GpuAnswer,
    operation_id="getGpu",
    summary="Get a GPU by slug, alias (nvidia-smi, GFD label, SkyPilot name, short form) or PCI device id",
    responses={
        300: {"model": AmbiguousGpu, "description": "the name matches several GPUs; pick a candidate"},
        304: {"description": "not modified (If-None-Match matched the ETag)"},
        404: {"model": Problem, "description": "unknown name; `close_matches` lists near names"},
    },
)
async def get_gpu(
    ident: GpuName,
    uow: UowDep,
    cache: ReadDep,
    _auth: ReadAuth,
    on_ambiguous: Annotated[
        Literal["candidates", "default"],
        Query(
            description="'default' resolves an ambiguous name to its stated default, with an assumed_variant warning"
        ),
    ] = "candidates",
    if_none_match: Annotated[SafeStr | None, Header(max_length=2000)] = None,
    accept_language: AcceptLanguage = None,
) -> Response:
    use_default = on_ambiguous == "default"
    view = await answer_from(
        uow, cache, lambda: catalog.resolve_gpu(uow, cache, ident, use_default=use_default), calibrated=False
    )
    if etag_matches(if_none_match, view.etag):
        return Response(status_code=304, headers={"ETag": view.etag})
    return gpu_response(
        view.record, uow.data_version(), warnings=view.warnings, lang=language(accept_language)
    )


@router.post(
    "/gpus",
    response_model=GpuOut,
    status_code=status.HTTP_201_CREATED,
    operation_id="createGpu",
    summary="Admin: add a GPU (kept in the override layer)",
    openapi_extra={"x-body-model": "GpuDocument"},
    responses={409: {"model": Problem, "description": "slug exists"}},
)
def create_gpu(
    uow: UowDep, _auth: AdminAuth, body: Annotated[JsonObject, Body(description="a GpuDocument")]
) -> Response:
    record = catalog.create_gpu(uow, validation.gpu_document(body))
    resp = gpu_response(record, uow.data_version(), status_code=201)
    resp.headers["Location"] = gpu_url(record.slug)
    return resp


@router.patch(
    "/gpus/{slug}",
    response_model=GpuOut,
    operation_id="updateGpu",
    summary="Admin: JSON merge patch over a GPU (stored as an override; needs If-Match)",
    responses={
        404: {"model": Problem},
        412: {"model": Problem, "description": "If-Match does not match the current ETag"},
        428: {"model": Problem, "description": "If-Match missing"},
    },
)
def update_gpu(
    slug: Slug,
    uow: UowDep,
    _auth: AdminAuth,
    body: Annotated[JsonObject, Body(description="JSON merge patch (RFC 7396) over the GpuDocument")],
    if_match: Annotated[
        str | None, Header(max_length=200, pattern=IF_MATCH_PATTERN, description=IF_MATCH_HELP)
    ] = None,
) -> Response:
    record = catalog.patch_gpu(uow, slug, body, if_match, validate=validation.gpu_document)
    return gpu_response(record, uow.data_version())


@router.delete(
    "/gpus/{slug}",
    status_code=204,
    operation_id="deleteGpu",
    summary="Admin: delete a GPU (soft, in the override layer; catalog upserts never restore it)",
    responses={404: {"model": Problem}, 412: {"model": Problem}, 428: {"model": Problem}},
)
def delete_gpu(
    slug: Slug,
    uow: UowDep,
    _auth: AdminAuth,
    if_match: Annotated[
        str | None, Header(max_length=200, pattern=IF_MATCH_PATTERN, description=IF_MATCH_HELP)
    ] = None,
) -> Response:
    catalog.delete_gpu(uow, slug, if_match)
    return Response(status_code=204)


@router.get(
    "/gpus/{ident}/prices",
    response_model=PriceList,
    operation_id="listGpuPrices",
    summary="Reference prices for a GPU (estimates), with per-GPU-hour and FX conversion",
    responses={300: {"model": AmbiguousGpu}, 404: {"model": Problem}},
)
async def list_prices(
    ident: GpuName, uow: UowDep, cache: ReadDep, settings: SettingsDep, _auth: ReadAuth
) -> Response:
    today = dt.datetime.now(dt.UTC).date()
    listing = await answer_from(
        uow,
        cache,
        lambda: catalog.list_prices(uow, cache, ident, today=today, stale_days=settings.price_stale_days),
        calibrated=False,
    )
    items = [price_out(v) for v in listing.items]
    version = uow.data_version()
    return answer(PriceList(gpu_slug=listing.gpu_slug, items=items, data_version=version), version)


@router.post(
    "/gpus/{slug}/prices",
    status_code=204,
    operation_id="upsertGpuPrice",
    summary="Admin: add or update a reference price row (idempotent by its key)",
    responses={404: {"model": Problem}},
)
def add_price(slug: Slug, body: PriceIn, uow: UowDep, _auth: AdminAuth) -> Response:
    catalog.add_price(uow, slug, body.to_core())
    return Response(status_code=204)


@router.post(
    "/fx-rates",
    status_code=204,
    operation_id="upsertFxRate",
    summary="Admin: add or update a dated FX rate",
    tags=["prices"],
)
def add_fx(body: FxRateIn, uow: UowDep, _auth: AdminAuth) -> Response:
    catalog.add_fx_rate(uow, body.to_core())
    return Response(status_code=204)
