"""Step times built on one continuous-batching iteration: a speculative decode step, and the
share of a replica's GPU time prompts take (what splits its hour into input and output tokens)."""

from __future__ import annotations

from service.core.estimation.serving_engines import (
    Deployment,
    EngineEfficiencies,
    _coefficients,
    iteration_s,
)

__all__ = ["prefill_time_share", "speculative_step_s"]


def speculative_step_s(d: Deployment, e: EngineEfficiencies, n_dec: float, ctx: float) -> float:
    """One speculative decode step of ``n_dec`` sequences: ``k`` draft passes, then the target
    verifies ``k + 1`` tokens per sequence in one forward (GEMM FLOPs, LM head and activations for
    all of them; the KV cache read once, its attention FLOPs ``k + 1`` times)."""
    k = _coefficients(d, e)
    spec = float(d.spec_tokens)
    base = k.iteration(n_dec, ctx, 0.0, 0.0, 0.0)
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
    return verify + spec * d.spec_draft_share * base


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
