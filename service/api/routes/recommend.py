"""Recommendation routes: ask (stored), read a stored answer."""

from __future__ import annotations

import datetime as dt
import json
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Path
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from service.api import answers
from service.api.deps import OptionalPrincipal, ReadDep, ReadUowDep, RequestUnitOfWork, SettingsDep, UowDep
from service.api.presenters.recommend import document_json, localise
from service.api.presenters.recommend_words import language
from service.api.routing import UnitOfWorkRoute
from service.db.errors import outage_of
from service.schemas.common import Problem
from service.schemas.recommend import RECOMMENDATION_ID_PATTERN, RecommendRequest, RecommendResponse
from service.usecases import recommend as uc

router = APIRouter(prefix="/v1", tags=["recommend"], route_class=UnitOfWorkRoute)

EXAMPLES: dict[str, Any] = {
    "l40-or-l20": {
        "summary": "L40 or L20 for my training? (Llama-2-7B LoRA, 1B tokens)",
        "value": {
            "workload": {
                "model": "meta-llama/Llama-2-7b-hf",
                "mode": "fine-tuning",
                "precision": "bf16",
                "batch_size": 4,
                "seq_len": 2048,
                "tokens": 1e9,
            },
            "constraints": {"allowed_gpus": ["L40", "L20"], "max_gpus": 8},
            "objective": "fastest",
        },
    },
    "qwen-72b-20rps": {
        "summary": "Serve Qwen2.5-72B at 20 requests/s: which GPU, how many?",
        "value": {
            "workload": {
                "model": "Qwen/Qwen2.5-72B-Instruct",
                "mode": "inference",
                "engine": "vllm",
                "input_len": 1024,
                "input_len_cv": 0.5,
                "output_len": 256,
                "output_len_cv": 0.8,
                "requests_per_s": 20,
                "ttft_target_ms": 1000,
                "tpot_target_ms": 50,
            },
            "constraints": {
                "allowed_gpus": ["H100 SXM", "nvidia-h200-sxm", "nvidia-a100-sxm4-80gb"],
                "max_gpus": 64,
            },
            "objective": "fastest",
        },
    },
    "power-capped-pcie": {
        "summary": "Llama-3-8B fine-tuning under a 300 W per-GPU cap, PCIe only",
        "value": {
            "workload": {"model": "llama3-8b", "mode": "fine-tuning", "batch_size": 2, "seq_len": 2048},
            "constraints": {"max_power_w_per_gpu": 300, "form_factors": ["pcie"]},
        },
    },
}

RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"model": Problem, "description": "invalid workload or constraint (errors[].loc names the field)"},
}


def _json(doc: dict[str, Any], *, status: int = 200) -> Response:
    """The answer, serialised once (the document is already JSON-ready)."""
    return answers.answer(doc, str(doc.get("data_version", "")), status_code=status)


@router.post(
    "/recommend",
    response_model=RecommendResponse,
    operation_id="recommend",
    summary="Ranked, explained, priced GPU choices for a job (the answer is stored: GET /v1/recommendations/{id})",
    description="The workload is what /v1/estimate takes, without the GPU. Options are ranked by the objective; "
    "`within_error_of_best` compares ratios to the best with the cross-GPU ratio uncertainty; every "
    "excluded GPU carries a reason code and its numbers; sentences follow Accept-Language (en, zh). "
    "The same question on the same data (data_version) from the same caller gets the same recommendation_id; "
    "an answer asked for with an API key is readable only with that key (or an admin key).",
    responses=RESPONSES,
)
async def recommend(
    read_uow: ReadUowDep,
    uow: UowDep,
    read: ReadDep,
    caller: OptionalPrincipal,
    settings: SettingsDep,
    body: Annotated[RecommendRequest, Body(openapi_examples=EXAMPLES)],
    accept_language: Annotated[str | None, Header()] = None,
) -> Response:
    request = body.asked()
    now = dt.datetime.now(dt.UTC)
    owner = caller.key_id if caller is not None else None

    def answer() -> tuple[uc.RecommendOutcome, str]:
        with read_uow:  # a read transaction, ended in this thread call
            outcome = uc.compute(
                read_uow,
                read,
                body.to_core(),
                request,
                now=now,
                price_stale_days=settings.price_stale_days,
                owner=owner,
            )
        return outcome, document_json(outcome, request)

    outcome, text = await run_in_threadpool(answer)
    not_stored = await _store(uow, outcome, request, now=now, owner=owner, text=text)
    lang = language(accept_language)
    if not_stored is None and lang == "en":  # stored, in the language it is stored in: serialised once
        return answers.answer(text.encode(), outcome.data_version)
    doc = json.loads(text)
    return _json(localise(doc if not_stored is None else uc.unstored(doc, not_stored), lang))


async def _store(
    uow: RequestUnitOfWork,
    outcome: uc.RecommendOutcome,
    request: dict[str, Any],
    *,
    now: dt.datetime,
    owner: int | None,
    text: str,
) -> str | None:
    """Store the answer (``text``: the document as serialised JSON) in a short write
    transaction of its own, through the write gate -- best-effort (issue 26): when the database
    cannot write (full or read-only disk, down, busy), the answer is sent without an id; the
    reason why is returned (None: stored)."""

    def store() -> None:
        with uow:
            uc.store_answer(uow, outcome, request, now=now, owner=owner, doc_json=text)

    try:
        if uow.gate is None:
            await run_in_threadpool(store)
        else:
            async with uow.gate.slot():
                await run_in_threadpool(store)
            uow.gate.note_success()
    except Exception as exc:
        outage = outage_of(exc)
        if outage is None:
            raise
        return outage.detail
    return None


@router.get(
    "/recommendations/{recommendation_id}",
    response_model=RecommendResponse,
    operation_id="getRecommendation",
    summary="A stored recommendation, as it was answered (sentences in the reader's Accept-Language)",
    description="An answer asked for with an API key is read with that key (or an admin key); to anyone else "
    "it is 404, like an unknown id. An answer asked for without a key is readable by its id.",
    responses={
        401: {"model": Problem, "description": "an invalid API key was sent"},
        404: {
            "model": Problem,
            "description": "no such stored answer for this caller (or pruned after the retention)",
        },
    },
)
async def get_recommendation(
    uow: ReadUowDep,
    caller: OptionalPrincipal,
    recommendation_id: Annotated[
        str, Path(pattern=RECOMMENDATION_ID_PATTERN, examples=["rec_3f9a0c1b2d4e5f6a7b8c9d0e"])
    ],
    accept_language: Annotated[str | None, Header()] = None,
) -> Response:
    stored = await run_in_threadpool(
        uc.get_recommendation,
        uow,
        recommendation_id,
        reader=caller.key_id if caller is not None else None,
        admin=caller is not None and caller.scope == "admin",
    )
    # the request as asked is stored beside the answer: a shared link restores the whole question
    return _json(localise({**stored.response, "asked": stored.request}, language(accept_language)))
