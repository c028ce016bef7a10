"""Step times built on one continuous-batching iteration: a speculative decode step, and the
share of a replica's GPU time prompts take (what splits its hour into input and output tokens)."""

from __future__ import annotations

from service.core.estimation.serving_engines import (
    Deployment,
    EngineEfficiencies,
    _coefficients,
    iteration_s,
)

__all__ = ["draft_pass_s", "prefill_time_share", "speculative_step_s"]


def draft_pass_s(d: Deployment, e: EngineEfficiencies, n_dec: float, ctx: float) -> float:
    """One draft pass of an MTP module or EAGLE head for ``n_dec`` sequences: a decode iteration
    of one decoder layer plus the LM head. What scales with parameters -- GEMM FLOPs (the LM head
    for every sequence), weight streaming, the fixed step -- is the target's times
    ``spec_draft_share`` (the head's share of the parameters a token reads); what scales with
    layers -- the head's own KV cache of ``ctx`` tokens, fused elementwise traffic, all-reduces --
    is one layer's, ``1 / L`` of the target's. At a large batch x context the target's step is
    mostly KV reads, of which the head reads one layer's (measured on the H200: 0.05 of the
    target's step at batch 64 x 4k context, where the parameter share alone says 0.10;
    ``data/probes/h200-engine-step-2026-12-04*.jsonl``). n-gram drafting costs the GPU nothing."""
    s = d.spec_draft_share
    if s <= 0.0:
        return 0.0
    k = _coefficients(d, e)
    w = k.w_dense
    if k.moe:
        w += k.w_experts * (1.0 - (1.0 - k.topk_e) ** max(n_dec, 1.0))
    per_param = n_dec * (k.flops + k.expert_flops + k.head) + w + k.step
    per_layer = n_dec * ctx * k.kv + n_dec * k.ew + k.comm0 + k.comm1 * n_dec
    return s * per_param + per_layer / max(d.layers, 1)


def speculative_step_s(d: Deployment, e: EngineEfficiencies, n_dec: float, ctx: float) -> float:
    """One speculative decode step of ``n_dec`` sequences: ``k`` draft passes
    (:func:`draft_pass_s`), then the target verifies ``k + 1`` tokens per sequence in one forward
    (GEMM FLOPs, LM head and activations for all of them; the KV cache read once, its attention
    FLOPs ``k + 1`` times). Reading the cache once holds for attention kernels that fold a KV
    head's query heads and new tokens into one tile (FlashAttention-3 ``pack_gqa``, FlashInfer,
    TensorRT-LLM XQA): measured on the H200, such a kernel verifies up to 32 tokens for the cost of
    a decode step, where FlashAttention-2 (which folds the heads only for one new token) reads the
    cache once per query head (``data/probes/h200-verify-attention-2026-12-04.jsonl``)."""
    k = _coefficients(d, e)
    spec = float(d.spec_tokens)
    T = n_dec * (spec + 1.0)
    w = k.w_dense
    if k.moe:
        w += k.w_experts * (1.0 - (1.0 - k.topk_e) ** max(T, 1.0))
    verify = (
        T * (k.flops + k.expert_flops + k.ew + k.comm1)
        + T * k.head
        + w
        + n_dec * ctx * max(k.kv_bytes, k.attn_dec * (spec + 1.0))
        + k.comm0
        + k.step
    )
    return verify + spec * draft_pass_s(d, e, n_dec, ctx)


def prefill_time_share(
    d: Deployment, e: EngineEfficiencies, n_dec: float, input_len: float, output_len: float
) -> float:
    """Share of a replica's GPU time that prompts take when ``n_dec`` sequences decode together:
    a prompt is charged the time its ``input_len`` tokens add to an iteration, and each output
    token ``1 / n_dec`` of a decode iteration (the iterations run anyway, so their fixed costs --
    weight streaming, the step -- land on output tokens). What splits a replica-hour into the
    cost of input and of output tokens (:mod:`service.core.pricing.token_cost`)."""
    n = max(n_dec, 1.0)
    ctx = input_len + output_len / 2.0
    base = iteration_s(d, e, n, ctx)
    prompt = max(0.0, iteration_s(d, e, n, ctx, input_len, input_len / 2.0, 1.0) - base)
    decode = max(output_len, 1.0) * base / n
    return prompt / (prompt + decode)
