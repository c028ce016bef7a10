"""``GET /v1/compare``: GPUs side by side (read path: answered from the read model)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Response
from pydantic import Field

from service.api.answers import answer
from service.api.conditional import etag_matches
from service.api.deps import AcceptLanguage, ReadAuth, ReadDep, SettingsDep, UowDep
from service.api.offload import answer_from
from service.api.presenters.compare import compare_out
from service.api.presenters.recommend_words import language
from service.api.routing import UnitOfWorkRoute
from service.schemas.common import NAME_INVISIBLE, NameStr, Problem
from service.schemas.compare import CompareOut
from service.schemas.gpus import AmbiguousGpu
from service.usecases import compare as uc

ComparedWorkload: Any = Literal[uc.COMPARED_WORKLOADS]
"""The single-GPU workloads compare lists (collectives compare interconnects, not GPUs)."""
MIN_GPUS, MAX_GPUS = uc.MIN_GPUS, uc.MAX_GPUS
_NAME_CHAR = rf"[^,{NAME_INVISIBLE}]"
CompareName = Annotated[
    NameStr,
    Field(
        json_schema_extra={"pattern": rf"^{_NAME_CHAR}*[^\s,{NAME_INVISIBLE}]{_NAME_CHAR}*$"}, max_length=200
    ),
]
"""One name of the list: not blank, no comma (the list's separator), no invisible characters."""

router = APIRouter(prefix="/v1", tags=["compare"], route_class=UnitOfWorkRoute)


@router.get(
    "/compare",
    response_model=CompareOut,
    operation_id="compareGpus",
    summary="Compare 2-8 GPUs: specs with provenance, capabilities, measured results and estimates, cloud prices",
    responses={
        300: {"model": AmbiguousGpu, "description": "a name matches several GPUs; pick a candidate"},
        304: {"description": "not modified (If-None-Match matched the ETag)"},
        404: {"model": Problem, "description": "a name the catalog does not know (named in `detail`)"},
    },
)
async def compare_gpus(
    uow: UowDep,
    read: ReadDep,
    settings: SettingsDep,
    _auth: ReadAuth,
    gpus: Annotated[
        list[CompareName],
        Query(
            description="2 to 8 GPU names (slug, alias or PCI id), comma-separated (`gpus=l40,l20`; a repeated "
            "`gpus` is read the same way); the first is the reference for ratios",
            min_length=1,
            max_length=MAX_GPUS,
            json_schema_extra={"minItems": MIN_GPUS, "x-comma-separated": True},
        ),
    ],
    currency: Annotated[Literal["USD", "CNY"], Query(description="currency of the prices")] = "USD",
    workload: Annotated[
        ComparedWorkload | None, Query(description="only result rows of this workload")
    ] = None,
    on_ambiguous: Annotated[
        Literal["candidates", "default"],
        Query(description="'default' resolves an ambiguous name to its stated default"),
    ] = "candidates",
    if_none_match: Annotated[str | None, Header()] = None,
    accept_language: AcceptLanguage = None,
) -> Response:
    now = dt.datetime.now(dt.UTC)
    args = {
        "today": now.date(),
        "stale_days": settings.price_stale_days,
        "currency": currency,
        "workload": workload,
        "use_default": on_ambiguous == "default",
    }
    if if_none_match:
        etag = await answer_from(uow, read, lambda: uc.comparison_etag(uow, read, gpus, **args))  # type: ignore[arg-type]
        if etag_matches(if_none_match, etag):
            return Response(status_code=304, headers={"ETag": etag})
    result = await answer_from(uow, read, lambda: uc.compare(uow, read, gpus, **args))  # type: ignore[arg-type]
    version = uow.data_version()
    return answer(
        compare_out(result, as_of=now, data_version=version, lang=language(accept_language)),
        version,
        headers={"ETag": result.etag, "Vary": "Accept-Language"},
    )
