"""``gpu-advisor agent ...``: probe the GPU, run the suite, submit and flush results.

Mounted by the main CLI as ``agent``; also runnable alone as ``python -m service.agent.cli``.
Exit codes are in :mod:`service.agent.exitcodes` and docs/agent.md.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer
from gpu_advisor_client import ApiError
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from service.agent import exitcodes
from service.agent.client import AgentClient, Delivery, fetch_measurement_plan
from service.agent.payload import (
    build_runs,
    measured_keys,
    new_run_id_base,
    read_runs,
    sanitize_run,
    session_notes,
    validate_run,
    write_runs,
)
from service.agent.plan import BUILTIN_PLANS, Plan, PlanError, load_plan, plan_from_cells
from service.agent.probe import (
    GpuProbe,
    HostProbe,
    ProbeError,
    busy_reasons,
    capture_raw,
    load_nvml,
    parse_raw,
)
from service.agent.runner import ConfigOutcome, Executor, Runner
from service.agent.spool import Spool, default_spool_dir
from service.core.catalog.vocabulary import WORKLOADS

agent_app = typer.Typer(
    name="agent",
    help="Benchmark agent: probe this GPU host, run the fingerprinted suite, submit results.",
    no_args_is_help=True,
    add_completion=False,
)

err = Console(stderr=True, soft_wrap=True)
out = Console()

UrlOpt = Annotated[str | None, typer.Option("--url", envvar="GPU_ADVISOR_URL", help="Service base URL.")]
KeyOpt = Annotated[
    str | None,
    typer.Option(
        "--api-key", envvar="GPU_ADVISOR_API_KEY", help="API key with the submit scope.", show_default=False
    ),
]
SpoolOpt = Annotated[
    Path | None,
    typer.Option("--spool-dir", envvar="GPU_ADVISOR_AGENT_SPOOL", help="Spool/dead-letter directory."),
]


def _fail(message: str, code: int) -> typer.Exit:
    # the message is text, not markup: "pip install 'gpu-advisor[agent]'" keeps its [agent]
    err.print(f"[bold red]error:[/] {escape(message)}")
    return typer.Exit(code)


def _require_torch() -> None:
    """One line naming the extra, not a worker's traceback, when PyTorch is not installed."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise _fail(
            "PyTorch is not installed: the suite needs the agent extra (pip install 'gpu-advisor[agent]')",
            exitcodes.ERROR,
        )


