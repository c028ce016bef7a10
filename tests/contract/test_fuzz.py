"""Schema fuzzing (issues 16 and 26): schemathesis drives every operation of the OpenAPI document
against the real app on a real database built by the real migrations (SQLite here; PostgreSQL
under GPU_ADVISOR_TEST_DATABASE_URL, as .ci/run runs it), with a key of each scope, rate limits
off, a fixed seed, at least 30 examples per operation, in every phase: explicit examples,
coverage of every boundary, fuzzing, and stateful scenarios along the links schemathesis infers.

The operations come from the app's own document, so a route added later is fuzzed without
touching this file. Every built-in check runs (server errors, status codes, content types,
response schemas and headers, negative data rejected, missing required headers, unsupported
methods), with two replaced by stricter or more exact ones:

- :func:`positive_data_accepted` instead of ``positive_data_acceptance``: a request the schema
  allows gets 2xx/3xx or a state answer (401/403 of a key, 404 of an unknown id or name, 409
  of a conflict with what is stored, 412 of a stale ETag, 429); a 422 only for a rule the
  operation declares in ``x-domain-rules`` -- rules JSON Schema cannot state: catalog
  membership of a name, the estimator's rules, the vocabulary checks that name every error of
  a run in one answer -- and every error of it of a declared type. Every other rule the code
  enforces is stated in the schema (patterns, lengths, enumerations, required keys, the
  vocabulary's per-workload parameters and metrics, cross-field rules as ``oneOf``/``if``).
- :func:`allow_lists_the_paths_methods` instead of ``allow_header_conformance`` (see there).

The fuzzed database is this module's own (random GPUs, prices, FX rates and runs are stored in
it), so no other test sees what the fuzzer wrote. The seed is fixed: the run is the same every
time; ``benchmarks/fuzz_long.py`` runs many more cases."""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import hypothesis
import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from schemathesis import Case
from schemathesis.config import SchemathesisConfig
from sqlalchemy import Engine

from service.api.app import create_app
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.api.benchmark_fixtures import fingerprint, new_pci, result, run
from tests.conftest import Template

SEED = 16
MAX_EXAMPLES = int(os.environ.get("GPU_ADVISOR_FUZZ_EXAMPLES", "30"))
STATEFUL_EXAMPLES = int(os.environ.get("GPU_ADVISOR_FUZZ_STATEFUL_EXAMPLES", "30"))
COUNT_FILE = os.environ.get("GPU_ADVISOR_FUZZ_COUNT_FILE")
"""benchmarks/fuzz_long.py: one line per case sent (operation, status) for its counts."""
SCOPES = ("read", "submit", "admin")

ACCEPTED = frozenset({401, 403, 404, 409, 412, 429})
"""Answers to schema-valid requests that are state, not shape: no or another key's scope (the
fuzzer tests keys), an unknown id or name, a conflict with what is stored, a stale ETag (412:
an If-Match the schema allows is stale unless it happens to be the current ETag), a rate limit
(off here). schemathesis's own positive-data check allows the same, except 412."""


