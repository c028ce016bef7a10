"""Wire models for benchmark submission (``POST /v1/benchmark-runs``) and queries.

Structural validation lives here (types, lengths, required keys); vocabulary validation
(known workload, parameter, metric, unit; finite non-negative numbers; fingerprint
completeness) lives in ``service.core.catalog.vocabulary`` and is applied by the use case so every
error points at the exact field, e.g. ``results[17].metrics.throughput.unit``. A validated
run reaches the use case as a core :class:`~service.core.evidence.submission.RunSubmission`
(:meth:`BenchmarkRunIn.to_core`).
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema, field_validator
from pydantic.config import JsonDict

from service.core.catalog.fingerprint import PCI_ID_PATTERN
from service.core.catalog.vocabulary import WORKLOADS
from service.core.evidence.submission import GpuIdentity as CoreGpuIdentity
from service.core.evidence.submission import MetricReading, ResultSubmission, RunSubmission
from service.schemas.common import (
    ByteCount,
    DataVersion,
    FiniteFloat,
    Int64,
    JsonInt,
    JsonObject,
    NonNegativeInt32,
    RequestModel,
    SafeStr,
    SaneDatetime,
    UtcDatetime,
    safe_json,
)
from service.schemas.vocabulary_schema import fingerprint_schema, result_rules

WorkloadName: Any = Literal[tuple(WORKLOADS)]
"""A workload of the vocabulary (``GET /v1/workloads``): the schema lists them."""

Fingerprint = Annotated[dict[str, Any], AfterValidator(safe_json), WithJsonSchema(fingerprint_schema())]
"""The software/hardware stack of a run (checked with the vocabulary; the schema states it)."""

PendingGpuRef = Annotated[
    int | None,
    Field(
        description="the admin-queue entry of an unknown GPU (POST /v1/admin/pending-gpus/{pending_id}/map); "
        "absent when there is none",
        exclude_if=lambda v: v is None,
    ),
]
"""A reference to a pending GPU: present only when there is one, so that whatever follows a
link from it gets an id, never ``null``."""

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$"
MAX_RESULTS_PER_RUN = 10_000
MetricName = Annotated[SafeStr, Field(min_length=1, max_length=64)]


class MetricValue(RequestModel):
    value: float = Field(
        description="the figure, in `unit` (finite and non-negative: checked with the vocabulary, "
        "so every result's errors come in one answer)"
    )
    unit: SafeStr = Field(
        max_length=32, description="must equal the unit the vocabulary defines for this metric"
    )


class GpuIdentity(RequestModel):
    """What NVML says the device is. The service resolves it to a catalog slug by PCI id +
    memory (names are a fallback); an unknown device makes the run ``pending``."""

    name: SafeStr = Field(min_length=1, max_length=200, description="NVML name, e.g. 'NVIDIA H200'")
    pci_device_id: SafeStr = Field(
        max_length=32,
        description="e.g. '0x2335', '10de:2335' or NVML's packed '0x233510DE'",
        json_schema_extra={"pattern": PCI_ID_PATTERN},
    )
    pci_vendor_id: SafeStr | None = Field(default=None, max_length=32, description="e.g. '0x10de'")
    pci_subsystem_id: SafeStr | None = Field(default=None, max_length=32)
    memory_total_bytes: ByteCount = Field(description="NVML memory total (usable, ECC-default)")
    slug: SafeStr | None = Field(
        default=None, max_length=100, description="agent's offline guess; the service re-resolves"
    )


_NON_NEGATIVE: JsonDict = {"minimum": 0}


class BenchmarkResultIn(RequestModel):
    """One result; the schema states the vocabulary (a branch per workload: its parameters and
    metrics, ``service.schemas.vocabulary_schema``)."""

    model_config = ConfigDict(json_schema_extra=result_rules())

    # checked with the vocabulary, so one answer names every error of the run
    workload: SafeStr = Field(min_length=1, max_length=64, json_schema_extra={"enum": list(WORKLOADS)})
    parameters: JsonObject = Field(default_factory=dict)
    status: Literal["ok", "oom", "error"]
    metrics: dict[MetricName, MetricValue] = Field(default_factory=dict)
    step_time_s: FiniteFloat | None = Field(default=None, json_schema_extra=_NON_NEGATIVE)
    # the sign of a figure is checked with the vocabulary (one answer names every error)
    peak_allocated_bytes: Int64 | None = Field(default=None, json_schema_extra=_NON_NEGATIVE)
    peak_reserved_bytes: Int64 | None = Field(default=None, json_schema_extra=_NON_NEGATIVE)
    nvml_used_bytes: Int64 | None = Field(default=None, json_schema_extra=_NON_NEGATIVE)
    repeats: NonNegativeInt32 | None = None
    error: SafeStr | None = Field(
        default=None, max_length=4000, description="error text for status oom/error"
    )
    measured_at: SaneDatetime | None = None

    @field_validator("parameters", "metrics")
    @classmethod
    def _sorted_keys(cls, v: dict[str, Any]) -> dict[str, Any]:
        """Key order carries no meaning; sorting makes the serialised body canonical (the
        idempotency hash compares bodies, not byte strings)."""
        return dict(sorted(v.items()))


class BenchmarkRunIn(RequestModel):
    run_id: str = Field(
        pattern=RUN_ID_PATTERN, description="client-chosen, unique per run; the idempotency key"
    )
    suite_version: SafeStr = Field(min_length=1, max_length=32)
    host: SafeStr = Field(min_length=1, max_length=200, description="host name or stable host id")
    gpu: GpuIdentity
    gpu_count: JsonInt = Field(default=1, ge=1, le=4096)
    fingerprint: Fingerprint
    started_at: SaneDatetime | None = None
    finished_at: SaneDatetime | None = None
    notes: SafeStr | None = Field(default=None, max_length=4000)
    results: list[BenchmarkResultIn] = Field(
        min_length=1,
        max_length=MAX_RESULTS_PER_RUN,
        description="1 to 10,000 results (the deployment may set a lower limit; more: 413)",
    )

    @field_validator("fingerprint")
    @classmethod
    def _sorted_fingerprint(cls, v: dict[str, Any]) -> dict[str, Any]:
        return dict(sorted(v.items()))

    def request_hash(self) -> str:
        """SHA-256 of the parsed body serialised by this schema: typed fields are normalised
        (``2500`` and ``2500.0`` for a metric value are one float), free-form maps are
        key-sorted by the validators, so only a change of content changes the hash."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()

    def to_core(self) -> RunSubmission:
        """The validated run as the ingestion use case takes it, with its body digest."""
        g = self.gpu
        return RunSubmission(
            run_id=self.run_id,
            suite_version=self.suite_version,
            host=self.host,
            gpu=CoreGpuIdentity(
                name=g.name,
                pci_device_id=g.pci_device_id,
                pci_vendor_id=g.pci_vendor_id,
                pci_subsystem_id=g.pci_subsystem_id,
                memory_total_bytes=g.memory_total_bytes,
                slug=g.slug,
            ),
            gpu_count=self.gpu_count,
            fingerprint=self.fingerprint,
            started_at=self.started_at,
            finished_at=self.finished_at,
            notes=self.notes,
            results=tuple(
                ResultSubmission(
                    workload=r.workload,
                    parameters=r.parameters,
                    status=r.status,
                    metrics={k: MetricReading(m.value, m.unit) for k, m in r.metrics.items()},
                    step_time_s=r.step_time_s,
                    peak_allocated_bytes=r.peak_allocated_bytes,
                    peak_reserved_bytes=r.peak_reserved_bytes,
                    nvml_used_bytes=r.nvml_used_bytes,
                    repeats=r.repeats,
                    error=r.error,
                    measured_at=r.measured_at,
                )
                for r in self.results
            ),
            request_hash=self.request_hash(),
        )