def parse_duration(text: str) -> float:
    """``480``, ``480s``, ``8m``, ``1.5h`` -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise typer.BadParameter(f"not a duration: {text!r} (use e.g. 480, 480s, 8m, 1h)")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def _probe_host() -> HostProbe:
    return parse_raw(capture_raw(load_nvml()))


# ---------------------------------------------------------------------------------------------
# probe
# ---------------------------------------------------------------------------------------------


@agent_app.command()
def probe(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    raw: Annotated[
        bool, typer.Option("--raw", help="Print the raw NVML capture (for bug reports/tests).")
    ] = False,
) -> None:
    """Show the GPUs NVML sees: identity, memory, driver, clocks, ECC/MIG, PCIe, NVLink, load."""
    try:
        nvml = load_nvml()
        capture = capture_raw(nvml)
        host = parse_raw(capture)
    except ProbeError as exc:
        if as_json or raw:  # a script reading stdout gets JSON either way; the exit code says which
            print(json.dumps({"error": {"message": str(exc), "exit_code": exc.exit_code}}))
            raise typer.Exit(exc.exit_code) from None
        raise _fail(str(exc), exc.exit_code) from None
    if raw:
        print(json.dumps(capture, indent=1, default=str))
        return
    if as_json:
        print(json.dumps(host.to_dict(), indent=1))
        return
    out.print(
        f"driver {host.driver_version}  CUDA (driver) {host.cuda_driver_version}  NVML {host.nvml_version}"
    )
    for g in host.gpus:
        t = Table(title=f"GPU {g.index}: {g.name}", show_header=False)
        rows: list[tuple[str, Any]] = [
            (
                "catalog slug (offline guess)",
                g.slug or "unknown hardware (the service will keep the run pending)",
            ),
            ("PCI device / subsystem", f"{g.pci_device_id} / {g.pci_subsystem_id}  bus {g.pci_bus_id}"),
            (
                "memory total / used",
                f"{g.memory_total_bytes / 2**20:,.0f} MiB / {(g.memory_used_bytes or 0) / 2**20:,.0f} MiB",
            ),
            ("compute capability", g.compute_capability),
            ("power limit (enforced)", f"{g.power_limit_w} W ({g.enforced_power_limit_w} W)"),
            (
                "clocks SM / mem (app, max)",
                f"{g.clock_sm_mhz} / {g.clock_mem_mhz} MHz "
                f"(app {g.app_clock_sm_mhz}/{g.app_clock_mem_mhz}, "
                f"max {g.max_clock_sm_mhz}/{g.max_clock_mem_mhz})",
            ),
            ("ECC / MIG / persistence", f"{g.ecc_mode} / {g.mig_mode} / {g.persistence_mode}"),
            (
                "PCIe current (max)",
                f"gen {g.pcie_gen} x{g.pcie_width} (gen {g.pcie_max_gen} x{g.pcie_max_width})",
            ),
            ("NVLink", g.nvlink),
            ("compute processes", g.compute_processes),
            ("utilisation / temperature", f"{g.utilization_gpu_pct}% / {g.temperature_c} C"),
            ("clock event reasons", g.clocks_event_reasons),
            ("throttling", ", ".join(g.throttling) or "none"),
        ]
        for k, v in rows:
            t.add_row(k, str(v))
        out.print(t)
        for reason in busy_reasons(g):
            out.print(f"[yellow]not fit for benchmarking now:[/] {reason}")


# ---------------------------------------------------------------------------------------------
# run
# ---------------------------------------------------------------------------------------------


def _select_plan(plan_file: Path | None, sizes: str, smoke: bool, workloads: str | None) -> Plan:
    try:
        if plan_file is not None:
            plan = load_plan(plan_file)
        else:
            name = "smoke" if smoke else sizes
            if name not in BUILTIN_PLANS:
                raise typer.BadParameter(f"--sizes must be one of {', '.join(BUILTIN_PLANS)}")
            plan = BUILTIN_PLANS[name]()
    except PlanError as exc:
        raise _fail(f"plan: {exc}", exitcodes.USAGE) from None
    if workloads:
        plan = plan.only(_wanted(workloads))
    return plan


def _wanted(workloads: str) -> list[str]:
    """``--workloads a,b``: the names, each a workload of the vocabulary (else a usage error)."""
    wanted = [w.strip() for w in workloads.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in WORKLOADS]
    if unknown:
        raise _fail(
            f"unknown workload(s): {', '.join(unknown)}; known: {', '.join(WORKLOADS)}", exitcodes.USAGE
        )
    return wanted


FromServerOpt = Annotated[
    bool,
    typer.Option(
        "--from-server",
        help="Run the service's measurement plan (GET /v1/measurement-plan with --api-key): its top cells "
        "for this GPU that one GPU can run, most valuable first.",
    ),
]
TopOpt = Annotated[int, typer.Option("--top", min=1, max=500, help="--from-server: at most this many cells.")]
PlanGpuOpt = Annotated[
    str | None,
    typer.Option(
        "--plan-gpu",
        help="--from-server: the catalog GPU to ask the plan for (default: this GPU's PCI device id).",
    ),
]


def _server_plan(url: str, api_key: str | None, gpu: str, top: int, workloads: str | None) -> Plan:
    """The service's plan for ``gpu``, as a plan of the cells this agent can run. A PCI device id
    that names several catalog GPUs is refused: which one the runs will be stored under is for
    ``--plan-gpu`` to say."""
    try:
        cells = fetch_measurement_plan(url, api_key, gpu, max_cells=4 * top)
    except (ApiError, httpx.HTTPError) as exc:
        raise _fail(f"--from-server: cannot read the measurement plan: {exc}", exitcodes.ERROR) from None
    slugs = sorted({str(c["gpu"]["slug"]) for c in cells})
    if len(slugs) > 1:
        raise _fail(
            f"--from-server: {gpu} names {', '.join(slugs)}; pick one with --plan-gpu", exitcodes.USAGE
        )
    if workloads:
        wanted = set(_wanted(workloads))
        cells = [c for c in cells if c["workload"] in wanted]
    plan, skipped = plan_from_cells(cells, top=top)
    for line in skipped:
        err.print(f"plan: passed over {escape(line)}")
    if not plan.configs:
        err.print(f"the measurement plan has nothing this agent can run on {gpu}")
        raise typer.Exit(exitcodes.OK)
    return plan


def _outcome_line(o: ConfigOutcome) -> str:
    raw = o.raw
    colour = {"ok": "green", "oom": "yellow", "skipped": "blue"}.get(o.status, "red")
    bits = [f"[{colour}]{o.status:>7}[/]", escape(o.spec.label)]
    metrics = raw.get("metrics") or {}
    main = WORKLOADS[o.spec.workload].main_metric
    for name in (main, "tflops", "tops", "throughput"):
        if name in metrics:
            bits.append(f"{name}={metrics[name]:,.1f}")
            break
    if raw.get("step_time_s"):
        bits.append(f"step={raw['step_time_s'] * 1e3:,.1f}ms")
    if raw.get("peak_allocated_bytes"):
        bits.append(f"peak={raw['peak_allocated_bytes'] / 2**30:,.2f}GiB")
    if o.status != "ok" and raw.get("error"):
        # text, not markup: "pip install 'gpu-advisor[agent]'" keeps its [agent]
        bits.append("- " + escape(str(raw["error"]).strip().splitlines()[-1][:160]))
    bits.append(f"({o.wall_s:.1f}s)")
    return " ".join(bits)


def _resumed(plan: Plan, resume: Path) -> Plan:
    """The plan without the configurations already measured (ok or OOM) in ``resume``."""
    try:
        done = measured_keys(read_runs(resume))
    except (OSError, ValueError) as exc:
        raise _fail(f"--resume: {exc}", exitcodes.USAGE) from None
    left = plan.without(done)
    err.print(
        f"resume: {len(plan.configs) - len(left.configs)} configuration(s) already measured in {resume}"
    )
    return left


def _benchmark_gpu(gpu_index: int, allow_busy: bool, notes: list[str]) -> tuple[HostProbe, GpuProbe]:
    """Probe the host and the GPU to measure; refuse a busy one unless allowed (then noted), and
    make CUDA's device 0 that NVML device (unless the scheduler already pinned one)."""
    try:
        host = _probe_host()
    except ProbeError as exc:
        raise _fail(str(exc), exc.exit_code) from None
    if not 0 <= gpu_index < len(host.gpus):
        raise _fail(f"no GPU with NVML index {gpu_index} (this host has {len(host.gpus)})", exitcodes.NO_GPU)
    gpu = host.gpus[gpu_index]
    reasons = busy_reasons(gpu)
    if reasons and not allow_busy:
        raise _fail(
            "GPU not fit for benchmarking: " + "; ".join(reasons) + " (--allow-busy to run anyway)",
            exitcodes.GPU_BUSY,
        )
    if reasons:
        notes.append("gpu_busy_at_start: " + "; ".join(reasons))
    if "CUDA_VISIBLE_DEVICES" not in os.environ:
        os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        os.environ["CUDA_VISIBLE_DEVICES"] = str(gpu_index)
    return host, gpu


