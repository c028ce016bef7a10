"""Wire models for ``POST /v1/estimate`` and ``POST /v1/estimate/batch``."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.core.accuracy import Accuracy
from service.core.band import Band
from service.core.estimate import Estimate, JobSpec, Notice
from service.schemas.common import DataVersion

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
    precision: str | None = Field(
        default=None,
        description="default amp_bf16 (training: fp32 parameters under autocast); bf16 for fine-tuning (base "
                    "loaded in bf16, as PEFT users do; ask for amp_bf16 for fp32 master weights) and inference",
    )
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
    loop: Literal["loss_only", "keeps_outputs"] | None = Field(
        default=None,
        description="training loop: loss_only keeps only model(...).loss (HF Trainer); keeps_outputs holds the "
                    "output object and its B x S x V logits through backward (out = model(**batch); "
                    "out.loss.backward()). Not given: the estimate is loss_only and the band's upper end (where "
                    "fits is decided) covers keeps_outputs",
    )
    optimizer_impl: Literal["fused", "foreach", "forloop"] | None = Field(
        default=None,
        description="torch.optim AdamW implementation; default foreach, what torch.optim.AdamW(params) runs on CUDA "
                    "(its step holds one fp32 copy of the parameters it updates); the HF Trainer on "
                    "transformers >= 4.55 with torch >= 2.8 runs fused (no step temporaries)",
    )
    mixed_precision: Literal["autocast", "fsdp_policy"] | None = Field(
        default=None,
        description="how amp_* casts: autocast (torch.autocast; over FSDP shards it keeps every bf16 weight cast "
                    "until it exits) or fsdp_policy (FSDP MixedPrecisionPolicy(param_dtype=bf16, "
                    "reduce_dtype=fp32): bf16 copies of the gathered layer only). Default fsdp_policy with "
                    "sharding fsdp, autocast otherwise",
    )
    tokens: float | None = Field(default=None, gt=0, description="tokens to train on: gives time_to_train_s")
    # inference
    input_len: int = Field(default=1024, ge=1, le=1_048_576)
    output_len: int = Field(default=256, ge=0, le=1_048_576)
    quant_method: Literal["none", "bnb-int8", "bnb-nf4", "awq", "gptq", "fp8"] = "none"
    engine: Literal["hf-transformers", "vllm"] = "hf-transformers"
    kv_cache_dtype: Literal["auto", "fp8"] = "auto"
    solve_for: SolveFor | None = None

    def to_core(self) -> JobSpec:
        """The job as the core takes it (the GPU is resolved separately)."""
        return JobSpec(
            model=self.model, hf_config=self.hf_config, params_billion=self.params_billion, mode=self.mode,
            gpu_count=self.gpu_count, precision=self.precision, batch_size=self.batch_size, seq_len=self.seq_len,
            gradient_checkpointing=self.gradient_checkpointing, finetune=self.finetune, lora_rank=self.lora_rank,
            lora_targets=tuple(self.lora_targets) if self.lora_targets else None, attention=self.attention,
            optimizer=self.optimizer, sharding=self.sharding, tensor_parallel=self.tensor_parallel,
            global_batch=self.global_batch, tokens=self.tokens, input_len=self.input_len,
            output_len=self.output_len, quant_method=self.quant_method, engine=self.engine,
            kv_cache_dtype=self.kv_cache_dtype, solve_for=self.solve_for, loop=self.loop,
            optimizer_impl=self.optimizer_impl, mixed_precision=self.mixed_precision,
        )


class BandOut(BaseModel):
    low: float
    mid: float
    high: float

    @classmethod
    def of(cls, b: Band, k: float = 1.0) -> BandOut:
        return cls(low=b.low * k, mid=b.mid * k, high=b.high * k)


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


class AccuracyOut(BaseModel):
    """The held-out error measured for this kind of answer (provenance, scope, architecture)."""

    provenance: str
    scope: str = Field(description="same-gpu | same-architecture | cross-architecture | unseen-architecture | "
                                   "published-anchor | spec-default")
    architecture: str = Field(description="architecture key (sm80, sm89, cdna3 ...) or * when pooled")
    workload: str = Field(description="estimator workload or * when pooled")
    n: int = Field(description="held-out predictions the figures are measured on")
    median_error: float = Field(description="median |predicted / measured - 1| of throughput")
    mape: float
    statement: str
    basis: str

    @classmethod
    def of(cls, a: Accuracy | None) -> AccuracyOut | None:
        if a is None:
            return None
        return cls(provenance=a.provenance, scope=a.scope, architecture=a.arch, workload=a.workload, n=a.n,
                   median_error=a.median_error, mape=a.mape, statement=a.statement, basis=a.basis)


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
    sources: list[str] = Field(default_factory=list, description="published tables the figure leans on")
    accuracy: AccuracyOut | None = None


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
    notes: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list, description="published tables the figures lean on")
    accuracy: AccuracyOut | None = None


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
    data_version: DataVersion
    estimator_version: str
    calibration_watermark: int | None = Field(
        default=None, description="the measurement watermark the calibrations used were fitted at: they are "
        "refitted off the request path, so right after new measurements this can trail data_version's")

    @classmethod
    def from_core(cls, est: Estimate, *, warnings: tuple[Notice, ...], as_of: dt.datetime, data_version: str,
                  estimator_version: str, calibration_watermark: int | None = None) -> EstimateResponse:
        m, g, mem = est.job.model, est.gpu, est.memory
        t, sv, so = est.time, est.serving, est.solve
        return cls(
            model={"id": m.id, "kind": m.kind, "total_params": m.total_params, "active_params": m.active_params,
                   "description": m.describe()},
            gpu={"slug": g.slug, "name": g.name, "usable_memory_bytes": mem.usable_memory_bytes,
                 "architecture": g.architecture},
            mode=est.job.mode,
            configuration=dict(est.configuration),
            memory=MemoryOut(
                components={k: int(v) for k, v in mem.estimate.components.items()},
                peak_phase=mem.estimate.peak_phase,
                peak_allocated_bytes=mem.estimate.peak_allocated_bytes,
                peak_allocated_band=BandOut.of(mem.estimate.peak_allocated_band),
                device_memory_needed_bytes=mem.estimate.device_memory_needed_bytes,
                device_memory_band=BandOut.of(mem.estimate.device_memory_band),
                usable_memory_bytes=mem.usable_memory_bytes,
                fits=mem.fits,
                headroom_bytes=mem.headroom_bytes,
                provenance=mem.provenance,
                measured_peak_allocated_bytes=mem.measured_peak_allocated_bytes,
                assumptions=list(mem.estimate.assumptions),
            ),
            time=None if t is None else TimeOut(
                step_time_s=t.step_time_s, step_time_band=BandOut.of(t.step_time_band),
                accumulation_steps=t.accumulation_steps, tokens_per_s=t.tokens_per_s,
                tokens_per_s_per_gpu=t.tokens_per_s_per_gpu, samples_per_s=t.samples_per_s, mfu=t.mfu,
                bound=t.bound, time_to_train_s=t.time_to_train_s,
                time_to_train_band=BandOut.of(t.time_to_train_band) if t.time_to_train_band else None,
                provenance=t.provenance, source_gpus=list(t.source_gpus), calibration_points=t.calibration_points,
                measured_step_time_s=t.measured_step_time_s, notes=list(t.notes), sources=list(t.sources),
                accuracy=AccuracyOut.of(t.accuracy),
            ),
            serving=None if sv is None else ServingOut(
                ttft_ms=sv.ttft_s * 1e3, ttft_band_ms=BandOut.of(sv.ttft_band, 1e3), tpot_ms=sv.tpot_s * 1e3,
                tpot_band_ms=BandOut.of(sv.tpot_band, 1e3), output_tokens_per_s=sv.output_tokens_per_s,
                prefill_bound=sv.prefill_bound, decode_bound=sv.decode_bound, provenance=sv.provenance,
                source_gpus=list(sv.source_gpus),
                measured_ttft_ms=sv.measured_ttft_s * 1e3 if sv.measured_ttft_s else None,
                measured_tpot_ms=sv.measured_tpot_s * 1e3 if sv.measured_tpot_s else None,
                notes=list(sv.notes), sources=list(sv.sources), accuracy=AccuracyOut.of(sv.accuracy),
            ),
            solve=None if so is None else SolveOut(target=so.target, value=so.value, detail=so.detail),
            warnings=[WarningOut(code=w.code, message=w.message) for w in warnings],
            as_of=as_of,
            data_version=data_version,
            estimator_version=estimator_version,
            calibration_watermark=calibration_watermark,
        )


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
    data_version: DataVersion