class ResultOutcome(BaseModel):
    index: int = Field(description="position of the result in the submitted run")
    result_id: int | None = Field(description="id of the stored result (null on a dry run)")
    status: Literal["ok", "oom", "error"]
    quarantined: bool
    quarantine_reason: str | None = Field(
        default=None,
        description="above_catalog_peak | above_usable_memory | implausible | statistical_outlier | admin",
    )
    quarantine_detail: str | None = Field(default=None, description="the numbers behind the reason")


class BenchmarkRunAccepted(BaseModel):
    """The answer to a submission. A replay (same run_id, same body) returns the stored answer
    (``Idempotent-Replayed: true``) with the current ``data_version``."""

    run_id: str
    state: Literal["accepted", "pending"] = Field(
        description="pending: the GPU is not in the catalog; the run is kept and counts once an admin maps it"
    )
    gpu_slug: str | None
    fingerprint_hash: str
    result_count: int
    quarantined_count: int
    results: list[ResultOutcome]
    data_version: DataVersion
    warnings: list[str] = Field(default_factory=list)
    resolved_by: str | None = Field(
        default=None, description="how the GPU was identified: admin_mapping | pci_memory | name"
    )
    pending_gpu_id: PendingGpuRef = None
    dry_run: bool = False


# ---- stored results and runs ------------------------------------------------------------------


