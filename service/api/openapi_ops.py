"""OpenAPI statements of the operating limits, from the same settings that enforce them:
the rate-limit rule of each operation (``x-rate-limit`` and a sentence in its description),
``Retry-After`` on 429, 408 where a body is read, and the real page-size cap of every paged
list (``limit`` above ``page_size_max`` is clamped to it)."""

from __future__ import annotations

from typing import Any

from fastapi.routing import iter_route_contexts
from pydantic import BaseModel

from service.api.limits import BodyLimits
from service.api.problems import PROBLEM_MEDIA_TYPE, PROBLEM_SCHEMA_REF
from service.api.ratelimit import RuleTable
from service.schemas.common import SAFE_JSON_MARK, SAFE_JSON_REF
from service.schemas.gpus import CATALOG_SOURCES
from service.settings import Settings
from service.usecases.errors import (
    CONFIGURATION,
    DUPLICATE_GPU,
    UNKNOWN_GPU,
    UNKNOWN_MODEL,
    UNSUPPORTED_MODEL,
)

RETRY_AFTER = {
    "description": "seconds until the request would be allowed",
    "schema": {"type": "integer", "minimum": 1},
}


ALLOW = {"description": "the methods this path accepts", "schema": {"type": "string"}}
REQUIRED_HEADERS = frozenset({"if-match"})
"""Headers the handlers require although FastAPI sees them as optional (so that a missing one
is the documented 428, not a 422): the schema marks them required."""


def _problem(description: str) -> dict[str, Any]:
    return {"description": description, "content": {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_SCHEMA_REF}}}


def document_bodies(schema: dict[str, Any], models: dict[str, type[BaseModel]]) -> None:
    """Bodies a route reads as a plain JSON object and validates itself (a GPU document is
    checked after a merge, with errors at paths inside it): the schema names the model, whose
    definition joins the components (``x-body-model`` on the operation says which)."""
    comps = schema.setdefault("components", {}).setdefault("schemas", {})
    for item in schema.get("paths", {}).values():
        for op in item.values():
            name = op.get("x-body-model") if isinstance(op, dict) else None
            if name is None:
                continue
            if name not in comps:
                doc = models[name].model_json_schema(ref_template="#/components/schemas/{model}")
                for def_name, definition in doc.pop("$defs", {}).items():
                    comps.setdefault(def_name, definition)
                comps[name] = doc
            body = op["requestBody"]["content"]["application/json"]
            body["schema"] = {"$ref": f"#/components/schemas/{name}"}
            del op["x-body-model"]


SCOPE_RANK = {"read": 0, "submit": 1, "admin": 2}
BEARER = {"type": "http", "scheme": "bearer", "description": "an API key: `Authorization: Bearer gpa_...`"}


def _required_scope(dependant: Any) -> str | None:
    found: list[str] = []

    def walk(d: Any) -> None:
        scope = getattr(d.call, "required_scope", None)
        if scope is not None:
            found.append(scope)
        for sub in d.dependencies:
            walk(sub)

    walk(dependant)
    return max(found, key=SCOPE_RANK.__getitem__) if found else None


def document_security(schema: dict[str, Any], routes: list[Any], settings: Settings) -> None:
    """Each operation's key requirement, from the dependency that enforces it: ``x-required-scope``
    (read < submit < admin) and, where a key is needed with these settings, ``security`` with
    the bearer scheme (reads need none unless ``read_requires_key``)."""
    schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearerAuth"] = BEARER
    for context in iter_route_contexts(routes):
        route = context.original_route
        dependant = getattr(route, "dependant", None)
        scope = _required_scope(dependant) if dependant is not None else None
        if scope is None or not context.path_format:
            continue
        for method in getattr(route, "methods", ()):
            op = schema.get("paths", {}).get(context.path_format, {}).get(method.lower())
            if op is None:
                continue
            op["x-required-scope"] = scope
            if scope != "read" or settings.read_requires_key:
                op["security"] = [{"bearerAuth": []}]


