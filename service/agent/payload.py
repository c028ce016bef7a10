"""Turn configuration outcomes into ``BenchmarkRunIn`` submissions, fingerprint included.

One agent invocation yields one run per distinct stack fingerprint. The only fingerprint field
that varies within an invocation is the TF32 pair: strict ``fp32`` configurations run with
TF32 off, everything else with TF32 allowed (``suite.common.set_precision_flags``), so a
session produces at most two runs, ``<base>-fp32strict`` and ``<base>-tf32``.

Fingerprint choices (DESIGN.md "Fingerprint"):

- ``cuda_version`` is the CUDA runtime torch was built with (the stack), not the driver's
  CUDA version (that one is in the probe output);
- ``pcie_gen``/``pcie_width`` are the negotiated *maximum* link (NVML's
  ``MaxPcieLinkGeneration/Width``: the lower of GPU and slot). The *current* link drops to
  gen 1 at idle for power saving and would make the fingerprint flap between runs;
- ``power_limit_w`` is the enforced limit; ``app_clock_*`` the application clocks;
- ``engine_versions`` records the inference engine used by ``llm-infer`` (transformers);
- ``host_id`` is a hash of the machine id, not the host name (it is left out of the stack hash).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import secrets
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from service.agent.probe import GpuProbe, HostProbe
from service.agent.runner import ConfigOutcome, SessionLog
from service.core.catalog.vocabulary import (
    SUITE_VERSION,
    VocabularyError,
    canonical_parameters,
    get_workload,
    suite_definition_hash,
)
from service.core.evidence.run_check import RunInvalid, check_run, dotted
from service.schemas.benchmarks import BenchmarkRunIn

NOTES_LIMIT = 4000


def host_name() -> str:
    return socket.gethostname() or "unknown-host"


def host_id() -> str:
    """A stable, non-identifying id: SHA-256 of /etc/machine-id (else the host name)."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            mid = Path(path).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if mid:
            return "mid-" + hashlib.sha256(mid.encode()).hexdigest()[:16]
    return "host-" + hashlib.sha256(host_name().encode()).hexdigest()[:16]


def new_run_id_base(now: dt.datetime | None = None, host: str | None = None) -> str:
    now = now or dt.datetime.now(dt.UTC)
    slug = re.sub(r"[^A-Za-z0-9-]+", "-", (host or host_name())).strip("-")[:40] or "host"
    return f"{slug}-{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def fingerprint(
    *,
    env: dict[str, Any],
    host: HostProbe | None,
    gpu: GpuProbe | None,
    tf32_matmul: bool,
    tf32_cudnn: bool,
) -> dict[str, Any]:
    tv = env.get("transformers_version")
    return {
        "suite_version": SUITE_VERSION,
        "workload_definition_hash": suite_definition_hash(),
        "driver_version": host.driver_version if host else "none",
        "cuda_version": env.get("cuda_runtime") or "none",
        "torch_version": env.get("torch_version") or "unknown",
        "attention_backend": env.get("attention_backend") or "unknown",
        "tf32_matmul": tf32_matmul,
        "tf32_cudnn": tf32_cudnn,
        "torch_compile": False,
        "ecc_mode": gpu.ecc_mode if gpu else "n/a",
        "mig_mode": gpu.mig_mode if gpu else "n/a",
        "pci_device_id": gpu.pci_device_id if gpu else "0x0000",
        "host_id": host_id(),
        "cudnn_version": env.get("cudnn_version"),
        "nccl_version": env.get("nccl_version"),
        "transformers_version": tv,
        "engine_versions": {"hf-transformers": tv} if tv else None,
        "power_limit_w": (gpu.enforced_power_limit_w or gpu.power_limit_w) if gpu else None,
        "app_clock_sm_mhz": gpu.app_clock_sm_mhz if gpu else None,
        "app_clock_mem_mhz": gpu.app_clock_mem_mhz if gpu else None,
        "pcie_gen": gpu.pcie_max_gen if gpu else None,
        "pcie_width": gpu.pcie_max_width if gpu else None,
        "container_image_digest": os.environ.get("GPU_ADVISOR_CONTAINER_IMAGE_DIGEST") or None,
        "nccl_nvls_enable": os.environ.get("NCCL_NVLS_ENABLE"),
    }