class AgentRef(BaseModel):
    key_id: int | None = Field(description="the API key that submitted (the agent identity)")
    name: str | None
    trusted: bool


class Quarantine(BaseModel):
    reason: str = Field(
        description="above_catalog_peak | above_usable_memory | implausible | statistical_outlier | admin"
    )
    detail: str | None


class Review(BaseModel):
    state: Literal["released", "quarantined"]
    reason: str | None
    reviewed_at: UtcDatetime | None
    reviewed_by_key_id: int | None


class ResultOut(BaseModel):
    id: int
    run_id: str
    position: int
    gpu_slug: str | None = Field(description="null while the run's GPU is pending")
    pending_gpu_id: PendingGpuRef = None
    workload: str
    parameters: dict[str, Any] = Field(description="canonical parameters (defaults filled)")
    parameters_hash: str
    fingerprint_hash: str
    host: str
    agent: AgentRef
    status: Literal["ok", "oom", "error"]
    metrics: dict[str, MetricValue]
    step_time_s: float | None
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    nvml_used_bytes: int | None
    repeats: int | None
    error: str | None
    measured_at: UtcDatetime
    quarantined: bool
    quarantine: Quarantine | None
    review: Review | None
    retracted: bool


class ResultList(BaseModel):
    items: list[ResultOut]
    count: int
    next_cursor: str | None = Field(description="pass as ?cursor= for the next page; null on the last page")
    data_version: DataVersion


class GpuRef(BaseModel):
    slug: str | None
    pending_gpu_id: PendingGpuRef = None
    resolved_by: str | None
    identity: dict[str, Any] = Field(description="what NVML reported (name, PCI ids, memory)")


class RunOut(BaseModel):
    run_id: str
    state: Literal["accepted", "pending", "retracted"]
    agent: AgentRef
    host: str
    gpu: GpuRef
    gpu_count: int
    suite_version: str
    fingerprint: dict[str, Any]
    fingerprint_hash: str
    started_at: UtcDatetime | None
    finished_at: UtcDatetime | None
    received_at: UtcDatetime
    notes: str | None
    result_count: int
    status_counts: dict[str, int]
    quarantined_count: int
    retracted_at: UtcDatetime | None
    retract_reason: str | None
    results: list[ResultOut] | None = Field(
        description="the run's results (omitted with include_results=false)"
    )
    data_version: DataVersion


class RunSummary(BaseModel):
    run_id: str
    state: Literal["accepted", "pending", "retracted"]
    agent: AgentRef
    host: str
    gpu_slug: str | None
    pending_gpu_id: PendingGpuRef = None
    fingerprint_hash: str
    result_count: int
    quarantined_count: int
    received_at: UtcDatetime
    retracted_at: UtcDatetime | None
    retract_reason: str | None


class RunList(BaseModel):
    items: list[RunSummary]
    count: int
    next_cursor: str | None
    data_version: DataVersion


# ---- latest measured ----------------------------------------------------------------------------


class SummaryOut(BaseModel):
    """Distribution over the cell's usable results: median, p10-p90 (type-7 quantiles), extremes."""

    unit: str
    count: int
    median: float
    p10: float
    p90: float
    min: float
    max: float


class FingerprintBrief(BaseModel):
    fingerprint_hash: str
    usable_count: int
    result_count: int
    newest_measured_at: UtcDatetime


