"""``llm-train`` strong scaling: a fixed global batch over 1..N ranks with DDP or FSDP.

One optimizer step trains ``global_batch`` sequences of ``seq_len`` tokens. Each rank runs
``accum = global_batch / (batch_size * world)`` micro-batches of ``batch_size`` sequences
(gradient accumulation), so the work per optimizer step is the same at every world size and
throughput ratios are strong-scaling speed-ups.

Loop (DESIGN "Estimation", reference loop): a Hugging Face ``LlamaForCausalLM`` built from a
config (random init on the device, no downloads), loss from ``labels=input_ids``, backward,
``torch.optim.AdamW`` (fused on CUDA), ``zero_grad(set_to_none=True)``.

- ``sharding=none``: the plain model (world size 1 only).
- ``sharding=ddp``: ``DistributedDataParallel`` with default buckets; ``no_sync()`` on every
  micro-batch but the last, so gradients are all-reduced once per optimizer step.
- ``sharding=fsdp``: FSDP2 ``fully_shard`` on every decoder layer and on the root, default
  ``reshard_after_forward=True`` (ZeRO-3: parameters, gradients and optimizer state sharded);
  gradients are reduce-scattered on every micro-batch (FSDP's memory-saving default).
  With ``mixed_precision=autocast`` (the default) parameters keep the precision's storage
  dtype: with ``amp_bf16`` they are fp32 and all-gathered in fp32, compute runs under
  autocast; with ``bf16`` they are bf16 end to end. With ``mixed_precision=fsdp_policy``
  (``amp_bf16`` only) every ``fully_shard`` gets ``MixedPrecisionPolicy(param_dtype=bf16,
  reduce_dtype=fp32)``: fp32 sharded parameters (and optimizer state), bf16 all-gathers and
  compute, fp32 gradient reduce-scatter, and no autocast.

Declared variants (vocabulary ``llm-train``), as the single-GPU suite runs them:
``optimizer_impl`` ``fused`` (default; fused=True on CUDA) | ``foreach`` | ``forloop``
(``foreach=False, fused=False``); ``loop`` ``loss_only`` (default: only the loss is kept) |
``keeps_outputs`` (``out = model(...)`` is held through backward and the optimizer step, until
the next micro-batch's forward replaces it); ``gradient_checkpointing`` (transformers'
non-reentrant checkpointing of every decoder layer, enabled before wrapping).

Precisions: ``fp32`` (strict: matmul precision ``highest``, cuDNN TF32 off), ``tf32``,
``amp_bf16`` (fp32 parameters, bf16 autocast), ``bf16`` (pure bf16 parameters and optimizer
state). Others are reported as ``status: error``.

Timing: ``warmup_steps`` optimizer steps, then ``steps`` timed steps, each between device
synchronisations; a step's time is the maximum over ranks, ``step_time_s`` the median over
steps. Memory: CUDA allocator peaks over the timed steps, maximum over ranks; device memory in
use (NVML, else ``cudaMemGetInfo``) at the end, maximum over ranks; then one more optimizer
step with the peak statistics reset just before ``optimizer.step()``, whose allocator peak
inside the step is ``optimizer_step_peak_allocated_bytes`` (maximum over ranks; CUDA only). Energy: the NVML energy
counter of every rank's GPU over the timed steps, summed over ranks (the whole job's energy),
reported only when the timed window lasted at least ``MIN_ENERGY_WINDOW_S``.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from service.agent.multigpu.model_config import LlamaShape, llama_config, resolve_shape

SUPPORTED_PRECISIONS: tuple[str, ...] = ("fp32", "tf32", "amp_bf16", "bf16")
SHARDINGS: tuple[str, ...] = ("none", "ddp", "fsdp")
OPTIMIZER_IMPLS: tuple[str, ...] = ("fused", "foreach", "forloop")
MIXED_PRECISIONS: tuple[str, ...] = ("autocast", "fsdp_policy")
LOOPS: tuple[str, ...] = ("loss_only", "keeps_outputs")

#: Dense per-GPU peaks (TFLOP/s) by PCI device id, used only for ``mfu``. Source: NVIDIA H100
#: and H200 SXM datasheets (sparse figures halved): BF16 1979/2, TF32 989/2, FP32 67.
DENSE_PEAK_TFLOPS: dict[str, dict[str, float]] = {
    "0x2330": {"bf16": 989.5, "tf32": 494.5, "fp32": 67.0},  # H100 SXM5 80GB
    "0x2335": {"bf16": 989.5, "tf32": 494.5, "fp32": 67.0},  # H200 SXM 141GB
}
_PEAK_KEY = {"amp_bf16": "bf16", "bf16": "bf16", "tf32": "tf32", "fp32": "fp32"}

MIN_ENERGY_WINDOW_S = 1.0
"""Energy and power are reported only over timed windows at least this long (the single-GPU
agent's rule, ``suite.common.MIN_ENERGY_WINDOW_S``: NVML's energy counter is too coarse for
shorter windows)."""


def accumulation_steps(global_batch: int, batch_size: int, world: int) -> int:
    """Micro-batches per rank per optimizer step; ``ValueError`` when it is not a whole number."""
    per_step = batch_size * world
    if global_batch < per_step or global_batch % per_step:
        raise ValueError(
            f"global_batch {global_batch} is not a multiple of batch_size {batch_size} x world size {world}"
        )
    return global_batch // per_step


def result_parameters(spec: dict[str, Any], world: int) -> dict[str, Any]:
    """The ``llm-train`` vocabulary parameters of one configuration at world size ``world``."""
    return {
        "model": spec["model"],
        "precision": spec["precision"],
        "batch_size": spec["batch_size"],
        "seq_len": spec["seq_len"],
        "gradient_checkpointing": bool(spec.get("gradient_checkpointing", False)),
        "finetune": "full",
        "attention": spec.get("attention", "sdpa"),
        "optimizer": "adamw",
        "sharding": spec["sharding"],
        "gpu_count": world,
        "global_batch": spec["global_batch"],
        "optimizer_impl": spec.get("optimizer_impl", "fused"),
        "mixed_precision": spec.get("mixed_precision", "autocast"),
        "loop": spec.get("loop", "loss_only"),
    }


def set_precision_flags(precision: str) -> None:
    """TF32 switches for ``precision``, set explicitly (they are recorded in the fingerprint).

    As the single-GPU agent does: ``fp32`` is strict (matmul precision "highest", cuDNN TF32
    off); every other precision allows TF32 for fp32 math outside autocast.
    """
    import torch

    strict = precision == "fp32"
    torch.set_float32_matmul_precision("highest" if strict else "high")
    torch.backends.cudnn.allow_tf32 = not strict


def mfu(
    shape: LlamaShape, seq_len: int, tokens_per_s: float, world: int, peak_tflops: float | None
) -> float | None:
    """Model FLOPs utilisation per GPU against ``peak_tflops`` (None when no peak is known)."""
    if not peak_tflops:
        return None
    return tokens_per_s * shape.flops_per_token(seq_len) / (world * peak_tflops * 1e12)


class _EnergyMeter:
    """NVML total-energy counter of one GPU (millijoules); inert when NVML is unavailable."""

    def __init__(self, pci_bus_id: str | None) -> None:
        self._h: Any = None
        self._nvml: Any = None
        if not pci_bus_id:
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            for cand in (pci_bus_id, "0000" + pci_bus_id):
                try:
                    self._h = pynvml.nvmlDeviceGetHandleByPciBusId(cand.encode())
                    break
                except Exception:
                    continue
        except Exception:
            self._h = None

    def read_j(self) -> float | None:
        if self._h is None:
            return None
        try:
            return float(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._h)) / 1000.0
        except Exception:
            return None

    def used_bytes(self) -> int | None:
        if self._h is None:
            return None
        try:
            return int(self._nvml.nvmlDeviceGetMemoryInfo(self._h).used)
        except Exception:
            return None


def _build_model(
    spec: dict[str, Any], shape: LlamaShape, device: Any, world: int, local_rank: int
) -> tuple[Any, Any]:
    """(model as trained, attention implementation actually configured)."""
    import torch
    from transformers import LlamaForCausalLM as _Llama

    llama_cls: Any = _Llama
    model: Any
    cfg = llama_config(shape, seq_len=int(spec["seq_len"]), attention=spec.get("attention", "sdpa"))
    torch.manual_seed(0)
    with torch.device(device):
        model = llama_cls(cfg)
    if spec["precision"] == "bf16":
        model = model.to(torch.bfloat16)
    if spec.get("gradient_checkpointing"):
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    attn = str(getattr(model.config, "_attn_implementation", None) or spec.get("attention", "sdpa"))
    sharding = spec["sharding"]
    if sharding == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [local_rank] if device.type == "cuda" else None
        model = DistributedDataParallel(model, device_ids=ids)
    elif sharding == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        kwargs: dict[str, Any] = {}
        if spec.get("mixed_precision", "autocast") == "fsdp_policy":
            kwargs["mp_policy"] = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        for layer in model.model.layers:
            fully_shard(layer, **kwargs)
        fully_shard(model, **kwargs)
    elif sharding != "none" or world != 1:
        raise ValueError(f"sharding {sharding!r} at world size {world} is not supported")
    return model, attn


def _optimizer(model: Any, device: Any, impl: str = "fused") -> Any:
    """``torch.optim.AdamW`` in the ``optimizer_impl`` implementation (fused: the reference)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    if impl == "fused":
        if device.type == "cuda":
            return torch.optim.AdamW(params, lr=1e-5, fused=True)
        return torch.optim.AdamW(params, lr=1e-5)
    if impl == "foreach":
        return torch.optim.AdamW(params, lr=1e-5, foreach=True, fused=False)
    if impl == "forloop":
        return torch.optim.AdamW(params, lr=1e-5, foreach=False, fused=False)
    raise ValueError(f"optimizer_impl {impl!r} is not one of {', '.join(OPTIMIZER_IMPLS)}")


