"""The benchmark cell a job is: the (workload, canonical parameters, hash) an agent's measurement
of exactly this configuration is stored under, so an estimate can stand on it (or, on another
GPU, be anchored on it)."""

from __future__ import annotations

from typing import Any

from service.core.catalog.models import CnnSpec, DecoderSpec, EncoderSpec
from service.core.catalog.vocabulary import VocabularyError, canonical_parameters, parameters_hash
from service.core.estimation.estimate_inputs import Job
from service.core.estimation.memory import BatchInferenceConfig, InferenceConfig, TrainConfig

__all__ = ["benchmark_cell"]


def benchmark_cell(job: Job) -> tuple[str, dict[str, Any], str] | None:
    """(workload, canonical parameters, parameters hash) of the benchmark cell that measures
    exactly this job, or ``None`` (a model given by config or size is no preset cell)."""
    if not job.model_is_preset:
        return None
    c = job.config
    m = job.model
    params: dict[str, Any]
    if isinstance(c, TrainConfig) and (c.stack != "hf-eager" or c.pipeline_parallel > 1):
        return None  # the agent measures the eager reference loop without pipeline stages
    if isinstance(c, TrainConfig) and isinstance(m, DecoderSpec):
        workload = "llm-train"
        params = {
            "model": m.id,
            "precision": c.precision,
            "batch_size": c.batch_size,
            "seq_len": c.seq_len,
            "gradient_checkpointing": c.gradient_checkpointing,
            "finetune": c.finetune,
            "lora_rank": c.lora_rank if c.finetune != "full" else 0,
            "lora_targets": ",".join(c.lora_targets) if c.finetune != "full" else "",
            "attention": c.attention,
            "optimizer": c.optimizer,
            "sharding": c.sharding,
            "gpu_count": c.gpu_count,
            "global_batch": c.global_batch,
        }
        # declared variants, named only away from the vocabulary defaults (cells measured
        # before they existed keep their hash); an unstated loop is looked up as loss_only,
        # the central estimate
        for name, value, default in (
            ("loop", c.loop or "loss_only", "loss_only"),
            ("optimizer_impl", c.optimizer_impl, "fused"),
            ("mixed_precision", c.mixed_precision, "autocast"),
        ):
            if value != default:
                params[name] = value
    elif isinstance(c, TrainConfig) and c.gpu_count != 1:
        return None  # the BERT and ResNet-50 training cells are one GPU: no collectives measured
    elif isinstance(c, TrainConfig) and isinstance(m, EncoderSpec) and m.id == "bert-large":
        workload, params = (
            "bert-large-train",
            {"precision": c.precision, "batch_size": c.batch_size, "seq_len": c.seq_len},
        )
    elif isinstance(c, TrainConfig) and isinstance(m, CnnSpec):
        workload, params = "resnet50-train", {"precision": c.precision, "batch_size": c.batch_size}
    elif isinstance(c, InferenceConfig):
        if c.tensor_parallel != 1 or (job.serving is not None and job.serving.requests_per_s is not None):
            return None  # the llm-infer cell is one GPU at a fixed batch
        workload = "llm-infer"
        params = {
            "model": m.id,
            "precision": c.precision,
            "quant_method": c.quant_method,
            "engine": c.engine,
            "batch_size": c.batch_size,
            "input_len": c.input_len,
            "output_len": c.output_len,
        }
    elif isinstance(c, BatchInferenceConfig) and isinstance(m, EncoderSpec) and m.id == "bert-large":
        workload, params = (
            "bert-large-infer",
            {"precision": c.precision, "batch_size": c.batch_size, "seq_len": c.seq_len},
        )
    elif isinstance(c, BatchInferenceConfig) and isinstance(m, CnnSpec):
        workload, params = "resnet50-infer", {"precision": c.precision, "batch_size": c.batch_size}
    else:
        return None
    try:
        canon = canonical_parameters(workload, params)
    except VocabularyError:
        return None
    return workload, canon, parameters_hash(workload, canon)