@schemathesis.check
def positive_data_accepted(ctx, response, case: Case) -> None:  # type: ignore[no-untyped-def]
    """A request the schema allows is answered 2xx/3xx or with a state answer (:data:`ACCEPTED`);
    a 422 only for rules the operation declares it cannot state in JSON Schema
    (``x-domain-rules``: catalog membership, the estimator's rules), every error of it of a
    declared type. (Replaces schemathesis's ``positive_data_acceptance``, which knows no
    declared rules.)"""
    meta = case.meta
    status = response.status_code
    if meta is None or not meta.generation.mode.is_positive or status < 400 or status in ACCEPTED:
        return
    if any(v is None for v in (case.path_parameters or {}).values()):
        return  # a link took a path parameter from a null field (a dry run's result_id): not schema-valid
    if status == 422:
        declared = case.operation.definition.raw.get("x-domain-rules") or {}
        errors = json.loads(response.content).get("errors") or []
        undeclared = [e for e in errors if e.get("type") not in declared]
        if errors and not undeclared:
            return
        raise AssertionError(
            f"schema-valid request refused by rules the schema does not state: {undeclared or 'no errors named'}"
        )
    raise AssertionError(f"schema-valid request answered {status}: {response.content[:300]!r}")


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
    """On a 405 and on the 204 answer to ``OPTIONS``, ``Allow`` lists exactly the methods the URL
    answers, over every path of the document that matches it, and OPTIONS (served on every
    path, implicit in the document as schemathesis treats it). (Replaces schemathesis's
    ``allow_header_conformance``, which compares with one path item only: ``/v1/models/parse``
    also answers GET through ``/v1/models/{model_id}``, ``/v1/gpus/{ident}`` (GET) and
    ``/v1/gpus/{slug}`` (PATCH, DELETE) are one URL.)"""
    if response.status_code != 405 and response.request.method != "OPTIONS":
        return
    path = urlsplit(response.request.url).path
    if response.request.method == "OPTIONS" and response.status_code != 405:
        if not _templates_matching(path):
            return  # a URL no route serves is 404, as for any method
        if response.status_code != 204:
            raise AssertionError(f"OPTIONS {path} answered {response.status_code}, not 204")
    allow = {m.strip().upper() for m in (response.headers.get("allow") or [""])[0].split(",") if m.strip()}
    expected = _templates_matching(path) | {"OPTIONS"}
    if allow != expected:
        raise AssertionError(
            f"{response.status_code} to {response.request.method} {path}: Allow {sorted(allow)}, "
            f"the document's methods and OPTIONS {sorted(expected)}"
        )


