"""Wire models for ``POST /v1/estimate`` and ``POST /v1/estimate/batch``."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Mode = Literal["training", "fine-tuning", "inference"]
SolveFor = Literal["max_micro_batch", "max_context", "max_concurrency", "min_gpus"]


class EstimateRequest(BaseModel):
    """One concrete configuration. Give exactly one of ``model`` (preset id, alias or Hugging
    Face id), ``hf_config`` (a ``config.json`` body, as-is) or ``params_billion``."""

    model_config = ConfigDict(extra="forbid")

    model: str | None = Field(default=None, max_length=200, examples=["meta-llama/Llama-2-13b-hf"])
    hf_config: dict[str, Any] | None = None
    params_billion: float | None = Field(default=None, gt=0, le=10_000)
    gpu: str = Field(min_length=1, max_length=200, description="slug, alias or PCI id", examples=["nvidia-l40"])
    gpu_count: int = Field(default=1, ge=1, le=4096)
    mode: Mode = Field(default="training", description="fine-tuning defaults to LoRA")
    precision: str | None = Field(default=None, description="default amp_bf16 (training) / bf16 (inference)")
    # training
    batch_size: int = Field(default=1, ge=1, le=65536, description="per-GPU micro-batch (training) or concurrent sequences (inference)")
    seq_len: int = Field(default=2048, ge=1, le=1_048_576, description="training sequence length")
    gradient_checkpointing: bool = False
    finetune: Literal["full", "lora", "qlora"] | None = None
    lora_rank: int = Field(default=16, ge=1, le=4096)
    lora_targets: list[str] | None = None
    attention: Literal["sdpa", "eager", "flash_attention_2"] = "sdpa"
    optimizer: Literal["adamw", "sgd", "adafactor", "adamw_8bit"] = "adamw"
    sharding: Literal["none", "ddp", "fsdp", "zero1", "zero2", "zero3"] | None = Field(
        default=None, description="default: none on one GPU, ddp on several"
    )
    tensor_parallel: int = Field(default=1, ge=1, le=64)
    global_batch: int = Field(default=0, ge=0, description="sequences per optimizer step; 0 = batch_size x data-parallel ranks")
    tokens: float | None = Field(default=None, gt=0, description="tokens to train on: gives time_to_train_s")
    # inference
    input_len: int = Field(default=1024, ge=1, le=1_048_576)
    output_len: int = Field(default=256, ge=0, le=1_048_576)
    quant_method: Literal["none", "bnb-int8", "bnb-nf4", "awq", "gptq", "fp8"] = "none"
    engine: Literal["hf-transformers", "vllm"] = "hf-transformers"
    kv_cache_dtype: Literal["auto", "fp8"] = "auto"
    solve_for: SolveFor | None = None


class BandOut(BaseModel):
    low: float
    mid: float
    high: float


class MemoryOut(BaseModel):
    components: dict[str, int] = Field(description="bytes per component at the peak phase")
    peak_phase: str
    peak_allocated_bytes: int
    peak_allocated_band: BandOut
    device_memory_needed_bytes: int = Field(description="peak allocated + allocator slack + CUDA context (+ NCCL)")
    device_memory_band: BandOut
    usable_memory_bytes: int
    fits: bool = Field(description="decided at the upper end of the band")
    headroom_bytes: int = Field(description="usable minus the band's upper end; negative = short by that much")
    provenance: str
    measured_peak_allocated_bytes: int | None = None
    assumptions: list[str]


class TimeOut(BaseModel):
    step_time_s: float
    step_time_band: BandOut
    accumulation_steps: int
    tokens_per_s: float = Field(description="all GPUs together (tokens, or images for a CNN, per second)")
    tokens_per_s_per_gpu: float
    samples_per_s: float = Field(description="all GPUs together")
    mfu: float
    bound: str
    time_to_train_s: float | None = None
    time_to_train_band: BandOut | None = None
    provenance: str
    source_gpus: list[str] = Field(default_factory=list)
    calibration_points: int = 0
    measured_step_time_s: float | None = None
    notes: list[str] = Field(default_factory=list)


class ServingOut(BaseModel):
    ttft_ms: float
    ttft_band_ms: BandOut
    tpot_ms: float
    tpot_band_ms: BandOut
    output_tokens_per_s: float
    prefill_bound: str
    decode_bound: str
    provenance: str
    source_gpus: list[str] = Field(default_factory=list)
    measured_ttft_ms: float | None = None
    measured_tpot_ms: float | None = None


class SolveOut(BaseModel):
    target: SolveFor
    value: int = Field(description="0 when nothing fits")
    detail: str


class WarningOut(BaseModel):
    code: str
    message: str


class EstimateResponse(BaseModel):
    model: dict[str, Any]
    gpu: dict[str, Any]
    mode: Mode
    configuration: dict[str, Any] = Field(description="the configuration estimated, defaults filled")
    memory: MemoryOut
    time: TimeOut | None = None
    serving: ServingOut | None = None
    solve: SolveOut | None = None
    warnings: list[WarningOut] = Field(default_factory=list)
    as_of: dt.datetime
    data_version: int
    estimator_version: str


class BatchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[EstimateRequest] = Field(min_length=1, max_length=256)


class BatchItem(BaseModel):
    index: int
    status: int = Field(description="200, or the 4xx the single endpoint would answer")
    result: EstimateResponse | None = None
    problem: dict[str, Any] | None = None


class BatchResponse(BaseModel):
    items: list[BatchItem]
    data_version: int
