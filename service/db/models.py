"""ORM rows (SQLAlchemy 2). Never returned from the API: use cases map them to core or wire models.

Conventions: sizes in bytes (BigInteger), rates as floats in the unit the column name says,
timestamps timezone-aware UTC, JSON columns are JSONB on PostgreSQL (stored answers excepted: JSON, kept as sent).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Date,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Numeric,
    String,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JsonType = JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JsonType, list[Any]: JsonType}


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Watermarks(Base):
    """One row (id=1): the ``catalog`` watermark (GPUs, aliases, prices, FX) and the
    ``measurement`` watermark (results, quarantine, retractions, pending-GPU mappings). Each
    moves only in a transaction that changed its data; keys, alert acknowledgements and stored
    recommendations move neither (docs/architecture.md, "Watermarks")."""

    __tablename__ = "watermarks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    catalog: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    measurement: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)


class MeasurementJournal(Base):
    """The cells a measurement commit touched, keyed by the measurement watermark it set: a
    reader at watermark ``w`` brings its snapshot to ``w'`` by reloading the cells of the
    entries in ``(w, w']``."""

    __tablename__ = "measurement_journal"
    watermark: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    cells: Mapped[list[Any]] = mapped_column(JsonType, nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)


class BenchmarkStack(Base):
    """One stack (fingerprint) of one cell (GPU, parameters hash -- which covers the workload),
    summarised over its newest N non-quarantined results (:class:`service.core.evidence.aggregate.StackWindow`
    as JSON), refreshed in the transaction that changes the cell. Readers never scan results."""

    __tablename__ = "benchmark_stacks"
    gpu_id: Mapped[int] = mapped_column(ForeignKey("gpus.id"), primary_key=True)
    params_hash: Mapped[str] = mapped_column(String(16), primary_key=True)
    fingerprint_hash: Mapped[str] = mapped_column(String(16), primary_key=True)
    workload: Mapped[str] = mapped_column(String(64), nullable=False)
    params: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    summary: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)


class Gpu(Base):
    """A catalog GPU. ``spec`` is the effective document (shipped catalog merged with the admin
    override layer); the columns beside it are materialised from ``spec`` for filtering.
    ``catalog_spec`` is only ever written by the catalog upsert, ``override_spec`` only by
    admins, so an upsert never clobbers an admin edit."""

    __tablename__ = "gpus"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    slug: Mapped[str] = mapped_column(String(100), unique=True, nullable=False)
    vendor: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    architecture: Mapped[str | None] = mapped_column(String(64), index=True)
    form_factor: Mapped[str | None] = mapped_column(String(16))
    memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    usable_memory_bytes: Mapped[int | None] = mapped_column(BigInteger)
    bandwidth_gb_per_s: Mapped[float | None] = mapped_column(Float)
    tdp_w: Mapped[float | None] = mapped_column(Float)
    nvlink_topology: Mapped[str | None] = mapped_column(String(16))
    compute_capability: Mapped[str | None] = mapped_column(String(8))
    spec: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    catalog_spec: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    override_spec: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    origin: Mapped[str] = mapped_column(String(16), nullable=False, default="catalog")
    deleted: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    catalog_version: Mapped[str | None] = mapped_column(String(64))
    revision: Mapped[int] = mapped_column(Integer, nullable=False, default=1)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)

    aliases: Mapped[list[GpuAlias]] = relationship(back_populates="gpu", cascade="all, delete-orphan")


