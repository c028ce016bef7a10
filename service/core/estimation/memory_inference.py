"""Serving memory of decoders (weights by format, KV cache, prefill working set)."""

from __future__ import annotations

from dataclasses import dataclass

from service.core.catalog.models import DecoderSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.fp4 import MXFP4_BYTES_PER_ELEMENT, NVFP4_BYTES_PER_ELEMENT
from service.core.estimation.memory_band import (
    FITTED_MEMORY_BANDS,
    _finish,
)
from service.core.estimation.memory_config import (
    INT4_GROUP_BYTES_PER_PARAM,
    INT8_BYTES_PER_PARAM,
    NF4_BYTES_PER_PARAM,
    MemoryEstimate,
    MiB,
)
from service.core.estimation.serving_disagg_layout import DEFAULT_NODES, Disaggregation, NodeNetwork
from service.core.estimation.serving_lora import LORA_BYTES_PER_ELEMENT, LoraServing, lora_slot_elements

# --------------------------------------------------------------------------------------------
# Inference
# --------------------------------------------------------------------------------------------

QUANT_METHODS: tuple[str, ...] = (
    "none",
    "bnb-int8",
    "bnb-nf4",
    "awq",
    "gptq",
    "fp8",
    "int8",
    "nvfp4",
    "mxfp4",
)
"""Weight formats: ``bnb-*`` (bitsandbytes), ``awq``/``gptq`` (4-bit weight-only), ``fp8``
(FP8 E4M3 weights with per-tensor scales; W8A8 where the GPU has FP8 tensor cores), ``int8``
(SmoothQuant-style W8A8: int8 weights and activations on the int8 tensor cores) and the
block-scaled 4-bit ``nvfp4`` / ``mxfp4`` (:mod:`service.core.estimation.fp4`)."""

ENGINES: tuple[str, ...] = ("hf-transformers", "vllm", "tensorrt-llm", "sglang")
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
    memory_fraction: float | None = None
    """The engine's memory setting as the launch states it (vLLM ``gpu_memory_utilization``, SGLang
    ``mem_fraction_static``, TensorRT-LLM ``kv_cache_free_gpu_mem_fraction``); None: the engine's
    own default (:mod:`~service.core.estimation.serving_memory`)."""
    replicas: int = 1
    kv_cache_dtype: str = "auto"
    engine_version: str | None = None
    """The engine version the request names (echoed; the figures assume ``ENGINE_VERSIONS``)."""
    prefix_cache_hit_rate: float = 0.0
    speculative: str | None = None
    """Speculative decoding method (``mtp``, ``eagle``, ``ngram``; None: off)."""
    draft_tokens: int = 0
    acceptance_rate: float = 0.0
    """Per-token probability a drafted token is accepted (i.i.d., Leviathan et al. 2023)."""
    lora: LoraServing | None = None
    """Multi-LoRA serving (:mod:`service.core.estimation.serving_lora`); None: the base model only."""
    disaggregated: Disaggregation | None = None
    expert_parallel: bool = False
    """MoE: whole experts over the ``tensor_parallel`` GPUs, attention data-parallel
    (:mod:`service.core.estimation.serving_ep`)."""
    nodes: NodeNetwork = DEFAULT_NODES
    """The nodes a replica larger than one node spans and the network between them
    (:func:`service.core.estimation.network.tp_all_reduce`)."""
    """Separate prefill and decode pools (:mod:`service.core.estimation.serving_disagg`)."""
    """Share of prompt tokens found in the engine's prefix cache (vLLM automatic prefix caching,
    SGLang RadixAttention): not recomputed. The KV cache is counted as if unshared (an upper bound)."""
    """The KV cache format asked for (``auto``, ``fp8``, ``int8``, ``nvfp4``); its bytes are
    ``kv_cache_bytes_per_element``."""

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
        if self.memory_fraction is not None and not 0.0 < self.memory_fraction <= 1.0:
            raise InvalidConfiguration("memory_fraction", "memory_fraction must be in (0, 1]")
        if not 0.0 <= self.prefix_cache_hit_rate < 1.0:
            raise InvalidConfiguration("prefix_cache_hit_rate", "prefix_cache_hit_rate must be in [0, 1)")
        if self.batch_size < 1 or self.input_len < 1 or self.output_len < 0:
            raise InvalidConfiguration("batch_size", "batch_size and input_len must be >= 1, output_len >= 0")
        if self.expert_parallel and not (
            self.model.is_moe and self.model.num_experts % self.tensor_parallel == 0
        ):
            raise InvalidConfiguration(
                "expert_parallel", "expert parallelism needs routed experts that tp divides"
            )
        if self.lora is not None and not 1 <= self.lora.max_loras <= self.lora.adapters:
            raise InvalidConfiguration("lora.max_loras", "max_loras must be within 1 and adapters")
        m, tp = self.model, self.tensor_parallel
        if not m.tp_splits_heads(tp):  # more ranks than KV heads: each head on tp / heads ranks
            raise InvalidConfiguration(
                "tensor_parallel",
                f"tensor_parallel must divide the KV heads ({m.num_kv_heads}), or be a multiple of them "
                f"that divides the attention heads ({m.num_heads}), as vLLM and SGLang require",
            )

    @property
    def compute_bytes(self) -> int:
        return 4 if self.precision == "fp32" else 2

    @property
    def kv_bytes(self) -> float:
        return self.kv_cache_bytes_per_element or float(self.compute_bytes)

    @property
    def lora_bytes(self) -> float:
        """Per-GPU bytes of the ``max_loras`` adapter slots the engine preallocates (0 without LoRA)."""
        if self.lora is None:
            return 0.0
        slot = lora_slot_elements(self.model, self.lora.rank, self.tensor_parallel)
        return self.lora.max_loras * slot * LORA_BYTES_PER_ELEMENT

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


