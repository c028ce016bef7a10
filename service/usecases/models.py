"""Model architecture look-ups: presets, Hugging Face config bodies, parameter counts.

Answers are the core's :class:`~service.core.catalog.models.ModelSpec`; the API turns them into wire
models (``api.presenters.models``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.core.catalog.models import (
    ModelNotFound,
    ModelSpec,
    UnsupportedArchitecture,
    from_hf_config,
    from_parameter_count,
    get_model,
    list_models,
)
from service.core.estimation.estimate import ONE_MODEL_INPUT, has_one_model_input
from service.usecases.errors import (
    CONFIGURATION,
    UNKNOWN_MODEL,
    UNSUPPORTED_MODEL,
    FieldError,
    Invalid,
    NotFound,
)


def list_all() -> list[ModelSpec]:
    """Every preset, in catalogue order."""
    return list(list_models())


def lookup(name: str) -> ModelSpec:
    try:
        return get_model(name)
    except ModelNotFound as exc:
        raise NotFound(str(exc), close_matches=exc.close_matches) from None


def resolve_model_input(
    model: str | None,
    hf_config: Mapping[str, Any] | None,
    params_billion: float | None,
    loc: tuple[str | int, ...] = (),
) -> tuple[ModelSpec, str | None]:
    """Exactly one of: a preset name, a Hugging Face config.json body, a parameter count."""
    if not has_one_model_input(model, hf_config, params_billion):
        raise Invalid(
            ONE_MODEL_INPUT,
            fields=[
                FieldError(
                    (*loc, "model"), "exactly one of model / hf_config / params_billion", type=CONFIGURATION
                )
            ],
        )
    if model is not None:
        try:
            return get_model(model), None
        except ModelNotFound as exc:
            raise Invalid(
                str(exc),
                fields=[FieldError((*loc, "model"), str(exc), type=UNKNOWN_MODEL)],
                close_matches=exc.close_matches,
            ) from None
    if hf_config is not None:
        try:
            return from_hf_config(hf_config), None
        except UnsupportedArchitecture as exc:
            raise Invalid(
                str(exc), fields=[FieldError((*loc, "hf_config"), str(exc), type=UNSUPPORTED_MODEL)]
            ) from None
        except (KeyError, TypeError, ValueError) as exc:
            raise Invalid(
                f"hf_config is not a usable config.json: {exc}",
                fields=[FieldError((*loc, "hf_config"), str(exc), type=UNSUPPORTED_MODEL)],
            ) from None
    assert params_billion is not None
    try:
        spec, shape = from_parameter_count(params_billion)
    except ValueError as exc:
        raise Invalid(
            str(exc), fields=[FieldError((*loc, "params_billion"), str(exc), type=CONFIGURATION)]
        ) from None
    return spec, shape