@agent_app.command()
def run(
    plan_file: Annotated[
        Path | None, typer.Option("--plan", help="Plan file (JSON); overrides --sizes.")
    ] = None,
    sizes: Annotated[str, typer.Option("--sizes", help="Built-in plan: smoke, quick or standard.")] = "quick",
    smoke: Annotated[
        bool, typer.Option("--smoke", help="Tiny sizes on the CPU (tests, CI); no GPU needed.")
    ] = False,
    workloads: Annotated[
        str | None, typer.Option("--workloads", help="Comma-separated subset of workloads.")
    ] = None,
    time_budget: Annotated[
        str | None, typer.Option("--time-budget", help="Stop starting configs after this (e.g. 8m).")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Results file (JSON list of runs).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the runs as JSON on stdout.")] = False,
    gpu_index: Annotated[int, typer.Option("--gpu", help="NVML index of the GPU to benchmark.")] = 0,
    allow_busy: Annotated[
        bool, typer.Option("--allow-busy", help="Run on a busy/throttling GPU; the run is flagged.")
    ] = False,
    resume: Annotated[
        Path | None, typer.Option("--resume", help="Skip configs already measured (ok/oom) in this file.")
    ] = None,
    isolation: Annotated[
        str, typer.Option("--isolation", help="Process start method: forkserver or spawn.")
    ] = "forkserver",
    submit: Annotated[
        bool, typer.Option("--submit", help="Submit the runs when done (else only --output).")
    ] = False,
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    spool_dir: SpoolOpt = None,
    from_server: FromServerOpt = False,
    top: TopOpt = 10,
    plan_gpu: PlanGpuOpt = None,
) -> None:
    """Run the benchmark suite; each configuration in its own process."""
    _require_torch()
    plan, budget_s = _checked_options(
        plan_file, sizes, smoke, workloads, time_budget, isolation, submit, url, from_server
    )
    host: HostProbe | None = None
    gpu: GpuProbe | None = None
    extra_notes: list[str] = []
    if not smoke:
        host, gpu = _benchmark_gpu(gpu_index, allow_busy, extra_notes)
    plan = _final_plan(plan, gpu, url, api_key, plan_gpu, top, workloads, resume)
    runner, env = _started_runner(plan, isolation, smoke, gpu_index, budget_s)
    started = dt.datetime.now(dt.UTC)
    base = new_run_id_base(started)
    outcomes: list[ConfigOutcome] = []

    def assemble(finished: dt.datetime | None) -> list[dict[str, Any]]:
        notes = session_notes(plan_name=plan.name, smoke=smoke, log=runner.log, extra=extra_notes)
        return build_runs(
            outcomes,
            run_id_base=base,
            env=env,
            host=host,
            gpu=gpu,
            started_at=started,
            finished_at=finished,
            notes=notes,
        )

    def record(outcome: ConfigOutcome) -> None:
        if outcome.status != "skipped":
            outcomes.append(outcome)
        if output is not None and outcomes:
            write_runs(output, assemble(None))

    _run_with_progress(plan, runner, record)
    runs = assemble(dt.datetime.now(dt.UTC)) if outcomes else []
    if output is not None and runs:
        write_runs(output, runs)
    _print_summary(outcomes, runner, output)
    _emit(runs, as_json, submit, url, api_key, spool_dir)


def _final_plan(
    plan: Plan | None,
    gpu: GpuProbe | None,
    url: str | None,
    api_key: str | None,
    plan_gpu: str | None,
    top: int,
    workloads: str | None,
    resume: Path | None,
) -> Plan:
    """The plan to run: the server's for this GPU (--from-server), less what --resume already measured."""
    if plan is None:
        assert url is not None and gpu is not None
        plan = _server_plan(url, api_key, plan_gpu or gpu.pci_device_id, top, workloads)
    if resume is not None:
        plan = _resumed(plan, resume)
    return plan


def _emit(
    runs: list[dict[str, Any]],
    as_json: bool,
    submit: bool,
    url: str | None,
    api_key: str | None,
    spool_dir: Path | None,
) -> None:
    """Print the runs (--json) and submit them (--submit); the delivery's outcome is the exit code."""
    if as_json:
        print(json.dumps(runs, indent=1))
    if submit and runs:
        assert url is not None
        code = _deliver(runs, url, api_key, spool_dir, as_json=False)
        raise typer.Exit(code)


def _checked_options(
    plan_file: Path | None,
    sizes: str,
    smoke: bool,
    workloads: str | None,
    time_budget: str | None,
    isolation: str,
    submit: bool,
    url: str | None,
    from_server: bool,
) -> tuple[Plan | None, float | None]:
    """Reject contradictory options before any GPU is touched, in the order a user reads them.

    Returns the local plan (None with --from-server: the server sends it once the GPU is known)
    and the time budget in seconds (None: no budget).
    """
    if from_server and (plan_file is not None or smoke or not url):
        raise _fail("--from-server needs --url and a GPU, and replaces --plan (not --smoke)", exitcodes.USAGE)
    plan = None if from_server else _select_plan(plan_file, sizes, smoke, workloads)
    budget_s = parse_duration(time_budget) if time_budget else None
    if isolation not in ("forkserver", "spawn"):
        raise _fail("--isolation must be forkserver or spawn", exitcodes.USAGE)
    if submit and not url:
        raise _fail("--submit needs --url (or GPU_ADVISOR_URL)", exitcodes.USAGE)
    return plan, budget_s


def _started_runner(
    plan: Plan, isolation: str, smoke: bool, gpu_index: int, budget_s: float | None
) -> tuple[Runner, dict[str, Any]]:
    """Start the runner and check its torch environment once, so a broken install fails before any config."""
    runner = Runner(
        Executor(isolation), smoke=smoke, nvml_index=None if smoke else gpu_index, time_budget_s=budget_s
    )
    env = runner.environment()
    if env.get("status") != "ok":
        raise _fail(f"cannot start the suite (torch environment): {env.get('error')}", exitcodes.ERROR)
    if not smoke and not env.get("cuda_available"):
        raise _fail(
            "torch sees no CUDA device (CPU-only torch build, or CUDA_VISIBLE_DEVICES hides it)",
            exitcodes.NO_GPU,
        )
    err.print(
        f"[bold]{plan.name}[/]: {len(plan.configs)} configuration(s), estimate {plan.estimated_s / 60:.1f} min"
        + (f", budget {budget_s / 60:.1f} min" if budget_s else "")
        + f"; torch {env.get('torch_version')} on {env.get('device_name')}"
    )
    return runner, env


def _run_with_progress(plan: Plan, runner: Runner, record: Callable[[ConfigOutcome], None]) -> None:
    """Run every config under a progress bar on stderr; ``record`` sees each outcome as it lands."""
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    )
    with progress:
        task = progress.add_task("starting", total=len(plan.configs))

        def on_start(i: int, spec: Any) -> None:
            progress.update(task, description=spec.label[:70])

        def on_done(i: int, outcome: ConfigOutcome) -> None:
            progress.console.print(_outcome_line(outcome))
            progress.advance(task)
            record(outcome)

        runner.run(plan, on_start=on_start, on_done=on_done)


