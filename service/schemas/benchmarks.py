"""Wire models for benchmark submission (``POST /v1/benchmark-runs``) and queries.

Structural validation lives here (types, lengths, required keys); vocabulary validation
(known workload, parameter, metric, unit; finite non-negative numbers; fingerprint
completeness) lives in ``service.core.vocabulary`` and is applied by the use case so every
error points at the exact field, e.g. ``results[17].metrics.throughput.unit``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{7,127}$"
MAX_RESULTS_PER_RUN = 10_000


class MetricValue(BaseModel):
    model_config = ConfigDict(extra="forbid")
    value: float = Field(description="the figure, in `unit`")
    unit: str = Field(description="must equal the unit the vocabulary defines for this metric")


class GpuIdentity(BaseModel):
    """What NVML says the device is. The service resolves it to a catalog slug by PCI id +
    memory (names are a fallback); an unknown device makes the run ``pending``."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200, description="NVML name, e.g. 'NVIDIA H200'")
    pci_device_id: str = Field(description="e.g. '0x2335' or NVML's packed '0x233510DE'")
    pci_vendor_id: str | None = Field(default=None, description="e.g. '0x10de'")
    pci_subsystem_id: str | None = None
    memory_total_bytes: int = Field(ge=0, description="NVML memory total (usable, ECC-default)")
    slug: str | None = Field(default=None, description="agent's offline guess; the service re-resolves")


class BenchmarkResultIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workload: str = Field(min_length=1, max_length=64)
    parameters: dict[str, Any] = Field(default_factory=dict)
    status: Literal["ok", "oom", "error"]
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    step_time_s: float | None = None
    peak_allocated_bytes: int | None = None
    peak_reserved_bytes: int | None = None
    nvml_used_bytes: int | None = None
    repeats: int | None = Field(default=None, ge=0)
    error: str | None = Field(default=None, max_length=4000, description="error text for status oom/error")
    measured_at: datetime | None = None


class BenchmarkRunIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str = Field(pattern=RUN_ID_PATTERN, description="client-chosen, unique per run; the idempotency key")
    suite_version: str = Field(min_length=1, max_length=32)
    host: str = Field(min_length=1, max_length=200, description="host name or stable host id")
    gpu: GpuIdentity
    gpu_count: int = Field(default=1, ge=1, le=4096)
    fingerprint: dict[str, Any]
    started_at: datetime | None = None
    finished_at: datetime | None = None
    notes: str | None = Field(default=None, max_length=4000)
    results: list[BenchmarkResultIn] = Field(min_length=1, max_length=MAX_RESULTS_PER_RUN)


class ResultOutcome(BaseModel):
    index: int
    result_id: int | None
    status: Literal["ok", "oom", "error"]
    quarantined: bool
    quarantine_reason: str | None = None


class BenchmarkRunAccepted(BaseModel):
    run_id: str
    state: Literal["accepted", "pending"]
    gpu_slug: str | None
    fingerprint_hash: str
    result_count: int
    quarantined_count: int
    results: list[ResultOutcome]
    data_version: int
    warnings: list[str] = Field(default_factory=list)
