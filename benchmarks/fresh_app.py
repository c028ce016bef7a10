"""The real app on a fresh SQLite database, for benchmark scripts that ask the service questions:
the shipped catalog and the committed measurements loaded as ``gpu-advisor serve`` loads them
(or another directory of runs), rate limits off (a script asks hundreds of questions a minute)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

SHIPPED: Any = object()
"""``measurements`` default: the committed runs (``data/benchmarks``), as the service loads them."""


def fresh_client(prefix: str = "gpua-bench-", measurements: Path | Any | None = SHIPPED) -> Any:
    """A ``TestClient`` over ``create_app()`` on a new SQLite file under a temporary directory,
    bootstrapped with the shipped catalog and ``measurements`` (a directory of run files; None:
    no measurements). Use it as a context manager, as a ``TestClient`` is."""
    db = Path(tempfile.mkdtemp(prefix=prefix)) / "app.db"
    url = f"sqlite:///{db}"
    os.environ["GPU_ADVISOR_DATABASE_URL"] = url
    os.environ["GPU_ADVISOR_RATE_LIMITS_ENABLED"] = "false"
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from service.bootstrap import bootstrap
    from service.db.engine import make_engine
    from service.settings import Settings

    seed = {} if measurements is SHIPPED else {"seed_measurements_dir": measurements}
    bootstrap(make_engine(url), Settings(database_url=url, **seed))
    return TestClient(create_app())
