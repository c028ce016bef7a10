"""Service settings: one pydantic-settings object, env prefix ``GPU_ADVISOR_``, passed in.

Nothing reads the environment except :func:`Settings` construction at the edge (CLI, app
factory); every other layer receives the object.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from service.core.evidence.results import OutlierPolicy

REPO_ROOT = Path(__file__).resolve().parent.parent


def _default_database_url() -> str:
    return f"sqlite:///{(REPO_ROOT / 'var' / 'gpu-advisor.db').as_posix()}"


class RateLimitRule(BaseModel):
    """One rate limit: the requests it covers (methods x route templates, optionally only
    pages larger than ``above_page_size`` items) and a token bucket of ``burst`` requests
    refilled at ``per_minute``. Each caller (API key, else client address) has its own bucket
    per rule."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    methods: tuple[str, ...] = Field(min_length=1, description="HTTP methods, upper case")
    paths: tuple[str, ...] = Field(
        min_length=1,
        description="route templates as the API declares them, e.g. /v1/gpus/{slug}; {name:path} matches the rest",
    )
    per_minute: float = Field(gt=0, description="sustained rate: bucket refill per minute")
    burst: int = Field(ge=1, description="bucket size: requests allowed back to back")
    above_page_size: int | None = Field(
        default=None, ge=1, description="only GETs asking for more than this many items (?limit=)"
    )

    @field_validator("methods")
    @classmethod
    def _upper(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(m.upper() for m in v)


_WRITE = ("POST", "PUT", "PATCH", "DELETE")
DEFAULT_RATE_LIMITS: dict[str, RateLimitRule] = {
    # an agent submits a suite's runs at the end of a run, or a spool after an outage; its
    # client honours Retry-After, so a burst of 60 and 2 runs/s sustained only paces it
    "benchmark-submit": RateLimitRule(
        methods=("POST",),
        paths=("/v1/benchmark-runs", "/v1/benchmark-runs/validate"),
        per_minute=120,
        burst=60,
    ),
    "admin-write": RateLimitRule(
        methods=_WRITE,
        paths=(
            "/v1/gpus",
            "/v1/gpus/{slug}",
            "/v1/gpus/{slug}/prices",
            "/v1/fx-rates",
            "/v1/admin/{rest:path}",
        ),
        per_minute=120,
        burst=60,
    ),
    # one configuration: milliseconds of CPU
    "estimate": RateLimitRule(methods=("POST",), paths=("/v1/estimate",), per_minute=600, burst=120),
    # up to 256 configurations: about a second of CPU each, so one caller gets at most ~1/5 core
    "estimate-batch": RateLimitRule(methods=("POST",), paths=("/v1/estimate/batch",), per_minute=12, burst=4),
    # parses a config.json: milliseconds, but a body of up to 256 KiB decoded on the event loop
    "models-parse": RateLimitRule(methods=("POST",), paths=("/v1/models/parse",), per_minute=120, burst=30),
    # reserved for POST /v1/recommend (DESIGN "Recommendation"): enumerates GPU x count x strategy
    "recommend": RateLimitRule(methods=("POST",), paths=("/v1/recommend",), per_minute=30, burst=10),
    # a run with up to 10,000 results
    "run-read": RateLimitRule(
        methods=("GET",), paths=("/v1/benchmark-runs/{run_id}",), per_minute=120, burst=30
    ),
    # pages over 100 items (the default page is 50, the largest 500)
    "large-page": RateLimitRule(
        methods=("GET",),
        paths=(
            "/v1/gpus",
            "/v1/benchmark-results",
            "/v1/admin/benchmark-results",
            "/v1/admin/benchmark-runs",
            "/v1/admin/alerts",
        ),
        per_minute=60,
        burst=20,
        above_page_size=100,
    ),
}
"""The shipped rule table; ``GPU_ADVISOR_RATE_LIMITS`` overrides it rule by rule."""


def merge_rate_limits(overrides: Mapping[str, Mapping[str, Any] | None]) -> dict[str, RateLimitRule]:
    """The shipped table with ``overrides`` applied: a rule name mapped to fields changes
    those fields (a new name needs every field), mapped to ``null`` drops the rule."""
    rules: dict[str, RateLimitRule] = dict(DEFAULT_RATE_LIMITS)
    for name, over in overrides.items():
        if over is None:
            rules.pop(name, None)
            continue
        base = rules[name].model_dump() if name in rules else {}
        rules[name] = RateLimitRule.model_validate({**base, **over})
    return rules


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="GPU_ADVISOR_", env_file=None, extra="ignore")

    database_url: str = Field(
        default_factory=_default_database_url,
        description="SQLAlchemy URL; default is an embedded SQLite file under ./var/",
    )
    read_requires_key: bool = Field(
        default=False, description="require an API key (scope read) for GET endpoints"
    )
    max_body_bytes: int = Field(
        default=12 * 2**20,
        ge=1024,
        description="no request body above this (413); each route has its own, smaller limit sized to its "
        "legitimate bodies (service.api.limits.ROUTE_BODY_LIMITS; x-body-limit-bytes in the OpenAPI document)",
    )
    max_results_per_run: int = Field(default=10_000, ge=1)
    page_size_default: int = Field(default=50, ge=1, le=1000)
    page_size_max: int = Field(default=500, ge=1, le=10_000)
    measurements_min_points: int = Field(default=3, ge=1, description="k in 'latest measured' (DESIGN)")
    outlier_mad_threshold: float = Field(
        default=5.0, gt=0, description="|x - median| / (1.4826 MAD) above this is an outlier"
    )
    outlier_floor_fraction: float = Field(
        default=0.05, ge=0, description="MAD floor as a fraction of the median"
    )
    outlier_window: int = Field(
        default=100,
        ge=3,
        description="the MAD test of a (GPU, fingerprint, parameters) cell looks at its most recent N results "
        "(bounded work per submission however large a cell grows)",
    )
    measurement_window: int = Field(
        default=100,
        ge=3,
        le=10_000,
        description="N of the latest-measured rule: each stack of a cell is summarised over its newest N "
        "non-quarantined results (maintained as results are written; docs/architecture.md)",
    )
    warm_read_model: bool = Field(
        default=True,
        description="build the read snapshot and fit every calibration at start-up, in a background thread "
        "(/readyz answers 503 'warming' until it is done), so no request pays for the full fit",
    )
    seed_catalog: bool = Field(default=True, description="upsert the shipped catalog on serve/migrate")
    seed_measurements_dir: Path | None = Field(
        default_factory=lambda: (
            (REPO_ROOT / "data" / "benchmarks") if (REPO_ROOT / "data" / "benchmarks").is_dir() else None
        ),
        description="directory of committed measurement runs loaded on start (idempotent by run_id)",
    )
    price_stale_days: int = Field(default=180, ge=1)
    recommendation_retention_days: int = Field(
        default=30,
        ge=1,
        le=36_500,
        description="stored /v1/recommend answers older than this are deleted by `gpu-advisor recommendations prune`",
    )
    sqlite_busy_timeout_ms: int = Field(
        default=5_000,
        ge=0,
        description="SQLite: how long a writer waits for another process's write lock before the request "
        "is answered 503 (busy)",
    )

    def outlier_policy(self) -> OutlierPolicy:
        """The MAD test's settings as the core type use cases and repositories take."""
        return OutlierPolicy(
            window=self.outlier_window,
            mad_threshold=self.outlier_mad_threshold,
            floor_fraction=self.outlier_floor_fraction,
        )

    # ---- operating it: limits, timeouts, proxies, metrics, logs (issue 17) ----
    body_read_timeout_s: float = Field(
        default=30.0,
        gt=0,
        description="a request body must arrive within this many seconds of its headers (else 408)",
    )
    # ---- the bad day: bounded waits on the database, a bounded write queue (issue 26) ----
    db_connect_timeout_s: float = Field(
        default=3.0,
        gt=0,
        le=60,
        description="PostgreSQL: a new connection must be made within this (else 503)",
    )
    db_statement_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description="PostgreSQL statement_timeout of the API's connections; the client gives up 2 s later on a "
        "server that does not answer at all (frozen), so a request fails with 503 instead of hanging",
    )
    db_pool_timeout_s: float = Field(
        default=3.0, gt=0, le=60, description="wait at most this for a pooled connection (else 503)"
    )
    db_pool_size: int = Field(default=10, ge=1, le=1000, description="connections kept open")
    db_max_overflow: int = Field(
        default=30,
        ge=0,
        le=1000,
        description="connections opened beyond db_pool_size under load; pool_size + max_overflow should be at "
        "least request_threads, so that no request waits for a connection while the database answers",
    )
    request_threads: int = Field(
        default=40,
        ge=4,
        le=1000,
        description="threads that run blocking request work (database, estimates) per process",
    )
    max_concurrent_writes: int | None = Field(
        default=None,
        ge=1,
        le=1000,
        description="write handlers running at once per process (the rest queue without holding a thread, a "
        "connection or a lock); default 1 on SQLite (one writer at a time anyway), 4 on PostgreSQL",
    )
    write_queue_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="a write that waited this long for its turn is answered 503 + Retry-After",
    )
    readyz_timeout_s: float = Field(
        default=2.0, gt=0, le=60, description="/readyz answers 503 when its database check takes longer"
    )
    min_free_disk_bytes: int = Field(
        default=16 * 2**20,
        ge=0,
        description="SQLite: /readyz is not ready when the database's disk has less free space than this",
    )
    max_header_bytes: int = Field(
        default=32_768,
        ge=1024,
        le=2**24,
        description="request line + header fields, in bytes; more is 431 and the connection closed "
        "(gpu-advisor serve; a reverse proxy should refuse earlier: deploy/nginx.conf)",
    )
    max_header_count: int = Field(
        default=100, ge=10, le=10_000, description="header fields per request; more is 431"
    )
    header_read_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=600,
        description="a request's head (request line and headers) must arrive within this, counted from its "
        "first byte or the connection's opening (else 408 and close)",
    )
    keep_alive_timeout_s: int = Field(
        default=75,
        ge=1,
        le=3600,
        description="an idle keep-alive connection is closed after this many seconds; longer than "
        "clients' own idle limits (httpx 5 s, load balancers 60 s), so that a client never sends a "
        "request on a connection the server is closing at that moment (a request lost unanswered)",
    )
    rate_limits_enabled: bool = Field(default=True, description="enforce the rate-limit rules")
    rate_limits: dict[str, dict[str, Any] | None] = Field(
        default_factory=dict,
        description="JSON overrides of the rule table by name, e.g. "
        '{"estimate-batch": {"per_minute": 30}, "run-read": null}',
    )
    redis_url: str | None = Field(
        default=None,
        description="Redis for rate-limit buckets shared by every process and replica (redis://host:6379/0); "
        "unset: buckets live in process memory",
    )
    rate_limit_key_prefix: str = Field(default="gpu-advisor:rl:", min_length=1, max_length=200)
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="addresses or networks of reverse proxies whose X-Forwarded-For is believed "
        "(comma-separated or a JSON list); empty: the peer address is the client",
    )
    metrics_access: Literal["admin", "open", "port"] = Field(
        default="admin",
        description="/metrics: admin = needs an admin key; open = anyone; port = only on metrics_host:metrics_port",
    )
    metrics_host: str = Field(default="127.0.0.1", description="interface of the separate metrics port")
    metrics_port: int = Field(default=9464, ge=1, le=65535)
    log_format: Literal["json", "text"] = Field(default="json", description="json: one JSON object per line")
    log_level: Literal["debug", "info", "warning", "error"] = "info"

    @field_validator("rate_limits")
    @classmethod
    def _rules_valid(cls, v: dict[str, dict[str, Any] | None]) -> dict[str, dict[str, Any] | None]:
        merge_rate_limits(v)  # raises on an unknown field, a new rule missing fields, a bad value
        return v

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip()
            return json.loads(v) if v.startswith("[") else [p.strip() for p in v.split(",") if p.strip()]
        return v

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, v: list[str]) -> list[str]:
        for item in v:
            ipaddress.ip_network(item, strict=False)  # ValueError -> a settings error naming the field
        return v

    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    def write_slots(self) -> int:
        """Write handlers at once per process (``max_concurrent_writes``, else by database)."""
        if self.max_concurrent_writes is not None:
            return self.max_concurrent_writes
        return 1 if self.is_sqlite() else 4

    def rate_limit_rules(self) -> dict[str, RateLimitRule]:
        return merge_rate_limits(self.rate_limits)