class OptimizerStepPeak:
    """Allocator peak inside ``optimizer.step()`` for one armed step (CUDA only).

    Armed after the timed steps (whose peaks were read already): synchronise, reset the peak
    statistics just before the optimizer step, read ``max_memory_allocated`` right after it.
    """

    def __init__(self, device: Any) -> None:
        self.device = device
        self.armed = False
        self.value: int | None = None

    def arm(self) -> None:
        self.armed = self.device.type == "cuda"

    @contextlib.contextmanager
    def around_step(self) -> Iterator[None]:
        if not self.armed:
            yield
            return
        import torch

        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)
        yield
        torch.cuda.synchronize(self.device)
        self.value = int(torch.cuda.max_memory_allocated(self.device))
        self.armed = False


def check_variant(spec: dict[str, Any]) -> None:
    """``ValueError`` for a variant this suite cannot run (the vocabulary's rules, plus what is
    implemented here)."""
    precision = spec["precision"]
    if precision not in SUPPORTED_PRECISIONS:
        raise ValueError(
            f"precision {precision!r} is not run by the multi-GPU suite ({', '.join(SUPPORTED_PRECISIONS)})"
        )
    for key, allowed in (("optimizer_impl", OPTIMIZER_IMPLS), ("mixed_precision", MIXED_PRECISIONS),
                         ("loop", LOOPS)):  # fmt: skip
        value = spec.get(key, allowed[0])
        if value not in allowed:
            raise ValueError(f"{key} {value!r} is not one of {', '.join(allowed)}")
    if spec.get("mixed_precision", "autocast") == "fsdp_policy" and (
        spec["sharding"] != "fsdp" or precision != "amp_bf16"
    ):
        raise ValueError("mixed_precision fsdp_policy needs sharding fsdp and precision amp_bf16")