class MeasuredCellOut(BaseModel):
    workload: str
    parameters: dict[str, Any]
    parameters_hash: str
    main_metric: str
    fingerprint_hash: str = Field(description="the stack this cell's figures come from (never mixed)")
    fingerprint: dict[str, Any] = Field(description="the stack's fields (host identity excluded)")
    thin: bool = Field(description="true when no fingerprint has k usable results: best-populated one shown")
    count: int = Field(description="usable (ok, non-quarantined, non-retracted) results behind the figures")
    metrics: dict[str, SummaryOut]
    memory: dict[str, SummaryOut] = Field(description="peak allocated / reserved / NVML-used bytes")
    status_counts: dict[str, int] = Field(description="results by status in the chosen fingerprint")
    oom_count: int = Field(description="OOM results in this cell, all fingerprints: 'does not fit here'")
    quarantined_count: int
    newest_measured_at: UtcDatetime | None
    host_count: int
    trusted_agent: bool
    provenance: Literal["measured"] | None = Field(
        description="'measured' only with usable results from >= 2 hosts or a trusted agent; else null"
    )
    provenance_code: str = Field(
        description="trusted_agent | multiple_hosts | single_untrusted_host | no_usable_results"
    )
    provenance_reason: str
    other_fingerprints: list[FingerprintBrief]


class MeasurementsOut(BaseModel):
    gpu_slug: str
    min_points: int = Field(description="k: usable results a fingerprint needs not to be thin")
    cells: list[MeasuredCellOut]
    data_version: DataVersion
    next_cursor: str | None = Field(default=None, description="the next page of cells (`cursor=`), if any")


# ---- vocabulary and coverage ------------------------------------------------------------------------


class WorkloadOut(BaseModel):
    name: str
    version: int
    description: str
    main_metric: str
    parameters: list[dict[str, Any]]
    metrics: list[dict[str, Any]]
    definition_hash: str


class WorkloadList(BaseModel):
    suite_version: str
    suite_definition_hash: str = Field(description="what agents put in fingerprint.workload_definition_hash")
    precisions: list[str]
    statuses: list[str]
    memory_fields: list[str]
    fingerprint_required: list[str]
    fingerprint_nullable: list[str]
    items: list[WorkloadOut]


class CoverageCell(BaseModel):
    results: int
    usable: int
    quarantined: int
    oom: int
    error: int
    configurations: int = Field(description="distinct canonical parameter sets")
    fingerprints: int
    hosts: int
    newest_measured_at: UtcDatetime | None


class CoverageRow(BaseModel):
    gpu_slug: str
    name: str
    workloads: dict[str, CoverageCell]


class CoverageOut(BaseModel):
    workloads: list[str]
    rows: list[CoverageRow]
    empty_cells: list[tuple[str, str]] = Field(description="(gpu slug, workload) pairs with no results")
    pending_runs: int = Field(description="runs waiting for an unknown GPU to be mapped")
    data_version: DataVersion


# ---- admin ---------------------------------------------------------------------------------------


class ReasonIn(RequestModel):
    reason: SafeStr = Field(min_length=1, max_length=2000)


class MapPendingIn(RequestModel):
    slug: SafeStr = Field(
        min_length=1, max_length=100, description="catalog GPU (create it first with POST /v1/gpus)"
    )


class AlertOut(BaseModel):
    id: int
    kind: str = Field(
        description="above_catalog_peak | above_usable_memory | implausible | statistical_outlier | pending_gpu"
    )
    message: str
    gpu_slug: str | None
    run_id: str | None
    pending_gpu_id: PendingGpuRef = None
    result_count: int
    data: dict[str, Any]
    created_at: UtcDatetime
    acknowledged_at: UtcDatetime | None


class AlertList(BaseModel):
    items: list[AlertOut]
    count: int
    next_cursor: str | None
    data_version: DataVersion


class PendingGpuOut(BaseModel):
    id: int
    status: Literal["pending", "mapped"]
    nvml_name: str
    pci_device_id: str
    pci_vendor_id: str | None
    pci_subsystem_id: str | None
    memory_total_bytes: int
    first_seen_at: UtcDatetime
    last_seen_at: UtcDatetime
    run_count: int
    result_count: int
    mapped_gpu_slug: str | None
    mapped_at: UtcDatetime | None
    candidates: list[str] = Field(description="catalog GPUs sharing the PCI id or a similar name")


class PendingGpuList(BaseModel):
    items: list[PendingGpuOut]
    count: int
    data_version: DataVersion


class ReviewOut(BaseModel):
    result: ResultOut
    changed_results: int = Field(description="results in the cell whose quarantine state changed")
    data_version: DataVersion


class RetractOut(BaseModel):
    run: RunSummary
    changed_results: int
    data_version: DataVersion
