"""Training and inference memory per GPU, as a breakdown in bytes with a band.

Reference training loop (DESIGN "Estimation"): PyTorch eager, a Hugging Face transformers
model (``LlamaForCausalLM`` and relatives, built from config), ``torch.optim.AdamW(fused=True)``,
``torch.autocast`` around the forward pass (model call *and* loss) for ``amp_*`` precisions,
``loss = model(input_ids, labels=input_ids).loss`` (the output object, and with it the logits,
is not kept alive through backward), ``loss.backward()``, ``optimizer.step()``,
``optimizer.zero_grad(set_to_none=True)``.

Transformers version modelled: **5.x** (:data:`TRANSFORMERS_VERSION_MODELLED`; the H200
ground-truth machine runs 5.17). Since 4.46 the logits are upcast to fp32 inside
``ForCausalLMLoss`` (``logits.float()``) and the labels, not the logits, are shifted, so the
loss costs one fp32 copy of the logits plus the saved ``log_softmax`` output; before 4.46 the
model upcast the logits itself and built a second, shifted fp32 copy. RoPE ``cos``/``sin`` are
produced in the dtype of the embeddings (fp32 under autocast), so under autocast ``q``/``k``
after rotation are fp32 and SDPA's autocast cast makes the bf16 copies it saves.

What ``torch.cuda.max_memory_allocated`` sees at the peak of a steady-state step is the
largest of a few phase sums (see :func:`estimate_training`):

* forward, at the loss: weights + optimizer state (+ gradients when accumulating) + the
  autocast weight-copy cache + every layer's saved activations + the loss buffers
  (bf16/fp16 logits, their fp32 copy and the saved ``log_softmax``: ``10*N*V`` bytes; fp32:
  ``8*N*V``; ``N`` tokens, ``V`` vocabulary);
* backward, at the loss: the saved ``log_softmax``, the ``nll_loss`` gradient and the
  ``log_softmax`` gradient, ``12*N*V`` bytes, with the cache and activations still held;
* backward through the layers: activations and cached weight copies are released layer by
  layer while gradients appear, so the extremes are the top and bottom layer, each with the
  transient buffers of one layer's backward;
* optimizer step: weights + gradients + optimizer state + the implementation's step
  temporaries (none for the reference loop's fused AdamW).

Per-layer saved activations are enumerated tensor by tensor for the Llama layer in
:func:`_decoder_layer_saved` (documented there). Device memory needed = peak allocated plus
allocator fragmentation (:data:`ALLOCATOR_SLACK`), the CUDA context
(:data:`CUDA_CONTEXT_BYTES`) and, on several GPUs, NCCL's buffers (:data:`NCCL_BUFFER_BYTES`),
which live outside PyTorch's caching allocator.

Declared variants (not the reference loop), each a :class:`TrainConfig` field:

* ``loop``: ``keeps_outputs`` holds the output object and its ``B x S x V`` logits (compute
  dtype) in every phase (through backward and the optimizer step, and the previous step's
  during the next forward); ``None`` (not stated) estimates ``loss_only`` and moves the band's
  upper end -- where fits are decided -- by that logits tensor;
* ``optimizer_impl``: ``foreach`` adds one state-dtype copy of the rank's parameter group to the
  optimizer step, ``forloop`` ``previous + 2 x current`` tensors (:func:`_optimizer_bytes`);
* ``sharding``: ``ddp`` (default ``gradient_as_bucket_view=False``: gradient buckets double
  gradient memory, also at world size 1); ``fsdp`` -- FSDP2 ``fully_shard`` on every decoder
  layer and on the root, ``reshard_after_forward`` at its default, as the agent's multi-GPU
  suite runs it: parameters, gradients and optimizer state sharded in the storage dtype;
  layers gathered two at a time (the one computing and the one prefetched); the root's
  embeddings, final norm and LM head gathered from the root's forward to its post-backward
  (FSDP2 does not reshard the root after forward), not during the optimizer step;
  ``mixed_precision='autocast'`` (gathers in the storage dtype, ``torch.autocast`` whose cache
  keeps every bf16 weight cast, unsharded, until autocast exits) or ``'fsdp_policy'``
  (``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``: fp32 shards, bf16 gathers,
  layers computing as pure bf16, no cache); ``zero1``/``zero2``/``zero3`` (DeepSpeed bf16 with
  fp32 master weights in its fused optimizer: 2 + 2 + 12 bytes per parameter before sharding);
  tensor parallelism Megatron-style without sequence parallelism (linear layers, heads, FFN and
  vocabulary split; norms and the residual stream replicated).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from math import trunc  # int() of a float, without int's constructor call (~3x cheaper)
from typing import Any, NamedTuple

from service.core.catalog.models import CnnSpec, DecoderSpec, EncoderSpec, ModelSpec
from service.core.catalog.precision import TRAIN_MODES as _MODES
from service.core.catalog.precision import TRAIN_PRECISIONS, Mode, train_mode
from service.core.errors import InvalidConfiguration
from service.core.estimation.band import Band
from service.core.estimation.frozen import fast_init

__all__ = [
    "ALLOCATOR_SLACK",
    "CUDA_CONTEXT_BYTES",
    "ENGINES",
    "NCCL_BUFFER_BYTES",
    "TRANSFORMERS_VERSION_MODELLED",
    "BatchInferenceConfig",
    "InferenceConfig",
    "MemoryEstimate",
    "TrainConfig",
    "estimate_batch_inference",
    "estimate_cnn_inference",
    "estimate_encoder_inference",
    "estimate_inference",
    "estimate_training",
    "fewest_gpus",
    "largest_context",
    "largest_micro_batch",
    "most_concurrent_sequences",
    "train_config_from_parameters",
    "training_breakdown",
]

MiB = 2**20
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
            if self.sharding in ("zero3", "fsdp") and self.finetune == "qlora":
                raise InvalidConfiguration("sharding", "QLoRA with FSDP/ZeRO-3 is not modelled")
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
        (:func:`~service.core.catalog.precision.train_mode`, tabulated: the estimate reads it often)."""
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


# --------------------------------------------------------------------------------------------
# Decoder training
# --------------------------------------------------------------------------------------------


class _Layer(NamedTuple):
    """One decoder layer's memory terms in bytes for the local micro-batch (a named tuple: built
    twice per estimate, and a tuple is several times cheaper to build than a frozen dataclass)."""

    saved: float  # activations autograd keeps from forward to backward
    weight_copies: float  # autocast bf16/fp16 weight copies saved for backward
    forward_transient: float  # largest extra buffer alive during this layer's forward
    backward_transient: float  # largest extra buffer alive during this layer's backward
    checkpoint: float  # what a checkpointed layer keeps (its input)


class _Dims(NamedTuple):
    """A decoder's shapes as the memory model uses them, per tensor-parallel shard: functions of
    the model and ``tp`` alone, so computed once per (model, tp) by :func:`_dims` rather than per
    estimate. Each is the exact expression the model used inline (``//`` where a width is split
    evenly, ``/`` where a total is), so the figures are bit-for-bit the same."""

    h: float  # hidden size (replicated)
    q: float  # q_dim // tp
    kv: float  # kv_dim // tp
    f: float  # intermediate_size // tp
    a: float  # num_heads // tp
    groups: float  # query heads per KV head
    act_experts: float  # experts_per_token
    layer_matmul: float  # one layer's matmul weights (every expert) / tp
    qkv_weights: float  # hidden x (q + 2 kv) weights of the whole layer
    w_mlp: float  # hidden x ffn / tp
    P: float  # total parameters / tp
    V: float  # vocabulary / tp
    emb: float  # embedding parameters / tp
    linear: float  # every layer's matmul weights / tp
    root: float  # FSDP root unit: embeddings, an untied LM head and the final norm / tp
    unit: float  # FSDP layer unit: one layer's parameters / tp


_DIMS_CACHE: dict[tuple[int, int], tuple[DecoderSpec, _Dims]] = {}