def _bytes_per_linear_param(quant_method: str, compute_bytes: int) -> float:
    return {
        "none": float(compute_bytes),
        "bnb-int8": INT8_BYTES_PER_PARAM,
        "bnb-nf4": NF4_BYTES_PER_PARAM,
        "awq": INT4_GROUP_BYTES_PER_PARAM,
        "gptq": INT4_GROUP_BYTES_PER_PARAM,
        "fp8": 1.0,
        "int8": INT8_BYTES_PER_PARAM,
        "nvfp4": NVFP4_BYTES_PER_ELEMENT,
        "mxfp4": MXFP4_BYTES_PER_ELEMENT,
    }[quant_method]


def weight_bytes(m: DecoderSpec, quant_method: str, compute_bytes: int = 2) -> float:
    """Weights by format. Quantisers leave embeddings, norms and the LM head in 16-bit and
    quantise the decoder linears: bnb-int8 :data:`INT8_BYTES_PER_PARAM`, bnb-nf4
    :data:`NF4_BYTES_PER_PARAM`, AWQ/GPTQ :data:`INT4_GROUP_BYTES_PER_PARAM`, fp8 1 byte +
    per-tensor scales (DeepSeek-V3's 128x128 block scales add 4 B per 16,384 weights: 0.02 %)."""
    other = float(
        m.embedding_params + m.lm_head_params + m.final_norm_params + m.num_layers * m.norm_params_per_layer
    )
    linear = float(m.total_params) - other
    per = _bytes_per_linear_param(quant_method, compute_bytes)
    return linear * per + other * (compute_bytes if quant_method == "none" else 2.0)


def expert_weight_bytes(m: DecoderSpec, quant_method: str, compute_bytes: int = 2) -> float:
    """The routed experts' share of :func:`weight_bytes` (linears, quantised with the rest)."""
    return float(m.routed_expert_params) * _bytes_per_linear_param(quant_method, compute_bytes)


