"""Plan the multi-GPU suite, run each configuration under torchrun, assemble the runs.

Each job -- one collective sweep per world size, one ``llm-train`` configuration per world
size and sharding -- runs as its own ``torchrun --standalone --nproc-per-node N`` subprocess
(``python -m torch.distributed.run``) with NVLink multicast forced off
(:data:`service.agent.multigpu.env.SAFE_ENV`), so an OOM, a NCCL error or a hang in one job
cannot poison the next. A job that exceeds its time limit has its process group killed.

Rank 0's results are collected; results a failed job did not produce are filled in as
``status: oom`` (any rank ran out of memory) or ``status: error`` with the rank's message --
"does not fit" is a result. Results are grouped into one ``BenchmarkRunIn`` per (world size,
fingerprint) and validated against the shared vocabulary before being written.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from service.agent.multigpu import collectives
from service.agent.multigpu.env import SAFE_ENV, safe_environ
from service.agent.multigpu.llm_train import SHARDINGS, accumulation_steps, check_variant, result_parameters
from service.core.catalog.fingerprint import check_fingerprint, fingerprint_hash
from service.core.catalog.vocabulary import (
    SUITE_VERSION,
    VocabularyError,
    canonical_parameters,
    check_metric,
    parameters_hash,
)

#: Directory that holds the ``service`` package; put on the workers' PYTHONPATH.
PACKAGE_ROOT = Path(__file__).resolve().parents[3]

GIB = 2**30


@dataclass(frozen=True, slots=True)
class CollectivePlan:
    ops: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter")
    min_bytes: int = 1024
    max_bytes: int = GIB
    size_factor: int = 4
    dtype: str = "bf16"
    warmup: int = 5
    iters: int = 20
    repeats: int = 5

    def sizes(self) -> list[int]:
        return collectives.message_sizes(self.min_bytes, self.max_bytes, self.size_factor)


@dataclass(frozen=True, slots=True)
class LlmPlan:
    """One llm-train configuration, run at every world size with every sharding listed."""

    model: str
    precision: str = "amp_bf16"
    batch_size: int = 4
    seq_len: int = 2048
    global_batch: int = 32
    shardings: tuple[str, ...] = ("ddp", "fsdp")
    gradient_checkpointing: bool = False
    attention: str = "sdpa"
    warmup_steps: int = 2
    steps: int = 5
    include_unsharded_baseline: bool = False  # also sharding=none at world size 1
    optimizer_impl: str = "fused"
    mixed_precision: str = "autocast"  # "fsdp_policy": FSDP2 MixedPrecisionPolicy (fsdp only)
    loop: str = "loss_only"
    est_s: float = 60.0  # expected seconds per job (torchrun start included), for --time-budget


@dataclass(frozen=True, slots=True)
class SuitePlan:
    world_sizes: tuple[int, ...]
    backend: str = "nccl"
    device: str = "cuda"
    collective: CollectivePlan | None = field(default_factory=CollectivePlan)
    llm: tuple[LlmPlan, ...] = ()
    job_timeout_s: float = 900.0
    peak_tflops: float | None = None
    name: str = "multigpu"
    time_budget_s: float | None = None  # start no job whose est_s would overrun this
    done: frozenset[str] = frozenset()  # cells already measured (ok/oom) elsewhere: not run again


_LLM_FIELDS = frozenset(LlmPlan.__dataclass_fields__)


def llm_plans_from_dict(doc: dict[str, Any], *, world_sizes: Sequence[int]) -> tuple[LlmPlan, ...]:
    """The ``llm`` list of a plan file as :class:`LlmPlan` entries.

    A plan file is JSON: ``{"name", "description", "world_sizes": [1], "job_timeout_s",
    "defaults": {LlmPlan fields}, "llm": [{LlmPlan fields}, ...]}``; each entry is its
    ``defaults`` overlaid by the entry. ``global_batch`` defaults to ``batch_size`` x the largest
    world size (one micro-batch per rank there). Unknown keys are refused.
    """
    defaults = doc.get("defaults") or {}
    entries = doc.get("llm")
    if not isinstance(defaults, dict) or not isinstance(entries, list) or not entries:
        raise ValueError("a plan file needs a non-empty 'llm' list (and 'defaults', if any, an object)")
    out: list[LlmPlan] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"llm[{i}]: an object is required")
        merged = {**defaults, **entry}
        unknown = set(merged) - _LLM_FIELDS
        if unknown:
            raise ValueError(f"llm[{i}]: unknown keys {sorted(unknown)}; known: {sorted(_LLM_FIELDS)}")
        if "model" not in merged or "batch_size" not in merged:
            raise ValueError(f"llm[{i}]: 'model' and 'batch_size' are required")
        merged.setdefault("global_batch", int(merged["batch_size"]) * max(world_sizes))
        if "shardings" in merged:
            merged["shardings"] = tuple(merged["shardings"])
        try:
            out.append(LlmPlan(**merged))
        except TypeError as exc:
            raise ValueError(f"llm[{i}]: {exc}") from None
    return tuple(out)


@dataclass(slots=True)
class Job:
    world_size: int
    kind: str  # "collective" | "llm-train"
    spec: dict[str, Any]
    expected: list[dict[str, Any]]  # results (workload + parameters) the job should produce

    def payload(self, backend: str, device: str, timeout_s: float) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "world_size": self.world_size,
            "backend": backend,
            "device": device,
            "spec": self.spec,
            "collective_timeout_s": timeout_s,
        }

    @property
    def label(self) -> str:
        if self.kind == "collective":
            return f"collective ws{self.world_size}"
        s = self.spec
        bits = [f"llm-train {s['model']} {s['sharding']} ws{self.world_size}"]
        bits.append(f"bs{s['batch_size']}x{s['seq_len']}")
        if s.get("gradient_checkpointing"):
            bits.append("ckpt")
        for key, default in (
            ("optimizer_impl", "fused"),
            ("mixed_precision", "autocast"),
            ("loop", "loss_only"),
        ):
            if s.get(key, default) != default:
                bits.append(str(s[key]))
        return " ".join(bits)

    @property
    def est_s(self) -> float:
        return float(self.spec.get("est_s", 60.0))


@dataclass(slots=True)
class JobOutcome:
    job: Job
    results: list[dict[str, Any]]
    fingerprint: dict[str, Any] | None
    gpu: dict[str, Any] | None
    started_at: str
    finished_at: str
    returncode: int | None
    failure: str | None = None
    log_tail: str = ""


def build_jobs(plan: SuitePlan, *, visible_devices: int | None) -> tuple[list[Job], list[str]]:
    """Jobs for ``plan`` and the notes on what was skipped (and why)."""
    jobs: list[Job] = []
    skipped: list[str] = []
    for ws in plan.world_sizes:
        if ws < 1:
            raise ValueError("world sizes must be >= 1")
        if plan.device == "cuda" and visible_devices is not None and ws > visible_devices:
            skipped.append(f"world size {ws}: needs {ws} GPUs, {visible_devices} visible")
            continue
        if plan.collective is not None:
            c = plan.collective
            sizes = c.sizes()
            expected = [
                {
                    "workload": "collective",
                    "parameters": {
                        "op": op,
                        "message_bytes": collectives.aligned_message_bytes(s, ws, c.dtype),
                        "gpu_count": ws,
                        "backend": plan.backend,
                        "dtype": c.dtype,
                    },
                }
                for op in c.ops
                for s in sizes
            ]
            spec = {
                "ops": list(c.ops),
                "sizes": sizes,
                "dtype": c.dtype,
                "warmup": c.warmup,
                "iters": c.iters,
                "repeats": c.repeats,
            }
            jobs.append(Job(ws, "collective", spec, expected))
        for lp in plan.llm:
            shardings = list(lp.shardings)
            if ws == 1 and lp.include_unsharded_baseline and "none" not in shardings:
                shardings.insert(0, "none")
            for sh in shardings:
                if sh not in SHARDINGS:
                    raise ValueError(f"unknown sharding {sh!r}; known: {', '.join(SHARDINGS)}")
                if sh == "none" and ws != 1:
                    continue
                try:
                    accumulation_steps(lp.global_batch, lp.batch_size, ws)
                except ValueError as exc:
                    skipped.append(f"llm-train {lp.model} {sh} world size {ws}: {exc}")
                    continue
                spec = {
                    "model": lp.model,
                    "precision": lp.precision,
                    "batch_size": lp.batch_size,
                    "seq_len": lp.seq_len,
                    "global_batch": lp.global_batch,
                    "sharding": sh,
                    "gradient_checkpointing": lp.gradient_checkpointing,
                    "attention": lp.attention,
                    "warmup_steps": lp.warmup_steps,
                    "steps": lp.steps,
                    "peak_tflops": plan.peak_tflops,
                    "optimizer_impl": lp.optimizer_impl,
                    "mixed_precision": lp.mixed_precision,
                    "loop": lp.loop,
                    "est_s": lp.est_s,
                }
                params = result_parameters(spec, ws)
                try:
                    check_variant(spec)
                    canonical_parameters("llm-train", params)
                except (ValueError, VocabularyError) as exc:
                    raise ValueError(f"llm-train {lp.model} {sh} world size {ws}: {exc}") from None
                if _cell_key("llm-train", params) in plan.done:
                    skipped.append(
                        f"llm-train {lp.model} {sh} world size {ws} ({_variant(spec)}): already measured"
                    )
                    continue
                jobs.append(Job(ws, "llm-train", spec, [{"workload": "llm-train", "parameters": params}]))
    return jobs, skipped


def _variant(spec: dict[str, Any]) -> str:
    ckpt = " ckpt" if spec.get("gradient_checkpointing") else ""
    return (
        f"bs{spec['batch_size']}x{spec['seq_len']}{ckpt} {spec.get('optimizer_impl', 'fused')} "
        f"{spec.get('mixed_precision', 'autocast')} {spec.get('loop', 'loss_only')}"
    )


def _non_default_variant(spec: dict[str, Any]) -> bool:
    return (spec.get("optimizer_impl", "fused"), spec.get("mixed_precision", "autocast"),
            spec.get("loop", "loss_only")) != ("fused", "autocast", "loss_only")  # fmt: skip


def measured_cells(runs: Sequence[dict[str, Any]]) -> frozenset[str]:
    """Cells (workload + canonical parameters hash) with an ``ok`` or ``oom`` result in ``runs``
    (for ``--resume``: errors are run again)."""
    keys = set()
    for run in runs:
        for r in run.get("results", []):
            if r.get("status") in ("ok", "oom") and "workload" in r:
                try:
                    keys.add(_cell_key(r["workload"], r.get("parameters") or {}))
                except VocabularyError:
                    continue
    return frozenset(keys)


def torchrun_command(python: str, world_size: int, job_path: Path, out_dir: Path) -> list[str]:
    """The torchrun invocation of one job (``python -m torch.distributed.run`` is torchrun)."""
    return [
        python,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(world_size),
        "-m",
        "service.agent.multigpu.worker",
        "--job",
        str(job_path),
        "--out",
        str(out_dir),
    ]


def job_environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for torchrun: NVLS off, the ``service`` package importable, output unbuffered."""
    env = safe_environ(base)
    pp = env.get("PYTHONPATH", "")
    parts = [str(PACKAGE_ROOT), *[p for p in pp.split(os.pathsep) if p]]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(parts))
    env["PYTHONUNBUFFERED"] = "1"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _tail(path: Path, n: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-n:]
    except OSError:
        return ""


