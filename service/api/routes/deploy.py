"""Deployment artifacts of a stored recommendation (issue 30)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response

from service.api.answers import answer
from service.api.deps import OptionalPrincipal, ReadDep, ReadUowDep
from service.api.routing import UnitOfWorkRoute
from service.schemas.common import Problem
from service.schemas.deploy import ArtifactOut, Target
from service.schemas.recommend import RECOMMENDATION_ID_PATTERN
from service.usecases import deploy as uc

router = APIRouter(prefix="/v1", tags=["recommend"], route_class=UnitOfWorkRoute)


@router.get(
    "/recommendations/{recommendation_id}/artifacts",
    response_model=ArtifactOut,
    operation_id="getRecommendationArtifacts",
    summary="A stored answer's option as a Kubernetes, SkyPilot or Slurm artifact, ready to fill in and apply",
    description="Kubernetes: a Deployment + Service for serving (a LeaderWorkerSet when one replica spans "
    "nodes), a Job for one-node training (a JobSet for several). SkyPilot: a task whose `resources.ordered` "
    "lists the ranked options it may fall back to (those with the chosen option's node and replica count), "
    "with a SkyServe `service` for serving. Slurm: an sbatch script (one array job per serving replica). "
    "Placeholders are marked FILL-IN and listed in `fill_in`. Readable by whoever may read the answer; "
    "gone when the answer is pruned. `format=raw` sends `content` alone, as `media_type`.",
    responses={
        200: {"content": {"application/yaml": {}, "text/x-shellscript": {}}},
        401: {"model": Problem, "description": "an invalid API key was sent"},
        404: {"model": Problem, "description": "no such stored answer for this caller (or pruned)"},
        422: {
            "model": Problem,
            "description": "no option of that rank, or the GPU has no name for the target",
        },
    },
)
async def get_artifacts(
    uow: ReadUowDep,
    read: ReadDep,
    caller: OptionalPrincipal,
    recommendation_id: Annotated[
        str, Path(pattern=RECOMMENDATION_ID_PATTERN, examples=["rec_3f9a0c1b2d4e5f6a7b8c9d0e"])
    ],
    target: Annotated[Target, Query(description="the scheduler")],
    option: Annotated[int, Query(ge=1, le=1000, description="the rank of the option to render")] = 1,
    format: Annotated[
        Literal["json", "raw"], Query(description="json: ArtifactOut; raw: the content")
    ] = "json",
) -> Response | ArtifactOut:
    art, rec_id, data_version = await run_in_threadpool(
        uc.artifact,
        uow,
        read,
        recommendation_id,
        target=target,
        rank=option,
        reader=caller.key_id if caller is not None else None,
        admin=caller is not None and caller.scope == "admin",
    )
    if format == "raw":
        disposition = {"Content-Disposition": f'inline; filename="{art.filename}"'}
        return answer(art.content.encode(), data_version, media_type=art.media_type, headers=disposition)
    out = ArtifactOut(
        recommendation_id=rec_id,
        data_version=data_version,
        target=target,
        option=art.rank,
        media_type=art.media_type,
        filename=art.filename,
        content=art.content,
        fill_in=list(art.fill_in),
    )
    return answer(out, data_version)
