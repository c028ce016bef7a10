"""How the serving model did against the published runs of the same engine on the same GPU: told,
never fitted.

An answer at a configuration nobody published is the model's. Where the same engine has
published runs of the same model and weight format on the same GPU (fixed-concurrency runs at
other configurations; static batches -- LLM-Inference-Bench's vLLM rows -- at any, counted at
their batch), the answer says how far the model was from them and when (each table's date;
:func:`engine_record`), and its TPOT band widens to cover that ratio. The central figure does
not move: a ratio fitted per GPU would make a datasheet-faster GPU slower (SGLang's DeepSeek-R1
FP8 ran at 0.62 of the model on the MI300X and 1.30 on the H200;
``benchmarks/engine_platform_factor.py``), which the estimators do not allow.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import Final

from service.core.catalog.specs import GpuSpec
from service.core.errors import InvalidConfiguration, MissingFigure
from service.core.estimation.memory_inference import InferenceConfig
from service.core.estimation.serving_queue import serve_concurrency
from service.core.evidence.published import get_table
from service.core.evidence.published_serving import PublishedServing, engine_runs

__all__ = ["MIN_RUNS", "EngineRecord", "engine_record"]

MIN_RUNS: Final = 3
"""Runs below which no record is told (one or two runs say little about an engine's level)."""


@dataclass(frozen=True, slots=True)
class EngineRecord:
    """Measured over modelled output tokens/s per GPU of the same engine's published runs."""

    runs: int
    median_ratio: float
    low_ratio: float
    high_ratio: float
    tables: tuple[str, ...]
    tensor_parallel: int | None = None
    """The runs' tensor parallelism where the record is of the question's (:func:`_same_tp`);
    None for runs at any."""

    @property
    def dated(self) -> str:
        """The tables the runs are from, each with its date (stacks move: a date says which)."""
        return ", ".join(f"{t} of {get_table(t).date}" for t in self.tables)

    def note(self, engine: str) -> str:
        dated = self.dated
        tp = f" at tensor parallelism {self.tensor_parallel}" if self.tensor_parallel else ""
        return (
            f"this answer is the model's; {engine}'s {self.runs} published runs of this model and weight "
            f"format on this GPU{tp}, at the configurations they ran ({dated}), ran at x{self.median_ratio:.2f} "
            f"of the model (x{self.low_ratio:.2f}-x{self.high_ratio:.2f}); the TPOT band covers that"
        )


_CACHE: dict[tuple[object, ...], EngineRecord | None] = {}


def engine_record(c: InferenceConfig, gpu: GpuSpec) -> EngineRecord | None:
    """The record of ``c``'s engine on ``gpu`` for ``c``'s model and weight format, at the
    request's KV cache format, of the runs at its tensor parallelism where there are enough
    (:func:`_same_tp`; None: fewer than :data:`MIN_RUNS` runs it can time)."""
    key = (
        c.tensor_parallel,
        c.model.id,
        gpu.slug,
        gpu.bandwidth_gb_per_s,
        gpu.memory_bytes,
        c.quant_method,
        c.precision,
        c.engine,
        c.kv_cache_dtype,
        c.kv_cache_bytes_per_element,
    )
    if key not in _CACHE:
        if len(_CACHE) > 4096:
            _CACHE.clear()
        runs = engine_runs(c.model.id, gpu.slug, c.weight_format, c.precision, c.engine)
        same = _same_tp(runs, c.tensor_parallel)
        record = _record(c, gpu, same) if same else None
        _CACHE[key] = replace(record, tensor_parallel=c.tensor_parallel) if record else _record(c, gpu, runs)
    return _CACHE[key]


def _same_tp(runs: tuple[PublishedServing, ...], tp: int) -> tuple[PublishedServing, ...]:
    """The runs at tensor parallelism ``tp`` where at least :data:`MIN_RUNS` are: an engine's
    distance from the model moves with the degree (vLLM 0.6 on the H100, Llama-3-8B: x0.88 of
    the model at TP1, x0.65 at TP2, x0.53 at TP4 -- per-step costs the model does not hold),
    so a question is told the record of its own where one exists."""
    same = tuple(r for r in runs if r.tp == tp)
    return same if len(same) >= MIN_RUNS else ()


def _record(c: InferenceConfig, gpu: GpuSpec, runs: tuple[PublishedServing, ...]) -> EngineRecord | None:
    ratios: list[float] = []
    for r in runs:
        modelled = _modelled_per_gpu(c, gpu, r)
        if modelled:
            ratios.append(r.output_tokens_per_s_per_gpu / modelled)
    if len(ratios) < MIN_RUNS:
        return None
    mid = math.exp(statistics.median(math.log(x) for x in ratios))
    return EngineRecord(len(ratios), mid, min(ratios), max(ratios), tuple(sorted({r.table_id for r in runs})))


def _modelled_per_gpu(c: InferenceConfig, gpu: GpuSpec, r: PublishedServing) -> float | None:
    """The model's output tokens/s per GPU at the run's configuration (None where it cannot run)."""
    try:
        run = replace(
            c,
            tensor_parallel=r.tp,
            input_len=r.lengths[0],
            output_len=r.lengths[1],
            batch_size=r.concurrency,
            replicas=1,
            speculative=None,
            draft_tokens=0,
            acceptance_rate=0.0,
            lora=None,
            prefix_cache_hit_rate=0.0,
            disaggregated=None,
            expert_parallel=False,
        )
        out = serve_concurrency(run, gpu).output_tokens_per_s / r.tp
    except (InvalidConfiguration, MissingFigure):
        return None
    return out if out > 0 and math.isfinite(out) else None
