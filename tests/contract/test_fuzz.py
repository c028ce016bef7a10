"""Schema fuzzing (issue 16): schemathesis drives every operation of the OpenAPI document
against the real app on a real database built by the real migrations (SQLite here; PostgreSQL
under GPU_ADVISOR_TEST_DATABASE_URL, as .ci/run runs it), with a key of each scope.

The operations come from the app's own document, so a route added later is fuzzed without
touching this file. Every built-in check runs (server errors, status codes, content types,
response schemas and headers, negative data rejected, positive data accepted, missing
required headers, unsupported methods and their ``Allow``), plus
:func:`schema_states_the_rules`. What is configured differently, and why:

- ``positive_data_acceptance`` also accepts 412 and 422. 412: a schema-valid ``If-Match`` is
  stale unless it happens to be the current ETag, which is state, not shape. 422: the domain
  rules a JSON Schema cannot state (a model or GPU name must be in the catalog, a result's
  metrics must be the workload's, a derived source needs a note, a cursor must be one this API
  issued) -- :func:`schema_states_the_rules` then fails any 422 on schema-valid data that a
  *schema-level* rule refused, so the exception is exactly the domain rules.

The fuzzed database is this module's own (random GPUs, prices, FX rates and runs are stored in
it), so no other test sees what the fuzzer wrote. Examples are bounded and the seed is fixed:
the run is the same every time, well under the 3-minute budget per database (the note in
tests/contract/README is the measured time); ``benchmarks/fuzz_long.py`` runs 10k+ cases."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import hypothesis
import pytest
import schemathesis
from fastapi import FastAPI
from schemathesis import Case
from schemathesis.config import SchemathesisConfig
from sqlalchemy import Engine

from service.api.app import create_app
from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.conftest import fresh_database_url

SEED = 16
MAX_EXAMPLES = int(os.environ.get("GPU_ADVISOR_FUZZ_EXAMPLES", "8"))
COUNT_FILE = os.environ.get("GPU_ADVISOR_FUZZ_COUNT_FILE")
"""benchmarks/fuzz_long.py: one line per case sent (operation, status) for its counts."""
SCOPES = ("read", "submit", "admin")

SCHEMA_LEVEL_ERRORS = frozenset(
    {
        "missing",
        "extra_forbidden",
        "string_type",
        "string_too_short",
        "string_too_long",
        "string_pattern_mismatch",
        "int_type",
        "int_parsing",
        "int_from_float",
        "float_type",
        "float_parsing",
        "bool_type",
        "bool_parsing",
        "greater_than",
        "greater_than_equal",
        "less_than",
        "less_than_equal",
        "multiple_of",
        "finite_number",
        "literal_error",
        "enum",
        "dict_type",
        "list_type",
        "model_type",
        "model_attributes_type",
        "too_short",
        "too_long",
        "datetime_type",
        "datetime_parsing",
        "datetime_from_date_parsing",
        "date_type",
        "date_parsing",
        "date_from_datetime_parsing",
        "decimal_type",
        "decimal_parsing",
        "decimal_max_digits",
        "decimal_max_places",
        "decimal_whole_digits",
        "json_invalid",
        "none_required",
    }
)
"""Pydantic refusals of a rule a JSON Schema states (type, bound, length, pattern, enum,
required, additional properties): on schema-valid data they mean the document is wrong."""

MERGED_BODIES = frozenset({"PATCH /v1/gpus/{slug}"})
"""Operations whose body is validated only after it is merged into stored state (a JSON merge
patch over the GPU document): their 422s name fields of the merged document, which the patch's
schema cannot state; :func:`schema_states_the_rules` skips them."""


@schemathesis.check
def schema_states_the_rules(ctx, response, case: Case) -> None:  # type: ignore[no-untyped-def]
    """Schema-valid data refused by a schema-level rule: the document does not state a rule the
    code enforces (issue 16, 'the schema states the rules')."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or response.status_code != 422:
        return
    if case.operation.label in MERGED_BODIES:
        return
    errors = json.loads(response.content).get("errors") or []
    stated = [e for e in errors if e.get("type") in SCHEMA_LEVEL_ERRORS]
    if stated:
        raise AssertionError(
            f"schema-valid request refused by a rule the schema should state: {stated}; headers {case.headers!r}"
        )


def _templates_matching(url_path: str) -> set[str]:
    """The methods of every document path whose template matches ``url_path``."""
    methods: set[str] = set()
    for template, item in DOCUMENT["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^/]+\\\}", "[^/]+", re.escape(template)) + "$"
        if template.startswith("/v1/models/") and "{" in template:  # {model_id:path}: ids carry slashes
            pattern = pattern.replace("[^/]+", ".+")
        if re.match(pattern, url_path):
            methods |= {m.upper() for m in item if m in ("get", "put", "post", "delete", "patch")}
    return methods