@dataclass
class Prepared:
    """A built configuration: one optimizer step and what the result reports about it."""

    step: Callable[[], None]
    shape: LlamaShape
    attention: str
    accum: int
    opt_peak: OptimizerStepPeak
    dtypes: dict[str, str] = field(default_factory=dict)
    """What the step really computes in: ``lm_head_output`` (the logits' dtype, seen by a forward
    hook) and ``optimizer_param`` (the dtype of the parameters the optimizer updates)."""


def prepare(spec: dict[str, Any], *, device: Any, world: int, rank: int, local_rank: int) -> Prepared:
    """Build model, optimizer and data; return one optimizer step and its probes."""
    import torch

    check_variant(spec)
    precision = spec["precision"]
    accum = accumulation_steps(int(spec["global_batch"]), int(spec["batch_size"]), world)
    set_precision_flags(precision)
    shape = resolve_shape(spec["model"])
    model, attn = _build_model(spec, shape, device, world, local_rank)
    opt = _optimizer(model, device, str(spec.get("optimizer_impl", "fused")))
    opt_peak = OptimizerStepPeak(device)
    dtypes: dict[str, str] = {}
    first = next(iter(p for g in opt.param_groups for p in g["params"]), None)
    if first is not None:
        dtypes["optimizer_param"] = str(first.dtype).removeprefix("torch.")

    def _seen(_mod: Any, _inp: Any, output: Any) -> None:
        dtypes.setdefault("lm_head_output", str(output.dtype).removeprefix("torch."))

    getattr(model, "module", model).lm_head.register_forward_hook(_seen)
    gen = torch.Generator(device=device).manual_seed(1234 + rank)
    tokens = torch.randint(
        0, shape.vocab_size, (int(spec["batch_size"]), int(spec["seq_len"])), device=device, generator=gen
    )
    # fsdp_policy: the policy casts (bf16 gathers, fp32 reduce); autocast would cast again
    use_autocast = precision == "amp_bf16" and spec.get("mixed_precision", "autocast") == "autocast"
    ddp = spec["sharding"] == "ddp"
    keeps_outputs = spec.get("loop", "loss_only") == "keeps_outputs"
    held: dict[str, Any] = {}

    def autocast() -> contextlib.AbstractContextManager[Any]:
        if use_autocast:
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    @contextlib.contextmanager
    def sync_ctx(last: bool) -> Iterator[None]:
        if ddp and not last:
            with model.no_sync():
                yield
        else:
            yield

    def step() -> None:
        for i in range(accum):
            with sync_ctx(i == accum - 1):
                if keeps_outputs:
                    with autocast():
                        out = model(input_ids=tokens, labels=tokens)
                    held["out"] = out  # the previous output was alive until now, as in a for loop
                    (out.loss / accum).backward()
                else:
                    with autocast():
                        loss = model(input_ids=tokens, labels=tokens).loss / accum
                    loss.backward()
        with opt_peak.around_step():
            opt.step()
        opt.zero_grad(set_to_none=True)

    return Prepared(step, shape, attn, accum, opt_peak, dtypes)


