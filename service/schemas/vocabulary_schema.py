"""The benchmark vocabulary as JSON Schema, so the API document states what a submission is
checked against (issue 26: a fingerprint's required keys, a workload's parameters and metrics
were rules the document did not state).

Built from :mod:`service.core.catalog.vocabulary`, the one definition the checks use:

- :func:`fingerprint_schema`: every field of the fingerprint, required (nullable ones may be
  null), typed, numeric ones in their physical ranges, nothing else;
- :func:`result_rules`: one branch per workload (``oneOf`` on ``workload``): its parameters --
  types, choices, bounds, the required ones, ``llm-train``'s ``fsdp_policy`` rule -- and its
  metrics, each in its one unit, non-negative.
"""

from __future__ import annotations

from typing import Any

from service.core.catalog.fingerprint import PCI_ID_PATTERN
from service.core.catalog.vocabulary import (
    FINGERPRINT_NULLABLE,
    FINGERPRINT_RANGES,
    FINGERPRINT_REQUIRED,
    FINGERPRINT_TYPES,
    WORKLOADS,
    ParamDef,
    WorkloadDef,
)
from service.schemas.common import FLOAT_ABS_MAX, INT64_MAX, INT64_MIN, NUL_FREE_PATTERN, json_object_schema

DOUBLE_MAX = 1.7976931348623157e308
NUL_FREE = NUL_FREE_PATTERN


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [schema, {"type": "null"}]}


def _fingerprint_field(name: str) -> dict[str, Any]:
    kind = FINGERPRINT_TYPES[name]
    schema: dict[str, Any]
    if kind == "text":
        schema = {"type": "string", "pattern": PCI_ID_PATTERN if name == "pci_device_id" else NUL_FREE}
        if name in FINGERPRINT_REQUIRED:
            schema["minLength"] = 1
    elif kind == "boolean":
        schema = {"type": "boolean"}
    elif kind == "number":
        lo, hi = FINGERPRINT_RANGES[name]
        schema = {"type": "number", "minimum": lo, "maximum": hi}
    elif kind == "object":
        schema = json_object_schema()
    else:  # a flag: a boolean, or the environment variable's text
        schema = {"anyOf": [{"type": "boolean"}, {"type": "string", "pattern": NUL_FREE}]}
    return _nullable(schema) if name in FINGERPRINT_NULLABLE else schema


def fingerprint_schema() -> dict[str, Any]:
    fields = (*FINGERPRINT_REQUIRED, *FINGERPRINT_NULLABLE)
    return {
        "type": "object",
        "description": "the software/hardware stack: every field below, nullable ones null where the host has "
        "no such thing, nothing else (GET /v1/workloads lists them)",
        "properties": {name: _fingerprint_field(name) for name in fields},
        "required": list(fields),
        "additionalProperties": False,
    }


def _param(p: ParamDef) -> dict[str, Any]:
    schema: dict[str, Any]
    if p.type == "bool":
        schema = {"type": "boolean"}
    elif p.type == "int":
        lo = INT64_MIN if p.minimum is None else int(p.minimum)
        hi = INT64_MAX if p.maximum is None else int(p.maximum)
        schema = {"type": "integer", "minimum": lo, "maximum": hi}
    elif p.type == "float":
        lo_f = -FLOAT_ABS_MAX if p.minimum is None else p.minimum
        hi_f = FLOAT_ABS_MAX if p.maximum is None else p.maximum
        schema = {"type": "number", "minimum": lo_f, "maximum": hi_f}
    elif p.type == "enum":
        schema = {"type": "string", "enum": list(p.choices)}
    else:
        schema = {"type": "string", "pattern": NUL_FREE}
    if p.description:
        schema["description"] = p.description
    return schema if p.required else _nullable(schema)


def _fsdp_policy_rule(w: WorkloadDef) -> dict[str, Any]:
    """llm-train: ``mixed_precision: fsdp_policy`` needs ``sharding: fsdp`` and an ``amp_*``
    precision (``canonical_parameters``)."""
    return {
        "if": {"required": ["mixed_precision"], "properties": {"mixed_precision": {"const": "fsdp_policy"}}},
        "then": {
            "required": ["sharding", "precision"],
            "properties": {"sharding": {"const": "fsdp"}, "precision": {"enum": ["amp_bf16", "amp_fp16"]}},
        },
    }


def parameters_schema(w: WorkloadDef) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {p.name: _param(p) for p in w.parameters},
        "required": [p.name for p in w.parameters if p.required],
        "additionalProperties": False,
    }
    if w.param("mixed_precision") is not None:
        schema["allOf"] = [_fsdp_policy_rule(w)]
    return schema


def metrics_schema(w: WorkloadDef) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            m.name: {
                "type": "object",
                "properties": {
                    "value": {"type": "number", "minimum": 0, "maximum": DOUBLE_MAX},
                    "unit": {"const": m.unit},
                },
                "required": ["value", "unit"],
                "additionalProperties": False,
                "description": m.description or f"in {m.unit}",
            }
            for m in w.metrics
        },
        "additionalProperties": False,
    }


def result_rules() -> dict[str, Any]:
    """``oneOf`` one branch per workload: its parameters and metrics."""
    return {
        "oneOf": [
            {
                "properties": {
                    "workload": {"const": w.name},
                    "parameters": parameters_schema(w),
                    "metrics": metrics_schema(w),
                }
            }
            for w in WORKLOADS.values()
        ]
    }