@schemathesis.check
def allow_lists_the_paths_methods(ctx, response, case: Case) -> None:  # type: ignore[no-untyped-def]
    """On a 405, ``Allow`` lists exactly the methods the URL answers, over every path of the
    document that matches it. (Replaces schemathesis's ``allow_header_conformance``, which
    compares with one path item only: ``/v1/models/parse`` also answers GET through
    ``/v1/models/{model_id}``, ``/v1/gpus/{ident}`` (GET) and ``/v1/gpus/{slug}`` (PATCH,
    DELETE) are one URL.)"""
    if response.status_code != 405:
        return
    path = urlsplit(response.request.url).path
    allow = {m.strip().upper() for m in (response.headers.get("allow") or [""])[0].split(",") if m.strip()}
    expected = _templates_matching(path)
    if allow - {"HEAD", "OPTIONS"} != expected:
        raise AssertionError(
            f"405 on {path}: Allow {sorted(allow)}, the document's methods {sorted(expected)}"
        )


CHECKS = {
    "positive_data_acceptance": {
        "expected-statuses": ["2xx", "3xx", "401", "403", "404", "409", "412", "422", "429"]
    },
    # 413: a run with more results than allowed per run is refused as too large, as documented
    "negative_data_rejection": {
        "expected-statuses": [
            "400",
            "401",
            "403",
            "404",
            "405",
            "406",
            "409",
            "413",
            "415",
            "422",
            "428",
            "429",
        ]
    },
    # a missing If-Match is 428 Precondition Required (RFC 6585), as documented
    "missing_required_header": {"expected-statuses": ["400", "401", "403", "406", "415", "422", "428"]},
    "allow_header_conformance": {"enabled": False},  # replaced by allow_lists_the_paths_methods (see there)
}
DOCUMENT = create_app(Settings(database_url="sqlite://")).openapi()
schema = schemathesis.openapi.from_dict(
    DOCUMENT, config=SchemathesisConfig.from_dict({"seed": SEED, "checks": CHECKS})
)
"""Every phase (explicit examples, coverage of every boundary, fuzzing) with the key of the
scope each operation requires (``x-required-scope``; reads get a read key)."""
other_scopes = schemathesis.openapi.from_dict(
    DOCUMENT,
    config=SchemathesisConfig.from_dict(
        {
            "seed": SEED,
            "checks": CHECKS,
            "phases": {"coverage": {"enabled": False}, "examples": {"enabled": False}},
        }
    ),
)
"""The other scopes: a few fuzzed cases each, to show a lower scope is refused (403) and a
higher one answers like the required one, on every operation."""


@pytest.fixture(scope="module")
def fuzz_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    for url in fresh_database_url(tmp_path_factory.mktemp("fuzz"), "fuzz"):
        engine = make_engine(url)
        bootstrap(engine, Settings(database_url=url))
        yield engine
        engine.dispose()


@pytest.fixture(scope="module")
def fuzz_app(fuzz_engine: Engine) -> FastAPI:
    return create_app(
        Settings(
            database_url=str(fuzz_engine.url.render_as_string(hide_password=False)), rate_limits_enabled=False
        ),
        engine=fuzz_engine,
    )


@pytest.fixture(scope="module")
def fuzz_keys(fuzz_engine: Engine) -> dict[str, str]:
    with UnitOfWork(make_session_factory(fuzz_engine)) as uow:
        return {s: create_key(uow, name=f"fuzz-{s}-{uuid.uuid4().hex[:6]}", scope=s).secret for s in SCOPES}


def required_scope(case: Case) -> str:
    return str(case.operation.definition.raw.get("x-required-scope") or "read")


def call(case: Case, app: FastAPI, key: str) -> Any:
    """Send the case with ``key`` -- unless schemathesis is testing the missing credential
    itself (a negative case of the operation's ``security``), which must then be a 401."""
    case.operation.schema.app = app  # checks that send requests of their own (ignored_auth) use it too
    headers = (
        {} if case.operation.schema.is_security_param_negated(case) else {"Authorization": f"Bearer {key}"}
    )
    try:
        response = case.call_and_validate(app=app, headers=headers)
    finally:
        if COUNT_FILE:
            with open(COUNT_FILE, "a") as f:
                f.write(f"{case.operation.label}\n")
    return response


@schema.parametrize()
@hypothesis.seed(SEED)
@hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(hypothesis.HealthCheck),
)
def test_fuzz(case: Case, fuzz_app: FastAPI, fuzz_keys: dict[str, str]) -> None:
    call(case, fuzz_app, fuzz_keys[required_scope(case)])


@pytest.fixture(params=SCOPES)
def other_scope(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@other_scopes.parametrize()
@hypothesis.seed(SEED)
@hypothesis.settings(
    max_examples=2, deadline=None, database=None, suppress_health_check=list(hypothesis.HealthCheck)
)
def test_fuzz_other_scopes(
    case: Case, fuzz_app: FastAPI, fuzz_keys: dict[str, str], other_scope: str
) -> None:
    if other_scope == required_scope(case):
        return  # test_fuzz covers it, every phase
    r = call(case, fuzz_app, fuzz_keys[other_scope])
    sent = r.request.headers.get("Authorization")
    if (
        SCOPES.index(other_scope) < SCOPES.index(required_scope(case))
        and sent == f"Bearer {fuzz_keys[other_scope]}"
    ):
        assert r.status_code == 403, (other_scope, r.status_code, r.text)