def measure(
    step: Callable[[], None],
    *,
    device: Any,
    warmup_steps: int,
    steps: int,
    pci_bus_id: str | None,
    opt_peak: OptimizerStepPeak | None = None,
) -> dict[str, Any]:
    """Time ``steps`` optimizer steps after ``warmup_steps``; memory and energy as documented."""
    import torch
    import torch.distributed as dist

    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    for _ in range(warmup_steps):
        step()
    sync()
    meter = _EnergyMeter(pci_bus_id if cuda else None)
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    dist.barrier()
    e0 = meter.read_j()
    times: list[float] = []
    t_all = time.perf_counter()
    for _ in range(steps):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    wall = time.perf_counter() - t_all
    e1 = meter.read_j()

    t = torch.tensor(times, dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out: dict[str, Any] = {"step_times": [float(x) for x in t.tolist()]}
    out["step_time_s"] = statistics.median(out["step_times"])
    if cuda:
        used = meter.used_bytes()
        if used is None:
            free, total = torch.cuda.mem_get_info(device)
            used = int(total - free)
        mem = torch.tensor(
            [torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device), used],
            dtype=torch.float64,
            device=device,
        )
        dist.all_reduce(mem, op=dist.ReduceOp.MAX)
        out["peak_allocated_bytes"], out["peak_reserved_bytes"], out["nvml_used_bytes"] = (
            int(x) for x in mem.tolist()
        )
        if opt_peak is not None:  # one more step, its optimizer step's peak (after the figures above)
            opt_peak.arm()
            step()
            sync()
            v = torch.tensor([float(opt_peak.value or 0)], dtype=torch.float64, device=device)
            dist.all_reduce(v, op=dist.ReduceOp.MAX)
            if v.item() > 0:
                out["optimizer_step_peak_allocated_bytes"] = int(v.item())
    have_energy = e0 is not None and e1 is not None
    en = torch.tensor(
        [(e1 - e0) if (e0 is not None and e1 is not None) else 0.0, 1.0 if have_energy else 0.0, wall],
        dtype=torch.float64,
        device=device,
    )
    flags = en.clone()
    dist.all_reduce(en, op=dist.ReduceOp.SUM)
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    # every rank read its counter, over a window long enough for NVML's coarse counter
    if flags[1].item() > 0 and flags[2].item() >= MIN_ENERGY_WINDOW_S:
        joules = float(en[0].item())
        out["energy_per_step_j"] = joules / steps
        out["avg_power_w"] = joules / float(flags[2].item()) if flags[2].item() > 0 else None
    return out


