"""A benchmark run as an agent submitted it (``POST /v1/benchmark-runs``), after the wire
model checked its shape and bounds: the input of the ingestion use case.

The vocabulary checks (known workload, parameters, metrics and units, finite non-negative
numbers, fingerprint completeness) are not done yet -- the use case does them, naming every
field at fault. Parameters, metrics and the fingerprint arrive key-sorted.

Pure: no web, DB or clock.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple


class MetricReading(NamedTuple):
    """One reported metric: the figure and the unit the agent says it is in."""

    value: float
    unit: str


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """What NVML says the device is (fields in the wire model's order)."""

    name: str
    pci_device_id: str
    pci_vendor_id: str | None
    pci_subsystem_id: str | None
    memory_total_bytes: int
    slug: str | None  # the agent's offline guess; the service re-resolves

    def as_document(self) -> dict[str, Any]:
        """The identity as stored with the run (``benchmark_runs.gpu_identity``)."""
        return {
            "name": self.name,
            "pci_device_id": self.pci_device_id,
            "pci_vendor_id": self.pci_vendor_id,
            "pci_subsystem_id": self.pci_subsystem_id,
            "memory_total_bytes": self.memory_total_bytes,
            "slug": self.slug,
        }


class ResultSubmission(NamedTuple):
    """One submitted result. A named tuple rather than a frozen dataclass: a run carries up to
    10,000 of them and a frozen dataclass costs three times as much to build."""

    workload: str
    parameters: Mapping[str, Any]
    status: str  # ok | oom | error
    metrics: Mapping[str, MetricReading]
    step_time_s: float | None
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    nvml_used_bytes: int | None
    repeats: int | None
    error: str | None
    measured_at: dt.datetime | None


@dataclass(frozen=True, slots=True)
class RunSubmission:
    """One run. ``request_hash`` is the digest of the validated body (the idempotency check
    compares it): equal for bodies that differ only in key order or number spelling."""

    run_id: str
    suite_version: str
    host: str
    gpu: GpuIdentity
    gpu_count: int
    fingerprint: Mapping[str, Any]
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    notes: str | None
    results: tuple[ResultSubmission, ...]
    request_hash: str
