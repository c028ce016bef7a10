"""Model architecture routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path

from service.api.deps import ReadAuth
from service.api.presenters.models import model_detail, model_list
from service.api.routing import UnitOfWorkRoute
from service.schemas.common import NameStr, Problem
from service.schemas.hf_config import HfConfigBody
from service.schemas.models import ModelDetail, ModelList
from service.usecases import models as uc

router = APIRouter(prefix="/v1", tags=["models"], route_class=UnitOfWorkRoute)


@router.get("/models", response_model=ModelList, operation_id="listModels", summary="Model presets")
async def list_models(_auth: ReadAuth) -> ModelList:
    return model_list(uc.list_all())


@router.get(
    "/models/{model_id:path}",
    response_model=ModelDetail,
    operation_id="getModel",
    summary="A preset by id, alias or Hugging Face id, with its exact parameter breakdown",
    responses={404: {"model": Problem, "description": "unknown model; `close_matches` lists near names"}},
)
async def get_model(model_id: Annotated[NameStr, Path(max_length=200)], _auth: ReadAuth) -> ModelDetail:
    return model_detail(uc.lookup(model_id))


@router.post(
    "/models/parse",
    response_model=ModelDetail,
    operation_id="parseModel",
    summary="Parse a Hugging Face config.json body (as-is) into the estimator's architecture",
    responses={
        422: {"model": Problem, "description": "unsupported architecture (e.g. MLA) or unusable config"}
    },
)
def parse_model(
    _auth: ReadAuth, body: Annotated[HfConfigBody, Body(description="config.json")]
) -> ModelDetail:
    spec, shape = uc.resolve_model_input(None, body, None)
    return model_detail(spec, shape)
