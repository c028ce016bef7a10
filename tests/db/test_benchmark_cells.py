"""The outlier test's two implementations agree (PostgreSQL computes it in SQL, SQLite and dry
runs in Python), and the one parameters hash is the documented one: SHA-256 of the canonical
JSON of ``{"workload", "parameters"}``, with the stored JSON from the same serialisation."""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import Engine, select, update

from service.core.catalog.vocabulary import WORKLOADS, canonical_parameters, parameters_identity, stable_hash
from service.core.evidence.results import CellKey
from service.db.engine import make_session_factory
from service.db.models import BenchmarkResult, Gpu
from service.db.uow import UnitOfWork
from service.schemas.benchmarks import BenchmarkRunIn
from service.settings import Settings
from service.usecases import benchmarks
from service.usecases.keys import Principal
from service.usecases.read_model import ReadModel
from tests.api.benchmark_fixtures import make_gpu, result, run_on
from tests.conftest import is_postgres


@pytest.mark.parametrize(
    ("workload", "params"),
    [
        ("gemm", {"precision": "BF16"}),
        ("resnet50-train", {"precision": "amp_bf16", "batch_size": 8.0, "channels_last": "off"}),
        (
            "llm-train",
            {
                "model": "Llama3-8B",
                "precision": "bf16",
                "batch_size": 2,
                "seq_len": 4096,
                "finetune": "lora",
                "lora_targets": "v_proj, q_proj",
            },
        ),
        (
            "llm-infer",
            {
                "model": "qwen2.5-7b",
                "precision": "bf16",
                "batch_size": 1,
                "input_len": 512,
                "output_len": 128,
                "engine": "vLLM",
            },
        ),
        ("collective", {"op": "all_reduce", "message_bytes": 2**30, "gpu_count": 8}),
    ],
)
def test_parameters_identity_is_the_documented_hash(workload: str, params: dict[str, Any]) -> None:
    canon = canonical_parameters(workload, params)
    h, js = parameters_identity(workload, canon)
    assert h == stable_hash({"workload": workload, "parameters": canon})
    import json

    assert json.loads(js) == canon


def test_every_workload_default_params_hash_identically() -> None:
    for name, w in WORKLOADS.items():
        params = {
            p.name: (p.choices[0] if p.choices else (p.minimum or 1) if p.type in ("int", "float") else "x")
            for p in w.parameters
            if p.required
        }
        canon = canonical_parameters(name, params)
        assert parameters_identity(name, canon)[0] == stable_hash({"workload": name, "parameters": canon})