class GpuAlias(Base):
    """A name (or PCI device id, kind ``pci``) for a GPU. The same normalised alias on several
    GPUs expresses ambiguity; ``is_default`` marks the stated default among them."""

    __tablename__ = "gpu_aliases"
    __table_args__ = (UniqueConstraint("gpu_id", "alias_norm", "kind"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    gpu_id: Mapped[int] = mapped_column(ForeignKey("gpus.id", ondelete="CASCADE"), nullable=False, index=True)
    alias: Mapped[str] = mapped_column(String(200), nullable=False)
    alias_norm: Mapped[str] = mapped_column(String(200), nullable=False, index=True)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    is_default: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    origin: Mapped[str] = mapped_column(String(16), nullable=False, default="catalog")

    gpu: Mapped[Gpu] = relationship(back_populates="aliases")


class Price(Base):
    """A reference price row, keyed as DESIGN "Prices" says. ``amount`` is per instance-hour for
    rental models and per unit (a card, or a node for SXM/OAM parts) for ``purchase``."""

    __tablename__ = "prices"
    __table_args__ = (
        UniqueConstraint(
            "gpu_id",
            "provider",
            "region",
            "instance_type",
            "gpus_per_instance",
            "pricing_model",
            "currency",
            "effective_date",
            "source",
        ),
    )
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    gpu_id: Mapped[int] = mapped_column(ForeignKey("gpus.id", ondelete="CASCADE"), nullable=False, index=True)
    provider: Mapped[str] = mapped_column(String(64), nullable=False)
    region: Mapped[str] = mapped_column(String(64), nullable=False)
    instance_type: Mapped[str] = mapped_column(String(100), nullable=False)
    gpus_per_instance: Mapped[int] = mapped_column(Integer, nullable=False)
    pricing_model: Mapped[str] = mapped_column(String(16), nullable=False)
    currency: Mapped[str] = mapped_column(String(3), nullable=False)
    amount: Mapped[Decimal] = mapped_column(Numeric(18, 6), nullable=False)
    effective_date: Mapped[dt.date] = mapped_column(Date, nullable=False)
    source: Mapped[str] = mapped_column(String(500), nullable=False)
    is_estimate: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    origin: Mapped[str] = mapped_column(String(16), nullable=False, default="catalog")
    date_basis: Mapped[str] = mapped_column(
        String(16), nullable=False, default="effective", server_default="effective"
    )
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)


class FxRate(Base):
    """1 ``base`` = ``rate`` ``quote`` on ``effective_date``."""

    __tablename__ = "fx_rates"
    __table_args__ = (UniqueConstraint("base", "quote", "effective_date"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    base: Mapped[str] = mapped_column(String(3), nullable=False)
    quote: Mapped[str] = mapped_column(String(3), nullable=False)
    rate: Mapped[Decimal] = mapped_column(Numeric(20, 10), nullable=False)
    effective_date: Mapped[dt.date] = mapped_column(Date, nullable=False)
    source: Mapped[str] = mapped_column(String(500), nullable=False)


class ApiKey(Base):
    """An API key. Only a SHA-256 of the secret is stored (secrets are 256-bit random, so a
    slow hash adds nothing); ``prefix`` finds the row without scanning."""

    __tablename__ = "api_keys"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    prefix: Mapped[str] = mapped_column(String(16), nullable=False, index=True)
    secret_hash: Mapped[str] = mapped_column(String(64), nullable=False, unique=True)
    scope: Mapped[str] = mapped_column(String(16), nullable=False)
    trusted: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)
    revoked_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))


class IdempotencyRecord(Base):
    """The stored answer to a write, by (endpoint scope, key): same key + same body hash ->
    the stored response; same key, different body -> 409."""

    __tablename__ = "idempotency_records"
    __table_args__ = (UniqueConstraint("scope", "key"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scope: Mapped[str] = mapped_column(String(64), nullable=False)
    key: Mapped[str] = mapped_column(String(200), nullable=False)
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    request_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    status_code: Mapped[int] = mapped_column(Integer, nullable=False)
    response_body: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)


# ---- benchmark results (issue 3) --------------------------------------------------------------

# 64-bit ids on PostgreSQL; SQLite only auto-increments an INTEGER PRIMARY KEY.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class BenchmarkFingerprint(Base):
    """A software/hardware stack: the fingerprint fields that enter the stack hash (every field
    but the host identity). Small; runs and results reference it by ``hash``."""

    __tablename__ = "benchmark_fingerprints"
    hash: Mapped[str] = mapped_column(String(16), primary_key=True)
    fields: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    first_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)


class PendingGpu(Base):
    """A device the catalog does not know, by its NVML identity. Runs from it are kept with
    ``gpu_id`` null until an admin maps it to a catalog GPU (``status`` becomes ``mapped``);
    later runs with the same identity resolve through the mapping."""

    __tablename__ = "pending_gpus"
    __table_args__ = (UniqueConstraint("pci_device_id", "nvml_name", "memory_total_bytes"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pci_device_id: Mapped[str] = mapped_column(String(8), nullable=False)
    nvml_name: Mapped[str] = mapped_column(String(200), nullable=False)
    memory_total_bytes: Mapped[int] = mapped_column(BigInteger, nullable=False)
    pci_vendor_id: Mapped[str | None] = mapped_column(String(32))
    pci_subsystem_id: Mapped[str | None] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="pending", index=True)
    mapped_gpu_id: Mapped[int | None] = mapped_column(ForeignKey("gpus.id"))
    mapped_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    mapped_by_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    first_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)
    last_seen_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)


class BenchmarkRun(Base):
    """One submission: the client's ``run_id`` (the idempotency key), the agent (its API key),
    host, GPU (catalog or pending), GPU count and the full fingerprint with its stack hash.
    The stored response for replays lives in ``idempotency_records`` (scope
    ``benchmark-runs``)."""

    __tablename__ = "benchmark_runs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    run_id: Mapped[str] = mapped_column(String(128), unique=True, nullable=False)
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"), index=True)
    host: Mapped[str] = mapped_column(String(200), nullable=False, index=True)
    gpu_id: Mapped[int | None] = mapped_column(ForeignKey("gpus.id"), index=True)
    pending_gpu_id: Mapped[int | None] = mapped_column(ForeignKey("pending_gpus.id"), index=True)
    resolved_by: Mapped[str | None] = mapped_column(String(32))
    gpu_identity: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    gpu_count: Mapped[int] = mapped_column(Integer, nullable=False)
    suite_version: Mapped[str] = mapped_column(String(32), nullable=False)
    fingerprint: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    fingerprint_hash: Mapped[str] = mapped_column(
        ForeignKey("benchmark_fingerprints.hash"), nullable=False, index=True
    )
    request_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    result_count: Mapped[int] = mapped_column(Integer, nullable=False)
    started_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    notes: Mapped[str | None] = mapped_column(String(4000))
    received_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)
    retracted_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    retract_reason: Mapped[str | None] = mapped_column(String(2000))
    retracted_by_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))


