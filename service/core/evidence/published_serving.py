"""Published measurements of the exact serving configuration asked.

A model is not the best answer where someone has measured the question: InferenceX ran
DeepSeek-R1 FP8 on 8 MI300X under SGLang at 32 concurrent 1k/1k requests at 92.8 output tokens/s
per GPU, where the transfer, which cannot know an engine's maturity on a platform, says about
151. :func:`serving_matches` finds the published rows of one configuration -- model, GPU, weight
format, tensor parallelism, nominal input and output lengths, client concurrency per replica --
with the engine each ran; :func:`anchor` picks the one an answer is anchored on: the same engine.

Only fixed-concurrency rows of one replica (``gpu_count == tp``) with a catalogued GPU qualify: a
maximum-throughput (offline) or request-rate row answers another question. The engine record
(:func:`engine_runs`, an answer's note and band, never its figure) also counts static-batch runs
of one replica at their batch (:data:`STATIC`).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Final

from service.core.evidence.published import TABLES, PublishedRow

__all__ = [
    "ENGINE_OF_SOURCE",
    "PublishedServing",
    "anchor",
    "engine_runs",
    "published_models",
    "serving_matches",
]

ENGINE_OF_SOURCE: Final[Mapping[str, str]] = {
    "sglang": "sglang",
    "trt": "tensorrt-llm",
    "tensorrt-llm": "tensorrt-llm",
    "vllm": "vllm",
}
"""A source's engine name (the first word of a row's ``system``) -> the service's engine; an
engine the service does not model (AMD's ATOM) maps to none and is only shown."""

SIXTEEN_BIT: Final = frozenset({"bf16", "fp16"})
_PER_GPU: Final[Mapping[str, bool]] = {"output_tokens_per_s_per_gpu": True, "output_tokens_per_s": False}


@dataclass(frozen=True, slots=True)
class PublishedServing:
    """One published run of the configuration: its output tokens/s per GPU and where it is from."""

    table_id: str
    source_engine: str
    engine: str | None  # the service's engine it ran, None for one the service does not model
    output_tokens_per_s_per_gpu: float
    system: str
    note: str
    tp: int = 1
    lengths: tuple[int, int] = (0, 0)  # nominal input and output tokens
    concurrency: int = 1

    @property
    def ran_on(self) -> str:
        """When and where, as the source says it (the note's date, then the run's address)."""
        return self.note.split("; output", 1)[0]


Key = tuple[str, str, str, int, int, int, int]


ONLINE: Final = "llm-serve-online"
STATIC: Final = "llm-serve-static-batch"
"""A static batch of ``b`` requests started together (LLM-Inference-Bench's vLLM rows) runs as ``b``
clients would, less their staggering: the engine record (:func:`engine_runs`) counts such runs at
concurrency ``b``; an answer is never anchored on one (it answers another question)."""


def _clients(r: PublishedRow) -> int | None:
    return r.concurrency if r.workload == ONLINE else r.batch_size


def _key(r: PublishedRow, workload: str) -> Key | None:
    clients = _clients(r)
    if (
        r.workload != workload
        or r.metric not in _PER_GPU
        or r.slug is None
        or clients is None
        or r.request_rate is not None
        or r.gpu_count != r.tp
        or not r.input_len
        or not r.output_len
    ):
        return None
    return (r.model, r.slug, r.precision, r.tp, r.input_len, r.output_len, clients)


def _entry(table_id: str, r: PublishedRow) -> PublishedServing:
    source_engine = r.system.split(" ", 1)[0].lower() if r.system else ""
    per_gpu = r.value if _PER_GPU[r.metric] else r.value / r.gpu_count
    return PublishedServing(
        table_id,
        source_engine,
        ENGINE_OF_SOURCE.get(source_engine),
        per_gpu,
        r.system,
        r.note,
        r.tp,
        (r.input_len or 0, r.output_len or 0),
        _clients(r) or 1,
    )


@cache
def _index(workload: str = ONLINE) -> dict[Key, tuple[PublishedServing, ...]]:
    out: dict[Key, list[PublishedServing]] = {}
    for t in TABLES:
        if t.kind != "serving":
            continue
        for r in t.rows:
            k = _key(r, workload)
            if k is not None:
                out.setdefault(k, []).append(_entry(t.id, r))
    return {k: tuple(v) for k, v in out.items()}


@cache
def published_models() -> frozenset[str]:
    """The models any published run an answer uses serves -- fixed concurrency (anchors and the
    engine record) or a static batch (the record): an answer for another model looks no further
    (the serving answer's hot path)."""
    return frozenset(k[0] for w in (ONLINE, STATIC) for k in _index(w))


def _precisions(weight_format: str, precision: str) -> tuple[str, ...]:
    """The published precisions that are this weight format (NVFP4 is the sources' ``fp4``)."""
    if weight_format == "none":
        return (precision,) if precision in ("bf16", "fp16") else ()
    return {"fp8": ("fp8",), "int8": ("int8",), "nvfp4": ("fp4",), "mxfp4": ("mxfp4",)}.get(weight_format, ())


def serving_matches(
    model: str,
    slug: str,
    weight_format: str,
    precision: str,
    tp: int,
    lengths: tuple[int, int],
    concurrency: int,
) -> tuple[PublishedServing, ...]:
    """Every published run of this configuration (any engine), in table order."""
    index = _index()
    return tuple(
        m
        for p in _precisions(weight_format, precision)
        for m in index.get((model, slug, p, tp, lengths[0], lengths[1], concurrency), ())
    )


def engine_runs(
    model: str, slug: str, weight_format: str, precision: str, engine: str
) -> tuple[PublishedServing, ...]:
    """Every published run of ``engine`` serving this model in this weight format on this GPU, at
    any tensor parallelism, lengths and concurrency, fixed-concurrency and static-batch runs
    alike. Unquantized, FP16 and BF16 runs both count: one datasheet rate, one byte count."""
    wanted = set(_precisions(weight_format, precision))
    if wanted & SIXTEEN_BIT:
        wanted |= SIXTEEN_BIT
    return tuple(
        m
        for w in (ONLINE, STATIC)
        for k, runs in _index(w).items()
        if k[0] == model and k[1] == slug and k[2] in wanted
        for m in runs
        if m.engine == engine
    )


def anchor(
    matches: Iterable[PublishedServing], engine: str
) -> tuple[float, tuple[PublishedServing, ...]] | None:
    """The runs of ``engine`` among ``matches`` and their median output tokens/s per GPU (None:
    no run of that engine)."""
    same = tuple(m for m in matches if m.engine == engine)
    if not same:
        return None
    return statistics.median(m.output_tokens_per_s_per_gpu for m in same), same
