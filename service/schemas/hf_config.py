"""A Hugging Face ``config.json`` as a request carries it (``hf_config``, ``POST /v1/models/parse``):
the rules :func:`service.core.catalog.models.from_hf_config` checks, stated in the schema --
a ``model_type`` it models, the five shape fields as whole numbers in range (inside
``text_config`` for the ``llama4`` multimodal wrapper, whose text model is what is counted),
multi-head latent attention keys (``kv_lora_rank``, ``q_lora_rank``) only with a DeepSeek
``model_type``. What a schema cannot state (the heads a multiple of the KV heads, an MoE variant
of a dense family, an activation other than SwiGLU, the MLA head widths a DeepSeek config needs)
is refused as ``unsupported_model`` (``x-domain-rules``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

from service.core.catalog.hf_config import (
    HF_CONFIG_SIZES,
    HF_CONFIG_TYPES,
    HF_CONFIG_WRAPPED,
    MLA_KEYS,
    MLA_TYPES,
)
from service.schemas.common import json_int, json_object_schema, safe_json

_SIZES: dict[str, Any] = {
    key: {"type": "integer", "minimum": 1, "maximum": largest} for key, largest in HF_CONFIG_SIZES.items()
}

HF_CONFIG_SCHEMA: dict[str, Any] = json_object_schema(
    description="a config.json body as Hugging Face publishes it (other keys are read where the model uses them)",
    required=["model_type"],
    properties={"model_type": {"type": "string", "enum": list(HF_CONFIG_TYPES)}},
    allOf=[
        {
            "if": {
                "required": ["model_type"],
                "properties": {"model_type": {"enum": list(HF_CONFIG_WRAPPED)}},
            },
            "then": {
                "required": ["text_config"],
                "properties": {
                    "text_config": {"type": "object", "required": list(HF_CONFIG_SIZES), "properties": _SIZES}
                },
            },
            "else": {"required": list(HF_CONFIG_SIZES), "properties": _SIZES},
        },
        {
            "if": {"required": ["model_type"], "properties": {"model_type": {"enum": list(MLA_TYPES)}}},
            "then": {},
            "else": {"properties": {key: {"not": {}} for key in MLA_KEYS}},
        },
    ],
)


def stated_rules(cfg: dict[str, Any]) -> dict[str, Any]:
    """Enforce what :data:`HF_CONFIG_SCHEMA` states, so a body the schema refuses is refused
    whole (a batch included, which otherwise answers such an item per item). A size given as
    ``8.0`` is JSON Schema's integer and is read as ``8``."""
    mtype = cfg.get("model_type")
    if mtype not in HF_CONFIG_TYPES:
        raise ValueError(f"model_type must be one of: {', '.join(HF_CONFIG_TYPES)}")
    if mtype not in MLA_TYPES and any(key in cfg for key in MLA_KEYS):
        raise ValueError(
            f"multi-head latent attention (kv_lora_rank, q_lora_rank) is modelled for model_type "
            f"{' and '.join(MLA_TYPES)} only"
        )
    if mtype in HF_CONFIG_WRAPPED:
        inner = cfg.get("text_config")
        if not isinstance(inner, dict):
            raise ValueError(f"a {mtype} config.json needs its text_config object")
        sizes = {
            key: _whole(inner.get(key), f"text_config.{key}", largest)
            for key, largest in HF_CONFIG_SIZES.items()
        }
        return {**cfg, "text_config": {**inner, **sizes}}
    sizes = {key: _whole(cfg.get(key), key, largest) for key, largest in HF_CONFIG_SIZES.items()}
    return {**cfg, **sizes}


def _whole(value: Any, key: str, largest: int) -> int:
    refusal = f"{key} must be a whole number from 1 to {largest}"
    try:
        n = int(json_int(value))
    except ValueError:
        raise ValueError(refusal) from None
    if not 1 <= n <= largest:
        raise ValueError(refusal)
    return n


HfConfigBody = Annotated[dict[str, Any], AfterValidator(safe_json), WithJsonSchema(HF_CONFIG_SCHEMA)]
"""``POST /v1/models/parse``'s body: the whole body is the config, so the model builder's own
refusal (``unsupported_model``, naming the rule) is already a refusal of the whole request."""

HfConfig = Annotated[
    dict[str, Any], AfterValidator(safe_json), AfterValidator(stated_rules), WithJsonSchema(HF_CONFIG_SCHEMA)
]
"""``hf_config`` inside a request: the schema's rules are checked with the body's other fields."""