class BenchmarkResult(Base):
    """One measured configuration. ``gpu_id``, ``fingerprint_hash`` and ``retracted`` are copied
    from the run so the cell queries -- (GPU, fingerprint, parameters hash; the hash covers the
    workload) -- use one index without a join. ``metrics`` maps metric name -> value in the vocabulary's unit.

    Quarantine inputs (``check_*``: catalog checks; ``outlier_detail``: the MAD test; ``review_*``:
    an admin's sticky decision) are kept apart; ``quarantined``/``quarantine_reason``/
    ``quarantine_detail`` materialise the effective state
    (:func:`service.core.evidence.quarantine.effective_state`)."""

    __tablename__ = "benchmark_results"
    __table_args__ = (
        # cell lookups (the outlier test walks each cell newest first) and per-GPU scans
        Index("ix_benchmark_results_cell", "gpu_id", "fingerprint_hash", "params_hash", "id"),
    )
    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_pk: Mapped[int] = mapped_column(
        ForeignKey("benchmark_runs.id", ondelete="CASCADE"), nullable=False, index=True
    )
    position: Mapped[int] = mapped_column(Integer, nullable=False)
    gpu_id: Mapped[int | None] = mapped_column(ForeignKey("gpus.id"))
    fingerprint_hash: Mapped[str] = mapped_column(String(16), nullable=False)
    workload: Mapped[str] = mapped_column(String(64), nullable=False)
    params: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    params_hash: Mapped[str] = mapped_column(String(16), nullable=False)
    status: Mapped[str] = mapped_column(String(8), nullable=False)
    metrics: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    main_value: Mapped[float | None] = mapped_column(Float)
    step_time_s: Mapped[float | None] = mapped_column(Float)
    peak_allocated_bytes: Mapped[int | None] = mapped_column(BigInteger)
    peak_reserved_bytes: Mapped[int | None] = mapped_column(BigInteger)
    nvml_used_bytes: Mapped[int | None] = mapped_column(BigInteger)
    repeats: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(4000))
    measured_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    check_reason: Mapped[str | None] = mapped_column(String(32))
    check_detail: Mapped[str | None] = mapped_column(String(2000))
    outlier_detail: Mapped[str | None] = mapped_column(String(500))
    review_state: Mapped[str | None] = mapped_column(String(16))
    review_reason: Mapped[str | None] = mapped_column(String(2000))
    reviewed_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    reviewed_by_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))
    quarantined: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    quarantine_reason: Mapped[str | None] = mapped_column(String(32))
    quarantine_detail: Mapped[str | None] = mapped_column(String(2000))
    retracted: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)


class AdminAlert(Base):
    """Something an admin should look at: results quarantined against the catalog or as
    outliers (one alert per run and reason, with a count), a new pending GPU."""

    __tablename__ = "admin_alerts"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(32), nullable=False, index=True)
    message: Mapped[str] = mapped_column(String(2000), nullable=False)
    gpu_id: Mapped[int | None] = mapped_column(ForeignKey("gpus.id"))
    run_pk: Mapped[int | None] = mapped_column(
        ForeignKey("benchmark_runs.id", ondelete="CASCADE"), index=True
    )
    pending_gpu_id: Mapped[int | None] = mapped_column(ForeignKey("pending_gpus.id", ondelete="CASCADE"))
    result_count: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    data: Mapped[dict[str, Any]] = mapped_column(JsonType, nullable=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), nullable=False, default=_now)
    acknowledged_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True))
    acknowledged_by_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="SET NULL"))


# ---- stored recommendations (issue 15) ----------------------------------------------------------


class Recommendation(Base):
    """A stored ``POST /v1/recommend`` answer. The id is derived from hash(asking key, input,
    watermarks, estimator version), so the same question on the same data is stored once per
    asker (an insert that conflicts does nothing). Storing moves no watermark; old rows are
    pruned by age."""

    __tablename__ = "recommendations"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    api_key_id: Mapped[int | None] = mapped_column(ForeignKey("api_keys.id", ondelete="CASCADE"))
    """The key that asked (only it, or an admin, reads the answer); None: asked without a key."""
    data_version: Mapped[str] = mapped_column(String(64), nullable=False)
    request: Mapped[dict[str, Any]] = mapped_column(JSON(), nullable=False)
    response: Mapped[dict[str, Any]] = mapped_column(JSON(), nullable=False)
    """Both as sent (JSON, not JSONB, on PostgreSQL: read back whole, never queried inside;
    key order kept, no re-parse on insert -- migration 0006)."""
    created_at: Mapped[dt.datetime] = mapped_column(
        DateTime(timezone=True), nullable=False, default=_now, index=True
    )