CHECKS = {
    # replaced by positive_data_accepted (see there)
    "positive_data_acceptance": {"enabled": False},
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
def fuzz_engine(template: Template, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    """The module's own copy of the bootstrapped template (every test of it fuzzes one app)."""
    for url in template.copy(tmp_path_factory.mktemp("fuzz"), "fuzz"):
        engine = make_engine(url)
        yield engine
        engine.dispose()


def _fuzz_app(engine: Engine, template: Template) -> FastAPI:
    app = create_app(
        Settings(
            database_url=str(engine.url.render_as_string(hide_password=False)), rate_limits_enabled=False
        ),
        engine=engine,
    )
    app.state.read_model.adopt(template.read_model)
    return app


def _fuzz_keys(engine: Engine, app: FastAPI) -> dict[str, str]:
    """A key of each scope, and :func:`seed_state` stored with the submit key."""
    with UnitOfWork(make_session_factory(engine)) as uow:
        keys = {s: create_key(uow, name=f"fuzz-{s}-{uuid.uuid4().hex[:6]}", scope=s).secret for s in SCOPES}
    seed_state(app, keys["submit"])
    return keys


@pytest.fixture(scope="module")
def fuzz_app(fuzz_engine: Engine, template: Template) -> FastAPI:
    return _fuzz_app(fuzz_engine, template)


@pytest.fixture(scope="module")
def fuzz_keys(fuzz_engine: Engine, fuzz_app: FastAPI) -> dict[str, str]:
    return _fuzz_keys(fuzz_engine, fuzz_app)


@pytest.fixture
def stateful_app(template: Template, tmp_path: Path) -> Iterator[tuple[FastAPI, dict[str, str]]]:
    """The stateful phase's own database, seeded alike: which links a scenario can follow depends
    on what is stored, so sharing the module's database (which ``test_fuzz`` fills with random
    GPUs, prices and runs) would make the run depend on test order and on the xdist worker."""
    for url in template.copy(tmp_path, "fuzz-stateful"):
        engine = make_engine(url)
        app = _fuzz_app(engine, template)
        yield app, _fuzz_keys(engine, app)
        engine.dispose()


def seed_state(app: FastAPI, submit_key: str) -> None:
    """Something for every list a link reads ids from, stored through the API: a run on the
    H200 (results, a run id), one with a result above the GPU's peak (a quarantined result and
    its alert), one from a GPU the catalog does not know (a pending GPU and its alert). Without
    them the lists are empty and the stateful scenarios have no ids to follow."""
    over_peak = result("gemm", {"precision": "bf16"}, {"tflops": 5000.0})
    pci = new_pci()
    runs = [
        run([result(), result("gemm", {"precision": "bf16"}, {"tflops": 700.0})], host="fuzz-seed"),
        run([result(), over_peak], host="fuzz-seed"),
        run(
            [result("gemm", {"precision": "bf16"}, {"tflops": 500.0})],
            pci=pci,
            gpu_name=f"NVIDIA Fuzzcard {uuid.uuid4().hex[:6]}",
            memory_total=96 * 2**30,
            fp=fingerprint(pci, host_id="mid-fuzz-pending"),
            host="fuzz-pending",
        ),
    ]
    with TestClient(app) as c:
        outs = [
            c.post("/v1/benchmark-runs", json=body, headers={"Authorization": f"Bearer {submit_key}"})
            for body in runs
        ]
    assert [o.status_code for o in outs] == [201] * 3, [o.text[:300] for o in outs]
    assert outs[1].json()["quarantined_count"] == 1 and outs[2].json()["pending_gpu_id"]


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
        # a body that is not JSON text is refused (422, or 400 when not even UTF-8) as it is
        # read, before the key is looked at; anything else with a lower scope is 403
        undecodable = r.status_code == 400 or (
            r.status_code == 422
            and any(e.get("type") == "json_invalid" for e in json.loads(r.content).get("errors") or [])
        )
        assert r.status_code == 403 or undecodable, (other_scope, r.status_code, r.text[:300])


def test_fuzz_stateful(stateful_app: tuple[FastAPI, dict[str, str]]) -> None:
    """The stateful phase: scenarios that chain operations through the links schemathesis
    infers from the document (a created GPU read, patched and deleted; a submitted run read
    back; a pending GPU mapped...), every check on every step, with the key each step needs.

    As schemathesis's own runner does, scenarios run in the generate phase only, in suites of
    fixed seeds: the app's state (what earlier scenarios stored) changes which links a scenario
    can follow, so Hypothesis may find a suite's choices inconsistent with an earlier run of
    them (``FlakyStrategyDefinition``) -- that suite then ends and the next seed continues. A
    check that fails, even once, fails the test. It runs on its own database seeded by
    :func:`seed_state` alone, so the same seeds follow the same links whatever ran before."""
    fuzz_app, fuzz_keys = stateful_app
    schema.app = fuzz_app
    scenarios = [0]
    linked: dict[str, int] = {}  # steps whose inputs a link supplied, per link

    class Workflow(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            scenarios[0] += 1

        def step(self, input: Any) -> Any:
            if input.transition is not None and input.is_applied:
                linked[input.transition.id] = linked.get(input.transition.id, 0) + 1
            return super().step(input)

        def get_call_kwargs(self, case: Case) -> dict[str, Any]:
            return {
                "app": fuzz_app,
                "headers": {"Authorization": f"Bearer {fuzz_keys[required_scope(case)]}"},
            }

    for suite in range(20):
        if scenarios[0] >= STATEFUL_EXAMPLES:
            break
        Workflow.rule_order_seed = SEED + suite
        try:
            hypothesis.seed(SEED + suite)(Workflow).run(
                settings=hypothesis.settings(
                    max_examples=STATEFUL_EXAMPLES - scenarios[0],
                    phases=[hypothesis.Phase.generate],
                    stateful_step_count=10,
                    deadline=None,
                    database=None,
                    suppress_health_check=list(hypothesis.HealthCheck),
                )
            )
        except hypothesis.errors.FlakyStrategyDefinition:
            continue
    assert scenarios[0] >= STATEFUL_EXAMPLES, scenarios
    print(f"stateful: {scenarios[0]} scenarios, {sum(linked.values())} steps along {len(linked)} links")
    # the scenarios chain operations: steps take their ids from earlier answers along many links
    assert len(linked) >= 8 and sum(linked.values()) >= 15, linked
