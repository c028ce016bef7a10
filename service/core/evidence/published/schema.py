"""Types and vocabularies shared by the published tables (pure, no I/O).

Every table is one source and one software stack. A row is one published number with the
configuration it was measured at; fields a source does not state are ``None`` (never guessed),
and any mapping that is an inference rather than the source's own words (a GPU variant, a
batch size taken from a template) is spelled out in ``gpu_assumption`` or ``note``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

Kind = Literal["training", "serving"]
Family = Literal["fp32", "tf32", "fp16/bf16", "fp8"]

# Precision as the source ran it -> precision family (the unit of the cross-GPU check).
PRECISIONS: Final[dict[str, Family]] = {
    "fp32": "fp32",  # IEEE FP32 math: pre-Ampere GPUs, or TF32 explicitly off
    "tf32": "tf32",  # FP32 storage, TF32 tensor-core matmul/conv (PyTorch 1.7-1.11 / NGC default on Ampere+)
    "amp_fp16": "fp16/bf16",  # autocast / apex AMP (O1) with FP16
    "amp_bf16": "fp16/bf16",
    "fp16": "fp16/bf16",  # FP16 model with FP32 master weights (training), or FP16 weights+activations (serving)
    "bf16": "fp16/bf16",
    "fp8": "fp8",  # FP8 E4M3 (serving: weights+activations; training: Transformer Engine current scaling)
    "mxfp8": "fp8",  # MXFP8 block scaling (Blackwell)
}
FAMILIES: Final[tuple[Family, ...]] = ("fp32", "tf32", "fp16/bf16", "fp8")

# Workload ids -> what was run. Training units are per step of the stated batch.
WORKLOADS: Final[dict[str, str]] = {
    "resnet50-train": "ResNet-50 v1.5 ImageNet training (NVIDIA DeepLearningExamples), images/s",
    "resnet50-infer": "ResNet-50 v1.5 inference at a fixed batch (NVIDIA DeepLearningExamples), images/s",
    "bert-large-squad-finetune": "BERT-large SQuAD v1.1 fine-tuning, seq_len 384 (DeepLearningExamples), sequences/s",
    "bert-base-squad-finetune": "BERT-base SQuAD v1.1 fine-tuning, seq_len 384 (DeepLearningExamples), sequences/s",
    "llm-pretrain": "decoder LLM pre-training (Megatron-Core), tokens/s per GPU",
    "llm-serve-offline": "LLM serving, all requests queued at once (max throughput), continuous batching",
    "llm-serve-static-batch": "LLM generation at a fixed static batch (no in-flight batching)",
    "llm-serve-online": "LLM serving at a fixed offered request rate (QPS) or concurrency",
}

# Metric -> unit. Throughputs are for the whole system of ``gpu_count`` GPUs unless the metric
# says per GPU.
METRICS: Final[dict[str, str]] = {
    "images_per_s": "images/s",
    "sequences_per_s": "sequences/s",
    "tokens_per_s_per_gpu": "tokens/s/GPU",
    "model_tflops_per_gpu": "TFLOP/s/GPU",
    "output_tokens_per_s": "tokens/s",
    "output_tokens_per_s_per_gpu": "tokens/s/GPU",
    "total_tokens_per_s": "tokens/s",
    "requests_per_s": "requests/s",
    "latency_ms": "ms",  # latency of one batch (static-batch inference), mean unless the note says
    "ttft_ms": "ms",  # time to first token; statistic in the row note (mean unless stated)
    "itl_ms": "ms",  # inter-token latency (mean)
}

_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


@dataclass(frozen=True, slots=True)
class PublishedRow:
    """One published figure. ``slug`` is the service catalog's slug, or ``None`` when the catalog
    has no entry for the part yet (``gpu_name`` is then the only identity)."""

    table_id: str
    gpu_name: str  # as the source names the part
    slug: str | None
    workload: str  # key of WORKLOADS
    model: str  # core.catalog.models preset id, else a Hugging Face repository id
    precision: str  # key of PRECISIONS
    metric: str  # key of METRICS
    value: float
    gpu_count: int = 1
    batch_size: int | None = None  # training: per GPU (micro-batch); serving: fixed static batch
    seq_len: int | None = None  # training sequence length (None for images)
    input_len: int | None = None
    output_len: int | None = None
    tp: int = 1
    pp: int = 1
    concurrency: int | None = None  # client concurrency limit, when the source fixes one
    request_rate: float | None = None  # offered requests/s; None = not rate-limited
    kv_cache_dtype: str | None = None  # serving only; None where the source does not say
    gpu_assumption: str = ""  # non-empty when the variant/slug is inferred, not stated
    note: str = ""

    @property
    def unit(self) -> str:
        return METRICS[self.metric]

    @property
    def family(self) -> Family:
        return PRECISIONS[self.precision]


@dataclass(frozen=True, slots=True)
class SourceFile:
    repository: str  # owner/name on GitHub
    path: str
    commit: str  # 40 hex digits


@dataclass(frozen=True, slots=True)
class PublishedTable:
    id: str
    title: str
    kind: Kind
    publisher: str
    url: str  # the public page or the file at its commit
    files: tuple[SourceFile, ...]
    date: str  # ISO year[-month[-day]] the figures were measured / published
    date_note: str  # how the date is known
    stack: str  # the one software stack (framework / engine versions, container)
    engine: str  # short machine-readable framework or serving engine with version, e.g. "tensorrt-llm 0.14.0"
    method: str  # harness, batch policy, what the metric counts
    caveats: str
    rows: tuple[PublishedRow, ...]
    # False for tables kept for another purpose than the cross-GPU check (e.g. a request-rate
    # sweep with fewer than three GPUs); the reason is in ``caveats``.
    cross_gpu: bool = True

    def gpus(self) -> tuple[str, ...]:
        """Distinct GPUs of the table (by name as published), in first-seen order."""
        return tuple(dict.fromkeys(r.gpu_name for r in self.rows))


def valid_date(s: str) -> bool:
    return bool(_DATE.match(s))


def parse_number(cell: str) -> float | None:
    """A table cell as published ("27,304", "1474", "") -> float, or None when empty."""
    c = cell.strip().replace(",", "")
    return float(c) if c else None
