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

HfConfig = Annotated[dict[str, Any], AfterValidator(safe_json), WithJsonSchema(HF_CONFIG_SCHEMA)]
