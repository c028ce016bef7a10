"""Collective bandwidth over the world's ranks, with nccl-tests conventions.

Sizes (``message_bytes``) follow nccl-tests: the full buffer of the operation, i.e. the
all-reduce buffer, the all-gather *output* (n shards), the reduce-scatter *input* (n shards),
the broadcast buffer. Then ``algbw = message_bytes / time`` and
``busbw = algbw * factor(op, n)`` with factor ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` for
all-gather and reduce-scatter, ``1`` for broadcast (nccl-tests doc/PERFORMANCE.md). Bus bandwidth
is comparable across world sizes and with the link's per-direction bandwidth; at world size 1
it is 0 by definition (nothing crosses a bus).

Timing: after ``warmup`` operations, ``repeats`` batches of ``iters`` back-to-back operations
are timed (CUDA events on GPU, ``perf_counter`` on CPU) between barriers; the time of one
operation in a batch is the batch time / ``iters``, taken as the maximum over ranks (the
collective is done when the slowest rank is); ``time_ms`` is the median over batches.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

OPS: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")

DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2}


def bus_factor(op: str, world: int) -> float:
    """nccl-tests bus-bandwidth factor for ``op`` over ``world`` ranks."""
    if world < 1:
        raise ValueError("world size must be >= 1")
    if op == "all_reduce":
        return 2.0 * (world - 1) / world
    if op in ("all_gather", "reduce_scatter"):
        return (world - 1) / world
    if op == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective {op!r}")


def aligned_message_bytes(message_bytes: int, world: int, dtype: str) -> int:
    """Largest size <= ``message_bytes`` that splits into ``world`` equal whole-element shards."""
    quantum = world * DTYPE_BYTES[dtype]
    return max(quantum, (message_bytes // quantum) * quantum)


def message_sizes(min_bytes: int, max_bytes: int, factor: int = 4) -> list[int]:
    """Geometric sweep ``min_bytes, min_bytes*factor, ... <= max_bytes`` (nccl-tests ``-f``)."""
    if min_bytes < 1 or max_bytes < min_bytes or factor < 2:
        raise ValueError("need 1 <= min_bytes <= max_bytes and factor >= 2")
    out, s = [], min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= factor
    return out


def _torch_dtype(dtype: str) -> Any:
    import torch

    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]


def _op_callable(op: str, buf: Any, out: Any) -> Callable[[], None]:
    import torch.distributed as dist

    # torch >= 2.13 names the tensor forms *_single; older releases only have *_tensor.
    all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    if op == "all_reduce":
        return lambda: dist.all_reduce(buf)
    if op == "all_gather":
        return lambda: all_gather(out, buf)
    if op == "reduce_scatter":
        return lambda: reduce_scatter(out, buf)
    if op == "broadcast":
        return lambda: dist.broadcast(buf, src=0)
    raise ValueError(f"unknown collective {op!r}")


def _buffers(op: str, message_bytes: int, world: int, dtype: str, device: Any) -> tuple[Any, Any]:
    """(input, output) tensors for ``op`` with nccl-tests sizing; elements = bytes / size."""
    import torch

    td = _torch_dtype(dtype)
    total = message_bytes // DTYPE_BYTES[dtype]
    shard = total // world
    if op == "all_gather":
        return torch.empty(shard, dtype=td, device=device), torch.empty(total, dtype=td, device=device)
    if op == "reduce_scatter":
        return torch.empty(total, dtype=td, device=device), torch.empty(shard, dtype=td, device=device)
    return torch.empty(total, dtype=td, device=device), None


def _check(op: str, rank: int, world: int, dtype: str, device: Any) -> None:
    """One small operation whose result is known; raises if the collective computes wrong."""
    import torch

    td = _torch_dtype(dtype)
    n = 4 * world
    expect_sum = world * (world + 1) / 2
    if op == "all_reduce":
        x = torch.full((n,), rank + 1.0, dtype=td, device=device)
        _op_callable(op, x, None)()
        ok = bool(torch.all(x == expect_sum))
    elif op == "all_gather":
        x = torch.full((n // world,), rank + 1.0, dtype=td, device=device)
        y = torch.empty(n, dtype=td, device=device)
        _op_callable(op, x, y)()
        ref = torch.arange(1, world + 1, dtype=td, device=device).repeat_interleave(n // world)
        ok = bool(torch.all(y == ref))
    elif op == "reduce_scatter":
        x = torch.full((n,), rank + 1.0, dtype=td, device=device)
        y = torch.empty(n // world, dtype=td, device=device)
        _op_callable(op, x, y)()
        ok = bool(torch.all(y == expect_sum))
    else:
        x = torch.full((n,), rank + 1.0, dtype=td, device=device)
        _op_callable(op, x, None)()
        ok = bool(torch.all(x == 1.0))
    if not ok:
        raise RuntimeError(f"{op} returned a wrong result on rank {rank}")


class _Timer:
    def __init__(self, device: Any) -> None:
        import torch

        self.cuda = getattr(device, "type", str(device)) == "cuda"
        self.torch = torch

    def time_batch(self, fn: Callable[[], None], iters: int) -> float:
        """Seconds for ``iters`` calls of ``fn`` (device-synchronised)."""
        if self.cuda:
            event: Any = self.torch.cuda.Event
            start, end = event(enable_timing=True), event(enable_timing=True)
            start.record()
            for _ in range(iters):
                fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) / 1000.0
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        return time.perf_counter() - t0


def measure(
    op: str,
    message_bytes: int,
    *,
    dtype: str,
    device: Any,
    warmup: int,
    iters: int,
    repeats: int,
) -> dict[str, float]:
    """Metrics of one (op, size) cell on the current process group: time_ms, algbw, busbw."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    flag = torch.zeros(1, dtype=torch.int32, device=device)
    try:
        buf, out = _buffers(op, message_bytes, world, dtype, device)
    except torch.OutOfMemoryError:
        buf = out = None
        flag.fill_(1)
    # Every rank learns whether any rank failed to allocate, so none is left waiting alone.
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    if int(flag.item()):
        del buf, out
        raise torch.OutOfMemoryError(f"{op} buffers of {message_bytes} B do not fit on some rank")
    buf.fill_(1.0)
    fn = _op_callable(op, buf, out)
    timer = _Timer(device)
    for _ in range(warmup):
        fn()
    if timer.cuda:
        torch.cuda.synchronize(device)
    per_op: list[float] = []
    for _ in range(repeats):
        dist.barrier()
        t = timer.time_batch(fn, iters) / iters
        tt = torch.tensor([t], dtype=torch.float64, device=device)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        per_op.append(float(tt.item()))
    seconds = statistics.median(per_op)
    algbw = message_bytes / seconds / 1e9
    return {
        "time_ms": seconds * 1e3,
        "algbw_gb_per_s": algbw,
        "busbw_gb_per_s": algbw * bus_factor(op, world),
    }