def result_record(outcome: ConfigOutcome) -> dict[str, Any]:
    """A ``BenchmarkResultIn`` dict: canonical parameters, metrics with their vocabulary units."""
    spec, raw = outcome.spec, outcome.raw
    w = get_workload(spec.workload)
    status = outcome.status if outcome.status in ("ok", "oom", "error") else "error"
    metrics: dict[str, dict[str, Any]] = {}
    if status == "ok":
        values = dict(raw.get("metrics") or {})
        if raw.get("step_time_s") is not None:
            values.setdefault("step_time_s", raw["step_time_s"])
        for name, value in values.items():
            m = w.metric(name)
            if m is None or value is None:
                continue
            metrics[name] = {"value": float(value), "unit": m.unit}
    rec: dict[str, Any] = {
        "workload": spec.workload,
        "parameters": canonical_parameters(spec.workload, spec.parameters),
        "status": status,
        "metrics": metrics,
        "step_time_s": raw.get("step_time_s") if status == "ok" else None,
        "peak_allocated_bytes": raw.get("peak_allocated_bytes"),
        "peak_reserved_bytes": raw.get("peak_reserved_bytes"),
        "nvml_used_bytes": raw.get("nvml_used_bytes"),
        "repeats": raw.get("repeats") if status == "ok" else None,
        "error": (str(raw.get("error"))[-4000:] if raw.get("error") else None) if status != "ok" else None,
        "measured_at": raw.get("measured_at"),
    }
    return rec


def _strict(outcome: ConfigOutcome) -> bool:
    flags = outcome.raw.get("flags") or {}
    if "tf32_matmul" in flags:
        return not flags["tf32_matmul"] and not flags.get("tf32_cudnn", False)
    return outcome.spec.parameters.get("precision") == "fp32"


def session_notes(*, plan_name: str, smoke: bool, log: SessionLog, extra: Iterable[str] = ()) -> str:
    lines = [f"plan={plan_name}" + (" smoke=true (tiny CPU sizes: not comparable)" if smoke else "")]
    lines.extend(extra)
    if log.throttle_events:
        lines.append("throttling observed: " + "; ".join(log.throttle_events[:10]))
    if log.skipped:
        lines.append("skipped: " + "; ".join(f"{s.label} ({why[:120]})" for s, why in log.skipped[:20]))
    if log.not_run:
        lines.append(f"not run (time budget): {len(log.not_run)} configuration(s)")
    text = "\n".join(lines)
    return text if len(text) <= NOTES_LIMIT else text[: NOTES_LIMIT - 3] + "..."


def build_runs(
    outcomes: list[ConfigOutcome],
    *,
    run_id_base: str,
    env: dict[str, Any],
    host: HostProbe | None,
    gpu: GpuProbe | None,
    started_at: dt.datetime,
    finished_at: dt.datetime | None,
    notes: str,
    host_label: str | None = None,
) -> list[dict[str, Any]]:
    """One ``BenchmarkRunIn`` dict per fingerprint group (strict fp32 first), validated."""
    groups: dict[bool, list[ConfigOutcome]] = {True: [], False: []}
    for o in outcomes:
        groups[_strict(o)].append(o)
    identity = {
        "name": gpu.name if gpu else "cpu (smoke run)",
        "pci_device_id": gpu.pci_device_id if gpu else "0x0000",
        "pci_vendor_id": gpu.pci_vendor_id if gpu else None,
        "pci_subsystem_id": gpu.pci_subsystem_id if gpu else None,
        "memory_total_bytes": gpu.memory_total_bytes if gpu else 0,
        "slug": gpu.slug if gpu else None,
    }
    runs: list[dict[str, Any]] = []
    for strict in (True, False):
        members = groups[strict]
        if not members:
            continue
        run = {
            "run_id": f"{run_id_base}-{'fp32strict' if strict else 'tf32'}",
            "suite_version": SUITE_VERSION,
            "host": host_label or host_name(),
            "gpu": identity,
            "gpu_count": 1,
            "fingerprint": fingerprint(
                env=env, host=host, gpu=gpu, tf32_matmul=not strict, tf32_cudnn=not strict
            ),
            "started_at": started_at.isoformat(),
            "finished_at": finished_at.isoformat() if finished_at else None,
            "notes": notes,
            "results": [result_record(o) for o in members],
        }
        problems = validate_run(run)
        if problems:
            raise ValueError(f"agent built an invalid run {run['run_id']}: " + "; ".join(problems[:5]))
        runs.append(run)
    return runs


