"""Cost per million input and per million output tokens (issue 28), and the blend providers
quote: the replica-hour is paid once, so the two prices split it by where the GPU time goes.

A serving answer states ``prefill_time_share`` -- the share of the replicas' GPU time prompts
take (:func:`service.core.estimation.serving_steps.prefill_time_share`: a prompt pays the time
its tokens add to an iteration, output tokens pay the iterations). Input tokens carry that share
of the hour, output tokens the rest, so ``input/s x price_in + output/s x price_out`` is the
hour's price exactly. The blend weighs input and output prices 3 : 1, the ratio Artificial
Analysis states for its "blended price" of every API it lists (artificialanalysis.ai, methodology).
"""

from __future__ import annotations

from dataclasses import dataclass

from service.core.errors import InvalidConfiguration

__all__ = ["BLEND_INPUT_PER_OUTPUT", "TokenCosts", "serving_token_costs", "token_costs"]

BLEND_INPUT_PER_OUTPUT = 3.0
"""Input tokens per output token in the blended price (Artificial Analysis's 3:1)."""


@dataclass(frozen=True, slots=True)
class TokenCosts:
    """Prices per million tokens, in the hour's currency, at the stated load."""

    per_million_input: float
    per_million_output: float
    per_million_blended: float
    blend_input_per_output: float = BLEND_INPUT_PER_OUTPUT


def token_costs(
    per_hour: float, *, input_tokens_per_s: float, output_tokens_per_s: float, prefill_time_share: float
) -> TokenCosts:
    """Split ``per_hour`` (the price of the GPUs serving the load) over the input and output
    tokens served per second, by the GPU-time share prompts take."""
    if not per_hour >= 0:
        raise InvalidConfiguration("per_hour", "must be >= 0")
    if not (input_tokens_per_s > 0 and output_tokens_per_s > 0):
        raise InvalidConfiguration("output_tokens_per_s", "input and output tokens served must be > 0")
    if not 0.0 <= prefill_time_share <= 1.0:
        raise InvalidConfiguration("prefill_time_share", "must be within [0, 1]")
    per_s = per_hour / 3600.0
    p_in = per_s * prefill_time_share / input_tokens_per_s * 1e6
    p_out = per_s * (1.0 - prefill_time_share) / output_tokens_per_s * 1e6
    blended = (BLEND_INPUT_PER_OUTPUT * p_in + p_out) / (BLEND_INPUT_PER_OUTPUT + 1.0)
    return TokenCosts(p_in, p_out, blended)


def serving_token_costs(
    per_gpu_hour: float | None,
    gpus: int,
    input_tokens_per_s: float | None,
    output_tokens_per_s: float,
    prefill_time_share: float | None,
) -> TokenCosts | None:
    """The costs of a serving answer on ``gpus`` GPUs at ``per_gpu_hour`` each; None without a
    price, without the time share (static batches) or when nothing is served (overload)."""
    if per_gpu_hour is None or prefill_time_share is None or not input_tokens_per_s:
        return None
    if not output_tokens_per_s > 0:
        return None
    return token_costs(
        per_gpu_hour * gpus,
        input_tokens_per_s=input_tokens_per_s,
        output_tokens_per_s=output_tokens_per_s,
        prefill_time_share=prefill_time_share,
    )
