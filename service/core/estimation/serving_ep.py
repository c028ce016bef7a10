"""Expert parallelism for MoE serving (issue 28): a replica's ``ep`` GPUs each hold ``E / ep``
whole routed experts, and run attention data-parallel (SGLang ``--enable-dp-attention`` with
``--ep-size``, vLLM ``--enable-expert-parallel`` with ``--data-parallel-size``; the layout the
DeepSeek-V3 deployment guides use).

What changes against tensor parallelism over the same GPUs, per GPU:

* **weights**: every GPU keeps the non-routed weights whole (attention, dense layers, shared
  experts, embeddings, LM head) and ``1 / ep`` of the routed experts; every iteration streams
  the whole non-routed part on every GPU (the price of data-parallel attention);
* **KV cache**: each sequence lives on one GPU, whole: ``1 / ep`` of a token's KV per GPU on
  average -- an MLA latent, which tensor parallelism keeps whole on every rank, is not repeated;
* **communication**: no all-reduce per layer; per MoE layer one all-to-all sends each token's
  hidden state to the GPUs of its ``k`` experts (dispatch) and one brings the results back
  (combine). A GPU with ``T / ep`` of the tokens sends ``(T / ep) k h 2 (ep - 1) / ep`` bytes
  each way (16-bit activations; the experts on its own GPU stay local) over the node's links;
* **routing balance**: experts are assumed equally loaded (:data:`EXPERT_LOAD_IMBALANCE` = 1,
  as the rest of the MoE model assumes uniform routing); real routers are not, so answers are
  an upper bound on EP's speed (stated).
"""

from __future__ import annotations

from dataclasses import dataclass

from service.core.catalog.decoder import DecoderSpec

__all__ = ["EXPERT_LOAD_IMBALANCE", "EpTerms", "ep_terms"]

EXPERT_LOAD_IMBALANCE = 1.0
"""Tokens on the busiest expert GPU over the mean: 1 (uniform routing), a stated assumption --
no sourced figure for a router's imbalance is in the catalog."""

ACTIVATION_BYTES = 2.0
"""Dispatch and combine move 16-bit hidden states (FP8 dispatch kernels exist; not modelled)."""


@dataclass(frozen=True, slots=True)
class EpTerms:
    """Per-GPU figures of an ``ep``-way expert-parallel replica."""

    w_dense: float  # non-routed weight bytes, whole on every GPU
    w_experts: float  # this GPU's routed experts' bytes
    kv_per_token: float  # mean KV bytes per token per GPU (each sequence on one GPU)
    a2a_bytes_per_token: float  # bytes one replica token puts on a GPU's links, all MoE layers
    a2a_count: int  # all-to-alls per forward (dispatch + combine per MoE layer)


def ep_terms(m: DecoderSpec, weights: float, expert_weights: float, kv_bytes: float, ep: int) -> EpTerms:
    """The per-GPU terms of ``ep``-way expert parallelism (module docstring) from the model's
    whole weight bytes and routed-expert bytes in its format."""
    moe = m.moe_layers
    a2a = 2.0 * moe * m.experts_per_token * m.hidden_size * ACTIVATION_BYTES * (ep - 1) / ep / ep
    return EpTerms(
        w_dense=weights - expert_weights,
        w_experts=expert_weights / ep,
        kv_per_token=m.kv_cache_bytes_per_token(kv_bytes) / ep,
        a2a_bytes_per_token=a2a,
        a2a_count=2 * moe,
    )