_MODEL_RULES = {
    UNKNOWN_MODEL: "a model name no preset, alias or Hugging Face id of GET /v1/models resolves",
    UNSUPPORTED_MODEL: "a config.json the estimator does not model beyond what the schema states (heads not a "
    "multiple of the KV heads, an MoE variant of a dense family, an activation other than SwiGLU)",
    CONFIGURATION: "a combination the estimator refuses (QLoRA in fp32, a tensor-parallel degree that does not "
    "divide the KV heads, a deadline or per-run budget without workload.tokens, serving of a non-decoder...)",
}
_RUN_RULES = {
    "vocabulary": "what only the vocabulary's checks decide, all named in one answer (GET /v1/workloads)",
    "idempotency_key": "Idempotency-Key, when given, equals the body's run_id",
}
DOMAIN_RULES: dict[tuple[str, str], dict[str, str]] = {
    ("post", "/v1/benchmark-runs"): _RUN_RULES,
    ("post", "/v1/benchmark-runs/validate"): _RUN_RULES,
    ("post", "/v1/estimate"): {**_MODEL_RULES, UNKNOWN_GPU: "a GPU name the catalog does not resolve"},
    ("post", "/v1/recommend"): {
        **_MODEL_RULES,
        UNKNOWN_GPU: "a GPU name of the constraints the catalog does not resolve",
    },
    ("post", "/v1/models/parse"): {UNSUPPORTED_MODEL: _MODEL_RULES[UNSUPPORTED_MODEL]},
    ("post", "/v1/gpus"): {
        CATALOG_SOURCES: "every figure group with a value has a source of that group; a derived source names the "
        "sibling it was derived from, the figures (keys of its group) and the derivation (note)"
    },
    ("patch", "/v1/gpus/{slug}"): {
        CATALOG_SOURCES: "the merged document follows the GpuDocument's provenance rules",
        "immutable_slug": "the slug cannot change",
    },
    ("get", "/v1/compare"): {DUPLICATE_GPU: "two names of the list that name one GPU"},
}
"""The rules a JSON Schema cannot state, per operation (``x-domain-rules``): the error ``type``
of each and what it means. A 422 on a request the schema allows carries only these types
(tests/contract/test_fuzz.py checks it)."""


def refer_safe_json(node: Any) -> Any:
    """Replace the free-form JSON marks of the models' schemas with references to the
    ``SafeJsonValue`` component."""
    if isinstance(node, dict):
        if node == SAFE_JSON_MARK:
            return dict(SAFE_JSON_REF)
        return {k: refer_safe_json(v) for k, v in node.items()}
    if isinstance(node, list):
        return [refer_safe_json(v) for v in node]
    return node


def _document_outages(responses: dict[str, Any], method: str) -> None:
    """503 on every operation (the database is unavailable, busy or read-only) and 507 on
    writes (its disk is full), each with Retry-After (``service.db.errors``)."""
    retry = {"Retry-After": {"$ref": "#/components/headers/Retry-After"}}
    responses["503"] = {
        **_problem(
            "the database is unavailable, busy or read-only (`database-unavailable`, `database-busy`, "
            "`database-read-only`); nothing was changed; retry after Retry-After seconds"
        ),
        "headers": retry,
    }
    if method.upper() in ("POST", "PUT", "PATCH", "DELETE"):
        responses["507"] = {
            **_problem("the database's disk is full (`storage-full`): nothing was stored; retry later"),
            "headers": retry,
        }


