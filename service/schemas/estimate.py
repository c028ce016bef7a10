"""Wire models for ``POST /v1/estimate`` and ``POST /v1/estimate/batch``."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.core.estimation.accuracy import Accuracy
from service.core.estimation.band import Band
from service.core.estimation.estimate import JobSpec
from service.core.estimation.serving_disagg_layout import Disaggregation
from service.core.estimation.serving_lora import LoraServing
from service.schemas.common import (
    DataVersion,
    JsonInt,
    NameStr,
    RequestModel,
    SafeStr,
    UtcDatetime,
)
from service.schemas.hf_config import HfConfig

ONE_MODEL_INPUT: list[dict[str, Any]] = [
    {"required": ["model"], "properties": {"model": {"type": "string"}}},
    {"required": ["hf_config"], "properties": {"hf_config": {"type": "object"}}},
    {"required": ["params_billion"], "properties": {"params_billion": {"type": "number"}}},
]
"""Exactly one of ``model`` / ``hf_config`` / ``params_billion`` is given (non-null): the
schema says so with ``oneOf``; the use case enforces it (422 at ``model``)."""

Mode = Literal["training", "fine-tuning", "inference"]
SolveFor = Literal["max_micro_batch", "max_context", "max_concurrency", "min_gpus"]


class SpeculativeIn(RequestModel):
    """Speculative decoding: ``draft_tokens`` proposed per step by ``method``, each accepted with
    probability ``acceptance_rate`` (i.i.d.); a step emits ``(1 - a^(k+1)) / (1 - a)`` tokens."""

    method: Literal["mtp", "eagle", "ngram"] = Field(
        description="mtp: the model's own multi-token-prediction module (DeepSeek-V3/R1); eagle: an EAGLE draft "
        "head (one decoder layer + the target's LM head); ngram: prompt lookup on the host"
    )
    draft_tokens: JsonInt = Field(default=3, ge=1, le=16)
    acceptance_rate: float = Field(ge=0.0, le=1.0, allow_inf_nan=False, description="per drafted token")


class LoraIn(RequestModel):
    """Multi-LoRA serving: ``adapters`` fine-tunes of the base model served side by side, each of
    ``rank``; ``max_loras`` of them resident on the GPU and distinct in one batch."""

    adapters: JsonInt = Field(ge=1, le=100_000, description="adapters served, equally popular")
    rank: JsonInt = Field(default=16, ge=1, le=512, description="LoRA rank (vLLM max_lora_rank; default 16)")
    max_loras: JsonInt = Field(
        default=1,
        ge=1,
        le=1024,
        description="adapter slots on the GPU = distinct adapters one batch may hold (vLLM --max-loras, "
        "default 1); at most adapters",
    )


class DisaggregatedIn(RequestModel):
    """Disaggregated prefill/decode: prompts run on a pool of ``prefill_gpus``, generation on a
    pool of ``decode_gpus`` (each pool in groups of ``tensor_parallel``); every prompt's KV cache
    moves from one pool to the other."""

    prefill_gpus: JsonInt = Field(ge=1, le=4096)
    decode_gpus: JsonInt = Field(ge=1, le=4096)


class WorkloadIn(RequestModel):
    """A job without its hardware: what ``/v1/estimate`` and ``/v1/recommend`` share. Give
    exactly one of ``model`` (preset id, alias or Hugging Face id), ``hf_config`` (a
    ``config.json`` body, as-is) or ``params_billion``."""

    model_config = ConfigDict(json_schema_extra=lambda schema: schema.update(oneOf=ONE_MODEL_INPUT))

    model: NameStr | None = Field(
        default=None, min_length=1, max_length=200, examples=["meta-llama/Llama-2-13b-hf"]
    )
    hf_config: HfConfig | None = Field(default=None, description="a config.json body, as-is")
    params_billion: float | None = Field(default=None, gt=0, le=10_000, allow_inf_nan=False)
    mode: Mode = Field(default="training", description="fine-tuning defaults to LoRA")
    precision: SafeStr | None = Field(
        default=None,
        max_length=32,
        description="default amp_bf16 (training: fp32 parameters under autocast); bf16 for fine-tuning (base "
        "loaded in bf16, as PEFT users do; ask for amp_bf16 for fp32 master weights) and inference",
    )
    # training
    batch_size: JsonInt = Field(
        default=1,
        ge=1,
        le=65536,
        description="per-GPU micro-batch (training) or concurrent sequences (inference)",
    )
    seq_len: JsonInt | None = Field(
        default=None,
        ge=1,
        le=1_048_576,
        description="training sequence length (default 2048; an encoder's 512), or the encoder's input "
        "length for BERT inference (default 512); an encoder takes at most its learned positions",
    )
    gradient_checkpointing: bool = False
    finetune: Literal["full", "lora", "qlora"] | None = None
    lora_rank: JsonInt = Field(default=16, ge=1, le=4096)
    lora_targets: list[Annotated[SafeStr, Field(min_length=1, max_length=64)]] | None = Field(
        default=None, max_length=64
    )
    attention: Literal["sdpa", "eager", "flash_attention_2"] = Field(
        default="sdpa",
        description="attention kernel: sdpa (PyTorch's default dispatch: cuDNN's fused flash kernels on "
        "Hopper, FlashAttention-2 on Ampere and Ada), eager (the math kernel: s^2 scores in memory) or "
        "flash_attention_2 (the flash-attn package; on Hopper 0.62x the default's attention speed, measured)",
    )
    optimizer: Literal["adamw", "sgd", "adafactor", "adamw_8bit"] = "adamw"
    sharding: Literal["none", "ddp", "fsdp", "zero1", "zero2", "zero3"] | None = Field(
        default=None, description="default: none on one GPU, ddp on several"
    )
    global_batch: JsonInt = Field(
        default=0,
        ge=0,
        le=2**31 - 1,
        description="sequences per optimizer step; 0 = batch_size x data-parallel ranks",
    )
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
    tokens: float | None = Field(
        default=None,
        gt=0,
        le=1e18,
        allow_inf_nan=False,
        description="tokens to train on (gives time_to_train_s); for decoder inference, output tokens "
        "to generate as a batch job (gives serving.time_to_generate_h; without requests_per_s or "
        "concurrency a continuous engine queues every request at once and runs as many as it admits)",
    )
    stack: Literal["hf-eager", "compiled", "megatron"] = Field(
        default="hf-eager",
        description="training software stack; it sets step-time efficiencies (memory is the reference "
        "loop's, except megatron's vocab-parallel loss under tensor parallelism; QLoRA needs hf-eager or "
        "compiled): hf-eager (a transformers model in eager PyTorch, the reference loop), compiled "
        "(torch.compile: fused elementwise kernels, fewer launches), megatron (Megatron-Core / NeMo / "
        "Transformer Engine-class fused kernels, flash attention, overlapped gradient communication). "
        "The answer names the stack and the defaults it changed",
    )
    # inference
    input_len: JsonInt = Field(default=1024, ge=1, le=1_048_576)
    output_len: JsonInt = Field(default=256, ge=0, le=1_048_576)
    quant_method: (
        Literal["none", "bnb-int8", "bnb-nf4", "awq", "gptq", "fp8", "int8", "nvfp4", "mxfp4"] | None
    ) = Field(
        default=None,
        description="weight format; omitted: the format the checkpoint ships in (DeepSeek-V3/R1 fp8, gpt-oss "
        "mxfp4, a config.json's quantization_config; 16-bit otherwise), loaded as 16-bit weights on a GPU "
        "that cannot run it (warning checkpoint_dequantised); 'none' asks for 16-bit weights. fp8 and int8 run W8A8 on the matching tensor-core peak where the "
        "GPU has it (weight-only at the 16-bit peak otherwise); awq/gptq are 4-bit weight-only; nvfp4 "
        "(0.5625 B/weight) needs Blackwell, mxfp4 (0.53125 B/weight) runs on Blackwell / CDNA 4 tensor "
        "cores or weight-only on Hopper, Ada, Ampere and CDNA 3 (refused elsewhere, PRECISION_UNSUPPORTED)",
    )
    engine: Literal["hf-transformers", "vllm", "tensorrt-llm", "sglang"] = Field(
        default="hf-transformers",
        description="hf-transformers: eager generate, one static batch (what the agent measures); vllm / tensorrt-llm "
        "/ sglang: continuous batching with a paged KV cache, CUDA-graph decode, chunked prefill (calibrated on "
        "NVIDIA's published TensorRT-LLM tables; vllm and sglang are transferred from them, with their own "
        "scheduler and memory defaults)",
    )
    engine_version: SafeStr | None = Field(
        default=None,
        min_length=1,
        max_length=32,
        description="the engine version you run (e.g. 0.11.0); echoed in the answer beside the version the "
        "figures assume (serving.engine_version), which no calibration distinguishes yet",
    )
    prefix_cache_hit_rate: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        allow_inf_nan=False,
        description="share of prompt tokens the engine finds in its prefix cache (vLLM automatic prefix caching, "
        "SGLang RadixAttention) and does not recompute; continuous engines only. The KV cache is counted "
        "unshared (an upper bound)",
    )
    memory_fraction: float | None = Field(
        default=None,
        gt=0.0,
        le=1.0,
        allow_inf_nan=False,
        description="the engine's memory setting as you launch it (continuous engines): vLLM "
        "gpu_memory_utilization, SGLang mem_fraction_static, TensorRT-LLM kv_cache_free_gpu_mem_fraction. "
        "Omitted: the engine's default (vLLM 0.9, TensorRT-LLM 0.9, SGLang its own pick per GPU and "
        "parallel layout, e.g. 0.835 on one H100 80 GB, 0.85 on B200s); it sets the KV cache and so the "
        "sequences a replica runs at once",
    )
    speculative: SpeculativeIn | None = Field(
        default=None,
        description="speculative decoding at a concurrency (not yet at a request rate); continuous engines only",
    )
    lora: LoraIn | None = Field(
        default=None,
        description="multi-LoRA serving (continuous engines): adapter slots take GPU memory from the KV cache, "
        "each distinct adapter of a batch adds its matmuls and weight reads to every iteration",
    )
    kv_cache_dtype: Literal["auto", "fp8", "int8", "nvfp4"] = Field(
        default="auto",
        description="auto: the compute dtype; nvfp4 (0.5625 B/element) on Blackwell with a serving engine only",
    )
    # serving at a request rate (continuous-batching engines)
    requests_per_s: float | None = Field(
        default=None,
        gt=0,
        le=1_000_000,
        allow_inf_nan=False,
        description="offered load over all replicas (Poisson arrivals, split evenly); replicas = gpu_count / "
        "tensor_parallel. Needs a continuous-batching engine (vllm, tensorrt-llm, sglang)",
    )
    concurrency: JsonInt | None = Field(
        default=None,
        ge=1,
        le=65536,
        description="requests kept in flight over all replicas (a closed loop of that many clients), split "
        "evenly: each replica (each decode replica, disaggregated) holds ceil(concurrency / replicas); instead "
        "of a rate; default batch_size",
    )
    input_len_cv: float = Field(
        default=0.0,
        ge=0,
        le=10,
        description="dispersion of prompt lengths: standard deviation / mean (input_len is the mean)",
    )
    output_len_cv: float = Field(
        default=0.0,
        ge=0,
        le=10,
        description="dispersion of output lengths: standard deviation / mean (output_len is the mean)",
    )
    ttft_target_ms: float | None = Field(
        default=None,
        gt=0,
        le=3.6e6,
        allow_inf_nan=False,
        description="p50 time-to-first-token target (at most an hour)",
    )
    tpot_target_ms: float | None = Field(
        default=None,
        gt=0,
        le=3.6e6,
        allow_inf_nan=False,
        description="p50 time-per-output-token target (at most an hour)",
    )

    def to_core(
        self, *, gpu_count: int = 1, tensor_parallel: int = 1, solve_for: str | None = None
    ) -> JobSpec:
        """The job as the core takes it, on ``gpu_count`` GPUs (the GPU is resolved separately)."""
        return JobSpec(
            model=self.model,
            hf_config=self.hf_config,
            params_billion=self.params_billion,
            mode=self.mode,
            gpu_count=gpu_count,
            precision=self.precision,
            batch_size=self.batch_size,
            seq_len=self.seq_len,
            gradient_checkpointing=self.gradient_checkpointing,
            finetune=self.finetune,
            lora_rank=self.lora_rank,
            lora_targets=tuple(self.lora_targets) if self.lora_targets else None,
            attention=self.attention,
            optimizer=self.optimizer,
            sharding=self.sharding,
            tensor_parallel=tensor_parallel,
            global_batch=self.global_batch,
            tokens=self.tokens,
            input_len=self.input_len,
            output_len=self.output_len,
            quant_method=self.quant_method,
            engine=self.engine,
            engine_version=self.engine_version,
            prefix_cache_hit_rate=self.prefix_cache_hit_rate,
            memory_fraction=self.memory_fraction,
            speculative=self.speculative.method if self.speculative else None,
            draft_tokens=self.speculative.draft_tokens if self.speculative else 0,
            acceptance_rate=self.speculative.acceptance_rate if self.speculative else 0.0,
            kv_cache_dtype=self.kv_cache_dtype,
            solve_for=solve_for,
            loop=self.loop,
            optimizer_impl=self.optimizer_impl,
            mixed_precision=self.mixed_precision,
            stack=self.stack,
            requests_per_s=self.requests_per_s,
            concurrency=self.concurrency,
            input_len_cv=self.input_len_cv,
            output_len_cv=self.output_len_cv,
            ttft_target_ms=self.ttft_target_ms,
            tpot_target_ms=self.tpot_target_ms,
            lora=LoraServing(self.lora.adapters, self.lora.rank, self.lora.max_loras) if self.lora else None,
        )


class EstimateRequest(WorkloadIn):
    """One concrete configuration: a workload on a GPU and a count. Give exactly one of
    ``model`` (preset id, alias or Hugging Face id), ``hf_config`` (a ``config.json`` body,
    as-is) or ``params_billion``."""

    gpu: NameStr = Field(
        min_length=1, max_length=200, description="slug, alias or PCI id", examples=["nvidia-l40"]
    )
    gpu_count: JsonInt = Field(default=1, ge=1, le=4096)
    tensor_parallel: JsonInt = Field(default=1, ge=1, le=64)
    pipeline_parallel: JsonInt = Field(
        default=1,
        ge=1,
        le=256,
        description="training: pipeline stages (1F1B); gpu_count = data-parallel x tensor_parallel x "
        "pipeline_parallel, and the micro-batches of a step (global_batch / (batch_size x data-parallel)) "
        "flow through the pipeline: bubble (pp - 1) / (micro-batches + pp - 1)",
    )
    gpus_per_node: JsonInt | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="training, disaggregated serving and a serving replica over several nodes (tensor_parallel "
        "above it): GPUs per node (default: the GPU's NVLink domain, at least 8). Collectives and KV transfers "
        "run over NVLink or PCIe inside a node and over the network between nodes",
    )
    network_gbps_per_node: float | None = Field(
        default=None,
        gt=0,
        le=1e6,
        allow_inf_nan=False,
        description="training and serving over several nodes: network bandwidth between nodes per node, Gb/s "
        "(default: 400 Gb/s per GPU of the node, as DGX/HGX H100 and H200 nodes have); the answer states what it "
        "assumed",
    )
    rdma: bool = Field(
        default=True,
        description="training and serving over several nodes: whether the network carries NCCL over RDMA (InfiniBand / RoCE); without it "
        "NCCL's sockets are assumed at half the rate",
    )
    disaggregated: DisaggregatedIn | None = Field(
        default=None,
        description="separate prefill and decode pools (continuous engines; gpu_count = prefill_gpus + "
        "decode_gpus): TTFT includes moving the prompt's KV cache over NVLink inside a node or the network "
        "between nodes (gpus_per_node, network_gbps_per_node, rdma)",
    )
    expert_parallel: bool = Field(
        default=False,
        description="MoE models on continuous engines: spread whole routed experts over the tensor_parallel GPUs "
        "of a replica, attention data-parallel (SGLang --enable-dp-attention --ep-size, vLLM "
        "--enable-expert-parallel with data-parallel attention): all-to-all dispatch and combine per MoE layer "
        "over the node's links instead of all-reduces; experts assumed equally loaded (an upper bound)",
    )
    price_per_gpu_hour: float | None = Field(
        default=None,
        gt=0,
        le=1000,
        allow_inf_nan=False,
        description="continuous engines: what one GPU costs per hour (your currency); the serving answer then "
        "splits it into cost per million input and per million output tokens, and their blend",
    )
    solve_for: SolveFor | None = Field(
        default=None,
        description="min_gpus for inference: with requests_per_s, the fewest replicas x "
        "tensor_parallel GPUs meeting the p50 targets; without, the smallest TP group that fits",
    )

    def to_core(
        self,
        *,
        gpu_count: int | None = None,
        tensor_parallel: int | None = None,
        solve_for: str | None = None,
    ) -> JobSpec:
        """The job as the core takes it (the GPU is resolved separately)."""
        spec = WorkloadIn.to_core(
            self,
            gpu_count=gpu_count or self.gpu_count,
            tensor_parallel=tensor_parallel or self.tensor_parallel,
            solve_for=solve_for or self.solve_for,
        )
        return replace(
            spec,
            pipeline_parallel=self.pipeline_parallel,
            gpus_per_node=self.gpus_per_node,
            network_gbps_per_node=self.network_gbps_per_node,
            rdma=self.rdma,
            disaggregated=None
            if self.disaggregated is None
            else Disaggregation(
                self.disaggregated.prefill_gpus,
                self.disaggregated.decode_gpus,
                self.gpus_per_node or 0,
                self.network_gbps_per_node or 0.0,
                self.rdma,
            ),
            price_per_gpu_hour=self.price_per_gpu_hour,
            expert_parallel=self.expert_parallel,
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
    device_memory_needed_bytes: int = Field(
        description="peak allocated + allocator slack + CUDA context (+ NCCL)"
    )
    device_memory_band: BandOut
    usable_memory_bytes: int
    fits: bool = Field(
        description="decided at the upper end of device_memory_band (fit_bytes): the peak at its band's upper "
        "end with the allocator slack, CUDA context and NCCL buffers at their central values; false also where a "
        "serving engine's share of the device leaves no KV cache for one request (a warning says why); true where a "
        "continuous-batching engine admits the sequences (it sized its KV pool to the memory the weights leave)"
    )
    fit_bytes: int = Field(description="device memory per GPU the fit is decided on")
    headroom_bytes: int = Field(
        description="usable minus the band's upper end (fit_bytes); negative = short by that much"
    )
    provenance: str
    measured_peak_allocated_bytes: int | None = None
    assumptions: list[str]


class AccuracyOut(BaseModel):
    """The held-out error measured for this kind of answer (provenance, scope, architecture)."""

    provenance: str
    scope: str = Field(
        description="same-gpu | same-architecture | cross-architecture | unseen-architecture | "
        "published-anchor | spec-default"
    )
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
        return cls(
            provenance=a.provenance,
            scope=a.scope,
            architecture=a.arch,
            workload=a.workload,
            n=a.n,
            median_error=a.median_error,
            mape=a.mape,
            statement=a.statement,
            basis=a.basis,
        )


class TimeOut(BaseModel):
    step_time_s: float
    step_time_band: BandOut
    accumulation_steps: int
    tokens_per_s: float = Field(description="all GPUs together (tokens, or images for a CNN, per second)")
    tokens_per_s_per_gpu: float
    samples_per_s: float = Field(description="all GPUs together")
    mfu: float
    bound: Literal["compute", "memory", "communication", "host"] = Field(
        description="the term that dominates the modelled time (the largest of time_shares)"
    )
    time_shares: dict[str, float] = Field(
        default_factory=dict,
        description="fractions of the modelled step by term: compute, memory, communication, host (and "
        "pipeline_bubble with pipeline stages); they sum to 1",
    )
    stack: str = Field(default="hf-eager", description="the training stack the figure assumes")
    network: str | None = Field(
        default=None, description="the node layout and inter-node network assumed (jobs on several nodes)"
    )
    time_to_train_s: float | None = None
    time_to_train_band: BandOut | None = None
    provenance: str
    source_gpus: list[str] = Field(default_factory=list)
    calibration_points: int = 0
    measured_step_time_s: float | None = None
    notes: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list, description="published tables the figure leans on")
    accuracy: AccuracyOut | None = None


class RateOut(BaseModel):
    """Serving at ``requests_per_s`` (continuous-batching engines)."""

    requests_per_s: float
    stable: bool = Field(description="False when the replicas cannot keep up (latencies are then null)")
    ttft_p50_ms: float | None
    tpot_p50_ms: float | None
    ttft_mean_ms: float | None
    in_flight_per_replica: float = Field(description="requests in decode per replica (Little's law)")
    utilisation: float | None = Field(
        description="processor-sharing utilisation of a replica's batch scheduler"
    )
    queue_wait_ms: float | None = Field(
        description="mean wait for admission under the concurrency cap (M/G/c)"
    )
    capacity_requests_per_s: float = Field(
        description="largest rate the replicas sustain within the p50 targets (at most 90% utilisation)"
    )
    headroom: float = Field(description="capacity / requests_per_s - 1")
    meets_ttft: bool | None = None
    meets_tpot: bool | None = None
    percentile: Literal["p50"] = "p50"
    validated: bool = Field(description="within the utilisation range the queueing model was validated on")
    note: str


class DisaggregatedOut(BaseModel):
    """Disaggregated prefill/decode: the pools and what every prompt pays between them."""

    prefill_gpus: int
    decode_gpus: int
    prefill_replicas: int
    decode_replicas: int
    kv_transfer_ms: float = Field(
        description="one prompt's KV cache, prefill to decode replica (part of TTFT)"
    )
    kv_link: Literal["NVLink", "Infinity Fabric", "RoCE", "PCIe", "network"] = Field(
        description="the link one prompt's KV cache crosses: the GPUs' scale-up fabric by its vendor's name "
        "(NVLink; AMD Infinity Fabric; the RoCE ports integrated on Gaudi), PCIe, or the network between nodes"
    )
    prefill_ms: float = Field(description="one prompt's share of a prefill iteration")
    prefill_wait_ms: float | None = Field(description="mean wait for the prefill pool; null when overloaded")
    prefill_utilisation: float
    layout: str = Field(description="the nodes and the network the pools are assumed on")


class TokenCostOut(BaseModel):
    """The GPUs' hourly price split into input and output tokens by where the GPU time goes
    (prefill_time_share), at the answer's load; blended at blend_input_per_output : 1."""

    per_million_input: float
    per_million_output: float
    per_million_blended: float
    blend_input_per_output: float = Field(
        description="input tokens per output token in the blend (Artificial Analysis's 3:1)"
    )


