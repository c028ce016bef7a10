"""Command line of the multi-GPU suite: ``python -m service.agent.multigpu``.

Exit codes: 0 every job ran (OOM results included: "does not fit" is a result); 1 the output
was written but some job failed (its results say ``status: error``); 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from service.agent.multigpu.collectives import OPS
from service.agent.multigpu.env import apply_safe_env
from service.agent.multigpu.launcher import (
    GIB,
    CollectivePlan,
    LlmPlan,
    SuitePlan,
    build_jobs,
    llm_plans_from_dict,
    measured_cells,
    run_suite,
    visible_gpu_count,
)
from service.agent.multigpu.llm_train import (
    LOOPS,
    MIXED_PRECISIONS,
    OPTIMIZER_IMPLS,
    SHARDINGS,
    SUPPORTED_PRECISIONS,
)

EXIT_OK, EXIT_JOB_FAILED, EXIT_USAGE = 0, 1, 2


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _ints(s: str) -> list[int]:
    return [int(x) for x in _csv(s)]


def _bytes(s: str) -> int:
    s = s.strip().lower()
    for suffix, mult in (
        ("gib", GIB),
        ("mib", 2**20),
        ("kib", 2**10),
        ("g", GIB),
        ("m", 2**20),
        ("k", 2**10),
    ):
        if s.endswith(suffix):
            return int(float(s[: -len(suffix)]) * mult)
    return int(s)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m service.agent.multigpu",
        description="Multi-GPU suite: collective bus bandwidth and llm-train strong scaling (DDP/FSDP), "
        "one torchrun per configuration; writes a JSON list of benchmark runs.",
    )
    ap.add_argument("--output", "-o", type=Path, help="write the runs here (JSON list); default stdout")
    ap.add_argument("--details", type=Path, help="also write per-job raw outcomes (step times, logs) here")
    ap.add_argument("--world-sizes", type=_ints, help="default: 1,2,4,8 up to the visible GPU count")
    ap.add_argument("--backend", choices=("nccl", "gloo"), help="default nccl with GPUs, else gloo")
    ap.add_argument("--workloads", type=_csv, default=["collective", "llm-train"])
    ap.add_argument("--ops", type=_csv, default=["all_reduce", "all_gather", "reduce_scatter"])
    ap.add_argument("--min-bytes", type=_bytes, default=1024)
    ap.add_argument("--max-bytes", type=_bytes, default=GIB)
    ap.add_argument("--size-factor", type=int, default=4)
    ap.add_argument("--dtype", choices=("bf16", "fp16", "fp32"), default="bf16")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--models", type=_csv, default=["gt-llama-350m"])
    ap.add_argument("--shardings", type=_csv, default=["ddp", "fsdp"])
    ap.add_argument("--baseline", action="store_true", help="also sharding=none at world size 1")
    ap.add_argument("--precision", choices=SUPPORTED_PRECISIONS, default="amp_bf16")
    ap.add_argument("--batch-size", type=int, default=4, help="per-GPU micro-batch (sequences)")
    ap.add_argument("--seq-len", type=int, default=2048)
    ap.add_argument(
        "--global-batch", type=int, default=32, help="sequences per optimizer step, fixed across world sizes"
    )
    ap.add_argument("--gradient-checkpointing", action="store_true")
    ap.add_argument("--attention", choices=("sdpa", "eager", "flash_attention_2"), default="sdpa")
    ap.add_argument("--warmup-steps", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument(
        "--peak-tflops", type=float, help="dense per-GPU peak for mfu (default: built-in table by PCI id)"
    )
    ap.add_argument(
        "--timeout", type=float, default=900.0, help="seconds per job before its processes are killed"
    )
    ap.add_argument(
        "--optimizer-impl", choices=OPTIMIZER_IMPLS, default="fused", help="AdamW implementation (llm-train)"
    )
    ap.add_argument(
        "--mixed-precision",
        choices=MIXED_PRECISIONS,
        default="autocast",
        help="fsdp_policy: FSDP2 MixedPrecisionPolicy (bf16 params, fp32 reduce) instead of autocast (fsdp only)",
    )
    ap.add_argument("--loop", choices=LOOPS, default="loss_only", help="keeps_outputs: hold the model output")
    ap.add_argument(
        "--plan", type=Path, help="llm-train plan file (JSON; docs/multigpu.md): replaces the --models grid"
    )
    ap.add_argument(
        "--time-budget",
        type=float,
        help="seconds: start no job whose est_s would overrun (the rest is noted)",
    )
    ap.add_argument(
        "--resume", type=Path, help="runs file: skip llm-train cells it holds as ok or oom (errors run again)"
    )
    ap.add_argument("--workdir", type=Path, help="keep each job's files (logs, rank errors) here")
    ap.add_argument("--smoke", action="store_true", help="tiny CPU/gloo run at world sizes 1,2 (tests)")
    ap.add_argument("--quiet", "-q", action="store_true")
    return ap


def plan_from_args(a: argparse.Namespace) -> SuitePlan:
    """The suite the arguments ask for: the smoke plan, a plan file, or the --models grid."""
    if a.smoke:
        return _smoke_plan(a)
    gpus = visible_gpu_count()
    backend = a.backend or ("nccl" if gpus else "gloo")
    device = "cuda" if backend == "nccl" else "cpu"
    done = frozenset[str]()
    if a.resume is not None:
        runs = json.loads(a.resume.read_text())
        done = measured_cells(runs if isinstance(runs, list) else [runs])
    if a.plan is not None:
        return _file_plan(a, backend, device, done)
    ws = tuple(a.world_sizes or [n for n in (1, 2, 4, 8) if n <= max(gpus, 1)])
    _check_grid_names(a)
    coll = (
        CollectivePlan(
            ops=tuple(a.ops),
            min_bytes=a.min_bytes,
            max_bytes=a.max_bytes,
            size_factor=a.size_factor,
            dtype=a.dtype,
            iters=a.iters,
            repeats=a.repeats,
        )
        if "collective" in a.workloads
        else None
    )
    llm = tuple(
        LlmPlan(
            model=m,
            precision=a.precision,
            batch_size=a.batch_size,
            seq_len=a.seq_len,
            global_batch=a.global_batch,
            shardings=tuple(a.shardings),
            gradient_checkpointing=a.gradient_checkpointing,
            attention=a.attention,
            warmup_steps=a.warmup_steps,
            steps=a.steps,
            include_unsharded_baseline=a.baseline,
            optimizer_impl=a.optimizer_impl,
            mixed_precision=a.mixed_precision,
            loop=a.loop,
        )
        for m in (a.models if "llm-train" in a.workloads else [])
    )
    return SuitePlan(world_sizes=ws, backend=backend, device=device, collective=coll, llm=llm,
                     job_timeout_s=a.timeout, peak_tflops=a.peak_tflops, time_budget_s=a.time_budget,
                     done=done)  # fmt: skip


def _smoke_plan(a: argparse.Namespace) -> SuitePlan:
    """A tiny CPU/gloo plan for tests: seconds per job, whatever GPUs the host has."""
    ws = tuple(a.world_sizes or (1, 2))
    return SuitePlan(
        world_sizes=ws,
        backend="gloo",
        device="cpu",
        collective=CollectivePlan(ops=tuple(a.ops), min_bytes=1024, max_bytes=16384, size_factor=16, dtype="fp32", warmup=1, iters=2, repeats=2)
        if "collective" in a.workloads
        else None,
        llm=(
            LlmPlan(model="mg-tiny-llama", precision="amp_bf16" if a.mixed_precision == "fsdp_policy" else "fp32",
                    batch_size=1, seq_len=32, global_batch=2, shardings=tuple(a.shardings), warmup_steps=1,
                    steps=2, optimizer_impl=a.optimizer_impl, mixed_precision=a.mixed_precision, loop=a.loop,
                    gradient_checkpointing=a.gradient_checkpointing),
        )
        if "llm-train" in a.workloads
        else (),
        job_timeout_s=a.timeout,
    )  # fmt: skip


def _file_plan(a: argparse.Namespace, backend: str, device: str, done: frozenset[str]) -> SuitePlan:
    """The llm-train plan of a --plan file; --world-sizes and --timeout override its own."""
    doc = json.loads(a.plan.read_text())
    if not isinstance(doc, dict):
        raise ValueError(f"{a.plan}: a plan file is a JSON object")
    ws = tuple(a.world_sizes or doc.get("world_sizes") or (1,))
    return SuitePlan(
        world_sizes=ws,
        backend=backend,
        device=device,
        collective=None,
        llm=llm_plans_from_dict(doc, world_sizes=ws),
        job_timeout_s=float(doc.get("job_timeout_s", a.timeout)),
        peak_tflops=a.peak_tflops,
        name=str(doc.get("name") or a.plan.stem),
        time_budget_s=a.time_budget,
        done=done,
    )


def _check_grid_names(a: argparse.Namespace) -> None:
    """Refuse an unknown op, sharding or workload before any process starts, naming the known ones."""
    for op in a.ops:
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}; known: {', '.join(OPS)}")
    for sh in a.shardings:
        if sh not in SHARDINGS:
            raise ValueError(f"unknown sharding {sh!r}; known: {', '.join(SHARDINGS)}")
    unknown = set(a.workloads) - {"collective", "llm-train"}
    if unknown:
        raise ValueError(f"unknown workloads {sorted(unknown)}; known: collective, llm-train")


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through run_job, which kills the running job


def main(argv: list[str] | None = None) -> int:
    apply_safe_env()
    if threading.current_thread() is not threading.main_thread():
        return _main(argv)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(argv)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> int:
    ap = parser()
    a = ap.parse_args(argv)
    try:
        plan = plan_from_args(a)
        if a.workdir:
            a.workdir.mkdir(parents=True, exist_ok=True)
        build_jobs(plan, visible_devices=None)  # refuse a bad variant before launching anything
    except (ValueError, OSError) as exc:
        ap.print_usage(sys.stderr)
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    def progress(msg: str) -> None:
        if not a.quiet:
            print(msg, file=sys.stderr, flush=True)

    def write(runs: list[dict[str, Any]]) -> None:
        if a.output:  # whole-file replace: a reader never sees half a file
            tmp = a.output.with_name(a.output.name + ".tmp")
            tmp.write_text(json.dumps(runs, indent=1, sort_keys=True) + "\n")
            tmp.replace(a.output)

    runs, outcomes = run_suite(plan, workdir=a.workdir, progress=progress, checkpoint=write)
    if a.output:
        write(runs)
    else:
        sys.stdout.write(json.dumps(runs, indent=1, sort_keys=True) + "\n")
    if a.details:
        details = [
            {
                "job": asdict(oc.job),
                "returncode": oc.returncode,
                "failure": oc.failure,
                "raw_results": oc.results,
                "log_tail": oc.log_tail,
            }
            for oc in outcomes
        ]
        a.details.write_text(json.dumps(details, indent=1, sort_keys=True, default=str) + "\n")
    n_ok = sum(1 for r in runs for x in r["results"] if x["status"] == "ok")
    n_all = sum(len(r["results"]) for r in runs)
    progress(f"{len(runs)} runs, {n_all} results, {n_ok} ok")
    return (
        EXIT_JOB_FAILED
        if any(oc.failure and not oc.failure.startswith("OOM") for oc in outcomes)
        else EXIT_OK
    )


if __name__ == "__main__":
    raise SystemExit(main())
