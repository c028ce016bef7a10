"""A Hugging Face ``config.json`` as a request carries it (``hf_config``, ``POST /v1/models/parse``):
the rules :func:`service.core.catalog.models.from_hf_config` checks, stated in the schema --
a ``model_type`` it models, the five shape fields as whole numbers in range, no multi-head
latent attention (``kv_lora_rank``, ``q_lora_rank``). What a schema cannot state (the heads a
multiple of the KV heads, an MoE variant of a dense family, an activation other than SwiGLU) is
refused as ``unsupported_model`` (``x-domain-rules``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, WithJsonSchema

from service.core.catalog.models import HF_CONFIG_SIZES, HF_CONFIG_TYPES
from service.schemas.common import json_object_schema, safe_json

HF_CONFIG_SCHEMA: dict[str, Any] = json_object_schema(
    description="a config.json body as Hugging Face publishes it (other keys are read where the model uses them)",
    required=["model_type", *HF_CONFIG_SIZES],
    properties={
        "model_type": {"type": "string", "enum": list(HF_CONFIG_TYPES)},
        **{
            key: {"type": "integer", "minimum": 1, "maximum": largest}
            for key, largest in HF_CONFIG_SIZES.items()
        },
        "kv_lora_rank": {"not": {}},
        "q_lora_rank": {"not": {}},
    },
)


def stated_rules(cfg: dict[str, Any]) -> dict[str, Any]:
    """Enforce what :data:`HF_CONFIG_SCHEMA` states, so a body the schema refuses is refused
    whole (a batch included, which otherwise answers such an item per item). A size given as
    ``8.0`` is JSON Schema's integer and is read as ``8``."""
    if "kv_lora_rank" in cfg or "q_lora_rank" in cfg:
        raise ValueError("multi-head latent attention (kv_lora_rank, q_lora_rank) is not modelled")
    if cfg.get("model_type") not in HF_CONFIG_TYPES:
        raise ValueError(f"model_type must be one of: {', '.join(HF_CONFIG_TYPES)}")
    sizes = {key: _whole(cfg.get(key), key, largest) for key, largest in HF_CONFIG_SIZES.items()}
    return {**cfg, **sizes}


def _whole(value: Any, key: str, largest: int) -> int:
    whole = (
        not isinstance(value, bool)
        and isinstance(value, int | float)
        and float(value).is_integer()
        and 1 <= value <= largest
    )
    if not whole:
        raise ValueError(f"{key} must be a whole number from 1 to {largest}")
    return int(value)


HfConfigBody = Annotated[dict[str, Any], AfterValidator(safe_json), WithJsonSchema(HF_CONFIG_SCHEMA)]
"""``POST /v1/models/parse``'s body: the whole body is the config, so the model builder's own
refusal (``unsupported_model``, naming the rule) is already a refusal of the whole request."""

HfConfig = Annotated[
    dict[str, Any], AfterValidator(safe_json), AfterValidator(stated_rules), WithJsonSchema(HF_CONFIG_SCHEMA)
]
"""``hf_config`` inside a request: the schema's rules are checked with the body's other fields."""