def run_job(job: Job, plan: SuitePlan, workdir: Path, *, python: str = sys.executable) -> JobOutcome:
    """Run one job under torchrun in its own process group; collect rank 0's output."""
    workdir.mkdir(parents=True, exist_ok=True)
    job_path = workdir / "job.json"
    job_path.write_text(json.dumps(job.payload(plan.backend, plan.device, plan.job_timeout_s), indent=1))
    log_path = workdir / "torchrun.log"
    started = _now()
    cmd = torchrun_command(python, job.world_size, job_path, workdir)
    failure: str | None = None
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=job_environment(),
            start_new_session=True,
            cwd=PACKAGE_ROOT,
        )
        try:
            rc: int | None = proc.wait(timeout=plan.job_timeout_s)
        except subprocess.TimeoutExpired:
            failure = f"timed out after {plan.job_timeout_s:g} s"
            _kill_group(proc)
            rc = proc.returncode
        except BaseException:  # interrupted (Ctrl-C, SIGTERM): leave no job running on the GPUs
            _kill_group(proc)
            raise
    finished = _now()
    results = []
    rp = workdir / "results.jsonl"
    if rp.exists():
        for line in rp.read_text().splitlines():
            if line.strip():
                try:
                    results.append(json.loads(line))
                except ValueError:
                    continue  # a line cut short by a crash
    errors = sorted(workdir.glob("error-rank*.json"))
    if failure is None and rc != 0:
        failure = f"torchrun exited with status {rc}"
    if errors:
        errs = [e for e in (_read_json(p) for p in errors) if isinstance(e, dict)]
        oom = [e for e in errs if e.get("oom")]
        first = (oom or errs or [{}])[0]
        failure = (
            "OOM: " if oom else ""
        ) + f"rank {first.get('rank')}: {first.get('type')}: {first.get('message')}"
    return JobOutcome(
        job=job,
        results=results,
        fingerprint=_read_json(workdir / "fingerprint.json"),
        gpu=_read_json(workdir / "gpu.json"),
        started_at=started,
        finished_at=finished,
        returncode=rc,
        failure=failure,
        log_tail=_tail(log_path),
    )


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL, the process group this launcher started for ``proc``."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 15.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def complete_results(outcome: JobOutcome) -> list[dict[str, Any]]:
    """Rank 0's results plus an ``oom``/``error`` result for every expected one it did not report."""
    got = {
        _cell_key(r["workload"], r["parameters"]): r
        for r in outcome.results
        if "workload" in r and "parameters" in r
    }
    out = list(outcome.results)
    failure = outcome.failure or "the job ended without reporting this result"
    status = "oom" if failure.startswith("OOM") else "error"
    text = failure if status == "oom" else f"{failure}\n{outcome.log_tail[-1500:]}"
    for exp in outcome.job.expected:
        if _cell_key(exp["workload"], exp["parameters"]) not in got:
            out.append(
                {
                    "workload": exp["workload"],
                    "parameters": dict(exp["parameters"]),
                    "status": status,
                    "error": text[:4000],
                    "measured_at": outcome.finished_at,
                }
            )
    return out


