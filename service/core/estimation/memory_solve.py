"""Solve-for helpers: the largest micro-batch, context or concurrency that fits, the fewest GPUs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from service.core.estimation.memory_config import (
    MemoryEstimate,
    TrainConfig,
)
from service.core.estimation.memory_inference import (
    InferenceConfig,
    estimate_inference,
)
from service.core.estimation.memory_training import (
    estimate_training,
)

# --------------------------------------------------------------------------------------------
# Solve-for helpers
# --------------------------------------------------------------------------------------------


def _largest(lo: int, hi: int, ok: Any) -> int:
    """Largest ``x`` in ``[lo, hi]`` with ``ok(x)`` (monotone), or ``lo - 1`` if none."""
    if not ok(lo):
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def largest_micro_batch(c: TrainConfig, usable_memory_bytes: int, limit: int = 65536) -> int:
    """Largest per-GPU micro-batch that fits at the upper end of the band (0: none fits)."""

    def ok(b: int) -> bool:
        return estimate_training(replace(c, batch_size=b, global_batch=0)).fits(usable_memory_bytes)

    return max(0, _largest(1, limit, ok))


def largest_context(
    c: TrainConfig | InferenceConfig, usable_memory_bytes: int, limit: int = 1_048_576
) -> int:
    """Longest sequence (training ``seq_len``; inference ``input_len + output_len`` with the
    output length kept) that fits; 0 if none. Multiples of 128 are searched."""
    if isinstance(c, TrainConfig):

        def ok(k: int) -> bool:
            return estimate_training(replace(c, seq_len=128 * k)).fits(usable_memory_bytes)
    else:

        def ok(k: int) -> bool:
            return estimate_inference(replace(c, input_len=128 * k)).fits(usable_memory_bytes)

    return max(0, _largest(1, limit // 128, ok)) * 128


def most_concurrent_sequences(c: InferenceConfig, usable_memory_bytes: int, limit: int = 1_000_000) -> int:
    """How many sequences of ``input_len + output_len`` tokens can be served at once."""

    def ok(b: int) -> bool:
        return estimate_inference(replace(c, batch_size=b)).fits(usable_memory_bytes)

    return max(0, _largest(1, limit, ok))


def memory_held(c: InferenceConfig, sequences: int, usable: int) -> MemoryEstimate:
    """A replica's memory with ``sequences`` in flight, at most as many as fit ``usable`` at the
    band's upper end (:func:`most_concurrent_sequences`; at least one): an engine sizes its KV
    pool to the memory it has and admits what the pool holds -- it does not run out of memory,
    and an answer stated at more sequences than fit would contradict its own fit."""
    one = replace(c, replicas=1, batch_size=1)
    n = max(1, sequences)
    full = estimate_inference(replace(one, batch_size=n))
    if n == 1 or full.fits(usable):
        return full
    held = max(1, most_concurrent_sequences(one, usable, limit=n - 1))
    return estimate_inference(replace(one, batch_size=held))


def fewest_gpus(
    c: TrainConfig,
    usable_memory_bytes: int,
    max_gpus: int = 4096,
    per_node: int = 8,
    sharded_mixed_precision: str = "fsdp_policy",
) -> tuple[int, MemoryEstimate] | None:
    """Fewest GPUs (powers of two up to ``per_node``, then whole nodes) for which ``c`` fits
    with its sharding strategy (``none``/``ddp`` become ``fsdp`` beyond one GPU, since replicas
    never reduce per-GPU memory). An ``amp_*`` job switched to FSDP here takes
    ``sharded_mixed_precision`` (default the mixed-precision policy, the default for sharded
    mixed precision); a job already on FSDP keeps its own. Returns ``(count, estimate)`` or
    ``None``."""
    counts = [1]
    while counts[-1] < per_node:
        counts.append(counts[-1] * 2)
    n = per_node * 2
    while n <= max_gpus:
        counts.append(n)
        n *= 2
    amp = c.precision.startswith("amp_")
    for n in counts:
        if n > max_gpus:
            break
        switch = c.sharding in ("none", "ddp") and n > 1
        sharding = "fsdp" if switch else c.sharding
        mixed = c.mixed_precision
        if switch and amp:
            mixed = sharded_mixed_precision
        elif sharding != "fsdp":
            mixed = "autocast"
        # hold the global batch; round it up to a whole number of micro-batches per rank
        per_step = c.batch_size * n
        global_batch = -(-max(c.effective_global_batch, per_step) // per_step) * per_step
        cfg = replace(
            c,
            gpu_count=n,
            tensor_parallel=1,
            pipeline_parallel=1,
            sharding=sharding,
            global_batch=global_batch,
            mixed_precision=mixed,
        )
        est = estimate_training(cfg)
        if est.fits(usable_memory_bytes):
            return n, est
    return None
