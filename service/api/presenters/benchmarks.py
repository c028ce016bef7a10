"""Benchmark answers -> wire models (:mod:`service.schemas.benchmarks`).

Units come from the vocabulary (:func:`service.core.evidence.results.metric_unit`); the data version a
write answer carries is the one read after the use case committed, so callers pass it in."""

from __future__ import annotations

import json
from typing import Any

from service.core.catalog.vocabulary import WorkloadDef
from service.core.evidence.aggregate import Summary
from service.core.evidence.results import (
    AdminAlert,
    CoverageStats,
    StoredResult,
    StoredRun,
    SubmissionAnswer,
    metric_unit,
)
from service.schemas.benchmarks import (
    AgentRef,
    AlertList,
    AlertOut,
    CoverageCell,
    CoverageOut,
    CoverageRow,
    FingerprintBrief,
    GpuRef,
    MeasuredCellOut,
    MeasurementsOut,
    MetricValue,
    PendingGpuList,
    PendingGpuOut,
    Quarantine,
    ResultList,
    ResultOut,
    RetractOut,
    Review,
    ReviewOut,
    RunList,
    RunOut,
    RunSummary,
    SummaryOut,
    WorkloadList,
    WorkloadOut,
)
from service.usecases.benchmark_admin import AlertPage, PendingGpuEntry, Retraction
from service.usecases.benchmark_admin import PendingGpuList as PendingGpuQueue
from service.usecases.benchmark_admin import Review as ReviewAnswer
from service.usecases.benchmark_queries import (
    Coverage,
    MeasuredCell,
    Measurements,
    ResultPage,
    RunDetail,
    RunPage,
    Vocabulary,
)

# ---- submission -----------------------------------------------------------------------------------


def submission(answer: SubmissionAnswer, data_version: str) -> dict[str, Any]:
    """The :class:`~service.schemas.benchmarks.BenchmarkRunAccepted` document. Built as plain
    JSON, not through the model: an answer to a 10,000-result run is not validated twice."""
    return {
        "run_id": answer.run_id,
        "state": answer.state,
        "gpu_slug": answer.gpu_slug,
        "fingerprint_hash": answer.fingerprint_hash,
        "result_count": answer.result_count,
        "quarantined_count": answer.quarantined_count,
        "results": [
            {
                "index": o.index,
                "result_id": o.result_id,
                "status": o.status,
                "quarantined": o.quarantined,
                "quarantine_reason": o.quarantine_reason,
                "quarantine_detail": o.quarantine_detail,
            }
            for o in answer.results
        ],
        "warnings": list(answer.warnings),
        "resolved_by": answer.resolved_by,
        **({"pending_gpu_id": answer.pending_gpu_id} if answer.pending_gpu_id is not None else {}),
        "dry_run": answer.dry_run,
        "data_version": data_version,
    }


# ---- results and runs ---------------------------------------------------------------------------


def result_out(r: StoredResult) -> ResultOut:
    return ResultOut(
        id=r.id,
        run_id=r.run_id,
        position=r.position,
        gpu_slug=r.gpu_slug,
        pending_gpu_id=r.pending_gpu_id if r.gpu_slug is None else None,
        workload=r.workload,
        parameters=dict(r.params),
        parameters_hash=r.params_hash,
        fingerprint_hash=r.fingerprint_hash,
        host=r.host,
        agent=AgentRef(key_id=r.agent_key_id, name=r.agent_name, trusted=r.agent_trusted),
        status=r.status,
        metrics={k: MetricValue(value=v, unit=metric_unit(r.workload, k)) for k, v in r.metrics.items()},
        step_time_s=r.step_time_s,
        peak_allocated_bytes=r.peak_allocated_bytes,
        peak_reserved_bytes=r.peak_reserved_bytes,
        nvml_used_bytes=r.nvml_used_bytes,
        repeats=r.repeats,
        error=r.error,
        measured_at=r.measured_at,
        quarantined=r.quarantined,
        quarantine=Quarantine(reason=r.quarantine_reason, detail=r.quarantine_detail)
        if r.quarantined and r.quarantine_reason
        else None,
        review=Review(
            state=r.review_state,
            reason=r.review_reason,
            reviewed_at=r.reviewed_at,
            reviewed_by_key_id=r.reviewed_by_key_id,
        )
        if r.review_state
        else None,
        retracted=r.retracted,
    )