def validate_run(run: dict[str, Any]) -> list[str]:
    """Everything the service checks before storing, done locally with the service's own
    checks: the wire model (shape and bounds), then the run check of the use case
    (:func:`~service.core.evidence.run_check.check_run`)."""
    try:
        model = BenchmarkRunIn.model_validate(run)
    except ValidationError as exc:
        return [f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()]
    try:
        check_run(model.to_core(), received_at=dt.datetime.now(dt.UTC))
    except RunInvalid as exc:
        return [f"{dotted(p.loc)}: {p.message}" for p in exc.problems]
    return []


def read_runs(path: Path) -> list[dict[str, Any]]:
    """A results file: a JSON list of runs, or one run object."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(doc, dict):
        return [doc]
    if isinstance(doc, list) and all(isinstance(r, dict) for r in doc):
        return list(doc)
    raise ValueError(f"{path}: expected a run object or a list of run objects")


def write_runs(path: Path, runs: list[dict[str, Any]]) -> None:
    """Atomic write (temp file + rename), so an interrupted run leaves the last good file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(runs, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def measured_keys(runs: list[dict[str, Any]], statuses: tuple[str, ...] = ("ok", "oom")) -> set[str]:
    """Cells (workload + canonical parameters hash) already measured in ``runs`` (for --resume)."""
    from service.core.catalog.vocabulary import parameters_hash

    keys: set[str] = set()
    for run in runs:
        for r in run.get("results", []):
            if r.get("status") in statuses:
                try:
                    canon = canonical_parameters(r["workload"], r.get("parameters") or {})
                except VocabularyError:
                    continue
                keys.add(parameters_hash(r["workload"], canon))
    return keys


# ---------------------------------------------------------------------------------------------
# sanitize: reproducible, rule-based clean-up of results files (never hand edits)
# ---------------------------------------------------------------------------------------------

MIN_ENERGY_WINDOW_S = 1.0  # same rule as suite.common.MIN_ENERGY_WINDOW_S, applied after the fact
ENERGY_METRICS = ("energy_per_step_j", "avg_power_w")


def _matches(result: dict[str, Any], selector: str) -> bool:
    """``workload[:key=value,...]``, e.g. ``gemm:precision=int8``; values compare as strings."""
    workload, _, rest = selector.partition(":")
    if result.get("workload") != workload:
        return False
    params = result.get("parameters") or {}
    for cond in filter(None, rest.split(",")):
        key, _, value = cond.partition("=")
        if str(params.get(key)).lower() != value.lower():
            return False
    return True


def sanitize_run(
    run: dict[str, Any], *, drop: list[str], reason: str | None
) -> tuple[dict[str, Any], list[str]]:
    """Apply the clean-up rules to one run; returns the new run and what changed.

    1. ``energy_per_step_j``/``avg_power_w`` measured over a timed window shorter than
       ``MIN_ENERGY_WINDOW_S`` (``step_time_s * repeats``) are removed: NVML's energy counter is
       too coarse for such windows (agent builds before this rule reported e.g. 0 W and 1,050 W
       on a 700 W H200).
    2. Results matching a ``drop`` selector are removed, with ``reason`` recorded in the notes.

    Every remaining number is exactly what was measured; the notes say what was removed.
    """
    out = json.loads(json.dumps(run))
    changes: list[str] = []
    kept: list[dict[str, Any]] = []
    energy_dropped = 0
    for r in out["results"]:
        if any(_matches(r, s) for s in drop):
            changes.append(f"dropped {r['workload']} {r.get('parameters')}")
            continue
        window = (r.get("step_time_s") or 0.0) * (r.get("repeats") or 0)
        if any(m in (r.get("metrics") or {}) for m in ENERGY_METRICS) and window < MIN_ENERGY_WINDOW_S:
            for m in ENERGY_METRICS:
                r["metrics"].pop(m, None)
            energy_dropped += 1
        kept.append(r)
    if energy_dropped:
        changes.append(
            f"removed energy/power metrics of {energy_dropped} result(s) timed over < {MIN_ENERGY_WINDOW_S:g} s"
        )
    dropped = len(out["results"]) - len(kept)
    out["results"] = kept
    if changes:
        note = (
            f"sanitized by `agent sanitize`: energy/power over timed windows < {MIN_ENERGY_WINDOW_S:g} s removed "
            f"({energy_dropped} result(s))"
        )
        if dropped:
            note += f"; {dropped} result(s) dropped ({', '.join(drop)}): {reason or 'no reason given'}"
        notes = ((out.get("notes") or "") + "\n" + note).strip()
        out["notes"] = notes if len(notes) <= NOTES_LIMIT else notes[: NOTES_LIMIT - 3] + "..."
    return out, changes