class ServingOut(BaseModel):
    ttft_ms: float | None = Field(description="p50 for continuous-batching engines; null when overloaded")
    ttft_band_ms: BandOut | None
    tpot_ms: float | None
    tpot_band_ms: BandOut | None
    output_tokens_per_s: float = Field(
        description="output tokens per second end to end (prefill included: a static batch's "
        "batch x output_len / its whole time, a continuous engine's completed tokens), all replicas together"
    )
    prefill_bound: str
    decode_bound: str
    provenance: str
    source_gpus: list[str] = Field(default_factory=list)
    measured_ttft_ms: float | None = None
    measured_tpot_ms: float | None = None
    notes: list[str] = Field(default_factory=list)
    sources: list[str] = Field(default_factory=list, description="published tables the figures lean on")
    accuracy: AccuracyOut | None = None
    engine: str
    engine_version: str = Field(default="", description="the engine version the figures assume")
    engine_version_requested: str | None = Field(default=None, description="the version the request named")
    prefill_time_share: float | None = Field(
        default=None,
        description="continuous engines: share of the replicas' GPU time prompts take (a prompt pays the time "
        "its tokens add to an iteration, output tokens the iterations); it splits an hour's price into "
        "cost per million input and per million output tokens",
    )
    tensor_parallel: int
    replicas: int
    concurrency_per_replica: int = Field(description="sequences in flight per replica")
    max_concurrency_per_replica: int = Field(
        description="continuous engines: sequences one replica admits "
        "(scheduler limit and paged KV cache); 0 for static batches"
    )
    rate: RateOut | None = None
    input_tokens_per_s: float | None = Field(
        default=None, description="continuous engines: prompt tokens served per second, all replicas"
    )
    disaggregated: DisaggregatedOut | None = None
    cost: TokenCostOut | None = Field(
        default=None,
        description="with price_per_gpu_hour: cost per million input and per million output tokens, and blended",
    )
    time_to_generate_h: BandOut | None = Field(
        default=None,
        description="with tokens (a batch job's output tokens): hours to generate them at "
        "output_tokens_per_s, all replicas; the band follows the TPOT band",
    )