def document_operations(schema: dict[str, Any], settings: Settings, table: RuleTable) -> dict[str, Any]:
    schema.setdefault("components", {}).setdefault("headers", {})["Retry-After"] = RETRY_AFTER
    schema["components"]["headers"]["Allow"] = ALLOW
    for path, item in schema.get("paths", {}).items():
        for method, op in item.items():
            if not isinstance(op, dict) or "responses" not in op:
                continue
            responses = op["responses"]
            for param in op.get("parameters", []):
                if param.get("schema", {}).pop("x-comma-separated", False):
                    param["style"], param["explode"] = "form", False  # gpus=l40,l20
                if param.get("in") != "header":
                    continue
                # a header is present (a string) or absent: never JSON null
                branches = [b for b in param["schema"].get("anyOf", []) if b.get("type") != "null"]
                if len(branches) == 1:
                    del param["schema"]["anyOf"]
                    param["schema"].update(branches[0])
                if param.get("name", "").lower() in REQUIRED_HEADERS:
                    param["required"] = True
            if any(
                p.get("in") == "header" and p.get("name", "").lower() == "if-match"
                for p in op.get("parameters", [])
            ):
                responses.setdefault("412", _problem("If-Match does not match the current ETag"))
                responses.setdefault("428", _problem("If-Match missing"))
            responses["405"] = {
                **_problem("this method is not allowed on this path; `Allow` lists the ones that are"),
                "headers": {"Allow": {"$ref": "#/components/headers/Allow"}},
            }
            if "requestBody" in op:
                responses["400"] = _problem(
                    "the body is not JSON text this API can read (not UTF-8, or nested past the parser's limit)"
                )
            if "429" in responses:
                responses["429"]["headers"] = {"Retry-After": {"$ref": "#/components/headers/Retry-After"}}
            _document_outages(responses, method)
            if (method, path) in DOMAIN_RULES:
                op["x-domain-rules"] = DOMAIN_RULES[method, path]
            if "requestBody" in op:
                body_limit = BodyLimits(settings.max_body_bytes).for_operation(method, path)
                op["x-body-limit-bytes"] = body_limit
                said = responses.get("413", {}).get("description") or "Request body over the size limit"
                responses["413"] = _problem(f"{said} (this operation's body limit: {body_limit} bytes)")
                responses["408"] = {
                    "description": f"the request body did not arrive within {settings.body_read_timeout_s:g} s",
                    "content": {PROBLEM_MEDIA_TYPE: {"schema": PROBLEM_SCHEMA_REF}},
                }
            rule = table.for_operation(method, path)
            if rule is not None:
                r = rule.rule
                limit: dict[str, Any] = {
                    "rule": rule.name,
                    "per_minute": r.per_minute,
                    "burst": r.burst,
                    "per": "API key, else client address",
                }
                when = ""
                if r.above_page_size is not None:
                    limit["above_page_size"] = r.above_page_size
                    when = f" for pages of more than {r.above_page_size} items"
                op["x-rate-limit"] = limit
                sentence = (
                    f"Rate limit `{rule.name}`{when}: bursts of {r.burst}, then {r.per_minute:g} per minute, "
                    "per API key (else per client address); over it: 429 with Retry-After."
                )
                op["description"] = (
                    f"{op['description']}\n\n{sentence}" if op.get("description") else sentence
                )
            for param in op.get("parameters", []):
                if param.get("in") == "query" and param.get("name") == "limit" and method == "get":
                    param["description"] = (
                        f"page size: default {settings.page_size_default}, at most {settings.page_size_max} "
                        "(a larger value is clamped to it)"
                    )
    _standard_keywords(schema)
    return schema


_KEYWORDS = {"ge": "minimum", "le": "maximum", "gt": "exclusiveMinimum", "lt": "exclusiveMaximum"}


def _standard_keywords(node: Any) -> None:
    """Bounds Pydantic could not fold into a JSON Schema keyword (an integer type wrapped in a
    validator, e.g. ``JsonInt`` in a union) come out under their Python names: spell them as
    JSON Schema does, so a generated client and the fuzzer see them."""
    if isinstance(node, dict):
        if node.get("type") in ("integer", "number"):
            for py, js in _KEYWORDS.items():
                if py in node:
                    node.setdefault(js, node.pop(py))
        if "patternProperties" in node and "additionalProperties" not in node:
            # a dict whose keys are constrained (SafeStr keys: NUL-free) comes out as
            # patternProperties; without this, a key outside the pattern may hold anything by
            # JSON Schema, while the server refuses it: say so
            node["additionalProperties"] = False
        for value in node.values():
            _standard_keywords(value)
    elif isinstance(node, list):
        for value in node:
            _standard_keywords(value)