def result_list(page: ResultPage) -> ResultList:
    items = [result_out(r) for r in page.items]
    return ResultList(
        items=items, count=len(items), next_cursor=page.next_cursor, data_version=page.data_version
    )


def _agent(run: StoredRun) -> AgentRef:
    return AgentRef(key_id=run.agent_key_id, name=run.agent_name, trusted=run.agent_trusted)


def run_out(d: RunDetail) -> RunOut:
    run = d.run
    return RunOut(
        run_id=run.run_id,
        state=run.state,
        agent=_agent(run),
        host=run.host,
        gpu=GpuRef(
            slug=run.gpu_slug,
            pending_gpu_id=run.pending_gpu_id,
            resolved_by=run.resolved_by,
            identity=dict(run.gpu_identity),
        ),
        gpu_count=run.gpu_count,
        suite_version=run.suite_version,
        fingerprint=dict(run.fingerprint),
        fingerprint_hash=run.fingerprint_hash,
        started_at=run.started_at,
        finished_at=run.finished_at,
        received_at=run.received_at,
        notes=run.notes,
        result_count=run.result_count,
        status_counts=dict(d.status_counts),
        quarantined_count=run.quarantined_count,
        retracted_at=run.retracted_at,
        retract_reason=run.retract_reason,
        results=[result_out(r) for r in d.results] if d.results is not None else None,
        data_version=d.data_version,
    )


def run_summary(run: StoredRun) -> RunSummary:
    return RunSummary(
        run_id=run.run_id,
        state=run.state,
        agent=_agent(run),
        host=run.host,
        gpu_slug=run.gpu_slug,
        pending_gpu_id=run.pending_gpu_id,
        fingerprint_hash=run.fingerprint_hash,
        result_count=run.result_count,
        quarantined_count=run.quarantined_count,
        received_at=run.received_at,
        retracted_at=run.retracted_at,
        retract_reason=run.retract_reason,
    )


def run_list(page: RunPage) -> RunList:
    items = [run_summary(r) for r in page.items]
    return RunList(
        items=items, count=len(items), next_cursor=page.next_cursor, data_version=page.data_version
    )


# ---- latest measured ---------------------------------------------------------------------------------


def _summary_out(s: Summary, unit: str) -> SummaryOut:
    return SummaryOut(unit=unit, count=s.count, median=s.median, p10=s.p10, p90=s.p90, min=s.min, max=s.max)


def measured_cell_out(c: MeasuredCell) -> MeasuredCellOut:
    v = c.view
    return MeasuredCellOut(
        workload=c.workload,
        parameters=dict(c.parameters),
        parameters_hash=c.parameters_hash,
        main_metric=c.main_metric,
        fingerprint_hash=v.fingerprint_hash,
        fingerprint=dict(c.fingerprint),
        thin=v.thin,
        count=v.count,
        metrics={n: _summary_out(s, metric_unit(c.workload, n)) for n, s in sorted(v.metrics.items())},
        memory={n: _summary_out(s, "B") for n, s in sorted(v.memory.items())},
        status_counts=dict(v.status_counts),
        oom_count=v.oom_count_all_fingerprints,
        quarantined_count=v.quarantined_count,
        newest_measured_at=v.newest_measured_at,
        host_count=v.host_count,
        trusted_agent=v.trusted_agent,
        provenance=v.provenance,
        provenance_code=v.provenance_code,
        provenance_reason=v.provenance_reason,
        other_fingerprints=[
            FingerprintBrief(
                fingerprint_hash=o.fingerprint_hash,
                usable_count=o.usable,
                result_count=o.total,
                newest_measured_at=o.newest,
            )
            for o in v.other_fingerprints
        ],
    )


def measurements(m: Measurements) -> MeasurementsOut:
    return MeasurementsOut(
        gpu_slug=m.gpu_slug,
        min_points=m.min_points,
        cells=[measured_cell_out(c) for c in m.cells],
        data_version=m.data_version,
        next_cursor=m.next_cursor,
    )


_CELL_JSON: dict[int, tuple[MeasuredCell, bytes]] = {}
"""Encoded cells by the identity of the (immutable, snapshot-memoised) cell object; the entry
holds the object, so its id cannot be reused while cached. Bounded."""


def _encode(value: Any) -> bytes:
    # as starlette's JSONResponse renders
    return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode()