def run(
    spec: dict[str, Any],
    *,
    device: Any,
    pci_bus_id: str | None,
    pci_device_id: str | None,
    on_ready: Callable[[str], None],
    emit: Callable[[dict[str, Any]], None],
) -> None:
    """Run one configuration; ``on_ready(attention)`` is called once the model is built.

    Exceptions (OOM included) propagate: the worker records them per rank and exits, so no
    rank is left waiting in a collective.
    """
    import torch.distributed as dist

    world, rank = dist.get_world_size(), dist.get_rank()
    local_rank = device.index if device.type == "cuda" else 0
    prep = prepare(spec, device=device, world=world, rank=rank, local_rank=local_rank)
    shape, accum = prep.shape, prep.accum
    on_ready(prep.attention)
    m = measure(
        prep.step,
        device=device,
        warmup_steps=int(spec.get("warmup_steps", 2)),
        steps=int(spec.get("steps", 5)),
        pci_bus_id=pci_bus_id,
        opt_peak=prep.opt_peak,
    )
    tokens_per_step = int(spec["global_batch"]) * int(spec["seq_len"])
    throughput = tokens_per_step / m["step_time_s"]
    metrics: dict[str, dict[str, Any]] = {
        "throughput": {"value": throughput, "unit": "tokens/s"},
        "step_time_s": {"value": m["step_time_s"], "unit": "s"},
    }
    peak = spec.get("peak_tflops")
    if peak is None and pci_device_id and device.type == "cuda":
        peak = DENSE_PEAK_TFLOPS.get(pci_device_id, {}).get(_PEAK_KEY[spec["precision"]])
    u = mfu(shape, int(spec["seq_len"]), throughput, world, peak)
    if u is not None:
        metrics["mfu"] = {"value": u, "unit": "ratio"}
    if m.get("energy_per_step_j") is not None:
        metrics["energy_per_step_j"] = {"value": m["energy_per_step_j"], "unit": "J"}
    if m.get("avg_power_w") is not None:
        metrics["avg_power_w"] = {"value": m["avg_power_w"], "unit": "W"}
    if m.get("optimizer_step_peak_allocated_bytes") is not None:
        metrics["optimizer_step_peak_allocated_bytes"] = {
            "value": float(m["optimizer_step_peak_allocated_bytes"]),
            "unit": "B",
        }
    emit(
        {
            "workload": "llm-train",
            "parameters": result_parameters(spec, world),
            "status": "ok",
            "metrics": metrics,
            "step_time_s": m["step_time_s"],
            "peak_allocated_bytes": m.get("peak_allocated_bytes"),
            "peak_reserved_bytes": m.get("peak_reserved_bytes"),
            "nvml_used_bytes": m.get("nvml_used_bytes"),
            "repeats": len(m["step_times"]),
            "extra": {
                "accumulation_steps": accum,
                "step_times_s": m["step_times"],
                "parameter_count": shape.parameter_count(),
                "flops_per_token": shape.flops_per_token(int(spec["seq_len"])),
                "peak_tflops_for_mfu": peak,
                "dtypes": dict(prep.dtypes),
            },
        }
    )
