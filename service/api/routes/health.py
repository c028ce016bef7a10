from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service.db.uow import UnitOfWork

router = APIRouter(tags=["health"])


@router.get("/healthz", operation_id="healthz", summary="Liveness: the process answers")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    operation_id="readyz",
    summary="Readiness: the database answers and is migrated, and the start-up warm-up is done",
)
def readyz(request: Request) -> JSONResponse:
    warm_up = request.app.state.warm_up
    if warm_up is not None and warm_up.is_alive():
        return JSONResponse(
            {
                "type": "https://gpu-advisor.dev/problems/not-ready",
                "title": "Not ready",
                "status": 503,
                "detail": "warming: loading the read snapshot and fitting calibrations",
            },
            status_code=503,
            media_type="application/problem+json",
        )
    try:
        with UnitOfWork(request.app.state.read_session_factory) as uow:
            version = uow.data_version()
        return JSONResponse({"status": "ready", "database": "ok", "data_version": version})
    except Exception as exc:  # any DB failure means not ready
        return JSONResponse(
            {
                "type": "https://gpu-advisor.dev/problems/not-ready",
                "title": "Not ready",
                "status": 503,
                "detail": f"database check failed: {type(exc).__name__}",
            },
            status_code=503,
            media_type="application/problem+json",
        )