def _dims(m: DecoderSpec, tp: int) -> _Dims:
    """:class:`_Dims` of ``m`` split ``tp`` ways, memoised per (model, tp) like the parameter
    counts (keyed by identity, the spec kept alive beside its entry; bounded)."""
    hit = _DIMS_CACHE.get((id(m), tp))
    if hit is not None and hit[0] is m:
        return hit[1]
    cnt = m._c()
    d = _Dims(
        h=float(m.hidden_size),
        q=float(m.q_dim // tp),
        kv=float(m.kv_dim // tp),
        f=float(m.intermediate_size // tp),
        a=float(m.num_heads // tp),
        groups=float(m.num_heads // m.num_kv_heads),
        act_experts=float(m.experts_per_token),
        layer_matmul=float(cnt.per_layer - cnt.norms) / tp,
        qkv_weights=float(m.hidden_size * (m.q_dim + 2 * m.kv_dim)),
        w_mlp=float(m.hidden_size * m.intermediate_size) / tp,
        P=float(cnt.total) / tp,
        V=float(m.vocab_size) / tp,
        emb=float(cnt.embedding) / tp,
        linear=float(m.num_layers * (cnt.per_layer - cnt.norms)) / tp,
        root=float(
            cnt.embedding + (0 if m.tie_word_embeddings else m.vocab_size * m.hidden_size) + m.hidden_size
        )
        / tp,
        unit=float(cnt.per_layer) / tp,
    )
    if len(_DIMS_CACHE) > 4096:
        _DIMS_CACHE.clear()
    _DIMS_CACHE[(id(m), tp)] = (m, d)
    return d


def _adapter_input(autocast: bool, cb: float, T: float, width: float, shared_available: bool) -> float:
    """Bytes ``lora_A`` keeps for an input of ``width`` features (``T`` tokens, compute bytes
    ``cb``; see :func:`_decoder_layer_saved`)."""
    if autocast:
        return cb * T * width
    if cb == 2:
        return 4.0 * T * width
    return 0.0 if shared_available else 4.0 * T * width


def _group_inputs(
    names: tuple[str, ...],
    width: float,
    tensor: float,
    flows: bool,
    lora: tuple[str, ...],
    qlora: bool,
    autocast: bool,
    cb: float,
    T: float,
    lora_out_bytes: float,
) -> float:
    """Inputs kept by a group of frozen linears fed by one norm output (q/k/v or gate/up) under
    LoRA/QLoRA (module-level, not a closure: :func:`_decoder_layer_saved` runs per estimate)."""
    out = 0.0
    shared_kept = False
    if qlora and flows:  # bnb casts to the compute dtype per module
        if autocast:
            out += len(names) * cb * T * width
        else:
            out += tensor
            shared_kept = True
    for n in names:
        if n in lora:
            if not autocast and cb == 4 and not shared_kept:
                out += tensor
                shared_kept = True
            else:
                out += _adapter_input(autocast, cb, T, width, shared_kept)
            out += lora_out_bytes
    return out


def _decoder_layer_saved(
    m: DecoderSpec, c: TrainConfig, layer0: bool = False, mode: Mode | None = None, d: _Dims | None = None
) -> _Layer:
    """Saved activations of one Llama decoder layer (``T = b*s`` tokens, per tensor-parallel
    shard: ``q = heads*head_dim/tp``, ``kv = kv_heads*head_dim/tp``, ``f = ffn/tp``).

    autocast (amp_*), full fine-tuning, SDPA (flash/cuDNN/efficient: no ``s^2`` term):

    * input RMSNorm: the fp32 layer input ``x`` (``pow`` and ``mul`` save it) and the
      normalised ``y`` (saved by ``weight * y``): ``4Th + 4Th``;
    * q/k/v projections: autocast casts the fp32 norm output to bf16 once per call (only
      parameters are cached), each linear saves its copy: ``3 * 2Th``;
    * SDPA saves bf16 ``q`` (``2Tq``), ``k`` and ``v`` (``2Tkv`` each), the output (``2Tq``,
      shared with ``o_proj``'s input) and an fp32 log-sum-exp per head and token (``4Ta``);
    * post-attention RMSNorm: ``4Th + 4Th``; gate/up inputs: ``2 * 2Th``;
    * SwiGLU MLP: gate output (SiLU input), SiLU output, up output, their product (down
      input): ``4 * 2Tf``.

    fp32/tf32: one norm output tensor shared by q/k/v (``4Th``) and by gate/up, every other
    tensor at 4 bytes. Pure bf16/fp16: the norm saves its fp32 upcast input (``4Th``) and the
    bf16 normalised value (``2Th``); everything else at 2 bytes.

    Eager attention replaces the SDPA terms with: ``q``, repeated ``k`` and ``v`` (``repeat_kv``
    materialises ``q``-sized copies under GQA), the fp32 softmax output (``4*b*a*s^2``), its
    compute-dtype copy for the ``attn @ v`` matmul (autocast or ``.to(query.dtype)``), and the
    contiguous output. Dropout is absent (``attention_dropout = 0`` returns its input). In
    fp32/tf32 with grouped-query attention SDPA has no fused kernel (flash needs 16-bit,
    memory-efficient attention does not take ``enable_gqa``) and runs the math kernel, whose
    memory equals eager attention's -- measured on the H200 with torch 2.11.

    LoRA/QLoRA (frozen base, adapters on ``lora_targets``): a frozen linear keeps no input, a
    frozen norm weight keeps only the norm input. Each adapter's ``lora_A`` keeps its own input:
    PEFT holds adapters in fp32 and casts the input to fp32 (``4T*in`` under pure bf16); under
    autocast that fp32 input is cast back to a fresh bf16 copy (``2T*in``); in fp32 the input
    tensor itself is shared. bitsandbytes 4-bit linears (QLoRA) keep their input in the compute
    dtype whenever a gradient flows (``MatMul4Bit`` saves ``A``).

    ``mode`` and ``d`` are ``c.mode`` and ``_dims(m, c.tensor_parallel)`` when the caller has them.
    """
    if mode is None:
        mode = c.mode
    if d is None:
        d = _dims(m, c.tensor_parallel)
    b, s = c.batch_size, c.seq_len
    T = 1.0 * (b * s)  # float(b * s) without float's constructor call: the same double
    # one unpacking: a named tuple's fields read by name each cost a generic attribute lookup
    h, q, kv, f, a, groups, act_experts, layer_matmul, qkv_weights, w_mlp, *_ = d
    cb, rb = mode.compute, mode.residual
    full = c.finetune == "full"
    lora: tuple[str, ...] = () if full else c.lora_targets
    qlora = c.finetune == "qlora"
    grads_flow = not (layer0 and not full)  # frozen embeddings: layer 0's input needs no grad

    # norm terms: (saved layer input, saved normalised value, the norm output tensor)
    if mode.autocast:
        norm_x, norm_y, norm_out = 4.0 * T * h, 4.0 * T * h, 0.0
    elif rb == 4:
        norm_x, norm_y, norm_out = 4.0 * T * h, 4.0 * T * h, 4.0 * T * h
    else:
        norm_x, norm_y, norm_out = 4.0 * T * h, 2.0 * T * h, 2.0 * T * h
    lora_out_bytes = (cb if mode.autocast else 4.0) * T * c.lora_rank

    saved = 0.0
    if grads_flow:
        saved += norm_x + (norm_y if full else 0.0)
    if full:
        saved += 3 * cb * T * h if mode.autocast else norm_out
    else:
        saved += _group_inputs(
            ("q_proj", "k_proj", "v_proj"),
            h,
            norm_out,
            grads_flow,
            lora,
            qlora,
            mode.autocast,
            cb,
            T,
            lora_out_bytes,
        )
    # --- attention core
    lse = 4.0 * T * a
    math_kernel = c.attention == "eager" or (cb == 4 and groups > 1)
    if math_kernel:
        s2 = float(b) * a * float(s) * float(s)
        kv_rep = q if groups > 1 else kv
        core = cb * T * q + 2 * cb * T * kv_rep + 4.0 * s2 + (cb * s2 if cb != 4 else 0.0) + cb * T * q
        fwd_core_transient = (2 * cb + 4.0 + 4.0) * s2 + 4.0 * b * float(s) * float(s)
        bwd_core_transient = (cb + 4.0 + 4.0) * s2
    else:
        core = 2 * cb * T * q + 2 * cb * T * kv + lse
        fwd_core_transient = 4.0 * T * (q + kv) if mode.autocast else 0.0
        # flash backward: dq, dk, dv (k/v expanded to q heads under GQA) + fp32 dq accumulator
        bwd_core_transient = cb * T * q * 3 + 4.0 * T * q
    saved += core
    if "o_proj" in lora:  # attention output is saved by SDPA already (shared in fp32)
        saved += _adapter_input(mode.autocast, cb, T, q, True) + lora_out_bytes
    # --- post-attention RMSNorm
    saved += norm_x + (norm_y if full else 0.0)
    # --- MLP
    if full:
        saved += 2 * cb * T * h if mode.autocast else norm_out
    else:  # the attention adapters give the residual a gradient, also in layer 0
        saved += _group_inputs(
            ("gate_proj", "up_proj"), h, norm_out, True, lora, qlora, mode.autocast, cb, T, lora_out_bytes
        )
    mlp = cb * T * f * 3.0  # gate out (SiLU input), SiLU out, up out
    if full or qlora:
        mlp += cb * T * f  # product = down input
    if "down_proj" in lora:
        mlp += (
            _adapter_input(mode.autocast, cb, T, f, full or qlora)
            if not (cb == 4 and not mode.autocast)
            else (0.0 if (full or qlora) else cb * T * f)
        ) + lora_out_bytes
    moe = m.num_experts > 1
    if moe:
        # each token's hidden state goes through experts_per_token experts; router logits fp32
        mlp = mlp * act_experts + 4.0 * T * m.num_experts + cb * T * h * act_experts
    saved += mlp

    # --- autocast weight copies saved for backward (bf16 copy of every matmul weight)
    weight_copies = 0.0
    if mode.autocast and not qlora:
        # every expert is cast (with many tokens every expert receives some)
        weight_copies = cb * layer_matmul
        if layer0 and not full:  # q/k/v base see an input without grad: nothing saved
            weight_copies -= cb * qkv_weights / c.tensor_parallel

    mlp_fwd = cb * T * f * (2.0 if not moe else 2.0 * act_experts)
    forward_transient = max(fwd_core_transient, mlp_fwd)
    wgrad = (cb + mode.grad) * w_mlp if full else 0.0
    mlp_bwd = 3.0 * cb * T * f + wgrad
    if qlora:
        mlp_bwd += 2.0 * w_mlp  # dequantised weight for the input gradient
    backward_transient = max(bwd_core_transient, mlp_bwd) + 2.0 * cb * T * h
    # (saved, weight_copies, forward_transient, backward_transient, checkpoint); tuple.__new__
    # skips the named tuple's Python-level __new__
    return tuple.__new__(_Layer, (saved, weight_copies, forward_transient, backward_transient, rb * T * h))


def _layer0(
    m: DecoderSpec, c: TrainConfig, top: _Layer, mode: Mode | None = None, d: _Dims | None = None
) -> _Layer:
    """Layer 0 under LoRA/QLoRA, from a later layer: the frozen embeddings give its input no
    gradient, so its input norm keeps nothing, its frozen q/k/v keep neither input nor weight
    copy (QLoRA: no 4-bit input copies for q/k/v either). Equals
    ``_decoder_layer_saved(m, c, layer0=True)``; computed as a difference for speed."""
    if mode is None:
        mode = c.mode
    tp = c.tensor_parallel
    T = 1.0 * (c.batch_size * c.seq_len)  # as float(...), cheaper
    h = 1.0 * m.hidden_size
    saved, copies, forward_transient, backward_transient, checkpoint = top
    saved -= 4.0 * T * h  # input RMSNorm's saved fp32 input
    if c.finetune == "qlora":
        saved -= 3 * mode.compute * T * h if mode.autocast else (2.0 * T * h if mode.compute == 2 else 0.0)
    if copies:
        copies -= mode.compute * (d if d is not None else _dims(m, tp)).qkv_weights / tp
    return tuple.__new__(_Layer, (saved, copies, forward_transient, backward_transient, checkpoint))


def _lora_params(m: DecoderSpec, c: TrainConfig) -> int:
    """Adapter parameters: ``r * (in + out)`` per target module per layer (experts each)."""
    shapes = m.linear_shapes()
    per_layer = sum(c.lora_rank * (shapes[t][0] + shapes[t][1]) * shapes[t][2] for t in c.lora_targets)
    return per_layer * m.num_layers


def _optimizer_bytes(
    c: TrainConfig,
    trainable: float,
    state_bytes: float,
    largest: float,
    shapes: list[tuple[int, int]] | None = None,
    forloop_elements: float | None = None,
) -> tuple[float, float]:
    """(persistent state bytes, transient bytes during ``step()``), per rank.

    ``trainable`` and ``largest`` are the rank's trainable elements and its largest trainable
    tensor; ``forloop_elements`` the largest ``previous + 2 x current`` tensor sizes in
    parameter registration order (default ``3 x largest``, an upper bound).

    AdamW (``torch/optim/adamw.py``, torch 2.x) keeps two states (``exp_avg``,
    ``exp_avg_sq``) in the parameter dtype. Its step temporaries depend on the implementation
    (:attr:`TrainConfig.optimizer_impl`):

    * ``fused`` (``_fused_adamw_``): one kernel per tensor list, nothing materialised;
    * ``foreach`` (``_multi_tensor_adam``, the default of ``torch.optim.AdamW(params)`` on CUDA):
      per parameter group and (device, dtype), ``exp_avg_sq_sqrt = _foreach_sqrt(exp_avg_sqs)``
      materialises one state-dtype copy of the whole group; the bias corrections are Python
      floats, the division, ``+ eps`` and ``addcdiv`` work in place on that list. With one
      parameter group (``AdamW(model.parameters())``) that is one copy of every trainable
      parameter on the rank (an FSDP2 rank's DTensor shards, whose foreach ops run on the local
      shards);
    * ``forloop`` (``_single_tensor_adam``): per tensor, ``denom = (exp_avg_sq.sqrt() /
      bias_correction2_sqrt).add_(eps)`` holds the ``sqrt`` result and the quotient at once
      while the previous tensor's ``denom`` is still bound: ``previous + 2 x current``.

    SGD with momentum (no Nesterov): the momentum buffer is updated in place by every
    implementation, no temporaries. Adafactor (transformers, ``beta1=None``): factored second
    moment, row + column vectors in fp32 for matrices, a full fp32 vector otherwise; the update
    needs one fp32 temporary the size of the largest parameter. 8-bit AdamW (bitsandbytes): two
    uint8 states plus an fp32 absmax per block of 256, updated by its own fused kernel.
    """
    if c.optimizer == "adamw":
        state = 2.0 * trainable * state_bytes
        if c.optimizer_impl == "foreach":
            temp = trainable * state_bytes
        elif c.optimizer_impl == "forloop":
            temp = (forloop_elements if forloop_elements is not None else 3.0 * largest) * state_bytes
        else:
            temp = 0.0
    elif c.optimizer == "sgd":
        state = 1.0 * trainable * state_bytes
        temp = 0.0
    elif c.optimizer == "adamw_8bit":
        state = 2.0 * trainable * (1.0 + 4.0 / 256)
        temp = 0.0
    else:  # adafactor
        if shapes:
            state = 4.0 * sum(float(r + k) for r, k in shapes)
            state += 4.0 * max(0, trainable - sum(r * k for r, k in shapes))
        else:
            state = 4.0 * 2.0 * math.sqrt(float(trainable)) * 64
        temp = 4.0 * 2.0 * largest
    return state, temp


def _forloop_window(sizes: list[float]) -> float:
    """``max(previous + 2 x current)`` over tensors in registration order (elements)."""
    best = 0.0
    prev = 0.0
    for x in sizes:
        best = max(best, prev + 2.0 * x)
        prev = x
    return best


class _Trainables(NamedTuple):
    """What the optimizer sees of a decoder's trainable tensors, before sharding (elements)."""

    largest: float  # the largest trainable tensor
    window: float  # the for-loop window (:func:`_forloop_window`)
    adapters: int  # LoRA adapter parameters (:func:`_lora_params`; 0 for full training)
    targets: str  # the LoRA targets, sorted and comma-joined, as the notes name them
    notes: dict[int, str]  # the LoRA note by tensor_parallel (:func:`_lora_note`), filled as met


_ORDER_CACHE: dict[tuple[int, str, tuple[str, ...], int], tuple[DecoderSpec, _Trainables]] = {}


def _decoder_trainables(m: DecoderSpec, c: TrainConfig) -> _Trainables:
    """:class:`_Trainables` of ``m`` under ``c``'s fine-tuning method, LoRA targets and rank:
    functions of the model and those three alone, memoised per model (bounded)."""
    full = c.finetune == "full"
    key = (id(m), "full" if full else "lora", c.lora_targets, c.lora_rank)
    hit = _ORDER_CACHE.get(key)
    if hit is None or hit[0] is not m:
        if len(_ORDER_CACHE) > 4096:
            _ORDER_CACHE.clear()
        largest, window = _parameter_order(m, c)
        hit = _ORDER_CACHE[key] = (
            m,
            _Trainables(
                largest, window, 0 if full else _lora_params(m, c), ",".join(sorted(c.lora_targets)), {}
            ),
        )
    return hit[1]


def _lora_note(order: _Trainables, rank: int, tp: int, adapters: float) -> str:
    """The LoRA note for ``adapters = order.adapters / tp``, kept in ``order.notes``: a function
    of the model, targets, rank and ``tp`` alone (formatting ``,.0f`` costs more than a lookup)."""
    note = order.notes[tp] = (
        f"LoRA rank {rank} on {order.targets}: {adapters:,.0f} trainable parameters (fp32 adapters)"
    )
    return note


def _parameter_order(m: DecoderSpec, c: TrainConfig) -> tuple[float, float]:
    """(largest trainable tensor, for-loop window) in elements per rank, from the Hugging Face
    registration order: embeddings; per layer q, k, v, o, gate, up, down (experts each, router),
    two norms; final norm; LM head. LoRA: ``lora_A`` (``r x in``) then ``lora_B``
    (``out x r``) per targeted module."""
    shapes = m.linear_shapes()
    h = float(m.hidden_size)
    if c.finetune == "full":
        layer = [float(i * o) for i, o, k in shapes.values() for _ in range(k)] + [h, h]
        head = [h] + ([] if m.tie_word_embeddings else [float(m.vocab_size) * h])
        order = [float(m._c().embedding), *layer, *layer[:1], *head]
    else:
        layer = []
        for name, (i, o, k) in shapes.items():
            if name in c.lora_targets:
                layer += [float(c.lora_rank * i), float(c.lora_rank * o)] * k
        order = layer + layer[:2] if layer else [0.0]
    return max(order), _forloop_window(order)


# --------------------------------------------------------------------------------------------
# FSDP2 layout
# --------------------------------------------------------------------------------------------

FSDP_LIVE_UNITS = 2
"""Decoder layers whose parameters FSDP2 holds unsharded at once inside forward or backward:
the one computing and the one prefetched (implicit forward prefetch, default explicit backward
prefetch of one unit)."""

_FSDP_NOTE = (
    "FSDP2 as the agent's multi-GPU suite runs it: fully_shard per decoder layer and on the "
    "root, reshard_after_forward default (layers reshard, the root's embeddings and LM head "
    "stay gathered from forward to backward); storage-dtype shards and gathers"
)
_FSDP_NOTE_AUTOCAST = (
    _FSDP_NOTE + " under torch.autocast, whose cache keeps every bf16 weight cast until "
    "autocast exits (not sharded)"
)
_FSDP_NOTE_POLICY = _FSDP_NOTE.removesuffix("storage-dtype shards and gathers") + (
    "MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): fp32 shards, bf16 gathers, no autocast"
)
_ADAMW_NOTES = {
    "fused": "AdamW fused: no step temporaries",
    "foreach": "AdamW foreach: one state-dtype copy of the parameter group during step() (_foreach_sqrt)",
    "forloop": "AdamW forloop: sqrt and quotient of one tensor during step(), plus the previous denominator",
}


class _Stage(NamedTuple):
    """One pipeline stage (1F1B): its layers, the micro-batches whose activations it holds at
    once, and whether it holds the embeddings (first) and the final norm, LM head and loss (last)."""

    layers: int
    in_flight: float
    first: bool
    last: bool
    name: str


def _pipeline_stages(m: DecoderSpec, c: TrainConfig) -> tuple[_Stage, _Stage]:
    """The two stages whose memory can peak under 1F1B: the first (``min(pp, micro-batches)``
    micro-batches in flight, the embeddings) and the last (one micro-batch in flight, the LM head
    and the loss buffers). Layers split evenly, the larger share on both (``ceil(L / pp)``)."""
    pp = c.pipeline_parallel
    layers = -(-m.num_layers // pp)
    in_flight = float(min(pp, c.accumulation_steps))
    return (
        _Stage(layers, in_flight, True, False, f"first of {pp} pipeline stages"),
        _Stage(layers, 1.0, False, True, f"last of {pp} pipeline stages"),
    )


def _training_pipeline(m: DecoderSpec, c: TrainConfig) -> MemoryEstimate:
    """Pipeline parallelism (1F1B): the larger of the first and the last stage's peaks."""
    first, last = (_training_decoder(m, c, st) for st in _pipeline_stages(m, c))
    return first if first.peak_allocated_bytes >= last.peak_allocated_bytes else last


def _training_decoder(m: DecoderSpec, c: TrainConfig, stage: _Stage | None = None) -> MemoryEstimate:
    mode = c.mode
    tp = c.tensor_parallel
    dp = c.data_parallel
    sharding = c.sharding
    notes: list[str] = [_NOTE_STACK]
    d = _dims(m, tp)  # the model's shapes per shard, computed once per (model, tp)
    h, *_, P, V, emb, linear, root, unit = d  # one unpacking (see _decoder_layer_saved)
    T = 1.0 * (c.batch_size * c.seq_len)  # as float(...), without float's constructor call
    L = m.num_layers
    in_flight = 1.0
    has_head = first_stage = True
    if stage is not None:  # a pipeline stage: its layers; embeddings first, final norm + LM head last
        L, in_flight, first_stage, has_head = stage.layers, stage.in_flight, stage.first, stage.last
        linear = d.linear * L / m.num_layers
        emb = emb if first_stage else 0.0
        P = L * unit + emb + ((V * h + h / tp) if has_head else 0.0)
        notes.append(
            f"pipeline parallelism, 1F1B: {stage.name}, {L} layers, activations of {in_flight:g} "
            "micro-batch(es) in flight"
        )
    cb = mode.compute
    full = c.finetune == "full"
    fsdp = sharding == "fsdp"
    policy = fsdp and c.mixed_precision == "fsdp_policy"
    shards_grads = sharding in ("zero2", "zero3", "fsdp")
    zero = sharding in ("zero1", "zero2", "zero3")

    # ---------------- parameters, gradients, optimizer state (per rank)
    lm_head_w = V * h  # multiplied whether tied or not
    shapes2d: list[tuple[int, int]] | None = None  # only Adafactor reads them
    if c.optimizer == "adafactor":  # factored second moments need the matrix shapes
        shapes2d = []
        for i, o, k in m.linear_shapes().values():
            shapes2d.extend([(i, o)] * (k * L))
        shapes2d.append((m.vocab_size, m.hidden_size))
        if not m.tie_word_embeddings:
            shapes2d.append((m.vocab_size, m.hidden_size))
    # optimizer temporaries see the rank's tensors: FSDP/ZeRO-3 shards, tensor-parallel slices
    opt_shard = 1.0 * (tp * (dp if sharding in ("fsdp", "zero3") else 1))
    order = _decoder_trainables(m, c)
    largest, window, n_adapters, _, lora_notes = order  # one unpacking (see _decoder_layer_saved)
    largest, window = largest / opt_shard, window / opt_shard

    if full:
        if zero:
            # DeepSpeed bf16: 16-bit params and grads, fp32 master + 2 states in the optimizer
            w = 2.0 * P
            g = 2.0 * P
            opt_state = 12.0 * P if c.optimizer == "adamw" else 8.0 * P
            opt_temp = 0.0
            notes.append(
                "DeepSpeed ZeRO variant: bf16 parameters/gradients, fp32 master weights "
                "and AdamW states in DeepSpeed's fused optimizer"
            )
        else:
            w = mode.param * P
            g = mode.grad * P
            opt_state, opt_temp = _optimizer_bytes(c, P, mode.state, largest, shapes2d, window)
        lora_w = 0.0
    else:
        adapters = 1.0 * n_adapters / tp
        if c.finetune == "qlora":
            other = P - linear
            w = linear * NF4_BYTES_PER_PARAM + other * mode.param
            notes.append(
                "QLoRA: NF4 (double-quantised) decoder linears; embeddings, norms and lm_head unquantised"
            )
        else:
            w = mode.param * P
        lora_w = 4.0 * adapters  # PEFT keeps adapters in fp32 (autocast_adapter_dtype=True)
        g = 4.0 * adapters
        opt_state, opt_temp = _optimizer_bytes(c, adapters, 4, largest, None, window)
        notes.append(lora_notes.get(tp) or _lora_note(order, c.lora_rank, tp, adapters))
    if c.optimizer == "adamw" and not zero:
        notes.append(_ADAMW_NOTES[c.optimizer_impl])

    # sharding of persistent state over data-parallel ranks
    gather_buffer = 0.0  # alive in every phase (ZeRO buckets and live parameters)
    ddp_buckets = 0.0
    fsdp_root = fsdp_units = fsdp_unit_grads = 0.0  # FSDP2: forward/backward only
    if dp > 1 or sharding != "none":
        if sharding == "ddp" or (sharding == "none" and dp > 1):
            ddp_buckets = DDP_BUCKET_FRACTION * g
        elif sharding == "zero1":
            opt_state /= dp
            gather_buffer = min(float(ZERO_BUCKET_ELEMENTS), P) * 2.0
        elif sharding == "zero2":
            opt_state /= dp
            g /= dp
            gather_buffer = min(float(ZERO_BUCKET_ELEMENTS), P) * 2.0 * 2
        elif sharding == "zero3":
            opt_state /= dp
            g /= dp
            w /= dp
            gather_buffer = min(float(ZERO3_MAX_LIVE_PARAMETERS), P) * 2.0
        elif fsdp:
            # FSDP2 fully_shard on every decoder layer and on the root, reshard_after_forward
            # left at its default: layers reshard after forward, the root does not (FSDP2 keeps
            # the root's embeddings, final norm and LM head gathered from its forward until its
            # post-backward). Shards keep the storage dtype (fp32 under amp_*); the gathered
            # copies are in the storage dtype under autocast, in bf16 under the policy.
            w /= dp
            g /= dp
            opt_state /= dp
            opt_temp /= dp  # foreach/for-loop temporaries follow the rank's DTensor shards
            gathered = 2.0 if policy else float(mode.param)
            # root: embeddings, an untied LM head and the final norm; unit: one decoder layer
            fsdp_root = gathered * root
            fsdp_units = FSDP_LIVE_UNITS * gathered * unit if full or c.finetune == "lora" else 0.0
            # backward of a unit: its unsharded gradients (gathered dtype) and the fp32
            # reduce-scatter input (a cast copy under the policy, the gradients themselves
            # otherwise)
            fsdp_unit_grads = (gathered + (4.0 if policy else 0.0)) * unit if full else 0.0
            notes.append(
                _FSDP_NOTE_POLICY if policy else _FSDP_NOTE_AUTOCAST if mode.autocast else _FSDP_NOTE
            )
    persistent = {
        "parameters": trunc(w),
        "lora_adapters": trunc(lora_w),
        "optimizer_states": trunc(opt_state),
    }

    # ---------------- activations
    top = _decoder_layer_saved(m, c, False, mode, d)
    bottom = top if full else _layer0(m, c, top, mode, d)
    no_cache = sharding == "zero3" or not mode.autocast
    t_saved, t_copies, t_fwd, t_bwd, t_ckpt = top
    b_saved, b_copies, _, b_bwd, _ = bottom
    if not first_stage:  # no embedding below: every layer's input carries a gradient
        b_saved, b_copies, b_bwd = t_saved, t_copies, t_bwd
    copies_all = 0.0 if no_cache else t_copies * (L - 1) + b_copies

    acts_all = t_saved * (L - 1) + b_saved
    if in_flight != 1.0:  # 1F1B: each micro-batch in flight keeps its activations and casts
        acts_all *= in_flight
        copies_all *= in_flight

    # final norm + lm_head input + loss
    if mode.autocast:
        head_saved = (4.0 * T * h + (4.0 * T * h if full else 0.0)) + (cb * T * h if full else 0.0)
        head_copy = 0.0 if no_cache else cb * lm_head_w
    elif mode.residual == 4:
        head_saved = 4.0 * T * h * (3.0 if full else 1.0)
        head_copy = 0.0
    else:
        head_saved = 4.0 * T * h + (2.0 * T * h + 2.0 * T * h if full else 0.0)
        head_copy = 0.0
    NV = T * V
    logits_bytes = cb * NV
    loss_fwd = (logits_bytes + 8.0 * NV) if cb != 4 else 8.0 * NV
    loss_bwd = 12.0 * NV
    lm_head_grad = (mode.grad * lm_head_w if full and not m.tie_word_embeddings else 0.0) / (
        dp if shards_grads else 1
    )
    if not has_head:  # a pipeline stage before the last: no final norm, LM head or loss
        head_saved = head_copy = loss_fwd = loss_bwd = lm_head_grad = logits_bytes = 0.0
    misc = 16.0 * T + 32 * MiB  # int64 input ids + labels; cuBLAS workspace
    notes.append(
        f"loss buffers {loss_bwd / GiB:.2f} GiB at the start of backward (fp32 logits "
        "upcast inside ForCausalLMLoss)"
    )
    # keeps_outputs: the output object's logits (B x S x V in the compute dtype) are alive in
    # every phase -- this step's through backward and the optimizer step, the previous step's
    # during the forward that replaces them.
    held = logits_bytes

    g_full = g
    g_emb = (mode.grad * emb if full else 0.0) / (dp if shards_grads else 1)
    g_fwd = g_full if c.accumulation_steps > 1 else 0.0
    base = w + lora_w + opt_state + misc + gather_buffer + ddp_buckets
    fb = base + fsdp_root  # forward/backward: the FSDP root stays gathered

    # each branch builds its phases as one literal (presized; item stores resize at the sixth)
    step = base + g_full + opt_temp  # the optimizer step
    phases: dict[str, float]
    if c.gradient_checkpointing:
        ckpts = t_ckpt * L * in_flight
        # forward: autocast caches the casts of trainable weights until it exits (frozen LoRA
        # bases are cast per call and, checkpointed, not kept)
        cached = (copies_all + head_copy) if full else 0.0
        layer_work = t_saved + t_copies * (0 if no_cache else 1) + t_bwd + fsdp_units + fsdp_unit_grads
        phases = {
            "forward-loss": fb + g_fwd + cached + ckpts + head_saved + loss_fwd,
            "backward-loss": fb + g_fwd + ckpts + head_saved + loss_bwd,
            "backward-top-layer": fb + max(g_fwd, lm_head_grad) + ckpts + layer_work,
            "backward-bottom-layer": fb + (g_full - g_emb) + t_ckpt + layer_work,
            "optimizer-step": step,
        }
        notes.append("gradient checkpointing: one saved input per layer, one layer recomputed at a time")
    else:
        phases = {
            "forward-loss": fb + g_fwd + copies_all + head_copy + acts_all + head_saved + loss_fwd,
            "backward-loss": fb + g_fwd + copies_all + head_copy + acts_all + head_saved + loss_bwd,
            "backward-top-layer": (
                fb
                + max(g_fwd, lm_head_grad)
                + copies_all
                + acts_all
                + t_bwd
                + cb * T * h
                + fsdp_units
                + fsdp_unit_grads
            ),
            "backward-bottom-layer": (
                fb + (g_full - g_emb) + b_saved + b_copies + b_bwd + fsdp_units + fsdp_unit_grads
            ),
            # forward transient of one layer with everything below it saved
            "forward-layer": fb + g_fwd + copies_all + acts_all - t_saved + t_fwd + fsdp_units,
            "optimizer-step": step,
        }
    keeps_outputs = c.loop == "keeps_outputs"
    if keeps_outputs:
        phases = {k: v + held for k, v in phases.items()}
        notes.append(
            f"loop keeps_outputs: the output's logits ({held / GiB:.2f} GiB) are held through "
            "backward and the optimizer step until the next forward returns"
        )
    peak_phase = ""
    peak = 0.0
    for phase, value in phases.items():  # the first of equal peaks, as max(phases, key=...) (a loop: cheaper)
        if not peak_phase or value > peak:
            peak_phase, peak = phase, value
    in_fb = peak_phase != "optimizer-step"
    at_bottom = peak_phase == "backward-bottom-layer"
    layer_phase = at_bottom or peak_phase in ("forward-layer", "backward-top-layer")
    all_saved = in_fb and not at_bottom  # every layer's activations are alive at the peak

    components = {
        "parameters": trunc(w),
        "lora_adapters": trunc(lora_w),
        "gradients": trunc(g_full if not in_fb else (g_full - g_emb if at_bottom else g_fwd)),
        "optimizer_states": trunc(opt_state),
        "optimizer_step_temporaries": trunc(0 if in_fb else opt_temp),
        "autocast_weight_copies": trunc(
            copies_all + head_copy
            if all_saved and not (c.gradient_checkpointing and (peak_phase != "forward-loss" or not full))
            else 0
        ),
        "activations": trunc(
            (t_ckpt * L * in_flight if c.gradient_checkpointing else acts_all)
            if all_saved
            else (b_saved if at_bottom else 0)
        ),
        "logits_and_loss": trunc(
            loss_fwd if peak_phase == "forward-loss" else loss_bwd if peak_phase == "backward-loss" else 0
        ),
        "logits_held_by_loop": trunc(held if keeps_outputs else 0),
        "fsdp_gathered_parameters": trunc(
            (fsdp_root if in_fb else 0.0) + (fsdp_units if layer_phase else 0.0)
        ),
        "sharding_buffers": trunc(gather_buffer + ddp_buckets),
        "workspace": trunc(misc),
    }
    components["transient"] = trunc(peak - sum(components.values()))
    upper_extra = 0.0
    if c.loop is None:
        upper_extra = held
        notes.append(
            f"loop not stated: central estimate for a loop that keeps only the loss (HF Trainer); "
            f"the band's upper end adds the {held / GiB:.2f} GiB of logits a loop that keeps the "
            "model output (out = model(**batch)) holds"
        )
    return _finish(
        c, peak, phases, peak_phase, components, persistent, notes, _band_for(c), upper_extra=upper_extra
    )


def _band_for(c: TrainConfig) -> tuple[float, float]:
    """Relative 80 % band (low, high) on peak allocated memory: 80 % of measured peaks should
    fall inside (DESIGN "Estimation"; coverage and median half-width per workload are printed by
    ``benchmarks/validate_estimates.py``).

    Set from the residuals ``measured / predicted - 1`` of the committed H200 results (torch
    2.11, transformers 5.17; in-sample, after the structure was fixed): dense decoders 10th-90th
    percentile -0.4 %..+1.5 % (small models at 512 tokens are under by 2-4 %). Issue 25 scaled
    the issue-19 widths (-1.5 %/+2 % base, +1 % checkpointing, +0.5 % eager / LoRA, +1 % below for
    one-rank DDP/FSDP2) by 0.6, which brings the llm-train band's coverage from 95 % to 84 % of
    the 123 points (target 75-90 %). Held out: a factor chosen on alternate rows covers 87 % and
    70 % of the other half (``benchmarks/validate_estimates.py`` prints it). Multi-GPU runs are
    not measured yet (+3 %/+5 %); QLoRA (bitsandbytes, not measured) +/-8 %; MoE routing
    imbalance looser. BERT-Large: -8.4 %..-0.3 % (the fp32/tf32 points over-predicted by 7-8 %):
    -8 %/+2 %; ResNet-50: -4.5 %..+0.4 %: -4.5 %/+1.5 %.
    """
    lo, hi = 0.009, 0.012
    m = c.model
    if c.gradient_checkpointing:
        lo, hi = lo + 0.006, hi + 0.006
    if c.attention == "eager":
        lo, hi = lo + 0.003, hi + 0.003
    if c.finetune == "lora":
        lo, hi = lo + 0.003, hi + 0.003
    if c.finetune == "qlora":
        lo, hi = 0.08, 0.08
    if isinstance(m, DecoderSpec) and m.is_moe:
        lo, hi = 0.15, 0.20
    if c.sharding not in ("none",):
        lo += 0.006
    if c.gpu_count > 1:
        lo, hi = lo + 0.03, hi + 0.05
    if isinstance(m, EncoderSpec):
        lo, hi = 0.08, 0.02
    if isinstance(m, CnnSpec):
        lo, hi = 0.045, 0.015
    return lo, hi


def _finish(
    c: TrainConfig | None,
    peak: float,
    phases: Mapping[str, float],
    peak_phase: str,
    components: dict[str, int],
    persistent: dict[str, int],
    notes: list[str],
    rel: tuple[float, float],
    multi_gpu: bool | None = None,
    upper_extra: float = 0.0,
) -> MemoryEstimate:
    """Band, device memory and fit inputs from the peak. ``upper_extra`` is memory a common
    variant the caller did not rule out would add: it moves only the band's upper end."""
    multi = multi_gpu if multi_gpu is not None else (c is not None and c.gpu_count > 1)
    lo, hi = rel
    nccl = NCCL_BUFFER_BYTES if multi else 0
    reserved = peak * (1.0 + ALLOCATOR_SLACK)
    need = reserved + CUDA_CONTEXT_BYTES + nccl
    top = peak + upper_extra
    # the band of device memory follows the peak's band; the allocator slack, the CUDA context and
    # NCCL's buffers enter at their central values (their ranges are small beside the peak's and
    # independent of it: stacking every extreme is far beyond a 90th percentile)
    need_low = peak * (1 - lo) * (1 + ALLOCATOR_SLACK) + CUDA_CONTEXT_BYTES + nccl
    need_high = top * (1 + hi) * (1 + ALLOCATOR_SLACK) + CUDA_CONTEXT_BYTES + nccl
    notes.append(_NOTE_CONTEXT)
    return MemoryEstimate(  # positional, in field order (15 keywords are matched by name one by one)
        components,
        persistent,
        peak_phase,
        trunc(peak),  # peak_allocated_bytes
        Band(peak * (1 - lo), peak, top * (1 + hi)),  # peak_allocated_band
        trunc(reserved),  # reserved_bytes
        CUDA_CONTEXT_BYTES,
        nccl,  # nccl_bytes
        trunc(need),  # device_memory_needed_bytes
        Band(need_low, need, need_high),  # device_memory_band
        tuple(notes),  # assumptions
        {k: trunc(v) for k, v in phases.items()},  # phases
        (1 + hi) * (1 + ALLOCATOR_SLACK),  # upper_scale
        upper_extra * (1 + hi) * (1 + ALLOCATOR_SLACK) + CUDA_CONTEXT_BYTES + nccl,  # upper_fixed
    )


# --------------------------------------------------------------------------------------------
# Encoder (BERT) and CNN (ResNet) training
# --------------------------------------------------------------------------------------------


def _training_encoder(m: EncoderSpec, c: TrainConfig) -> MemoryEstimate:
    """BERT (``BertForMaskedLM``) under the reference loop.

    Per layer under autocast (``T = b*s``): q/k/v input casts ``3*2Th``, SDPA ``q,k,v,out``
    ``4*2Th`` (dropout inside the fused kernel keeps only an RNG seed), two dropout masks
    ``2*1Th``, two fp32 LayerNorm inputs ``2*4Th``, intermediate input cast ``2Th``, GELU
    input and output ``2*2Tf`` -> ``26Th + 4Tf``; fp32: ``4`` bytes everywhere (``~44Th+8Tf``).
    The MLM head saves ``~12Th`` and the loss ``4*N*V`` (fp32 log-softmax), with the fp32
    copy of the logits alive while it is computed.
    """
    mode = c.mode
    P = float(m.total_params)
    T = float(c.batch_size * c.seq_len)
    h, f = float(m.hidden_size), float(m.intermediate_size)
    V = float(m.vocab_size)
    cb = mode.compute
    if mode.autocast:
        layer = 26.0 * T * h + 4.0 * T * f
        copies = cb * float(m.matmul_params_per_token)
    elif cb == 4:
        layer = 44.0 * T * h + 8.0 * T * f
        copies = 0.0
    else:
        layer = 24.0 * T * h + 4.0 * T * f
        copies = 0.0
    acts = (
        (mode.residual * T * h * m.num_layers + layer) if c.gradient_checkpointing else layer * m.num_layers
    )
    head = 12.0 * T * h
    NV = T * V
    loss = (cb * NV + 8.0 * NV) if cb != 4 else 8.0 * NV
    w = mode.param * P
    g = mode.grad * P
    opt_state, opt_temp = _optimizer_bytes(c, int(P), mode.state, int(V * h))
    base = w + opt_state + 32 * MiB
    phases = {
        "backward-loss": base + copies + acts + head + 12.0 * NV,
        "forward-loss": base + copies + acts + head + loss,
        "optimizer-step": base + g + opt_temp,
    }
    if c.keeps_outputs:  # the MLM logits held by the loop (see the decoder)
        phases = {k: v + cb * NV for k, v in phases.items()}
    peak_phase = max(phases, key=lambda k: phases[k])
    peak = phases[peak_phase]
    components = {"parameters": int(w), "optimizer_states": int(opt_state)}
    if peak_phase == "optimizer-step":
        components["gradients"] = int(g)
    else:
        components.update(
            autocast_weight_copies=int(copies),
            activations=int(acts + head),
            logits_and_loss=int(phases[peak_phase] - base - copies - acts - head),
        )
    components["workspace"] = int(peak - sum(components.values()))
    persistent = {"parameters": int(w), "optimizer_states": int(opt_state)}
    return _finish(
        c, peak, phases, peak_phase, components, persistent, ["BertForMaskedLM, SDPA attention"], _band_for(c)
    )


def _training_cnn(m: CnnSpec, c: TrainConfig) -> MemoryEstimate:
    """torchvision ResNet under the reference loop (SGD with momentum by default).

    Saved per image: :attr:`CnnSpec.saved_elements_per_image` in the compute dtype (BatchNorm
    runs in the input dtype under autocast, with fp32 statistics), the max-pool indices
    (int64, ``base_width x (image/4)^2``) and the input's cast; at the start of backward one
    gradient pair of the largest activation is added; cuDNN workspaces ~64 MiB.
    """
    mode = c.mode
    P = float(m.total_params)
    side = -(-m.image_size // 4)
    per_image = (
        float(m.saved_elements_per_image) * mode.compute
        + 8.0 * m.base_width * side * side
        + float(m.in_channels * m.image_size * m.image_size) * (mode.compute if mode.autocast else 0)
    )
    acts = per_image * c.batch_size
    if c.gradient_checkpointing:
        acts *= 0.35
    transient = 2.0 * mode.compute * m.largest_activation_elements * c.batch_size
    copies = mode.compute * P if mode.autocast else 0.0
    w = mode.param * P
    g = mode.grad * P
    opt_state, opt_temp = _optimizer_bytes(c, int(P), mode.state, 2048 * 1000)
    workspace = 64.0 * MiB
    base = w + opt_state + workspace
    phases = {
        "backward-start": base + copies + acts + transient,
        "optimizer-step": base + g + opt_temp,
    }
    peak_phase = max(phases, key=lambda k: phases[k])
    peak = phases[peak_phase]
    components = {"parameters": int(w), "optimizer_states": int(opt_state), "workspace": int(workspace)}
    if peak_phase == "optimizer-step":
        components["gradients"] = int(g)
    else:
        components["autocast_weight_copies"] = int(copies)
        components["activations"] = int(peak - base - copies)
    persistent = {"parameters": int(w), "optimizer_states": int(opt_state)}
    return _finish(
        c,
        peak,
        phases,
        peak_phase,
        components,
        persistent,
        ["torchvision ResNet, channels_last, cuDNN"],
        _band_for(c),
    )


def estimate_training(c: TrainConfig) -> MemoryEstimate:
    """Per-GPU training memory for ``c`` (see the module docstring for the loop modelled)."""
    m = c.model
    if isinstance(m, DecoderSpec):
        return _training_decoder(m, c) if c.pipeline_parallel == 1 else _training_pipeline(m, c)
    if isinstance(m, EncoderSpec):
        return _training_encoder(m, c)
    return _training_cnn(m, c)


TRAINING_BREAKDOWN_CACHE_SIZE = 2048
"""Entries :func:`training_breakdown` keeps before it starts over (each holds one breakdown)."""

_BREAKDOWN_CACHE: dict[tuple[Any, ...], tuple[ModelSpec, MemoryEstimate]] = {}


def forget_training_breakdowns() -> None:
    """Empty :func:`training_breakdown`'s memo (``benchmarks/estimate_speed.py`` times an estimate
    of a configuration not seen before with it)."""
    _BREAKDOWN_CACHE.clear()


def training_breakdown(c: TrainConfig) -> MemoryEstimate:
    """:func:`estimate_training`, memoised (bounded) for the estimate path: the breakdown depends
    on the configuration alone, never on the GPU, so ``/v1/compare``, a batch and a repeated
    request over several GPUs compute it once. The key is every :class:`TrainConfig` field, the
    model by identity (the spec is kept beside its entry, so its id cannot be reused while the
    entry lives): an entry is only ever the answer computed for an equal configuration. The
    breakdown returned is shared; like the recommender's shared breakdowns it is read, never
    changed."""
    key = (
        id(c.model),
        c.precision,
        c.batch_size,
        c.seq_len,
        c.gradient_checkpointing,
        c.finetune,
        c.lora_rank,
        c.lora_targets,
        c.attention,
        c.optimizer,
        c.sharding,
        c.gpu_count,
        c.tensor_parallel,
        c.global_batch,
        c.optimizer_impl,
        c.loop,
        c.mixed_precision,
        c.pipeline_parallel,  # the node layout, network and stack do not change memory
    )
    hit = _BREAKDOWN_CACHE.get(key)
    if hit is not None and hit[0] is c.model:
        return hit[1]
    mem = estimate_training(c)
    if len(_BREAKDOWN_CACHE) >= TRAINING_BREAKDOWN_CACHE_SIZE:
        _BREAKDOWN_CACHE.clear()
    _BREAKDOWN_CACHE[key] = (c.model, mem)
    return mem


# --------------------------------------------------------------------------------------------
# Inference
# --------------------------------------------------------------------------------------------

QUANT_METHODS: tuple[str, ...] = ("none", "bnb-int8", "bnb-nf4", "awq", "gptq", "fp8", "int8")
"""Weight formats: ``bnb-*`` (bitsandbytes), ``awq``/``gptq`` (4-bit weight-only), ``fp8``
(FP8 E4M3 weights with per-tensor scales; W8A8 where the GPU has FP8 tensor cores) and ``int8``
(SmoothQuant-style W8A8: int8 weights and activations on the int8 tensor cores)."""

ENGINES: tuple[str, ...] = ("hf-transformers", "vllm", "tensorrt-llm")
"""Serving engines modelled (``service.core.estimation.serving`` describes each class)."""

PREFILL_CHUNK_TOKENS = 8192
"""Tokens a serving engine with chunked prefill (vLLM's default ``max_num_batched_tokens``
for chunked prefill, 8192 on large GPUs) pushes through one forward; ``hf-transformers``
prefills the whole batch at once."""


@dataclass(frozen=True, slots=True)
class InferenceConfig:
    """Serving ``batch_size`` sequences of ``input_len`` prompt + ``output_len`` generated tokens.

    ``precision`` is the compute/activation dtype (``bf16``/``fp16``/``fp32``; ``fp8`` and ``int8``
    mean W8A8 weights in that format); ``quant_method`` the weight format
    (:attr:`weight_format` resolves the two). ``kv_cache_bytes_per_element`` defaults to the
    compute dtype (2), 1 for an fp8/int8 KV cache. ``engine``: ``hf-transformers`` (``generate``
    with a dynamic cache), ``vllm`` or ``tensorrt-llm`` (continuous batching, paged cache
    preallocated by the engine). ``tensor_parallel`` GPUs hold one copy of the model; ``replicas``
    copies serve side by side (data parallel), so the job uses ``tensor_parallel x replicas`` GPUs.
    Memory is per GPU of one replica.
    """

    model: DecoderSpec
    precision: str = "bf16"
    quant_method: str = "none"
    batch_size: int = 1
    input_len: int = 1024
    output_len: int = 256
    engine: str = "hf-transformers"
    tensor_parallel: int = 1
    kv_cache_bytes_per_element: float = 0.0
    gpu_memory_utilization: float = 0.9
    replicas: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.model, DecoderSpec):
            raise InvalidConfiguration("model", "inference memory is modelled for decoder-only models")
        if self.engine not in ENGINES:
            raise InvalidConfiguration("engine", f"engine must be one of {', '.join(ENGINES)}")
        if self.tensor_parallel < 1 or self.replicas < 1:
            raise InvalidConfiguration("tensor_parallel", "tensor_parallel and replicas must be >= 1")
        if self.precision not in ("bf16", "fp16", "fp32", "amp_bf16", "amp_fp16", "fp8", "int8", "int4"):
            raise InvalidConfiguration("precision", f"unknown precision {self.precision!r}")
        if self.quant_method not in QUANT_METHODS:
            raise InvalidConfiguration(
                "quant_method", f"quant_method must be one of {', '.join(QUANT_METHODS)}"
            )
        if self.batch_size < 1 or self.input_len < 1 or self.output_len < 0:
            raise InvalidConfiguration("batch_size", "batch_size and input_len must be >= 1, output_len >= 0")
        if self.model.num_kv_heads % self.tensor_parallel:
            raise InvalidConfiguration("tensor_parallel", "tensor_parallel must divide the KV heads")

    @property
    def compute_bytes(self) -> int:
        return 4 if self.precision == "fp32" else 2

    @property
    def kv_bytes(self) -> float:
        return self.kv_cache_bytes_per_element or float(self.compute_bytes)

    @property
    def weight_format(self) -> str:
        """The weight format: ``quant_method``, or ``fp8``/``int8`` for those precisions with
        ``quant_method`` ``none`` (W8A8 weights in the precision's format)."""
        if self.quant_method == "none" and self.precision in ("fp8", "int8"):
            return self.precision
        return self.quant_method

    @property
    def gpu_count(self) -> int:
        return self.tensor_parallel * self.replicas


def weight_bytes(m: DecoderSpec, quant_method: str, compute_bytes: int = 2) -> float:
    """Weights by format. Quantisers leave embeddings, norms and the LM head in 16-bit and
    quantise the decoder linears: bnb-int8 :data:`INT8_BYTES_PER_PARAM`, bnb-nf4
    :data:`NF4_BYTES_PER_PARAM`, AWQ/GPTQ :data:`INT4_GROUP_BYTES_PER_PARAM`, fp8 1 byte +
    per-tensor scales."""
    linear = float(m.num_layers * (m.params_per_layer - m.norm_params_per_layer))
    other = float(m.total_params) - linear
    per = {
        "none": float(compute_bytes),
        "bnb-int8": INT8_BYTES_PER_PARAM,
        "bnb-nf4": NF4_BYTES_PER_PARAM,
        "awq": INT4_GROUP_BYTES_PER_PARAM,
        "gptq": INT4_GROUP_BYTES_PER_PARAM,
        "fp8": 1.0,
        "int8": INT8_BYTES_PER_PARAM,
    }[quant_method]
    return linear * per + other * (compute_bytes if quant_method == "none" else 2.0)


def kv_cache_bytes(
    m: DecoderSpec, tokens: float, bytes_per_element: float = 2.0, tensor_parallel: int = 1
) -> float:
    """GQA-aware KV cache: ``2 (K, V) * layers * kv_heads * head_dim * bytes * tokens``,
    split over tensor-parallel ranks by KV head. Sliding-window models cap ``tokens`` per
    sequence at the window (the caller passes per-sequence tokens through
    :func:`estimate_inference`)."""
    return m.kv_cache_bytes_per_token(bytes_per_element) * tokens / tensor_parallel


def estimate_inference(c: InferenceConfig) -> MemoryEstimate:
    """Per-GPU serving memory, the larger of two moments:

    * **prefill**: weights + the prompt's KV cache + one layer's no-grad working set for
      ``T = batch * input_len`` tokens -- the residual and norm buffers (``2*cb*Th`` plus the
      fp32 upcast ``8Th``), or q/k/v with their RoPE copies (``cb*T*(3q + 4kv)``), or the
      SwiGLU buffers alive at the product (SiLU output, up output, product: ``3*cb*Tf``),
      whichever is largest -- + last-token logits in fp32 (``logits_to_keep=1``);
    * **end of decode**: weights + the KV cache at ``input_len + output_len`` for every
      sequence + one layer's cache copied by ``torch.cat`` (transformers' ``DynamicCache``).

    ``amp_*`` serving keeps fp32 weights; autocast's casts of them live one layer at a time
    (no weight cache outside autograd -- seen on the H200 with ResNet-50 inference).
    Other engines (``vllm``) prefill in chunks of :data:`PREFILL_CHUNK_TOKENS` and
    preallocate ``gpu_memory_utilization`` of the device; the figure here is what the
    sequences need, not what the engine grabs.
    """
    m = c.model
    tp = c.tensor_parallel
    amp = c.precision.startswith("amp_")
    w = weight_bytes(m, c.weight_format, 4 if amp else c.compute_bytes) / tp
    cache = 0.0
    if amp and c.weight_format == "none":  # no cache outside autograd: one layer's casts at a time
        cache = 2.0 * float(m.params_per_layer - m.norm_params_per_layer) / tp
    per_seq = c.input_len + c.output_len
    prompt = c.input_len
    if m.sliding_window:
        per_seq = min(per_seq, m.sliding_window)
        prompt = min(prompt, m.sliding_window)
    kv = kv_cache_bytes(m, float(c.batch_size * per_seq), c.kv_bytes, tp)
    kv_prompt = kv_cache_bytes(m, float(c.batch_size * prompt), c.kv_bytes, tp)
    T = float(c.batch_size * c.input_len)
    if c.engine != "hf-transformers":
        T = min(T, float(PREFILL_CHUNK_TOKENS))  # chunked prefill bounds the working set
    h = float(m.hidden_size)
    f = float(m.intermediate_size) / tp
    q, kvd = float(m.q_dim) / tp, float(m.kv_dim) / tp
    cb = float(c.compute_bytes)
    resid = cb * T * h + (4.0 if amp else cb) * T * h
    prefill = resid + max(8.0 * T * h, cb * T * (3 * q + 4 * kvd), 3.0 * cb * T * f * m.experts_per_token)
    logits = 4.0 * c.batch_size * m.vocab_size * 2 + cb * c.batch_size * m.vocab_size
    dequant = 2.0 * float(m.hidden_size * m.intermediate_size) if c.quant_method.startswith("bnb") else 0.0
    cat_copy = 2.0 * kv / m.num_layers if c.engine == "hf-transformers" else 0.0
    workspace = 32.0 * MiB
    phases = {
        "prefill": w + cache + kv_prompt + prefill + logits + dequant + workspace,
        "decode-end": w + cache + kv + cat_copy + logits + dequant + workspace,
    }
    peak_phase = max(phases, key=lambda k: phases[k])
    peak = phases[peak_phase]
    components = {
        "weights": int(w),
        "autocast_weight_copies": int(cache),
        "kv_cache": int(kv_prompt if peak_phase == "prefill" else kv),
        "prefill_activations": int(prefill if peak_phase == "prefill" else 0),
        "logits": int(logits),
        "workspace": int(workspace + dequant + (cat_copy if peak_phase != "prefill" else 0)),
    }
    notes = [
        f"{c.engine}; weights {c.weight_format}; KV cache {c.kv_bytes:g} B/element, "
        f"{m.kv_cache_bytes_per_token(c.kv_bytes) / tp / 1024:.0f} KiB per token"
    ]
    rel = (0.05, 0.06) if c.weight_format == "none" else (0.08, 0.12)
    return _finish(
        None,
        peak,
        phases,
        peak_phase,
        components,
        {"weights": int(w), "kv_cache": int(kv)},
        notes,
        rel,
        multi_gpu=tp > 1,
    )


def estimate_cnn_inference(m: CnnSpec, precision: str, batch_size: int) -> MemoryEstimate:
    """ResNet inference (eval, ``inference_mode``): parameters (fp32 under autocast; autocast
    keeps no weight copies outside autograd, each cast is freed after its conv), the fp32 input,
    and the working set at a stage-1 residual sum -- block input, branch output, their sum and
    BatchNorm temporaries, ~3.5 tensors of the largest activation -- plus ~32 MiB of cuDNN
    workspace and per-layer weight casts. Band -6 %/+2 %: the residuals on the committed H200
    results were -6.3 %..+1.3 %."""
    mode = _MODES.get(precision, _MODES["amp_bf16"])
    P = float(m.total_params)
    w = mode.param * P
    img = float(m.in_channels * m.image_size * m.image_size)
    acts = batch_size * (3.5 * mode.compute * m.largest_activation_elements + mode.param * img)
    workspace = 32.0 * MiB
    peak = w + acts + workspace
    comps = {"parameters": int(w), "activations": int(acts), "workspace": int(workspace)}
    return _finish(
        None,
        peak,
        {"forward": peak},
        "forward",
        comps,
        {"parameters": int(w)},
        ["torchvision ResNet, eval, channels_last"],
        (0.06, 0.02),
        multi_gpu=False,
    )


@dataclass(frozen=True, slots=True)
class BatchInferenceConfig:
    """Batched inference of an encoder (BERT, ``BertForMaskedLM`` in eval + ``inference_mode``)
    or a CNN (torchvision ResNet in eval, channels_last): ``batch_size`` inputs per forward
    (sequences of ``seq_len`` tokens, or images), on one GPU per replica; ``replicas`` GPUs each
    run their own copy. What the agent's ``bert-large-infer`` / ``resnet50-infer`` measure."""

    model: EncoderSpec | CnnSpec
    precision: str = "bf16"
    batch_size: int = 1
    seq_len: int = 128
    replicas: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.model, EncoderSpec | CnnSpec):
            raise InvalidConfiguration("model", "batched inference is modelled for encoders and CNNs")
        if self.precision not in _MODES:
            raise InvalidConfiguration("precision", f"precision must be one of {', '.join(_MODES)}")
        if self.batch_size < 1 or self.seq_len < 1 or self.replicas < 1:
            raise InvalidConfiguration("batch_size", "batch_size, seq_len and replicas must be >= 1")

    @property
    def gpu_count(self) -> int:
        return self.replicas


def estimate_encoder_inference(
    m: EncoderSpec, precision: str, batch_size: int, seq_len: int
) -> MemoryEstimate:
    """BERT masked-LM inference (eval, ``inference_mode``): parameters (fp32 under autocast, whose
    per-layer weight casts are freed after use), and the working set at the MLM head, the
    largest moment: the logits over every token (``T x V`` in the compute dtype; the MLM head
    scores all positions) plus the head transform's output, GELU and LayerNorm buffers
    (``~10 T h`` bytes under autocast, whose LayerNorm runs in fp32; ``6 T h`` in pure 16-bit)
    and ~32 MiB of cuBLAS workspace. Checked against the H200 ``bert-large-infer`` sweep."""
    mode = _MODES.get(precision, _MODES["amp_bf16"])
    T = float(batch_size * seq_len)
    w = mode.param * float(m.total_params)
    logits = mode.compute * T * m.vocab_size
    head = (10.0 if mode.autocast else 3.0 * mode.compute) * T * m.hidden_size
    workspace = 32.0 * MiB
    peak = w + logits + head + workspace
    comps = {
        "parameters": int(w),
        "logits": int(logits),
        "activations": int(head),
        "workspace": int(workspace),
    }
    return _finish(
        None,
        peak,
        {"mlm-head": peak},
        "mlm-head",
        comps,
        {"parameters": int(w)},
        ["HF BertForMaskedLM, eval + inference_mode, logits over every position"],
        (0.06, 0.08),
        multi_gpu=False,
    )


def estimate_batch_inference(c: BatchInferenceConfig) -> MemoryEstimate:
    """Per-GPU memory of :class:`BatchInferenceConfig` (encoder or CNN)."""
    if isinstance(c.model, CnnSpec):
        return estimate_cnn_inference(c.model, c.precision, c.batch_size)
    return estimate_encoder_inference(c.model, c.precision, c.batch_size, c.seq_len)


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
    from dataclasses import replace

    def ok(b: int) -> bool:
        return estimate_training(replace(c, batch_size=b, global_batch=0)).fits(usable_memory_bytes)

    return max(0, _largest(1, limit, ok))


def largest_context(
    c: TrainConfig | InferenceConfig, usable_memory_bytes: int, limit: int = 1_048_576
) -> int:
    """Longest sequence (training ``seq_len``; inference ``input_len + output_len`` with the
    output length kept) that fits; 0 if none. Multiples of 128 are searched."""
    from dataclasses import replace

    if isinstance(c, TrainConfig):

        def ok(k: int) -> bool:
            return estimate_training(replace(c, seq_len=128 * k)).fits(usable_memory_bytes)
    else:

        def ok(k: int) -> bool:
            return estimate_inference(replace(c, input_len=128 * k)).fits(usable_memory_bytes)

    return max(0, _largest(1, limit // 128, ok)) * 128


def most_concurrent_sequences(c: InferenceConfig, usable_memory_bytes: int, limit: int = 1_000_000) -> int:
    """How many sequences of ``input_len + output_len`` tokens can be served at once."""
    from dataclasses import replace

    def ok(b: int) -> bool:
        return estimate_inference(replace(c, batch_size=b)).fits(usable_memory_bytes)

    return max(0, _largest(1, limit, ok))


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
    from dataclasses import replace

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
