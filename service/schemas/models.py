"""Wire models for model architectures (``/v1/models``)."""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

from pydantic import BaseModel, Field

from service.core.catalog.models import DecoderSpec, ModelSpec

_NOT_CONFIG = frozenset({"aliases", "source", "notes", "id", "kind", "family", "hf_id"})


def _summary(m: ModelSpec) -> dict[str, Any]:
    return {
        "id": m.id,
        "kind": m.kind,
        "family": m.family,
        "hf_id": m.hf_id,
        "total_params": m.total_params,
        "active_params": m.active_params,
        "description": m.describe(),
        "aliases": list(m.aliases),
    }


class ModelSummary(BaseModel):
    id: str
    kind: Literal["decoder", "encoder", "cnn"]
    family: str
    hf_id: str | None
    total_params: int
    active_params: int
    description: str
    aliases: list[str]

    @classmethod
    def from_core(cls, m: ModelSpec) -> ModelSummary:
        return cls(**_summary(m))


class ModelDetail(ModelSummary):
    config: dict[str, Any] = Field(description="the architecture, as the estimator uses it")
    parameter_breakdown: dict[str, int] = Field(
        description="parameters by component (exact from the architecture)"
    )
    per_layer_breakdown: dict[str, int] | None = None
    kv_cache_bytes_per_token_bf16: float | None = None
    source: str
    notes: str
    assumed_shape: str | None = Field(
        default=None, description="set when the shape was assumed from a parameter count"
    )

    @classmethod
    def from_core(cls, m: ModelSpec, assumed_shape: str | None = None) -> ModelDetail:
        """The architecture as the estimator uses it (every field but the descriptive ones),
        with the exact parameter breakdown, per layer and KV cache per token for decoders."""
        config = {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.name not in _NOT_CONFIG}
        return cls(
            **_summary(m),
            config={k: (list(v) if isinstance(v, tuple) else v) for k, v in config.items()},
            parameter_breakdown=m.parameter_breakdown(),
            per_layer_breakdown=m.per_layer_breakdown() if isinstance(m, DecoderSpec) else None,
            kv_cache_bytes_per_token_bf16=m.kv_cache_bytes_per_token(2.0)
            if isinstance(m, DecoderSpec)
            else None,
            source=m.source,
            notes=m.notes,
            assumed_shape=assumed_shape,
        )


class ModelList(BaseModel):
    items: list[ModelSummary]
    count: int

    @classmethod
    def from_core(cls, models: list[ModelSpec]) -> ModelList:
        items = [ModelSummary.from_core(m) for m in models]
        return cls(items=items, count=len(items))
