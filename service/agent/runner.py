"""Run a plan: every configuration in its own process, within a time budget.

Isolation: each configuration runs in a fresh process (``multiprocessing``), so an OOM, a
CUDA error or a crash cannot poison the next one; it answers over a pipe or, if it dies or
overruns its timeout, is recorded as ``status="error"``. The default start method is
``forkserver`` with torch/transformers preloaded in the server (``suite.preload``): a child
is a fork of a process that has *imported* torch but never initialised CUDA, so it starts in
milliseconds and still creates its own CUDA context. ``spawn`` is available as a fallback.

The parent never imports torch.
"""

from __future__ import annotations

import dataclasses
import importlib
import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from service.agent.plan import ConfigSpec, Plan
from service.agent.probe import CLOCK_EVENT_REASONS, THROTTLING_REASONS

Payload = dict[str, Any]
ResultDict = dict[str, Any]


@dataclass
class ConfigOutcome:
    spec: ConfigSpec
    raw: ResultDict
    wall_s: float

    @property
    def status(self) -> str:
        return str(self.raw.get("status", "error"))


@dataclass
class SessionLog:
    """What happened besides the results: skips, budget cut, throttling seen."""

    skipped: list[tuple[ConfigSpec, str]] = field(default_factory=list)
    not_run: list[ConfigSpec] = field(default_factory=list)
    throttle_events: list[str] = field(default_factory=list)


class Executor:
    """Runs one payload in a child process and returns its answer (never raises for child faults)."""

    def __init__(self, method: str = "forkserver", preload: bool = True) -> None:
        self.method = method
        self._ctx: Any = multiprocessing.get_context(method)
        if method == "forkserver" and preload:
            self._ctx.set_forkserver_preload(["service.agent.suite.preload"])

    def run(self, payload: Payload, timeout_s: float) -> ResultDict:
        # Imported by name: the parent never depends on the torch-side code statically.
        child_main = importlib.import_module("service.agent.suite.child").child_main
        recv_end, send_end = self._ctx.Pipe(duplex=False)
        proc = self._ctx.Process(target=child_main, args=(send_end, payload), daemon=True)
        proc.start()
        send_end.close()
        answer: ResultDict | None = None
        timed_out = False
        try:
            if recv_end.poll(timeout_s):
                try:
                    answer = recv_end.recv()
                except EOFError:
                    answer = None
            else:
                timed_out = True
        finally:
            recv_end.close()
            if timed_out and proc.is_alive():
                proc.kill()
            proc.join(30)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
        if answer is not None:
            return answer
        if timed_out:
            return {
                "status": "error",
                "error": f"timeout: configuration still running after {timeout_s:.0f} s; killed",
            }
        code = proc.exitcode
        how = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return {"status": "error", "error": f"configuration process died without answering ({how})"}


def architecture_for(model: str) -> dict[str, Any]:
    """The preset's architecture as a plain dict for the configuration process."""
    from service.core.catalog.models import get_model

    spec = get_model(model)
    arch = dataclasses.asdict(spec)
    arch["kind"] = getattr(spec, "kind", "decoder")
    return {k: v for k, v in arch.items() if isinstance(v, (int, float, str, bool)) or v is None}


class Runner:
    def __init__(
        self,
        executor: Executor,
        *,
        smoke: bool,
        nvml_index: int | None,
        time_budget_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        health: Callable[[], list[str]] | None = None,
    ) -> None:
        self.executor = executor
        self.smoke = smoke
        self.nvml_index = nvml_index
        self.time_budget_s = time_budget_s
        self.clock = clock
        self.health = health
        self.log = SessionLog()

    def environment(self, timeout_s: float = 180.0) -> ResultDict:
        return self.executor.run({"kind": "env", "smoke": self.smoke}, timeout_s)

    def payload(self, spec: ConfigSpec) -> Payload:
        options = dict(spec.options)
        if spec.workload in ("llm-train", "llm-infer"):
            options["architecture"] = architecture_for(str(spec.parameters["model"]))
        return {
            "kind": "config",
            "workload": spec.workload,
            "parameters": dict(spec.parameters),
            "smoke": self.smoke,
            "nvml_index": self.nvml_index,
            "warmup": spec.warmup,
            "steps": spec.steps,
            "repeats": spec.repeats,
            "options": options,
        }

    def run(
        self,
        plan: Plan,
        *,
        on_start: Callable[[int, ConfigSpec], None] | None = None,
        on_done: Callable[[int, ConfigOutcome], None] | None = None,
    ) -> list[ConfigOutcome]:
        """Run ``plan`` in order; stop before a configuration whose estimate overruns the budget."""
        t_start = self.clock()
        outcomes: list[ConfigOutcome] = []
        for i, spec in enumerate(plan.configs):
            elapsed = self.clock() - t_start
            if self.time_budget_s is not None and elapsed + spec.est_s > self.time_budget_s:
                self.log.not_run.extend(plan.configs[i:])
                break
            timeout = spec.timeout_s
            if self.time_budget_s is not None:
                # Never let one configuration run far past the budget (at least its estimate).
                timeout = min(timeout, max(self.time_budget_s - elapsed, spec.est_s) + 30.0)
            if on_start:
                on_start(i, spec)
            t0 = self.clock()
            raw = self.executor.run(self.payload(spec), timeout)
            outcome = ConfigOutcome(spec, raw, self.clock() - t0)
            if outcome.status == "skipped":
                self.log.skipped.append((spec, str(raw.get("error") or "")))
            else:
                outcomes.append(outcome)
            reasons = raw.get("clock_event_reasons")
            if isinstance(reasons, int):
                names = sorted(
                    n for bit, n in CLOCK_EVENT_REASONS.items() if reasons & bit and n in THROTTLING_REASONS
                )
                if names:
                    self.log.throttle_events.append(f"during {spec.label}: {', '.join(names)}")
            if self.health is not None:
                for event in self.health():
                    self.log.throttle_events.append(f"after {spec.label}: {event}")
            if on_done:
                on_done(i, outcome)
        return outcomes
