"""Measurement machinery shared by the workloads (runs inside a configuration's process).

Timing: warm-up steps first (allocator, cuBLAS/cuDNN heuristics, optimizer state), then
``torch.cuda.reset_peak_memory_stats()`` and ``steps`` timed steps, each bracketed by
``torch.cuda.synchronize()`` and ``time.perf_counter()``; the reported step time is the
median. Peak memory is ``max_memory_allocated`` / ``max_memory_reserved`` over those
steady-state steps. Energy is the delta of NVML's total-energy counter (millijoules since
driver load) over the timed steps; average power is that energy over the timed wall time.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any


class Skip(Exception):
    """This configuration does not apply here (e.g. fp8 before sm89); not a result."""


def importable(module: str) -> Any:
    """``module`` imported, or :class:`Skip` naming the agent extra: a node with torch but
    without (a working) transformers, peft or torchvision skips those workloads rather than
    reporting every configuration as an error result."""
    import importlib

    try:
        return importlib.import_module(module)
    except Exception as exc:  # not installed, or built for another torch
        raise Skip(
            f"{module} is not importable here: {type(exc).__name__}: {exc} "
            "(install the agent extra: pip install 'gpu-advisor[agent]')"
        ) from None


@dataclass
class Context:
    device: str  # "cuda" or "cpu"
    smoke: bool
    nvml_index: int | None
    warmup: int
    steps: int
    repeats: int
    options: dict[str, Any] = field(default_factory=dict)
    flags: dict[str, Any] = field(default_factory=dict)
    _nvml: Any = None
    _nvml_handle: Any = None

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    # ---- NVML (energy, device memory used) ------------------------------------------------

    def nvml_handle(self) -> Any:
        if self._nvml_handle is None and self.cuda and self.nvml_index is not None:
            try:
                import pynvml

                pynvml.nvmlInit()
                self._nvml = pynvml
                self._nvml_handle = pynvml.nvmlDeviceGetHandleByIndex(self.nvml_index)
            except Exception:
                self._nvml_handle = False
        return self._nvml_handle or None

    def energy_mj(self) -> int | None:
        h = self.nvml_handle()
        if h is None:
            return None
        try:
            return int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(h))
        except Exception:
            return None

    def nvml_used_bytes(self) -> int | None:
        h = self.nvml_handle()
        if h is None:
            return None
        try:
            return int(self._nvml.nvmlDeviceGetMemoryInfo(h).used)
        except Exception:
            return None

    def clock_event_reasons(self) -> int | None:
        h = self.nvml_handle()
        if h is None:
            return None
        for name in ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"):
            fn = getattr(self._nvml, name, None)
            if fn is not None:
                try:
                    return int(fn(h))
                except Exception:
                    return None
        return None

    # ---- torch helpers ---------------------------------------------------------------------

    def sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()


def set_precision_flags(ctx: Context, precision: str) -> None:
    """Set TF32 switches explicitly and record them (they go into the run's fingerprint).

    ``fp32`` is strict IEEE fp32 (matmul precision "highest", cuDNN TF32 off); every other
    precision allows TF32 for any fp32 math outside autocast (``tf32`` needs it, the half
    precisions barely touch it).
    """
    import torch

    strict = precision == "fp32"
    torch.backends.cuda.matmul.allow_tf32 = not strict
    torch.backends.cudnn.allow_tf32 = not strict
    torch.set_float32_matmul_precision("highest" if strict else "high")
    ctx.flags["tf32_matmul"] = bool(torch.backends.cuda.matmul.allow_tf32)
    ctx.flags["tf32_cudnn"] = bool(torch.backends.cudnn.allow_tf32)


def half_dtype(precision: str) -> Any:
    import torch

    if precision in ("bf16", "amp_bf16"):
        return torch.bfloat16
    if precision in ("fp16", "amp_fp16"):
        return torch.float16
    return torch.float32


def param_dtype(precision: str) -> Any:
    """Parameter dtype: pure half precisions keep half parameters; amp_* and fp32/tf32 keep fp32."""
    import torch

    if precision == "bf16":
        return torch.bfloat16
    if precision == "fp16":
        return torch.float16
    if precision in ("fp32", "tf32", "amp_bf16", "amp_fp16"):
        return torch.float32
    raise Skip(f"precision {precision} is not supported for this workload")


def autocast(ctx: Context, precision: str) -> contextlib.AbstractContextManager[Any]:
    import torch

    if precision in ("amp_bf16", "amp_fp16"):
        return torch.autocast(device_type=ctx.device, dtype=half_dtype(precision))
    return contextlib.nullcontext()


def grad_scaler(ctx: Context, precision: str) -> Any:
    import torch

    if precision == "amp_fp16":
        return torch.amp.GradScaler(ctx.device)
    return None


class OptimizerStepPeak:
    """Peak allocated bytes reached inside ``optimizer.step()``, for one armed step.

    ``arm()`` once the timed steps are over (their peak has been read, so it is not
    disturbed); the next :func:`backward_and_step` synchronises, calls
    ``torch.cuda.reset_peak_memory_stats()`` just before the optimizer step (the peak restarts
    at what is allocated then: parameters, gradients, optimizer state, anything the loop still
    holds), and reads ``max_memory_allocated`` right after it. CUDA only; ``value`` stays
    ``None`` on the CPU.
    """

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.armed = False
        self.value: int | None = None

    def arm(self) -> None:
        self.armed = self.ctx.cuda

    @contextlib.contextmanager
    def around_step(self) -> Iterator[None]:
        if not self.armed:
            yield
            return
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        yield
        torch.cuda.synchronize()
        self.value = int(torch.cuda.max_memory_allocated())
        self.armed = False


def backward_and_step(loss: Any, opt: Any, scaler: Any, opt_peak: OptimizerStepPeak | None = None) -> None:
    """Backward, optimizer step (through the GradScaler when there is one) and
    ``zero_grad(set_to_none=True)``: the tail of every training step in the suite.
    ``opt_peak``, when armed, records the peak inside the optimizer step."""
    around = opt_peak.around_step() if opt_peak is not None else contextlib.nullcontext()
    if scaler is not None:
        scaler.scale(loss).backward()
        with around:
            scaler.step(opt)
        scaler.update()
    else:
        loss.backward()
        with around:
            opt.step()
    opt.zero_grad(set_to_none=True)


@dataclass
class Measurement:
    step_times_s: list[float]
    wall_s: float
    energy_j: float | None
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    nvml_used_bytes: int | None

    @property
    def median_s(self) -> float:
        return statistics.median(self.step_times_s)

    @property
    def energy_per_step_j(self) -> float | None:
        return None if self.energy_j is None else self.energy_j / len(self.step_times_s)

    @property
    def avg_power_w(self) -> float | None:
        return None if self.energy_j is None or self.wall_s <= 0 else self.energy_j / self.wall_s


def reset_peak(ctx: Context) -> None:
    if ctx.cuda:
        import torch

        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()


def peak_memory(ctx: Context) -> tuple[int | None, int | None]:
    if not ctx.cuda:
        return None, None
    import torch

    return int(torch.cuda.max_memory_allocated()), int(torch.cuda.max_memory_reserved())


MIN_TIMED_S_CUDA = 2.0
"""Timed steps continue until at least this much wall time has passed (default on a GPU)."""
MIN_ENERGY_WINDOW_S = 1.0
"""NVML's energy counter advances in coarse increments: over a window shorter than this the
delta is noise (seen on an H200: 0 W and 1,050 W on a 700 W card over 30-60 ms windows), so
energy and power are reported only for timed windows at least this long."""
MAX_TIMED_STEPS = 1000


def measure(
    ctx: Context, step: Callable[[], Any], *, warmup: int | None = None, steps: int | None = None
) -> Measurement:
    """Warm up, reset peak stats, time synchronised steps; see the module docstring.

    At least ``steps`` steps are timed, and more (up to ``MAX_TIMED_STEPS``) until the timed
    window reaches ``min_timed_s`` (option; 2 s on a GPU, 0 on the CPU), so short steps get a
    stable median and an energy window long enough for NVML's counter.
    """
    for _ in range(ctx.warmup if warmup is None else warmup):
        step()
    reset_peak(ctx)
    n = ctx.steps if steps is None else steps
    min_timed = float(ctx.options.get("min_timed_s", MIN_TIMED_S_CUDA if ctx.cuda else 0.0))
    e0 = ctx.energy_mj()
    t_start = time.perf_counter()
    times: list[float] = []
    while len(times) < n or (time.perf_counter() - t_start < min_timed and len(times) < MAX_TIMED_STEPS):
        t0 = time.perf_counter()
        step()
        ctx.sync()
        times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t_start
    e1 = ctx.energy_mj()
    alloc, reserved = peak_memory(ctx)
    energy = None
    if e0 is not None and e1 is not None and e1 >= e0 and wall >= MIN_ENERGY_WINDOW_S:
        energy = (e1 - e0) / 1000.0
    return Measurement(times, wall, energy, alloc, reserved, ctx.nvml_used_bytes())


def result(
    m: Measurement | None = None,
    *,
    metrics: dict[str, float | None],
    step_time_s: float | None = None,
    repeats: int | None = None,
) -> dict[str, Any]:
    """A child's ``ok`` result: metrics (None values dropped) and memory figures."""
    out: dict[str, Any] = {
        "status": "ok",
        "metrics": {k: float(v) for k, v in metrics.items() if v is not None},
        "step_time_s": step_time_s if step_time_s is not None else (m.median_s if m else None),
        "repeats": repeats if repeats is not None else (len(m.step_times_s) if m else None),
    }
    if m is not None:
        out.update(
            peak_allocated_bytes=m.peak_allocated_bytes,
            peak_reserved_bytes=m.peak_reserved_bytes,
            nvml_used_bytes=m.nvml_used_bytes,
        )
        if m.energy_per_step_j is not None:
            out["metrics"].setdefault("energy_per_step_j", m.energy_per_step_j)
        if m.avg_power_w is not None:
            out["metrics"].setdefault("avg_power_w", m.avg_power_w)
    return out


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default method), ``q`` in [0, 100]."""
    xs = sorted(values)
    if not xs:
        raise ValueError("no values")
    pos = (len(xs) - 1) * q / 100.0
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def adamw(ctx: Context, params: Any, impl: str = "fused", lr: float = 1e-4) -> Any:
    """``torch.optim.AdamW`` in the implementation ``impl`` (vocabulary ``optimizer_impl``).

    ``fused``: ``fused=True`` on CUDA (the reference loop; torch's default choice on the CPU);
    ``foreach``: ``foreach=True, fused=False`` (multi-tensor kernels over every parameter at
    once: larger temporaries); ``forloop``: ``foreach=False, fused=False`` (one parameter at a
    time).
    """
    import torch

    if impl == "fused":
        return torch.optim.AdamW(params, lr=lr, fused=True if ctx.cuda else None)
    if impl == "foreach":
        return torch.optim.AdamW(params, lr=lr, foreach=True, fused=False)
    if impl == "forloop":
        return torch.optim.AdamW(params, lr=lr, foreach=False, fused=False)
    raise Skip(f"optimizer_impl {impl!r} is not implemented")


def fused_adamw(ctx: Context, params: Any, lr: float = 1e-4) -> Any:
    """``torch.optim.AdamW(fused=True)`` on CUDA (the reference loop); the default on CPU."""
    return adamw(ctx, params, "fused", lr=lr)


def tokens(ctx: Context, vocab: int, batch: int, seq: int) -> Any:
    import torch

    return torch.randint(0, vocab, (batch, seq), device=ctx.device)