def measurements_json(m: Measurements) -> bytes:
    """:func:`measurements` as encoded JSON, each cell encoded once per snapshot: the view of a
    GPU with hundreds of cells costs a join, not a serialisation."""
    frags: list[bytes] = []
    for c in m.cells:
        hit = _CELL_JSON.get(id(c))
        if hit is None or hit[0] is not c:
            if len(_CELL_JSON) > 50_000:
                _CELL_JSON.clear()
            hit = _CELL_JSON[id(c)] = (c, _encode(measured_cell_out(c).model_dump(mode="json")))
        frags.append(hit[1])
    head = _encode({"gpu_slug": m.gpu_slug, "min_points": m.min_points})[:-1]
    tail = _encode({"data_version": m.data_version, "next_cursor": m.next_cursor})[1:]
    return head + b',"cells":[' + b",".join(frags) + b"]," + tail


# ---- vocabulary and coverage ----------------------------------------------------------------------------


def workload_out(w: WorkloadDef) -> WorkloadOut:
    return WorkloadOut(**w.as_dict(), definition_hash=w.definition_hash)


def workload_list(v: Vocabulary) -> WorkloadList:
    return WorkloadList(
        suite_version=v.suite_version,
        suite_definition_hash=v.suite_definition_hash,
        precisions=list(v.precisions),
        statuses=list(v.statuses),
        memory_fields=list(v.memory_fields),
        fingerprint_required=list(v.fingerprint_required),
        fingerprint_nullable=list(v.fingerprint_nullable),
        items=[workload_out(w) for w in v.workloads],
    )


def _coverage_cell(s: CoverageStats) -> CoverageCell:
    return CoverageCell(
        results=s.results,
        usable=s.usable,
        quarantined=s.quarantined,
        oom=s.oom,
        error=s.error,
        configurations=s.configurations,
        fingerprints=s.fingerprints,
        hosts=s.hosts,
        newest_measured_at=s.newest_measured_at,
    )


def coverage(c: Coverage) -> CoverageOut:
    return CoverageOut(
        workloads=list(c.workloads),
        rows=[
            CoverageRow(
                gpu_slug=r.gpu_slug,
                name=r.name,
                workloads={wl: _coverage_cell(s) for wl, s in r.workloads.items()},
            )
            for r in c.rows
        ],
        empty_cells=list(c.empty_cells),
        pending_runs=c.pending_runs,
        data_version=c.data_version,
    )


# ---- admin --------------------------------------------------------------------------------------------


def alert_out(a: AdminAlert) -> AlertOut:
    return AlertOut(
        id=a.id,
        kind=a.kind,
        message=a.message,
        gpu_slug=a.gpu_slug,
        run_id=a.run_id,
        pending_gpu_id=a.pending_gpu_id,
        result_count=a.result_count,
        data=dict(a.data),
        created_at=a.created_at,
        acknowledged_at=a.acknowledged_at,
    )


def alert_list(page: AlertPage) -> AlertList:
    items = [alert_out(a) for a in page.items]
    return AlertList(
        items=items, count=len(items), next_cursor=page.next_cursor, data_version=page.data_version
    )


def pending_gpu_out(e: PendingGpuEntry) -> PendingGpuOut:
    p = e.gpu
    return PendingGpuOut(
        id=p.id,
        status=p.status,
        nvml_name=p.nvml_name,
        pci_device_id=p.pci_device_id,
        pci_vendor_id=p.pci_vendor_id,
        pci_subsystem_id=p.pci_subsystem_id,
        memory_total_bytes=p.memory_total_bytes,
        first_seen_at=p.first_seen_at,
        last_seen_at=p.last_seen_at,
        run_count=e.run_count,
        result_count=e.result_count,
        mapped_gpu_slug=e.mapped_gpu_slug,
        mapped_at=p.mapped_at,
        candidates=list(e.candidates),
    )


def pending_gpu_list(q: PendingGpuQueue) -> PendingGpuList:
    items = [pending_gpu_out(e) for e in q.items]
    return PendingGpuList(items=items, count=len(items), data_version=q.data_version)


def review_out(r: ReviewAnswer, data_version: str) -> ReviewOut:
    return ReviewOut(
        result=result_out(r.result), changed_results=r.changed_results, data_version=data_version
    )


def retract_out(r: Retraction, data_version: str) -> RetractOut:
    return RetractOut(run=run_summary(r.run), changed_results=r.changed_results, data_version=data_version)