def _print_summary(outcomes: list[ConfigOutcome], runner: Runner, output: Path | None) -> None:
    """One line of counts per status on stderr, so an unattended run's log says what it measured."""
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    err.print(
        "done: "
        + (", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "nothing measured")
        + f"; {len(runner.log.skipped)} skipped; {len(runner.log.not_run)} not run (budget)"
        + (f"; written to {output}" if output else "")
    )
    if runner.log.throttle_events:
        err.print("[yellow]throttling observed:[/] " + "; ".join(runner.log.throttle_events[:5]))


# ---------------------------------------------------------------------------------------------
# submit / flush
# ---------------------------------------------------------------------------------------------


def _exit_code(deliveries: list[Delivery]) -> int:
    if any(d.outcome == "dead_letter" for d in deliveries):
        return exitcodes.DEAD_LETTER
    if any(d.outcome == "spooled" for d in deliveries):
        return exitcodes.SPOOLED
    return exitcodes.OK


def _report(deliveries: list[Delivery], spool: Spool, as_json: bool) -> None:
    if as_json:
        print(
            json.dumps(
                [
                    {
                        "run_id": d.run_id,
                        "outcome": d.outcome,
                        "status_code": d.status_code,
                        "detail": d.detail,
                        "response": d.response,
                    }
                    for d in deliveries
                ],
                indent=1,
                default=str,
            )
        )
        return
    for d in deliveries:
        colour = {"accepted": "green", "replayed": "green", "spooled": "yellow"}.get(d.outcome, "red")
        line = f"[{colour}]{d.outcome:>11}[/] {d.run_id} ({d.status_code or '-'})"
        if isinstance(d.response, dict) and "result_count" in d.response:
            line += (
                f" state={d.response.get('state')} results={d.response.get('result_count')}"
                f" quarantined={d.response.get('quarantined_count')}"
            )
        if d.detail and d.outcome != "accepted":
            line += f" - {d.detail}"
        err.print(line)
    if any(d.outcome == "spooled" for d in deliveries):
        err.print(f"spooled in {spool.pending_dir}; `gpu-advisor agent flush` resends them")
    if any(d.outcome == "dead_letter" for d in deliveries):
        err.print(f"refused runs and the server's answers are in {spool.dead_dir}")


def _deliver(
    runs: list[dict[str, Any]],
    url: str,
    api_key: str | None,
    spool_dir: Path | None,
    *,
    as_json: bool,
    validate_only: bool = False,
) -> int:
    spool = Spool(spool_dir or default_spool_dir())
    deliveries: list[Delivery] = []
    with AgentClient(url, api_key, spool=spool) as client:
        for r in runs:
            if validate_only:
                ok, code, answer = client.validate(r)
                err.print(
                    f"{'valid' if ok else 'INVALID'} {r.get('run_id')} ({code}): "
                    f"{json.dumps(answer, default=str)[:2000] if not ok else ''}"
                )
                if not ok:
                    return exitcodes.DEAD_LETTER
                continue
            deliveries.extend(client.submit(r))
    if validate_only:
        return exitcodes.OK
    _report(deliveries, spool, as_json)
    return _exit_code(deliveries)


@agent_app.command("submit")
def submit_cmd(
    files: Annotated[list[Path], typer.Argument(help="Results files written by `agent run --output`.")],
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    spool_dir: SpoolOpt = None,
    validate_only: Annotated[
        bool, typer.Option("--validate-only", help="Dry run against /validate.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Submit results files; unreachable -> spool, refused -> dead letter."""
    if not url:
        raise _fail("--url (or GPU_ADVISOR_URL) is required", exitcodes.USAGE)
    runs: list[dict[str, Any]] = []
    for f in files:
        try:
            loaded = read_runs(f)
        except (OSError, ValueError) as exc:
            raise _fail(str(exc), exitcodes.USAGE) from None
        for r in loaded:
            problems = validate_run(r)
            if problems:
                raise _fail(
                    f"{f}: run {r.get('run_id')} is not valid: " + "; ".join(problems[:5]), exitcodes.USAGE
                )
        runs.extend(loaded)
    raise typer.Exit(_deliver(runs, url, api_key, spool_dir, as_json=as_json, validate_only=validate_only))


@agent_app.command()
def flush(
    url: UrlOpt = None,
    api_key: KeyOpt = None,
    spool_dir: SpoolOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Resend runs waiting in the spool (after the service was unreachable)."""
    if not url:
        raise _fail("--url (or GPU_ADVISOR_URL) is required", exitcodes.USAGE)
    spool = Spool(spool_dir or default_spool_dir())
    if not spool.pending():
        err.print(f"spool {spool.pending_dir} is empty")
        raise typer.Exit(exitcodes.OK)
    with AgentClient(url, api_key, spool=spool) as client:
        deliveries = client.flush()
    _report(deliveries, spool, as_json)
    raise typer.Exit(_exit_code(deliveries))


@agent_app.command()
def sanitize(
    files: Annotated[list[Path], typer.Argument(help="Results files (as written by `agent run`).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the cleaned runs.")],
    drop: Annotated[
        list[str] | None, typer.Option("--drop", help="Drop results: workload[:key=value,...].")
    ] = None,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why --drop (recorded in each run's notes).")
    ] = None,
) -> None:
    """Rule-based clean-up of results files (see payload.sanitize_run); never hand edits."""
    if drop and not reason:
        raise _fail("--drop needs --reason (it is recorded in the run's notes)", exitcodes.USAGE)
    runs: list[dict[str, Any]] = []
    for f in files:
        try:
            loaded = read_runs(f)
        except (OSError, ValueError) as exc:
            raise _fail(str(exc), exitcodes.USAGE) from None
        for r in loaded:
            clean, changes = sanitize_run(r, drop=list(drop or []), reason=reason)
            for c in changes:
                err.print(f"{r.get('run_id')}: {c}")
            problems = validate_run(clean)
            if problems:
                raise _fail(f"{r.get('run_id')}: " + "; ".join(problems[:5]), exitcodes.ERROR)
            if clean["results"]:
                runs.append(clean)
    write_runs(output, runs)
    err.print(f"{len(runs)} run(s) written to {output}")


def main() -> None:  # pragma: no cover - entry point
    agent_app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(agent_app())
