"""How a serving request states its load, and which serving features it may combine
(:func:`~.estimate_inputs.build_job` asks): prefix caching, an engine memory setting,
speculative decoding, multi-LoRA, expert parallelism, disaggregated pools and offline batches,
each on the engines that model it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from service.core.catalog.models import DecoderSpec
from service.core.errors import InvalidConfiguration
from service.core.estimation.serving_features import SPEC_METHODS

if TYPE_CHECKING:  # the job spec imports these checks
    from service.core.estimation.estimate_inputs import JobSpec

__all__ = ["check_load", "check_offline", "check_serving_features", "is_offline"]


def check_load(spec: JobSpec, continuous: bool) -> None:
    """How the load is stated: a rate (open loop) or clients (closed loop), not both, and either
    only on a continuous-batching engine; solving for the fewest GPUs under latency targets needs
    the rate."""
    if spec.requests_per_s is not None and not continuous:
        raise InvalidConfiguration(
            "requests_per_s",
            "request-rate serving is modelled for continuous-batching engines (vllm, tensorrt-llm, "
            "sglang); hf-transformers serves one static batch (give batch_size)",
        )
    if spec.concurrency is not None and not continuous:
        raise InvalidConfiguration(
            "concurrency",
            "concurrency applies to continuous-batching engines; "
            "hf-transformers serves one static batch (give batch_size)",
        )
    if spec.concurrency is not None and spec.requests_per_s is not None:
        raise InvalidConfiguration(
            "concurrency",
            "give requests_per_s (an open loop: arrivals at a rate, the in-flight count follows) or "
            "concurrency (a closed loop: that many requests in flight over all replicas), not both",
        )
    targets = spec.ttft_target_ms or spec.tpot_target_ms
    if spec.solve_for == "min_gpus" and spec.requests_per_s is None and targets:
        raise InvalidConfiguration("requests_per_s", "min_gpus with latency targets needs requests_per_s")


def check_serving_features(spec: JobSpec, model: DecoderSpec, continuous: bool) -> None:
    """Prefix caching, speculative decoding, LoRA and disaggregation: continuous-batching engines
    only; speculation at a fixed concurrency (not yet at a request rate); MTP only where the
    checkpoint ships MTP."""
    _disaggregated(spec, max(spec.tensor_parallel, 1), continuous)
    _expert_parallel(spec, model, continuous)
    if spec.prefix_cache_hit_rate and not continuous:
        raise InvalidConfiguration(
            "prefix_cache_hit_rate",
            "prefix caching is modelled for vllm, tensorrt-llm and sglang, not a static batch",
        )
    if spec.memory_fraction is not None and not continuous:
        raise InvalidConfiguration(
            "memory_fraction",
            "memory_fraction is an engine's memory setting (vllm, tensorrt-llm, sglang); a static "
            "batch takes what its sequences need",
        )
    _lora(spec, continuous)
    if spec.speculative is None:
        return
    if not continuous:
        raise InvalidConfiguration(
            "speculative", "speculative decoding is modelled for vllm, tensorrt-llm and sglang"
        )
    if spec.requests_per_s is not None:
        raise InvalidConfiguration(
            "speculative", "speculative decoding is modelled at a concurrency, not yet at a request rate"
        )
    if spec.speculative not in SPEC_METHODS:
        raise InvalidConfiguration("speculative", f"method must be one of {', '.join(SPEC_METHODS)}")
    if spec.speculative == "mtp" and not model.mtp_layers:
        raise InvalidConfiguration(
            "speculative", f"{model.id} ships no MTP module (num_nextn_predict_layers)"
        )
    if not 1 <= spec.draft_tokens <= 16 or not 0.0 <= spec.acceptance_rate <= 1.0:
        raise InvalidConfiguration(
            "speculative", "draft_tokens must be 1-16 and acceptance_rate within [0, 1]"
        )


def _lora(spec: JobSpec, continuous: bool) -> None:
    """Multi-LoRA serving: continuous engines; ``max_loras`` slots for at most ``adapters``."""
    lora = spec.lora
    if lora is None:
        return
    if not continuous:
        raise InvalidConfiguration("lora", "multi-LoRA serving is modelled for vllm, tensorrt-llm and sglang")
    if lora.adapters < 1 or not 1 <= lora.rank <= 512:
        raise InvalidConfiguration("lora", "adapters must be >= 1 and rank within 1-512")
    if not 1 <= lora.max_loras <= lora.adapters:
        raise InvalidConfiguration(
            "lora.max_loras", f"max_loras ({lora.max_loras}) must be within 1 and adapters ({lora.adapters})"
        )


def _expert_parallel(spec: JobSpec, model: DecoderSpec, continuous: bool) -> None:
    """Expert parallelism: an MoE model on a continuous engine, over a tensor-parallel group whose
    size divides the routed experts; not with LoRA, disaggregation or solving (not modelled)."""
    if not spec.expert_parallel:
        return
    tp = spec.tensor_parallel
    if not continuous:
        raise InvalidConfiguration(
            "expert_parallel", "expert parallelism is modelled for vllm, tensorrt-llm and sglang"
        )
    if not model.is_moe:
        raise InvalidConfiguration("expert_parallel", f"{model.id} has no routed experts to spread")
    if tp < 2 or model.num_experts % tp:
        raise InvalidConfiguration(
            "tensor_parallel",
            f"expert parallelism spreads {model.num_experts} experts over tensor_parallel GPUs: it must be "
            "at least 2 and divide them",
        )
    if spec.lora is not None or spec.disaggregated is not None or spec.solve_for is not None:
        raise InvalidConfiguration(
            "expert_parallel", "expert parallelism is not modelled with lora, disaggregated or solve_for"
        )


def _disaggregated(spec: JobSpec, tp: int, continuous: bool) -> None:
    """Disaggregated pools: continuous engines, whole tensor-parallel groups in each pool, the
    pools making up ``gpu_count``; no speculation or solving (not modelled together)."""
    dis = spec.disaggregated
    if dis is None:
        return
    if not continuous:
        raise InvalidConfiguration(
            "disaggregated", "disaggregated prefill/decode is modelled for vllm, tensorrt-llm and sglang"
        )
    for name, n in (("prefill_gpus", dis.prefill_gpus), ("decode_gpus", dis.decode_gpus)):
        if n < tp or n % tp:
            raise InvalidConfiguration(
                f"disaggregated.{name}", f"{name} ({n}) must be a multiple of tensor_parallel ({tp})"
            )
    if spec.gpu_count != dis.prefill_gpus + dis.decode_gpus:
        raise InvalidConfiguration(
            "gpu_count",
            f"gpu_count ({spec.gpu_count}) must equal prefill_gpus + decode_gpus "
            f"({dis.prefill_gpus + dis.decode_gpus})",
        )
    if spec.speculative is not None or spec.solve_for is not None:
        raise InvalidConfiguration(
            "disaggregated", "disaggregated serving is not modelled with speculative decoding or solve_for"
        )


def is_offline(spec: JobSpec) -> bool:
    """A batch job: ``tokens`` to generate, neither a rate nor clients."""
    return bool(spec.tokens) and spec.requests_per_s is None and spec.concurrency is None


def check_offline(spec: JobSpec, continuous: bool) -> None:
    """An offline batch (``tokens`` without a rate or clients) fills each replica: disaggregation
    and speculation serve latency, which such a job does not ask for."""
    if not (continuous and is_offline(spec)):
        return
    if spec.disaggregated is not None:
        raise InvalidConfiguration(
            "disaggregated",
            "an offline batch (tokens, no requests_per_s or concurrency) runs on one pool; "
            "disaggregation serves latency targets",
        )
    if spec.speculative is not None:
        raise InvalidConfiguration(
            "speculative",
            "an offline batch fills the KV cache, where drafts only add work; give concurrency to "
            "model speculation",
        )
