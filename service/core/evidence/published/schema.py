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
Family = Literal["fp32", "tf32", "fp16/bf16", "fp8", "int8", "fp4", "int4", "mixed"]

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
    "int8": "int8",  # INT8 weights and activations (MLPerf Inference CNN/BERT-class rows; UINT8 too)
    "fp4": "fp4",  # NVFP4 weights (and activations where the engine supports it; Blackwell)
    "mxfp4": "fp4",  # OCP MXFP4 (CDNA 4, Blackwell)
    "int4": "int4",  # INT4 / UINT4 weights
    # MLPerf Training: the submitter's own mixed-precision recipe, which the system description
    # does not state (FP8 on Hopper/Blackwell LLM submissions is common but not recorded per row)
    "submitter": "mixed",
    # the same, where every one of the submitter's own configuration files for the system's layout
    # is an NVFP4 recipe (MLPerf Training v5.1 on Blackwell; benchmarks/import_mlperf.py)
    "submitter-nvfp4": "mixed",
}
FAMILIES: Final[tuple[Family, ...]] = ("fp32", "tf32", "fp16/bf16", "fp8", "int8", "fp4", "int4", "mixed")

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
    # MLPerf Training: time to train one benchmark to its quality target (the model id names it)
    **{
        f"mlperf-train-{b}": f"MLPerf Training {b}: time to train to the benchmark's quality target, minutes"
        for b in (
            "bert",
            "resnet",
            "ssd",
            "retinanet",
            "unet3d",
            "dlrm_dcnv2",
            "gnn",
            "rgat",
            "gpt3",
            "llama2_70b_lora",
            "llama31_405b",
            "llama31_8b",
            "stable_diffusion",
            "flux1",
        )
    },
    # MLPerf Inference LoadGen scenarios (the model id names the benchmark and accuracy target)
    "mlperf-infer-offline": "MLPerf Inference Offline scenario: all queries at once, throughput",
    "mlperf-infer-server": "MLPerf Inference Server scenario: Poisson arrivals at the highest rate meeting the latency bound",
    "mlperf-infer-interactive": "MLPerf Inference Interactive scenario: Server with tighter LLM latency bounds",
}

MLPERF_TRAINING_MODELS: Final[dict[str, str | None]] = {
    # MLPerf Training benchmark -> core.catalog.models preset (None: no preset; row model "mlperf/<benchmark>")
    "bert": "bert-large",  # BERT-large pre-training (Wikipedia), masked-LM accuracy 0.720
    "resnet": "resnet50",  # ResNet-50 v1.5 ImageNet, 75.9 % top-1
    "ssd": None,  # RetinaNet ResNeXt50 on OpenImages (named ssd in v4.0/v4.1)
    "retinanet": None,
    "unet3d": None,  # 3D U-Net, KiTS19
    "dlrm_dcnv2": None,  # DLRM-DCNv2, Criteo 4TB
    "gnn": None,  # R-GAT on IGBH-full (named gnn in v4.0/v4.1)
    "rgat": None,
    "gpt3": "gpt3-175b",  # GPT-3 175B pre-training (a C4 segment)
    "llama2_70b_lora": "llama2-70b",  # LoRA fine-tuning on SCROLLS GovReport
    "llama31_405b": "llama3.1-405b",  # pre-training (a C4 segment)
    "llama31_8b": "llama3.1-8b",
    "stable_diffusion": None,  # Stable Diffusion v2 on LAION-400M
    "flux1": None,  # FLUX.1 on CC12M
}
MLPERF_INFERENCE_MODELS: Final[dict[str, str | None]] = {
    # MLPerf Inference model (with accuracy target) -> preset (None: no preset)
    "resnet": "resnet50",
    "retinanet": None,
    "3d-unet-99": None,
    "3d-unet-99.9": None,
    "dlrm-v2-99": None,
    "dlrm-v2-99.9": None,
    "rgat": None,
    "stable-diffusion-xl": None,
    "whisper": None,
    "llama2-70b-99": "llama2-70b",
    "llama2-70b-99.9": "llama2-70b",
    "llama3.1-8b": "llama3.1-8b",
    "llama3.1-8b-edge": "llama3.1-8b",
    "llama3.1-405b": "llama3.1-405b",
    "mixtral-8x7b": "mixtral-8x7b",
    "deepseek-r1": None,
    "gpt-oss-120b": "gpt-oss-120b",
    "qwen3-vl-235b-a22b": None,
    "wan-2.2-t2v-a14b": None,
    "dlrm-v3": None,
}
"""Model ids of MLPerf rows are ``mlperf/<benchmark>``: the reference implementation, not a Hugging
Face repository."""

LOWER_IS_BETTER: Final[frozenset[str]] = frozenset({"minutes_to_train", "latency_ms", "ttft_ms", "itl_ms"})
"""Metrics where a faster GPU gives a smaller number (the cross-GPU checks invert them)."""

WORK_RATES: Final[frozenset[str]] = frozenset({"train_samples_per_s", "train_epochs_per_s"})
"""MLPerf Training work rates: the samples or epochs a converged run's log counts at run_stop,
over its time to train. A time to train also counts the work the submitter's global batch and
hyper-parameters needed to converge; the rate is the system's speed (cross-GPU checks compare
these where a system has one)."""

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
    "minutes_to_train": "min",  # MLPerf Training score: time to the quality target, whole system
    "train_samples_per_s": "samples/s",  # MLPerf Training: samples to the quality target over that time
    "train_epochs_per_s": "epochs/s",  # the same where the log counts epochs (ResNet, DLRM, ...)
    "samples_per_s": "samples/s",  # MLPerf Inference Offline throughput, whole system
    "queries_per_s": "queries/s",  # MLPerf Inference Server throughput, whole system
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
    # the system as the source describes it (submitter, system, nodes x accelerators, host CPU,
    # framework / software): sources of many submitters state the stack per row, not per table
    system: str = ""

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
