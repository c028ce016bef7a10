"""Model architecture look-ups: presets, Hugging Face config bodies, parameter counts."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from service.core.models import (
    DecoderSpec,
    ModelNotFound,
    ModelSpec,
    UnsupportedArchitecture,
    from_hf_config,
    from_parameter_count,
    get_model,
    list_models,
)
from service.schemas.models import ModelDetail, ModelList, ModelSummary
from service.usecases.errors import FieldError, Invalid, NotFound


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


def detail(m: ModelSpec, assumed_shape: str | None = None) -> ModelDetail:
    config = {
        f.name: getattr(m, f.name)
        for f in dataclasses.fields(m)
        if f.name not in {"aliases", "source", "notes", "id", "kind", "family", "hf_id"}
    }
    per_layer = m.per_layer_breakdown() if isinstance(m, DecoderSpec) else None
    kv = m.kv_cache_bytes_per_token(2.0) if isinstance(m, DecoderSpec) else None
    return ModelDetail(
        **_summary(m),
        config={k: (list(v) if isinstance(v, tuple) else v) for k, v in config.items()},
        parameter_breakdown=m.parameter_breakdown(),
        per_layer_breakdown=per_layer,
        kv_cache_bytes_per_token_bf16=kv,
        source=m.source,
        notes=m.notes,
        assumed_shape=assumed_shape,
    )


def list_all() -> ModelList:
    items = [ModelSummary(**_summary(m)) for m in list_models()]
    return ModelList(items=items, count=len(items))


def lookup(name: str) -> ModelSpec:
    try:
        return get_model(name)
    except ModelNotFound as exc:
        raise NotFound(str(exc), close_matches=exc.close_matches) from None


def resolve_model_input(
    model: str | None, hf_config: Mapping[str, Any] | None, params_billion: float | None, loc: tuple[str | int, ...] = ()
) -> tuple[ModelSpec, str | None]:
    """Exactly one of: a preset name, a Hugging Face config.json body, a parameter count."""
    given = [x for x in (model, hf_config, params_billion) if x is not None]
    if len(given) != 1:
        raise Invalid(
            "give exactly one of model, hf_config, params_billion",
            fields=[FieldError((*loc, "model"), "exactly one of model / hf_config / params_billion")],
        )
    if model is not None:
        try:
            return get_model(model), None
        except ModelNotFound as exc:
            raise Invalid(
                str(exc), fields=[FieldError((*loc, "model"), str(exc))], close_matches=exc.close_matches
            ) from None
    if hf_config is not None:
        try:
            return from_hf_config(hf_config), None
        except UnsupportedArchitecture as exc:
            raise Invalid(str(exc), fields=[FieldError((*loc, "hf_config"), str(exc))]) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise Invalid(
                f"hf_config is not a usable config.json: {exc}", fields=[FieldError((*loc, "hf_config"), str(exc))]
            ) from None
    assert params_billion is not None
    try:
        spec, shape = from_parameter_count(params_billion)
    except ValueError as exc:
        raise Invalid(str(exc), fields=[FieldError((*loc, "params_billion"), str(exc))]) from None
    return spec, shape