def run_sweep(
    ops: Sequence[str],
    sizes: Sequence[int],
    *,
    dtype: str,
    device: Any,
    backend: str,
    warmup: int,
    iters: int,
    repeats: int,
    emit: Callable[[dict[str, Any]], None],
) -> None:
    """Measure every (op, size); ``emit`` (rank 0 writes) gets one result dict per cell.

    A failing cell (e.g. an op the backend does not implement) is emitted as ``status:
    error`` and the sweep goes on; an out-of-memory cell is ``status: oom``.
    """
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    rank = dist.get_rank()
    for op in ops:
        checked: str | None = None
        try:
            _check(op, rank, world, dtype, device)
        except Exception as exc:  # the op is unusable on this backend/dtype
            checked = f"{type(exc).__name__}: {exc}"
        for size in sizes:
            mb = aligned_message_bytes(size, world, dtype)
            params = {"op": op, "message_bytes": mb, "gpu_count": world, "backend": backend, "dtype": dtype}
            result: dict[str, Any] = {"workload": "collective", "parameters": params, "repeats": repeats}
            if checked is not None:
                result.update(status="error", error=checked[:4000])
                emit(result)
                continue
            try:
                metrics = measure(
                    op, mb, dtype=dtype, device=device, warmup=warmup, iters=iters, repeats=repeats
                )
            except torch.OutOfMemoryError as exc:
                result.update(status="oom", error=str(exc)[:4000])
                emit(result)
                torch.cuda.empty_cache()
                continue
            units = {"time_ms": "ms", "algbw_gb_per_s": "GB/s", "busbw_gb_per_s": "GB/s"}
            result.update(
                status="ok",
                metrics={k: {"value": v, "unit": units[k]} for k, v in metrics.items()},
                step_time_s=metrics["time_ms"] / 1e3,
            )
            emit(result)
            if getattr(device, "type", "") == "cuda":
                torch.cuda.empty_cache()
