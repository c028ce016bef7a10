"""Speculative decoding terms of the serving model (issue 28): the methods modelled, what one
drafted token costs, and how many tokens a verification step emits. The step time itself is
:func:`service.core.estimation.serving_engines.speculative_step_s`."""

from __future__ import annotations

from service.core.catalog.decoder import DecoderSpec

__all__ = ["SPEC_METHODS", "accepted_per_step", "draft_share"]


SPEC_METHODS: tuple[str, ...] = ("mtp", "eagle", "ngram")
"""Speculative decoding methods modelled: the model's own MTP module (DeepSeek-V3), an EAGLE
draft head (one decoder layer on the target's features, the target's LM head), n-gram prompt
lookup (drafting on the host, no GPU work)."""


def draft_share(m: DecoderSpec, method: str | None) -> float:
    """The draft's share of the parameters a token of the target reads: an MTP module or an
    EAGLE head is one decoder layer plus the LM head, so one draft pass streams and multiplies
    this share of the target's weights (its KV cache is one layer's:
    :func:`~service.core.estimation.serving_steps.draft_pass_s`); n-gram lookup costs the GPU
    nothing."""
    if method in ("mtp", "eagle"):
        head = float(m.vocab_size * m.hidden_size)
        layer = float(m.active_params_per_layer)
        return (layer + head) / float(m.matmul_params_per_token)
    return 0.0


def accepted_per_step(k: int, alpha: float) -> float:
    """Tokens a verification step emits on average with ``k`` drafted tokens each accepted with
    probability ``alpha`` (Leviathan et al. 2023, eq. 1): ``(1 - alpha^(k+1)) / (1 - alpha)``;
    1 at ``alpha = 0`` (the verifier's own token), ``k + 1`` at ``alpha = 1``."""
    if alpha >= 1.0:
        return float(k + 1)
    return (1.0 - alpha ** (k + 1)) / (1.0 - alpha)
