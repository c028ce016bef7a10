"""Training-memory inputs and result: the constants of the reference loop, :class:`TrainConfig`
and :class:`MemoryEstimate` (``service.core.estimation.memory`` describes the model)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from service.core.catalog.models import CnnSpec, DecoderSpec, EncoderSpec, ModelSpec
from service.core.catalog.precision import TRAIN_MODES as _MODES
from service.core.catalog.precision import TRAIN_PRECISIONS, Mode, train_mode
from service.core.errors import InvalidConfiguration
from service.core.estimation.band import Band
from service.core.estimation.frozen import fast_init

MiB = 2**20

ALLOCATOR_ROUND_LARGE_BYTES = 2 * MiB
ALLOCATOR_MIN_LARGE_ALLOC_BYTES = 10 * MiB
ALLOCATOR_SPLIT_MIN_BYTES = 1 * MiB
"""PyTorch's caching allocator (``CUDACachingAllocator.cpp``): a request above 10 MiB gets a
segment rounded up to 2 MiB, and a block is split only when more than 1 MiB would remain -- so a
tensor whose size is just under a 2 MiB multiple holds the rest too, and ``memory_allocated``
counts the whole block (an 11 MiB fp32 MLP matrix of gt-llama-350m holds 12 MiB)."""


def allocator_block_waste_bytes(nbytes: float) -> float:
    """Bytes a tensor of ``nbytes`` holds beyond its size in a fresh large segment (above)."""
    if nbytes <= ALLOCATOR_MIN_LARGE_ALLOC_BYTES:
        return 0.0
    rest = -nbytes % ALLOCATOR_ROUND_LARGE_BYTES
    return rest if rest <= ALLOCATOR_SPLIT_MIN_BYTES else 0.0


CUBLAS_WORKSPACES_TRAINING_BYTES = 2 * 32 * MiB
"""cuBLAS workspaces a training step holds: PyTorch caches one per (cuBLAS handle, stream), and
handles are per thread, so the forward (Python thread) and the backward (autograd's device
thread) each keep one; 32 MiB each, the Hopper size (PyTorch ``CublasHandlePool.cpp``, PR 120925
after NVIDIA's cuBLAS guide). Measured: every committed H200 training point >= 1B parameters sits
32 MiB above the one-workspace model at its optimizer step (``optimizer_step_peak_allocated_bytes``),
whatever its batch, sequence, sharding or optimizer."""
GiB = 2**30

TRANSFORMERS_VERSION_MODELLED = "5.x (checked against 5.17)"
"""The Hugging Face transformers release whose training-step memory layout is modelled."""

CUDA_CONTEXT_BYTES = 500 * MiB
"""Device memory a PyTorch process holds outside its caching allocator: the CUDA context,
kernel images loaded lazily (CUDA_MODULE_LOADING=LAZY, default since CUDA 11.7), cuBLAS and
cuDNN handles. About 500 MiB on H100/H200-class GPUs with CUDA 12/13 and PyTorch 2.x (NVML
"used" minus ``torch.cuda.memory_reserved`` after the first step); :data:`CUDA_CONTEXT_BAND`
brackets it."""

CUDA_CONTEXT_BAND = (400 * MiB, 750 * MiB)
"""Low/high bound for :data:`CUDA_CONTEXT_BYTES` (older GPUs, eager module loading, cuDNN
benchmark workspaces push it up)."""

ALLOCATOR_SLACK = 0.03
"""Fraction of the peak allocated bytes the caching allocator must hold beyond them when it is
close to full: live 2 MiB-rounded segments that cannot be split for the next request. On an
allocation failure PyTorch frees every cached, unused segment and retries, so cached-but-free
memory does not cause an OOM; only this fragmentation of live segments does."""

ALLOCATOR_SLACK_BAND = (0.005, 0.06)

NCCL_BUFFER_BYTES = 1 * GiB
"""NCCL communicator buffers per GPU (channels x peers x NCCL_BUFFSIZE of 4 MiB, plus
proxy and work FIFOs), outside PyTorch's allocator; 0.5-2 GiB for 2-8 NVLink peers in
practice (``NCCL_BUFFER_BAND``). Zero on one GPU."""

NCCL_BUFFER_BAND = (512 * MiB, 2 * GiB)

DDP_BUCKET_FRACTION = 1.0
"""``DistributedDataParallel`` with the default ``gradient_as_bucket_view=False`` keeps flat
gradient buckets covering every parameter in addition to ``.grad``: one extra gradient set."""

ZERO_BUCKET_ELEMENTS = 500_000_000
"""DeepSpeed's default ``reduce_bucket_size`` / ``allgather_bucket_size`` (5e8 elements)."""

ZERO3_MAX_LIVE_PARAMETERS = 1_000_000_000
"""DeepSpeed ZeRO-3 default ``stage3_max_live_parameters`` (gathered parameters kept live)."""

NF4_BYTES_PER_PARAM = 0.5 + 1 / 64 + 4 / (64 * 256)
"""bitsandbytes NF4 with double quantization: 4 bits per weight, an 8-bit absmax per block of
64 and an fp32 scale per 256 absmax blocks (Dettmers et al. 2023, QLoRA, section 2)."""


def fsdp_gathered_bytes(c: TrainConfig, params: float, gathered: float, linear: float) -> float:
    """Bytes FSDP gathers for ``params`` parameters at ``gathered`` bytes each -- except a QLoRA
    base's ``linear`` decoder-linear weights among them, gathered as NF4: FSDP-QLoRA stores the
    packed 4-bit weights in 16-bit tensors (bitsandbytes ``bnb_4bit_quant_storage``, Answer.AI /
    Hugging Face FSDP-QLoRA), so it shards and gathers the packed bytes, not a 16-bit copy."""
    if c.finetune != "qlora":
        return gathered * params
    return linear * NF4_BYTES_PER_PARAM + (params - linear) * gathered


INT8_BYTES_PER_PARAM = 1.0 + 4 / 4096
"""bitsandbytes LLM.int8(): one byte per weight plus an fp32 row scale (rows of ~4096)."""

INT4_GROUP_BYTES_PER_PARAM = 0.5 + (2 + 0.5) / 128
"""AWQ/GPTQ 4-bit weights with an fp16 scale and a 4-bit zero point per group of 128."""

OPTIMIZERS: tuple[str, ...] = ("adamw", "sgd", "adafactor", "adamw_8bit")
OPTIMIZER_IMPLS: tuple[str, ...] = ("fused", "foreach", "forloop")
LOOPS: tuple[str, ...] = ("loss_only", "keeps_outputs")
MIXED_PRECISIONS: tuple[str, ...] = ("autocast", "fsdp_policy")
_MODE_OF: dict[tuple[str, str], Mode] = {
    (p, mp): train_mode(p, mp) for p in _MODES for mp in MIXED_PRECISIONS
}
"""``train_mode`` of every (precision, mixed_precision) a :class:`TrainConfig` accepts."""
_DEEPSPEED_16BIT: dict[str, str] = {"amp_bf16": "bf16", "amp_fp16": "fp16"}
"""The 16-bit weights DeepSpeed's bf16 / fp16 modes hold where autocast would have run."""
_ZERO: frozenset[str] = frozenset({"zero1", "zero2", "zero3"})
SHARDINGS: tuple[str, ...] = ("none", "ddp", "fsdp", "zero1", "zero2", "zero3")
STACKS: tuple[str, ...] = ("hf-eager", "compiled", "megatron")
"""Training stacks: ``hf-eager`` (the reference loop: transformers model, eager PyTorch),
``compiled`` (the same loop under ``torch.compile``: fused elementwise kernels, fewer
launches), ``megatron`` (Megatron-Core / NeMo / Transformer Engine-class fused stacks:
fused norms, RoPE, SwiGLU and cross-entropy, flash attention, overlapped gradient
communication); ``service.core.estimation.stacks`` holds what each changes."""
NETWORK_GBIT_PER_S_PER_GPU = 400.0
"""Default network bandwidth between nodes per GPU (one 400 Gb/s NIC per GPU, as in DGX/HGX
H100 and H200 systems); a deployment setting, not a GPU trait."""
SOCKET_NETWORK_EFFICIENCY = 0.5
"""Fraction of the RDMA collective bandwidth NCCL's TCP socket transport is assumed to reach
(no RDMA): an assumption stated in the answer, not a measurement."""
ATTENTIONS: tuple[str, ...] = ("sdpa", "eager", "flash_attention_2")
FINETUNES: tuple[str, ...] = ("full", "lora", "qlora")
DEFAULT_LORA_TARGETS: tuple[str, ...] = ("k_proj", "o_proj", "q_proj", "v_proj")


_NOTE_STACK = f"transformers {TRANSFORMERS_VERSION_MODELLED}, PyTorch eager"
_NOTE_CONTEXT = (
    f"CUDA context {CUDA_CONTEXT_BYTES // MiB} MiB; allocator slack {ALLOCATOR_SLACK:.0%} of peak allocated"
)


# --------------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class TrainConfig:
    """One training configuration, per GPU where it matters.

    ``batch_size`` is the per-GPU micro-batch (sequences, or images for a CNN);
    ``global_batch`` the sequences per optimizer step over all data-parallel ranks (0 means
    ``batch_size * data_parallel``; a larger value is reached by gradient accumulation).
    ``gpu_count = tensor_parallel * pipeline_parallel * data_parallel``.
    """

    model: ModelSpec
    precision: str = "amp_bf16"
    batch_size: int = 1
    seq_len: int = 2048
    gradient_checkpointing: bool = False
    finetune: str = "full"
    lora_rank: int = 16
    lora_targets: tuple[str, ...] = DEFAULT_LORA_TARGETS
    attention: str = "sdpa"
    optimizer: str = "adamw"
    sharding: str = "none"
    gpu_count: int = 1
    tensor_parallel: int = 1
    global_batch: int = 0
    optimizer_impl: str = "fused"
    """``torch.optim`` implementation of AdamW/SGD: ``fused`` (the reference loop), ``foreach``
    (what ``torch.optim.AdamW(params)`` runs on CUDA) or ``forloop``; ZeRO runs DeepSpeed's own
    fused Adam and the other optimizers have no such choice (ignored there)."""
    loop: str | None = "loss_only"
    """``loss_only`` (the reference loop, HF Trainer: only ``model(...).loss`` is kept),
    ``keeps_outputs`` (``out = model(**batch); out.loss.backward()``: the output object and its
    logits stay alive until the next forward returns), or ``None`` when the caller did not say:
    the central estimate is ``loss_only`` and the band's upper end covers ``keeps_outputs``."""
    mixed_precision: str = "autocast"
    """How an ``amp_*`` precision casts: ``autocast`` (``torch.autocast`` over the stored
    parameters) or ``fsdp_policy`` (FSDP2 ``MixedPrecisionPolicy(param_dtype=half,
    reduce_dtype=fp32)``, no autocast; ``sharding='fsdp'`` only)."""
    pipeline_parallel: int = 1
    """Pipeline stages (1F1B schedule, layers split evenly, the embeddings on the first stage and
    the LM head and loss on the last); ``gpu_count = data_parallel x tensor_parallel x
    pipeline_parallel``, the micro-batches of a step (``accumulation_steps``) flow through the
    pipeline."""
    gpus_per_node: int = 0
    """GPUs per node (0: the GPU's own node, ``max(NVLink domain, 8)``). Collectives run over
    NVLink (or PCIe) inside a node and over the network between nodes."""
    network_gbps_per_node: float = 0.0
    """Network bandwidth between nodes, per node, Gb/s (0: :data:`NETWORK_GBIT_PER_S_PER_GPU` per
    GPU of the node: one 400 Gb/s NIC per GPU, as DGX/HGX H100 and H200 systems have)."""
    rdma: bool = True
    """Whether the network carries NCCL over RDMA (InfiniBand / RoCE); without it NCCL's socket
    transport is assumed to reach :data:`SOCKET_NETWORK_EFFICIENCY` of the RDMA rate."""
    stack: str = "hf-eager"
    """Training software stack (:data:`STACKS`): it sets step-time efficiencies only; memory is
    the reference loop's."""

    def __post_init__(self) -> None:
        if self.precision not in _MODES:
            raise InvalidConfiguration(
                "precision",
                f"training precision must be one of {', '.join(TRAIN_PRECISIONS)} "
                f"(fp8/int8/int4 training is not the reference loop; use finetune=qlora "
                f"for a 4-bit base); got {self.precision!r}",
            )
        if self.batch_size < 1:
            raise InvalidConfiguration("batch_size", "batch_size must be >= 1")
        if self.seq_len < 1:
            raise InvalidConfiguration("seq_len", "seq_len must be >= 1")
        if (
            self.finetune not in FINETUNES
            or self.attention not in ATTENTIONS
            or self.optimizer not in OPTIMIZERS
            or self.sharding not in SHARDINGS
            or self.optimizer_impl not in OPTIMIZER_IMPLS
            or self.mixed_precision not in MIXED_PRECISIONS
        ):  # one test on the path taken every time
            for name, allowed in (
                ("finetune", FINETUNES),
                ("attention", ATTENTIONS),
                ("optimizer", OPTIMIZERS),
                ("sharding", SHARDINGS),
                ("optimizer_impl", OPTIMIZER_IMPLS),
                ("mixed_precision", MIXED_PRECISIONS),
            ):
                if getattr(self, name) not in allowed:
                    raise InvalidConfiguration(name, f"{name} must be one of {', '.join(allowed)}")
        if self.loop is not None and self.loop not in LOOPS:
            raise InvalidConfiguration("loop", f"loop must be one of {', '.join(LOOPS)}")
        if self.mixed_precision == "fsdp_policy" and (
            self.sharding != "fsdp" or not self.precision.startswith("amp_")
        ):
            raise InvalidConfiguration(
                "mixed_precision",
                "mixed_precision 'fsdp_policy' is FSDP's MixedPrecisionPolicy over fp32 "
                "shards: it needs sharding 'fsdp' and an amp_* precision",
            )
        if self.gpu_count < 1 or self.tensor_parallel < 1:
            raise InvalidConfiguration("gpu_count", "gpu_count and tensor_parallel must be >= 1")
        if self.gpu_count % self.tensor_parallel:
            raise InvalidConfiguration("tensor_parallel", "gpu_count must be a multiple of tensor_parallel")
        if (
            self.pipeline_parallel != 1
            or self.gpus_per_node
            or self.network_gbps_per_node
            or self.stack != "hf-eager"
        ):
            self._check_layout()  # off the common path: the defaults need no test
        # sharding over one rank is legal (it degenerates to no sharding)
        m = self.model
        if self.tensor_parallel > 1:
            if not isinstance(m, DecoderSpec):
                raise InvalidConfiguration(
                    "tensor_parallel", "tensor parallelism is modelled for decoders only"
                )
            if m.num_kv_heads % self.tensor_parallel or m.intermediate_size % self.tensor_parallel:
                raise InvalidConfiguration(
                    "tensor_parallel",
                    f"tensor_parallel={self.tensor_parallel} must divide the KV heads "
                    f"({m.num_kv_heads}) and the FFN size ({m.intermediate_size})",
                )
        if self.finetune != "full":
            self._check_lora()  # off the common path: full fine-tuning needs no test
        if self.finetune == "qlora" and self.precision in ("fp32", "tf32"):
            raise InvalidConfiguration("precision", "QLoRA computes in 16-bit: use amp_bf16, bf16 or fp16")
        if isinstance(m, DecoderSpec) and self.seq_len > 1_048_576:
            raise InvalidConfiguration("seq_len", "seq_len above 1,048,576 tokens")
        if self.global_batch and self.global_batch % (self.batch_size * self.data_parallel):
            raise InvalidConfiguration(
                "global_batch",
                f"global_batch {self.global_batch} is not a multiple of batch_size x "
                f"data-parallel ranks ({self.batch_size * self.data_parallel})",
            )

    def _check_lora(self) -> None:
        """LoRA/QLoRA need a decoder, a rank and known target layers; QLoRA's 4-bit base is
        sharded by FSDP (not modelled under ZeRO-3), never split by tensor parallelism (no stack
        does)."""
        m = self.model
        if not isinstance(m, DecoderSpec):
            raise InvalidConfiguration("finetune", "LoRA/QLoRA are modelled for decoder-only models")
        if self.lora_rank < 1:
            raise InvalidConfiguration("lora_rank", "lora_rank must be >= 1 with LoRA/QLoRA")
        shapes = m.linear_shapes()
        bad = [t for t in self.lora_targets if t not in shapes or t == "router"]
        if bad or not self.lora_targets:
            known = [k for k in shapes if k != "router"]
            raise InvalidConfiguration(
                "lora_targets", f"unknown LoRA target(s) {bad}; known: {', '.join(sorted(known))}"
            )
        if self.sharding == "zero3" and self.finetune == "qlora":
            raise InvalidConfiguration(
                "sharding", "QLoRA with ZeRO-3 is not modelled (FSDP is: sharding fsdp)"
            )
        if self.finetune == "qlora" and self.stack == "megatron":
            raise InvalidConfiguration(
                "stack", "Megatron-Core has no 4-bit (bitsandbytes) base: QLoRA runs on hf-eager or compiled"
            )
        if self.finetune == "qlora" and self.tensor_parallel > 1:
            raise InvalidConfiguration(
                "tensor_parallel",
                "QLoRA's bitsandbytes 4-bit layers have no tensor-parallel plan (transformers shards "
                "nn.Linear, not Linear4bit; Megatron has no 4-bit base): use data parallelism (ddp, fsdp)",
            )

    def _check_layout(self) -> None:
        """Pipeline stages, node layout, network and stack (fields added by issue 25)."""
        pp = self.pipeline_parallel
        if pp < 1:
            raise InvalidConfiguration("pipeline_parallel", "pipeline_parallel must be >= 1")
        if self.gpu_count % (self.tensor_parallel * pp):
            raise InvalidConfiguration(
                "pipeline_parallel",
                f"gpu_count ({self.gpu_count}) must be a multiple of tensor_parallel x pipeline_parallel "
                f"({self.tensor_parallel} x {pp})",
            )
        if pp > 1:
            m = self.model
            if not isinstance(m, DecoderSpec):
                raise InvalidConfiguration(
                    "pipeline_parallel", "pipeline parallelism is modelled for decoders only"
                )
            if pp > m.num_layers:
                raise InvalidConfiguration(
                    "pipeline_parallel", f"pipeline_parallel ({pp}) exceeds the model's {m.num_layers} layers"
                )
            if self.sharding in ("fsdp", "zero3"):
                raise InvalidConfiguration(
                    "sharding",
                    "pipeline parallelism with FSDP / ZeRO-3 sharding is not modelled (use zero1/ddp)",
                )
        if self.gpus_per_node < 0:
            raise InvalidConfiguration("gpus_per_node", "gpus_per_node must be >= 1 (0: the GPU's node)")
        if self.network_gbps_per_node < 0 or not math.isfinite(self.network_gbps_per_node):
            raise InvalidConfiguration("network_gbps_per_node", "network_gbps_per_node must be > 0")
        if self.stack not in STACKS:
            raise InvalidConfiguration("stack", f"stack must be one of {', '.join(STACKS)}")

    @property
    def data_parallel(self) -> int:
        return self.gpu_count // (self.tensor_parallel * self.pipeline_parallel)

    @property
    def mode(self) -> Mode:
        """Bytes by role: the precision's, or the FSDP mixed-precision policy's
        (:func:`~service.core.catalog.precision.train_mode`, tabulated: the estimate reads it often).
        Full fine-tuning under ZeRO runs DeepSpeed's 16-bit weights (fp32 masters live in its
        optimizer): ``amp_*`` there is the 16-bit mode, no autocast over fp32 weights."""
        if self.precision in _DEEPSPEED_16BIT and self.finetune == "full" and self.sharding in _ZERO:
            return _MODE_OF[_DEEPSPEED_16BIT[self.precision], self.mixed_precision]
        return _MODE_OF[self.precision, self.mixed_precision]

    @property
    def keeps_outputs(self) -> bool:
        return self.loop == "keeps_outputs"

    @property
    def effective_global_batch(self) -> int:
        return self.global_batch or self.batch_size * self.data_parallel

    @property
    def accumulation_steps(self) -> int:
        """Micro-steps per optimizer step (gradient accumulation): ``effective_global_batch //
        (batch_size * data_parallel)``, at least 1 (written out: estimates read it often)."""
        per_step = self.batch_size * (self.gpu_count // (self.tensor_parallel * self.pipeline_parallel))
        return max(1, (self.global_batch or per_step) // per_step)


def train_config_from_parameters(params: Mapping[str, Any], model: ModelSpec | None = None) -> TrainConfig:
    """Build a :class:`TrainConfig` from canonical ``llm-train`` / ``bert-large-train`` /
    ``resnet50-train`` benchmark parameters (``service.core.catalog.vocabulary``)."""
    from service.core.catalog.models import get_model

    spec = model if model is not None else get_model(str(params["model"]))
    targets = tuple(t for t in str(params.get("lora_targets") or "").split(",") if t)
    return TrainConfig(
        model=spec,
        precision=str(params.get("precision", "amp_bf16")),
        batch_size=int(params.get("batch_size", 1)),
        seq_len=int(params.get("seq_len", 512 if isinstance(spec, EncoderSpec) else 2048)),
        gradient_checkpointing=bool(params.get("gradient_checkpointing", False)),
        finetune=str(params.get("finetune", "full")),
        lora_rank=int(params.get("lora_rank") or 16),
        lora_targets=targets or DEFAULT_LORA_TARGETS,
        attention=str(params.get("attention", "sdpa")),
        optimizer=str(params.get("optimizer", "adamw" if not isinstance(spec, CnnSpec) else "sgd")),
        sharding=str(params.get("sharding", "none")),
        gpu_count=int(params.get("gpu_count", 1)),
        global_batch=int(params.get("global_batch", 0)),
        optimizer_impl=str(params.get("optimizer_impl") or "fused"),
        loop=str(params.get("loop") or "loss_only"),
        mixed_precision=str(params.get("mixed_precision") or "autocast"),
    )


# --------------------------------------------------------------------------------------------
# Result
# --------------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class MemoryEstimate:
    """Per-GPU memory. ``components`` are the terms summed at the peak phase (bytes);
    ``persistent`` the terms alive for the whole step."""

    components: dict[str, int]
    persistent: dict[str, int]
    peak_phase: str
    peak_allocated_bytes: int
    peak_allocated_band: Band
    reserved_bytes: int
    cuda_context_bytes: int
    nccl_bytes: int
    device_memory_needed_bytes: int
    device_memory_band: Band
    assumptions: tuple[str, ...] = ()
    phases: dict[str, int] = field(default_factory=dict)
    upper_scale: float = 1.0
    """Device memory at the band's upper end (:attr:`fit_bytes`) = ``upper_scale x peak +
    upper_fixed``."""
    upper_fixed: float = 0.0

    @property
    def fit_bytes(self) -> float:
        """Device memory the fit decision uses: the upper end of the device-memory band, i.e. the
        peak at its band's upper end (its 90th percentile: the dominant uncertainty, the one a
        configuration's OOM depends on) with the allocator slack, CUDA context and NCCL buffers at
        their central values (issue 25: stacking every term's extreme put the band's top far
        beyond the 90th percentile of the sum, and answered false OOMs for runs that ran)."""
        return self.device_memory_band.high

    def fits_with_peak(self, peak_allocated_bytes: float, usable_memory_bytes: int) -> bool:
        """The fit decision for the same configuration with another peak (a cheap what-if)."""
        return self.upper_scale * peak_allocated_bytes + self.upper_fixed <= usable_memory_bytes

    def fits(self, usable_memory_bytes: int) -> bool:
        """Fit is decided at the upper end of the band (DESIGN "Estimation"): :attr:`fit_bytes`."""
        return self.device_memory_band.high <= usable_memory_bytes

    def headroom_bytes(self, usable_memory_bytes: int) -> int:
        """Usable memory left at the upper end of the band (negative: short by that much)."""
        return int(usable_memory_bytes - self.device_memory_band.high)