def kv_cache_bytes(
    m: DecoderSpec, tokens: float, bytes_per_element: float = 2.0, tensor_parallel: int = 1
) -> float:
    """KV cache of ``tokens`` tokens per GPU: ``2 (K, V) * layers * kv_heads * head_dim * bytes``
    split over tensor-parallel ranks by KV head, or an MLA model's latent, whole on every rank
    (:meth:`DecoderSpec.kv_shards`). Sliding-window models cap ``tokens`` per sequence at the
    window (the caller passes per-sequence tokens through :func:`estimate_inference`)."""
    return m.kv_cache_bytes_per_token(bytes_per_element) * tokens / m.kv_shards(tensor_parallel)


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
    w = _weights_per_gpu(c, 4 if amp else c.compute_bytes)
    cache = 0.0
    if amp and c.weight_format == "none":  # no cache outside autograd: one layer's casts at a time
        cache = 2.0 * float(m.params_per_layer - m.norm_params_per_layer) / tp
    per_seq = c.input_len + c.output_len
    prompt = c.input_len
    if m.sliding_window:
        per_seq = min(per_seq, m.sliding_window)
        prompt = min(prompt, m.sliding_window)
    shards = tp if c.expert_parallel else m.kv_shards(tp)  # EP: each sequence whole on one GPU
    kv_token = m.kv_cache_bytes_per_token(c.kv_bytes) * draft_kv_layers(c)
    kv = kv_token * float(c.batch_size * per_seq) / shards
    kv_prompt = kv_token * float(c.batch_size * prompt) / shards
    T = float(c.batch_size * c.input_len)
    if c.engine != "hf-transformers":
        T = min(T, float(PREFILL_CHUNK_TOKENS))  # chunked prefill bounds the working set
    h = float(m.hidden_size)
    f = float(m.ffn_peak_width) / tp  # MoE: the top-k (+ shared) experts' buffers of every token
    q, kvd = float(m.q_dim) / tp, float(m.kv_dim) / m.kv_shards(tp)
    cb = float(c.compute_bytes)
    resid = cb * T * h + (4.0 if amp else cb) * T * h
    prefill = resid + max(8.0 * T * h, cb * T * (3 * q + 4 * kvd), 3.0 * cb * T * f)
    logits = 4.0 * c.batch_size * m.vocab_size * 2 + cb * c.batch_size * m.vocab_size
    dequant = 2.0 * float(m.hidden_size * m.intermediate_size) if c.quant_method.startswith("bnb") else 0.0
    cat_copy = 2.0 * kv / m.num_layers if c.engine == "hf-transformers" else 0.0
    workspace = 32.0 * MiB
    lora = c.lora_bytes
    phases = {
        "prefill": w + lora + cache + kv_prompt + prefill + logits + dequant + workspace,
        "decode-end": w + lora + cache + kv + cat_copy + logits + dequant + workspace,
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
    if c.lora is not None:
        components["lora_adapters"] = int(lora)
    notes = _inference_notes(c, lora)
    rel = FITTED_MEMORY_BANDS["decoder-infer"] if c.weight_format == "none" else quantized_band(c, w, peak)
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


QUANTIZED_REST_BAND = (0.08, 0.12)
"""Hand-set relative band (low, high) on what a quantized serving footprint holds beside its
weights -- the quantized kernels' workspaces, dequantization buffers, activations and logits:
no quantized run is measured."""


def quantized_band(c: InferenceConfig, weights: float, peak: float) -> tuple[float, float]:
    """Relative band on the peak of a quantized model, component by component. The weights are
    counted from the format's layout as unquantized weights are from their dtype, so they carry
    the fitted unquantized band (:data:`FITTED_MEMORY_BANDS`), widened below by the LM head a
    quantizer may also quantize; the rest carries :data:`QUANTIZED_REST_BAND`. One band on the
    whole peak made the hand-set +12 % of 72.7 GB of Llama-3-70B FP8 weights 8.7 GB, and so "does
    not fit" one H100 at lengths NVIDIA's TensorRT-LLM tables ran it at."""
    if peak <= 0:
        return QUANTIZED_REST_BAND
    m = c.model
    w_lo, w_hi = FITTED_MEMORY_BANDS["decoder-infer"]
    head = m.lm_head_params * (2.0 - _bytes_per_linear_param(c.weight_format, 2)) / c.tensor_parallel
    share = min(1.0, weights / peak)
    w_lo += max(0.0, head) / max(weights, 1.0)
    r_lo, r_hi = QUANTIZED_REST_BAND
    return share * w_lo + (1.0 - share) * r_lo, share * w_hi + (1.0 - share) * r_hi


def _weights_per_gpu(c: InferenceConfig, compute_bytes: int) -> float:
    """Weight bytes per GPU of a replica: all of them over the tensor-parallel ranks, or under
    expert parallelism the non-routed weights whole and ``1 / tp`` of the routed experts."""
    w = weight_bytes(c.model, c.weight_format, compute_bytes)
    if not c.expert_parallel:
        return w / c.tensor_parallel * draft_weight_factor(c)
    experts = expert_weight_bytes(c.model, c.weight_format, compute_bytes)
    return (w - experts + experts / c.tensor_parallel) * draft_weight_factor(c)


def draft_weight_factor(c: InferenceConfig) -> float:
    """1 + the draft's share of the weights when speculative decoding drafts on the GPU: the
    checkpoint's MTP module(s) (DeepSeek-V3: one MoE decoder layer, about 11.5B parameters), or an
    EAGLE head (one decoder layer on the target's features), each sharing the model's embedding
    and LM head; their KV is :func:`draft_kv_layers`'. n-gram lookup drafts on the host."""
    m = c.model
    if not m.total_params:
        return 1.0
    if c.speculative == "eagle":
        return 1.0 + float(m.active_params_per_layer) / m.total_params
    if c.speculative != "mtp" or not m.mtp_layers:
        return 1.0
    own = m.mtp_params - m.mtp_layers * 2 * m.vocab_size * m.hidden_size  # embedding and head: shared
    return 1.0 + max(0, own) / m.total_params


def draft_kv_layers(c: InferenceConfig) -> float:
    """1 + the drafting layers over the model's: each keeps its own KV per token (an EAGLE head
    one layer, the MTP modules theirs)."""
    m = c.model
    if c.speculative == "eagle":
        return 1.0 + 1.0 / m.num_layers
    return 1.0 + m.mtp_layers / m.num_layers if c.speculative == "mtp" and m.mtp_layers else 1.0


def _inference_notes(c: InferenceConfig, lora: float) -> list[str]:
    """What the serving memory assumed: engine, formats, KV bytes per token, LoRA slots."""
    m, tp = c.model, c.tensor_parallel
    notes = [
        f"{c.engine}; weights {c.weight_format}; KV cache {c.kv_bytes:g} B/element, "
        f"{m.kv_cache_bytes_per_token(c.kv_bytes) / m.kv_shards(tp) / 1024:.0f} KiB per token"
        + (" (MLA latent, whole on every tensor-parallel rank)" if m.is_mla and tp > 1 else "")
    ]
    if c.expert_parallel:
        notes.append(
            f"expert parallelism over {tp} GPUs: routed experts split whole, the other weights and data-parallel "
            "attention on every GPU, each sequence's KV on one GPU"
        )
    if c.lora is not None:
        notes.append(
            f"{c.lora.max_loras} LoRA slot(s) of rank {c.lora.rank} resident, 16-bit: {lora / MiB:.0f} MiB per GPU"
        )
    return notes
