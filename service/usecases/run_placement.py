"""Where a submitted run goes: the catalog GPU of the identity the agent reported (or the
admin queue for an unknown one), and each result's catalog checks against that GPU's spec
(above the dense peak, above usable memory).
"""

from __future__ import annotations

from dataclasses import dataclass

from service.core.evidence.quarantine import static_findings
from service.core.evidence.results import GpuMatch, NewResult, PendingGpu, pick_by_memory
from service.core.evidence.run_check import PreparedRun
from service.db.uow import UnitOfWork
from service.usecases.catalog import resolve
from service.usecases.read_model import ReadModel


def match_reported_gpu(
    uow: UnitOfWork, cache: ReadModel, *, pci: str, name: str, mem: int
) -> tuple[GpuMatch | None, PendingGpu | None]:
    """Catalog GPU for an NVML identity: an admin's mapping of this exact identity, else PCI
    device id + memory, else the NVML name through the alias index (memory picks among an
    ambiguous name's variants). Returns (match, queue entry if this identity is queued)."""
    repo = uow.benchmarks
    pending = repo.find_pending(pci, name, mem)
    if pending is not None and pending.status == "mapped" and pending.mapped_gpu_id is not None:
        gpu = repo.live_gpu(pending.mapped_gpu_id)
        if gpu is not None:
            return GpuMatch.of(gpu, "admin_mapping"), pending
    by_pci = repo.live_gpus_with_pci(pci)
    picked = pick_by_memory(by_pci, mem) if by_pci else None
    if picked is not None:
        return GpuMatch.of(picked, "pci_memory"), pending
    res = resolve(uow, cache, name) if name.strip() else None
    if res is not None and res.slugs:
        rows = repo.live_gpus_by_slugs(res.slugs)
        if len(rows) == 1:
            return GpuMatch.of(rows[0], "name"), pending
        picked = pick_by_memory(rows, mem)
        if picked is not None:
            return GpuMatch.of(picked, "name_memory"), pending
    return None, pending


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a prepared run goes: its GPU (or queue entry) and its results after the catalog
    checks."""

    match: GpuMatch | None
    pending: PendingGpu | None
    results: tuple[NewResult, ...]
    warnings: tuple[str, ...]


def _checked(r: NewResult, match: GpuMatch, gpu_count: int) -> NewResult:
    found = static_findings(r.workload, r.params, r.metrics, r.memory, match.spec, gpu_count=gpu_count)
    if not found:
        return r
    return r._replace(check_reason=found[0].reason, check_detail="; ".join(f.detail for f in found)[:2000])


def place(uow: UnitOfWork, cache: ReadModel, prep: PreparedRun) -> Placement:
    ident = prep.run.gpu
    name = ident.name.strip()
    match, pending = match_reported_gpu(
        uow, cache, pci=prep.pci_device_id, name=name, mem=ident.memory_total_bytes
    )
    warnings = list(prep.warnings)
    results = prep.results
    if match is not None:
        if ident.slug and ident.slug != match.slug:
            warnings.append(f"the agent guessed gpu.slug {ident.slug!r}; the service resolved {match.slug!r}")
        results = tuple(_checked(r, match, prep.run.gpu_count) for r in results)
    else:
        warnings.append(
            f"GPU {name!r} ({prep.pci_device_id}, {ident.memory_total_bytes} B) is not in the catalog: "
            "the run is kept as pending and counts once an admin maps it"
        )
    return Placement(match=match, pending=pending, results=results, warnings=tuple(warnings))
