"""Service settings: one pydantic-settings object, env prefix ``GPU_ADVISOR_``, passed in.

Nothing reads the environment except :func:`Settings` construction at the edge (CLI, app
factory); every other layer receives the object.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from service.core.results import OutlierPolicy

REPO_ROOT = Path(__file__).resolve().parent.parent


def _default_database_url() -> str:
    return f"sqlite:///{(REPO_ROOT / 'var' / 'gpu-advisor.db').as_posix()}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GPU_ADVISOR_", env_file=None, extra="ignore")

    database_url: str = Field(
        default_factory=_default_database_url,
        description="SQLAlchemy URL; default is an embedded SQLite file under ./var/",
    )
    read_requires_key: bool = Field(default=False, description="require an API key (scope read) for GET endpoints")
    max_body_bytes: int = Field(default=32 * 2**20, ge=1024, description="request bodies above this get 413")
    max_results_per_run: int = Field(default=10_000, ge=1)
    page_size_default: int = Field(default=50, ge=1, le=1000)
    page_size_max: int = Field(default=500, ge=1, le=10_000)
    measurements_min_points: int = Field(default=3, ge=1, description="k in 'latest measured' (DESIGN)")
    outlier_mad_threshold: float = Field(default=5.0, gt=0, description="|x - median| / (1.4826 MAD) above this is an outlier")
    outlier_floor_fraction: float = Field(default=0.05, ge=0, description="MAD floor as a fraction of the median")
    outlier_window: int = Field(
        default=100,
        ge=3,
        description="the MAD test of a (GPU, fingerprint, parameters) cell looks at its most recent N results "
        "(bounded work per submission however large a cell grows)",
    )
    seed_catalog: bool = Field(default=True, description="upsert the shipped catalog on serve/migrate")
    seed_measurements_dir: Path | None = Field(
        default_factory=lambda: (REPO_ROOT / "data" / "benchmarks")
        if (REPO_ROOT / "data" / "benchmarks").is_dir()
        else None,
        description="directory of committed measurement runs loaded on start (idempotent by run_id)",
    )
    price_stale_days: int = Field(default=180, ge=1)
    sqlite_busy_timeout_ms: int = Field(default=30_000, ge=0)

    def outlier_policy(self) -> OutlierPolicy:
        """The MAD test's settings as the core type use cases and repositories take."""
        return OutlierPolicy(
            window=self.outlier_window,
            mad_threshold=self.outlier_mad_threshold,
            floor_fraction=self.outlier_floor_fraction,
        )