class SolveOut(BaseModel):
    target: SolveFor
    value: int = Field(
        description="0 when nothing fits; for min_gpus the total GPUs (replicas x tensor_parallel)"
    )
    detail: str
    replicas: int | None = None
    tensor_parallel: int | None = None
    ttft_ms: float | None = Field(default=None, description="min_gpus with a rate: achieved p50 TTFT")
    tpot_ms: float | None = Field(default=None, description="min_gpus with a rate: achieved p50 TPOT")
    headroom: float | None = Field(
        default=None, description="min_gpus with a rate: capacity at the targets / rate - 1"
    )


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
    as_of: UtcDatetime
    data_version: DataVersion
    estimator_version: str
    calibration_watermark: int | None = Field(
        default=None,
        description="the measurement watermark the calibrations used were fitted at: they are "
        "refitted off the request path, so right after new measurements this can trail data_version's",
    )


class BatchRequest(RequestModel):
    """``{"items": [<an EstimateRequest>, ...]}``: 1 to 256 configurations."""

    items: list[EstimateRequest] = Field(
        min_length=1, max_length=256, description="each item is the body POST /v1/estimate takes"
    )


class BatchItem(BaseModel):
    index: int
    status: int = Field(description="200, or the 4xx the single endpoint would answer")
    result: EstimateResponse | None = None
    problem: dict[str, Any] | None = None


class BatchResponse(BaseModel):
    items: list[BatchItem]
    data_version: DataVersion
