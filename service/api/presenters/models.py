"""Presenter of ``/v1/models``: core model specs -> the wire models."""

from __future__ import annotations

import dataclasses
from typing import Any

from service.core.catalog.models import DecoderSpec, ModelSpec
from service.schemas.models import ModelDetail, ModelList, ModelSummary

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


def model_summary(m: ModelSpec) -> ModelSummary:
    return ModelSummary(**_summary(m))


def model_detail(m: ModelSpec, assumed_shape: str | None = None) -> ModelDetail:
    """The architecture as the estimator uses it (every field but the descriptive ones),
    with the exact parameter breakdown, per layer and KV cache per token for decoders."""
    config = {f.name: getattr(m, f.name) for f in dataclasses.fields(m) if f.name not in _NOT_CONFIG}
    return ModelDetail(
        **_summary(m),
        config={k: (list(v) if isinstance(v, tuple) else v) for k, v in config.items()},
        parameter_breakdown=m.parameter_breakdown(),
        per_layer_breakdown=m.per_layer_breakdown() if isinstance(m, DecoderSpec) else None,
        kv_cache_bytes_per_token_bf16=m.kv_cache_bytes_per_token(2.0) if isinstance(m, DecoderSpec) else None,
        source=m.source,
        notes=m.notes,
        assumed_shape=assumed_shape,
    )


def model_list(models: list[ModelSpec]) -> ModelList:
    items = [model_summary(m) for m in models]
    return ModelList(items=items, count=len(items))
