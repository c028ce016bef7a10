"""Wire models for model architectures (``/v1/models``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ModelSummary(BaseModel):
    id: str
    kind: Literal["decoder", "encoder", "cnn"]
    family: str
    hf_id: str | None
    total_params: int
    active_params: int
    description: str
    aliases: list[str]


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


class ModelList(BaseModel):
    items: list[ModelSummary]
    count: int