@pytest.mark.skipif(not is_postgres(), reason="the SQL implementation of the outlier test is PostgreSQL-only")
def test_sql_and_python_outlier_tests_agree(engine: Engine, settings: Settings) -> None:
    """Random cells (noise, outliers, ties, tiny cells, admin reviews, retractions, catalog
    checks): both implementations return the same flips."""
    rng = random.Random(3)
    gpu = make_gpu(engine)
    factory = make_session_factory(engine)
    principal = Principal(key_id=0, name="x", scope="submit", trusted=False)
    cells_params = [{"precision": "amp_bf16", "batch_size": b} for b in range(1, 25)]
    with UnitOfWork(factory) as uow:
        from service.usecases.keys import create_key

        principal = Principal(
            key_id=create_key(uow, name="cells", scope="submit").id,
            name="cells",
            scope="submit",
            trusted=False,
        )
    for _ in range(6):
        rows = []
        for p in cells_params:
            for _ in range(rng.choice([0, 1, 2, 3])):
                v = rng.choice(
                    [1000.0, 1000.0, 1000.0 + rng.gauss(0, 15), 1000.0 + rng.gauss(0, 200), 3000.0, 10.0]
                )
                rows.append(result(params=p, metrics={"throughput": round(v, 1)}))
        if not rows:
            continue
        body = BenchmarkRunIn.model_validate(run_on(gpu, rows))
        with UnitOfWork(factory) as uow:
            benchmarks.submit_run(
                uow,
                ReadModel(),
                principal,
                body.to_core(),
                policy=settings.outlier_policy(),
                max_results=settings.max_results_per_run,
            )
    with UnitOfWork(factory) as uow:
        gid = uow.session.scalar(select(Gpu.id).where(Gpu.slug == gpu["slug"]))
        ids = list(uow.session.scalars(select(BenchmarkResult.id).where(BenchmarkResult.gpu_id == gid)))
        # disturb the stored state: reviews, retractions, flags that no longer hold
        for rid in rng.sample(ids, 12):
            choice = rng.choice(["released", "quarantined", "retract", "flag", "check"])
            values: dict[str, Any] = {
                "released": {"review_state": "released"},
                "quarantined": {"review_state": "quarantined"},
                "retract": {"retracted": True},
                "flag": {"outlier_detail": "stale"},
                "check": {"check_reason": "above_catalog_peak"},
            }[choice]
            uow.session.execute(update(BenchmarkResult).where(BenchmarkResult.id == rid).values(**values))
        cells: set[CellKey] = {
            (int(g), fp, wl, ph)
            for g, fp, wl, ph in uow.session.execute(
                select(
                    BenchmarkResult.gpu_id,
                    BenchmarkResult.fingerprint_hash,
                    BenchmarkResult.workload,
                    BenchmarkResult.params_hash,
                )
                .where(BenchmarkResult.gpu_id == gid)
                .distinct()
            )
        }
        in_sql = uow.benchmarks.outlier_test(cells, settings.outlier_policy(), in_database=True)
        in_python = uow.benchmarks.outlier_test(cells, settings.outlier_policy(), in_database=False)
        uow.rollback()
    assert in_sql, "the scenario produced no flips; it tests nothing"
    as_set = lambda flips: {(f.id, f.outlier_detail is not None) for f in flips}  # noqa: E731
    assert as_set(in_sql) == as_set(in_python)
    details_sql = {f.id: f.outlier_detail for f in in_sql}
    details_py = {f.id: f.outlier_detail for f in in_python}
    assert details_sql == details_py


def test_the_outlier_window_bounds_the_test(engine: Engine, settings: Settings) -> None:
    """Only a cell's most recent ``outlier_window`` results take part: an old point outside
    the window keeps its verdict and does not weigh on new ones."""
    small = settings.model_copy(update={"outlier_window": 4})
    gpu = make_gpu(engine)
    factory = make_session_factory(engine)
    with UnitOfWork(factory) as uow:
        from service.usecases.keys import create_key

        principal = Principal(
            key_id=create_key(uow, name="window", scope="submit").id, name="w", scope="submit", trusted=False
        )

    def submit(values: list[float]) -> list[int]:
        body = BenchmarkRunIn.model_validate(run_on(gpu, [result(metrics={"throughput": v}) for v in values]))
        with UnitOfWork(factory) as uow:
            out = benchmarks.submit_run(
                uow,
                ReadModel(),
                principal,
                body.to_core(),
                policy=small.outlier_policy(),
                max_results=small.max_results_per_run,
            )
        return [o.result_id for o in out.answer.results]

    (old,) = submit([5000.0])
    submit([100.0, 101.0, 102.0, 103.0])  # the window is now these four: 5000 fell out unjudged
    with UnitOfWork(factory) as uow:
        row = uow.session.get(BenchmarkResult, old)
        assert row is not None and row.quarantined is False
        gid = row.gpu_id
        assert gid is not None
        cell = (gid, row.fingerprint_hash, row.workload, row.params_hash)
        # with the default window the old point is in again and is an outlier
        flips = uow.benchmarks.reevaluate({cell}, settings.outlier_policy())
        assert [f.id for f in flips] == [old] and flips[0].quarantine_reason == "statistical_outlier"
        uow.rollback()
