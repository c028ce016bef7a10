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

from service.core.estimation.memory_band import (  # noqa: F401
    _band_for,
    _finish,
)

# The model lives in small modules; this one keeps the names every caller imports.
from service.core.estimation.memory_config import (  # noqa: F401
    _NOTE_CONTEXT,
    _NOTE_STACK,
    ALLOCATOR_SLACK,
    ALLOCATOR_SLACK_BAND,
    ATTENTIONS,
    CUDA_CONTEXT_BAND,
    CUDA_CONTEXT_BYTES,
    DDP_BUCKET_FRACTION,
    DEFAULT_LORA_TARGETS,
    FINETUNES,
    INT4_GROUP_BYTES_PER_PARAM,
    INT8_BYTES_PER_PARAM,
    LOOPS,
    MIXED_PRECISIONS,
    NCCL_BUFFER_BAND,
    NCCL_BUFFER_BYTES,
    NETWORK_GBIT_PER_S_PER_GPU,
    NF4_BYTES_PER_PARAM,
    OPTIMIZER_IMPLS,
    OPTIMIZERS,
    SHARDINGS,
    SOCKET_NETWORK_EFFICIENCY,
    STACKS,
    TRANSFORMERS_VERSION_MODELLED,
    ZERO3_MAX_LIVE_PARAMETERS,
    ZERO_BUCKET_ELEMENTS,
    GiB,
    MemoryEstimate,
    MiB,
    TrainConfig,
    train_config_from_parameters,
)
from service.core.estimation.memory_encoders import (  # noqa: F401
    BatchInferenceConfig,
    _training_cnn,
    _training_encoder,
    estimate_batch_inference,
    estimate_cnn_inference,
    estimate_encoder_inference,
)
from service.core.estimation.memory_inference import (  # noqa: F401
    ENGINES,
    PREFILL_CHUNK_TOKENS,
    QUANT_METHODS,
    InferenceConfig,
    draft_kv_layers,
    draft_weight_factor,
    estimate_inference,
    expert_weight_bytes,
    kv_cache_bytes,
    weight_bytes,
)
from service.core.estimation.memory_layers import (  # noqa: F401
    _adapter_input,
    _decoder_layer_saved,
    _decoder_trainables,
    _Dims,
    _dims,
    _forloop_window,
    _group_inputs,
    _Layer,
    _layer0,
    _lora_note,
    _lora_params,
    _optimizer_bytes,
    _parameter_order,
    _Trainables,
)
from service.core.estimation.memory_solve import (  # noqa: F401
    _largest,
    fewest_gpus,
    largest_context,
    largest_micro_batch,
    memory_held,
    most_concurrent_sequences,
)
from service.core.estimation.memory_training import (  # noqa: F401
    _BREAKDOWN_CACHE,
    FSDP_LIVE_UNITS,
    TRAINING_BREAKDOWN_CACHE_SIZE,
    _pipeline_stages,
    _Stage,
    _training_decoder,
    _training_pipeline,
    estimate_training,
    forget_training_breakdowns,
    training_breakdown,
)

__all__ = [
    "ALLOCATOR_SLACK",
    "CUDA_CONTEXT_BYTES",
    "DEFAULT_LORA_TARGETS",
    "ENGINES",
    "NCCL_BUFFER_BYTES",
    "NETWORK_GBIT_PER_S_PER_GPU",
    "SOCKET_NETWORK_EFFICIENCY",
    "TRANSFORMERS_VERSION_MODELLED",
    "BatchInferenceConfig",
    "InferenceConfig",
    "MemoryEstimate",
    "TrainConfig",
    "draft_kv_layers",
    "draft_weight_factor",
    "estimate_batch_inference",
    "estimate_cnn_inference",
    "estimate_encoder_inference",
    "estimate_inference",
    "estimate_training",
    "expert_weight_bytes",
    "fewest_gpus",
    "largest_context",
    "largest_micro_batch",
    "memory_held",
    "most_concurrent_sequences",
    "train_config_from_parameters",
    "training_breakdown",
    "weight_bytes",
]
