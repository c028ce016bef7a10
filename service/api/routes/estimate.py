"""Estimation routes: one configuration, or a batch of up to 256."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from fastapi.exceptions import RequestValidationError

from service.api.answers import answer
from service.api.bodies import body_schema, json_body
from service.api.deps import AcceptLanguage, ReadAuth, ReadDep, ReadUowDep
from service.api.offload import answer_from
from service.api.presenters.estimate import estimate_out
from service.api.presenters.recommend_words import language
from service.api.problems import field_errors, status_of
from service.api.routing import UnitOfWorkRoute
from service.core.estimation.estimate import ONE_MODEL_INPUT, has_one_model_input
from service.schemas.common import Problem
from service.schemas.estimate import BatchItem, BatchRequest, BatchResponse, EstimateRequest, EstimateResponse
from service.usecases import estimate as uc
from service.usecases.errors import UseCaseError

router = APIRouter(prefix="/v1", tags=["estimate"], route_class=UnitOfWorkRoute)


@router.post(
    "/estimate",
    response_model=EstimateResponse,
    operation_id="estimate",
    summary="Memory (breakdown, fit, headroom) and time (band, provenance) for one configuration",
    responses={
        422: {
            "model": Problem,
            "description": "invalid combination, unknown model/GPU, unsupported architecture",
        }
    },
)
async def estimate(
    body: EstimateRequest,
    uow: ReadUowDep,
    read: ReadDep,
    _auth: ReadAuth,
    accept_language: AcceptLanguage = None,
) -> Response:
    now = dt.datetime.now(dt.UTC)
    r = await answer_from(uow, read, lambda: uc.estimate(uow, read, body.to_core(), body.gpu, now=now))
    return answer(present(r, language(accept_language)), r.data_version)


def present(r: uc.EstimateResult, lang: str = "en") -> EstimateResponse:
    return estimate_out(
        r.estimate,
        lang=lang,
        warnings=r.warnings,
        as_of=r.as_of,
        data_version=r.data_version,
        estimator_version=r.estimator_version,
        calibration_watermark=r.calibration_watermark,
        token_costs=r.token_costs,
    )


@router.post(
    "/estimate/batch",
    response_model=BatchResponse,
    operation_id="estimateBatch",
    openapi_extra=body_schema("BatchRequest"),
    summary="Up to 256 configurations; each item answers 200 or carries the problem the single call would give",
    description="A body the schema refuses -- an item's field included, e.g. an item without exactly one of "
    "model, hf_config, params_billion -- is refused whole (422 naming the item's field). What only the "
    "catalog or the presets can decide (an unknown GPU or model preset) is answered per item.",
)
def estimate_batch(
    _auth: ReadAuth,
    body: Annotated[BatchRequest, Depends(json_body(BatchRequest))],
    uow: ReadUowDep,
    read: ReadDep,
    accept_language: AcceptLanguage = None,
) -> Response:
    # the schema's rule for every item (exactly one model input, ``oneOf``) refuses the whole
    # body, like any other item field the schema refuses; what only the catalog or the model
    # presets can decide (an unknown GPU or preset) is answered per item
    wrong = [
        i
        for i, it in enumerate(body.items)
        if not has_one_model_input(it.model, it.hf_config, it.params_billion)
    ]
    if wrong:
        raise RequestValidationError(
            [
                {
                    "type": "value_error",
                    "loc": ("body", "items", i, "model"),
                    "input": None,
                    "msg": ONE_MODEL_INPUT,
                }
                for i in wrong
            ]
        )
    answers = uc.estimate_batch(
        uow, read, [(i.to_core(), i.gpu) for i in body.items], now=dt.datetime.now(dt.UTC)
    )
    items: list[BatchItem] = []
    for i, a in enumerate(answers):
        if isinstance(a, UseCaseError):
            status, title = status_of(a)
            problem: dict[str, Any] = {"status": status, "title": title, "detail": a.detail}
            errors = field_errors(a.fields, "POST")
            if errors:
                problem["errors"] = errors
            problem.update({k: v for k, v in a.extra.items() if k not in ("candidates", "query")})
            items.append(BatchItem(index=i, status=status, problem=problem))
        else:
            items.append(BatchItem(index=i, status=200, result=present(a, language(accept_language))))
    version = uow.data_version()
    return answer(BatchResponse(items=items, data_version=version), version)
