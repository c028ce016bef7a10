"""TEST-ONLY ASGI entry that breaks DESIGN "Transactions" on purpose: the unit of work's
commit is deferred until after the response has been sent (plus a delay), as it would be if
someone committed in a dependency after ``yield``. The durability test runs the server from
this module to prove its checker catches acknowledged-but-lost runs.

Never used by the service: production code has no such switch. The delay (seconds) comes from
``GPU_ADVISOR_TEST_UNSAFE_COMMIT_DELAY_S``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from fastapi import Request

from service.api.app import create_app
from service.api.deps import get_uow
from service.db.uow import UnitOfWork

DELAY_S = float(os.environ.get("GPU_ADVISOR_TEST_UNSAFE_COMMIT_DELAY_S", "0.5"))


class DeferredCommitUnitOfWork(UnitOfWork):
    """``commit()`` only flushes; the real commit happens when the request's dependency exits."""

    def commit(self) -> int | None:
        self.session.flush()
        return None

    def commit_for_real(self) -> None:
        super().commit()


def deferred_uow(request: Request) -> Iterator[UnitOfWork]:
    uow = DeferredCommitUnitOfWork(request.app.state.session_factory)
    try:
        yield uow
        # FastAPI runs this after the response went out (request-scoped dependency exit)
        time.sleep(DELAY_S)
        uow.commit_for_real()
    finally:
        uow.close()


app = create_app()
app.dependency_overrides[get_uow] = deferred_uow