def _cell_key(workload: str, params: dict[str, Any]) -> str:
    return parameters_hash(workload, canonical_parameters(workload, params))


def _clean_result(r: dict[str, Any]) -> dict[str, Any]:
    """A result as ``BenchmarkResultIn`` takes it: canonical parameters, no suite-internal keys."""
    allowed = (
        "workload", "parameters", "status", "metrics", "step_time_s", "peak_allocated_bytes",
        "peak_reserved_bytes", "nvml_used_bytes", "repeats", "error", "measured_at",
    )  # fmt: skip
    out = {k: r[k] for k in allowed if k in r and r[k] is not None}
    out["parameters"] = canonical_parameters(r["workload"], r["parameters"])
    out.setdefault("metrics", {})
    return out


def assemble_runs(
    outcomes: Sequence[JobOutcome],
    *,
    fallback_fingerprint: Callable[[], dict[str, Any]],
    fallback_gpu: Callable[[], dict[str, Any]],
    notes: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """One ``BenchmarkRunIn`` dict per (world size, fingerprint), results in job order."""
    groups: dict[tuple[int, str], dict[str, Any]] = {}
    for oc in outcomes:
        fp = oc.fingerprint or fallback_fingerprint()
        gpu = oc.gpu or fallback_gpu()
        key = (oc.job.world_size, fingerprint_hash(fp))
        run = groups.get(key)
        if run is None:
            run = groups[key] = {
                "run_id": f"mgpu-{uuid.uuid4().hex}",
                "suite_version": SUITE_VERSION,
                "host": str(fp.get("host_id") or "unknown-host"),
                "gpu": gpu,
                "gpu_count": oc.job.world_size,
                "fingerprint": fp,
                "started_at": oc.started_at,
                "finished_at": oc.finished_at,
                "results": [],
                "_jobs": [],
            }
        run["started_at"] = min(run["started_at"], oc.started_at)
        run["finished_at"] = max(run["finished_at"], oc.finished_at)
        run["results"].extend(_clean_result(r) for r in complete_results(oc))
        run["_jobs"].append(oc)
    runs = []
    for run in groups.values():
        run["notes"] = _run_notes(run.pop("_jobs"), notes)
        runs.append(run)
    return runs


def _run_notes(outcomes: Sequence[JobOutcome], extra: Sequence[str]) -> str:
    env = " ".join(f"{k}={v}" for k, v in SAFE_ENV.items())
    lines = [
        "multi-GPU suite (service.agent.multigpu), torchrun --standalone, one process per GPU.",
        f"NVLink multicast OFF ({env}): NVSwitch systems with NVLS on are faster; do not generalise.",
        "collective: nccl-tests sizes/bus factors, time = max over ranks, median of batches.",
        "llm-train: fixed global batch with gradient accumulation; DDP no_sync until the last "
        "micro-batch; FSDP2 fully_shard per decoder layer, reduce-scatter every micro-batch; "
        "energy summed over ranks.",
    ]
    if any(oc.job.kind == "collective" and oc.job.world_size == 1 for oc in outcomes):
        lines.append(
            "world size 1: busbw is 0 by definition; an in-place all_reduce is a no-op (time = launch "
            "overhead, algbw meaningless); all_gather/reduce_scatter are a device copy. Path check only."
        )
    if any(oc.job.kind == "llm-train" and _non_default_variant(oc.job.spec) for oc in outcomes):
        lines.append(
            "variants: optimizer_impl fused/foreach/forloop = AdamW(fused=True) / (foreach=True) / "
            "(foreach=False, fused=False); mixed_precision fsdp_policy = FSDP2 MixedPrecisionPolicy("
            "param_dtype=bf16, reduce_dtype=fp32) on every fully_shard, fp32 sharded params, no autocast; "
            "loop keeps_outputs = model output held through backward and optimizer step until the next forward."
        )
    for oc in outcomes:
        if oc.job.kind == "llm-train":
            s = oc.job.spec
            accum = s["global_batch"] // (s["batch_size"] * oc.job.world_size)
            lines.append(f"{oc.job.label}: {accum} micro-batches/step")
        if oc.failure:
            lines.append(f"{oc.job.label} FAILED: {oc.failure[:300]}")
    lines.extend(extra)
    text = "\n".join(lines)
    return text if len(text) <= 4000 else text[:3990] + "\n[...]"


def validate_run(run: dict[str, Any]) -> None:
    """Raise ``VocabularyError`` (or pydantic's ``ValidationError``) if the run would be refused."""
    check_fingerprint(run["fingerprint"])
    for i, r in enumerate(run["results"]):
        loc: tuple[str | int, ...] = ("results", i)
        canonical_parameters(r["workload"], r["parameters"], (*loc, "parameters"))
        for name, mv in r.get("metrics", {}).items():
            check_metric(r["workload"], name, mv["value"], mv["unit"], (*loc, "metrics", name))
        if r["status"] not in ("ok", "oom", "error"):
            raise VocabularyError((*loc, "status"), f"bad status {r['status']!r}")
    try:
        from service.schemas.benchmarks import BenchmarkRunIn
    except ImportError:  # a GPU node without the service's dependencies: vocabulary checks only
        return
    BenchmarkRunIn.model_validate(run)


def visible_gpu_count() -> int:
    try:
        import torch

        return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0
    except ImportError:
        return 0


def host_fallbacks(plan: SuitePlan) -> tuple[Callable[[], dict[str, Any]], Callable[[], dict[str, Any]]]:
    """Fingerprint / GPU identity read by the launcher itself, for jobs that died too early."""
    from service.agent.multigpu import fingerprint as fpm

    cache: dict[str, Any] = {}

    def info() -> Any:
        if "info" not in cache:
            # NVML by index, no CUDA context in the launcher process.
            cache["info"] = fpm._nvml_device_info(None, 0) if plan.device == "cuda" else None
        return cache["info"]

    def fingerprint() -> dict[str, Any]:
        return fpm.build_fingerprint(backend=plan.backend, info=info(), attention_backend="unknown")

    def gpu() -> dict[str, Any]:
        return fpm.gpu_identity(info())

    return fingerprint, gpu


def run_suite(
    plan: SuitePlan,
    *,
    workdir: Path | None = None,
    progress: Callable[[str], None] | None = None,
    checkpoint: Callable[[list[dict[str, Any]]], None] | None = None,
    python: str = sys.executable,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[dict[str, Any]], list[JobOutcome]]:
    """Run every job of ``plan``; return (validated runs, per-job outcomes).

    ``checkpoint`` gets the runs assembled so far after every job, so a caller can write them
    out as it goes and a launcher killed from outside still leaves what was measured.
    """
    say = progress or (lambda _msg: None)
    visible = visible_gpu_count() if plan.device == "cuda" else None
    jobs, skipped = build_jobs(plan, visible_devices=visible)
    for s in skipped:
        say(f"skip: {s}")
    outcomes: list[JobOutcome] = []
    t_start = clock()
    with tempfile.TemporaryDirectory(prefix="gpu-advisor-multigpu-") as tmp:
        base = workdir or Path(tmp)
        for i, job in enumerate(jobs):
            elapsed = clock() - t_start
            if plan.time_budget_s is not None and elapsed + job.est_s > plan.time_budget_s:
                rest = jobs[i:]
                skipped.append(
                    f"not run (time budget {plan.time_budget_s:g} s): {len(rest)} job(s): "
                    + "; ".join(j.label for j in rest)[:1200]
                )
                say(f"time budget: {len(rest)} job(s) not run")
                break
            say(f"[{i + 1}/{len(jobs)}] {job.label}")
            oc = run_job(job, plan, base / f"job{i:03d}", python=python)
            if oc.failure:
                say(f"    failed: {oc.failure[:200]}")
            outcomes.append(oc)
            if checkpoint is not None:
                checkpoint(_assemble(plan, outcomes, skipped))
    runs = _assemble(plan, outcomes, skipped)
    for run in runs:
        validate_run(run)
    return runs, outcomes


def _assemble(
    plan: SuitePlan, outcomes: Sequence[JobOutcome], skipped: Sequence[str]
) -> list[dict[str, Any]]:
    fb_fp, fb_gpu = host_fallbacks(plan)
    notes = [f"skipped {s}" for s in skipped]
    summary = {k: v for k, v in asdict(plan).items() if k not in ("llm", "done")}
    summary["llm_configs"] = len(plan.llm)
    notes.append("plan: " + json.dumps(summary, sort_keys=True, default=str)[:1500])
    return assemble_runs(outcomes, fallback_fingerprint=fb_fp, fallback_gpu=fb_gpu, notes=notes)
