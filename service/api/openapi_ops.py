"""OpenAPI statements of the operating limits, from the same settings that enforce them:
the rate-limit rule of each operation (``x-rate-limit`` and a sentence in its description),
``Retry-After`` on 429, 408 where a body is read, and the real page-size cap of every paged
list (``limit`` above ``page_size_max`` is clamped to it)."""

from __future__ import annotations

from typing import Any

from service.api.problems import PROBLEM_MEDIA_TYPE, PROBLEM_SCHEMA_REF
from service.api.ratelimit import RuleTable
from service.settings import Settings

RETRY_AFTER = {
    "description": "seconds until the request would be allowed",
    "schema": {"type": "integer", "minimum": 1},
}


def document_operations(schema: dict[str, Any], settings: Settings, table: RuleTable) -> dict[str, Any]:
    schema.setdefault("components", {}).setdefault("headers", {})["Retry-After"] = RETRY_AFTER
    for path, item in schema.get("paths", {}).items():
        for method, op in item.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            responses = op["responses"]
            if "429" in responses:
                responses["429"]["headers"] = {"Retry-After": {"$ref": "#/components/headers/Retry-After"}}
            if "requestBody" in op:
                responses["408"] = {
                    "description": f"the request body did not arrive within {settings.body_read_timeout_s:g} s",
                    "content": {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_SCHEMA_REF}},
                }
            rule = table.for_operation(method, path)
            if rule is not None:
                r = rule.rule
                limit: dict[str, Any] = {"rule": rule.name, "per_minute": r.per_minute, "burst": r.burst,
                                         "per": "API key, else client address"}
                when = ""
                if r.above_page_size is not None:
                    limit["above_page_size"] = r.above_page_size
                    when = f" for pages of more than {r.above_page_size} items"
                op["x-rate-limit"] = limit
                sentence = (
                    f"Rate limit `{rule.name}`{when}: bursts of {r.burst}, then {r.per_minute:g} per minute, "
                    "per API key (else per client address); over it: 429 with Retry-After."
                )
                op["description"] = f"{op['description']}\n\n{sentence}" if op.get("description") else sentence
            for param in op.get("parameters", []):
                if param.get("in") == "query" and param.get("name") == "limit" and method == "get":
                    param["description"] = (
                        f"page size: default {settings.page_size_default}, at most {settings.page_size_max} "
                        "(a larger value is clamped to it)"
                    )
    return schema
