from __future__ import annotations

from typing import Any

import anyio
from anyio import to_thread
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from service.api.routing import UnitOfWorkRoute
from service.db.health import write_problem
from service.db.uow import UnitOfWork

router = APIRouter(tags=["health"], route_class=UnitOfWorkRoute)


@router.get("/healthz", operation_id="healthz", summary="Liveness: the process answers")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


def _not_ready(detail: str) -> JSONResponse:
    return JSONResponse(
        {
            "type": "https://gpu-advisor.dev/problems/not-ready",
            "title": "Not ready",
            "status": 503,
            "detail": detail,
        },
        status_code=503,
        media_type="application/problem+json",
    )


def _check(state: Any) -> tuple[str, str | None]:
    """The data version (one read of the database) and why a write would fail, if it would."""
    with UnitOfWork(state.read_session_factory) as uow:
        version = uow.data_version()
    return version, write_problem(state.engine, min_free_bytes=state.settings.min_free_disk_bytes)


@router.get(
    "/readyz",
    operation_id="readyz",
    summary="Readiness: the database answers within the readiness timeout, is migrated and can take "
    "writes, and the start-up warm-up is done",
)
async def readyz(request: Request) -> JSONResponse:
    state = request.app.state
    warm_up = state.warm_up
    if warm_up is not None and warm_up.is_alive():
        return _not_ready("warming: loading the read snapshot and fitting calibrations")
    timeout = state.settings.readyz_timeout_s
    try:
        with anyio.fail_after(timeout):
            # a thread stuck on a frozen database is left to its own timeouts
            version, cannot_write = await to_thread.run_sync(_check, state, abandon_on_cancel=True)
    except TimeoutError:
        return _not_ready(f"database check: no answer within {timeout:g} s")
    except Exception as exc:  # any DB failure means not ready
        return _not_ready(f"database check failed: {type(exc).__name__}")
    blocked = state.write_gate.write_blocked()
    if cannot_write is None and blocked is not None:
        cannot_write = f"a write failed recently: {blocked.detail}"
    if cannot_write is not None:
        return _not_ready(f"the database cannot take writes: {cannot_write}")
    return JSONResponse({"status": "ready", "database": "ok", "data_version": version})
