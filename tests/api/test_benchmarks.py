"""Benchmark submission over HTTP: idempotency, precise 422s, 413s, quarantine, pending GPUs,
GPU resolution, dry runs. Real app, real migrations, SQLite or PostgreSQL."""

from __future__ import annotations

import copy
import json
import math
import threading
import uuid
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from service.agent.payload import validate_run as agent_validate_run
from service.api.app import create_app
from service.db.engine import make_session_factory
from service.db.models import BenchmarkResult, BenchmarkRun, IdempotencyRecord
from service.db.uow import UnitOfWork
from service.schemas.benchmarks import BenchmarkRunIn
from service.settings import Settings
from service.usecases import benchmarks
from service.usecases.keys import Principal
from service.usecases.read_model import ReadModel
from tests.api.benchmark_fixtures import GIB, fingerprint, make_gpu, new_pci, result, run, run_on
from tests.conftest import auth

MIB = 2**20


def _count_runs(engine: Engine, run_id: str) -> int:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return int(uow.session.scalar(select(func.count()).where(BenchmarkRun.run_id == run_id)) or 0)


def _data_version(engine: Engine) -> str:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return uow.data_version()


def _locs(problem: dict[str, Any]) -> list[list[Any]]:
    return [e["loc"] for e in problem["errors"]]


@pytest.fixture()
def gpu(engine: Engine) -> dict[str, Any]:
    return make_gpu(engine)


# ---- idempotency -------------------------------------------------------------------------------


def test_submit_replay_and_conflict(
    client: TestClient, engine: Engine, submit_key: str, gpu: dict[str, Any]
) -> None:
    body = run_on(gpu, [result(metrics={"throughput": 2500.0 + i}) for i in range(3)])
    r = client.post(
        "/v1/benchmark-runs", json=body, headers={**auth(submit_key), "Idempotency-Key": body["run_id"]}
    )
    assert r.status_code == 201, r.text
    first = r.json()
    assert first["state"] == "accepted" and first["gpu_slug"] == gpu["slug"]
    assert first["resolved_by"] == "pci_memory"
    assert first["result_count"] == 3 and all(o["result_id"] for o in first["results"])
    assert r.headers["Location"] == f"/v1/benchmark-runs/{body['run_id']}"
    assert r.headers["X-Data-Version"] == first["data_version"] == _data_version(engine)

    # same body (different key order, 2500 vs 2500.0) -> the stored answer, nothing new written
    again = json.loads(json.dumps(body))
    again["results"][0]["metrics"]["throughput"]["value"] = 2500
    again = dict(reversed(list(again.items())))
    r2 = client.post("/v1/benchmark-runs", json=again, headers=auth(submit_key))
    assert r2.status_code == 200, r2.text
    assert r2.headers["Idempotent-Replayed"] == "true"
    replay = r2.json()
    assert {k: v for k, v in replay.items() if k != "data_version"} == {
        k: v for k, v in first.items() if k != "data_version"
    }
    assert _count_runs(engine, body["run_id"]) == 1

    changed = copy.deepcopy(body)
    changed["results"][0]["metrics"]["throughput"]["value"] = 9.0
    r3 = client.post("/v1/benchmark-runs", json=changed, headers=auth(submit_key))
    assert r3.status_code == 409, r3.text
    assert r3.headers["content-type"].startswith("application/problem+json")
    assert r3.json()["type"].endswith("/idempotency-conflict")
    assert _count_runs(engine, body["run_id"]) == 1


def test_another_keys_run_id_is_a_409_that_reveals_nothing(
    client: TestClient, engine: Engine, submit_key: str, gpu: dict[str, Any]
) -> None:
    """Run ids are global: a second agent posting the first agent's run_id -- same body or
    not, submit or dry run -- gets one and the same 409, with nothing of the stored run in it;
    nothing is written, and the owner still gets its replay."""
    from tests.conftest import _key

    body = run_on(gpu, [result(metrics={"throughput": 3100.0 + i}) for i in range(3)], host="agent-a-host")
    first = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
    assert first.status_code == 201, first.text
    other = _key(engine, "submit")
    changed = copy.deepcopy(body)
    changed["results"][0]["metrics"]["throughput"]["value"] = 1.0
    answers = [
        client.post(path, json=b, headers={**auth(other), "Idempotency-Key": body["run_id"]})
        for path in ("/v1/benchmark-runs", "/v1/benchmark-runs/validate")
        for b in (body, changed)
    ]
    for r in answers:
        assert r.status_code == 409, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert "Idempotent-Replayed" not in r.headers and "Location" not in r.headers
        p = r.json()
        assert p["type"].endswith("/run-id-taken")
        assert set(p) == {"type", "title", "status", "detail", "instance", "run_id"}
        text = r.text
        for secret in (gpu["slug"], gpu["pci"], "agent-a-host", body["fingerprint"]["host_id"]):
            assert secret not in text
    # same body or not: byte-for-byte the same refusal (apart from the path it was posted to)
    assert answers[0].json() == answers[1].json()
    assert answers[2].json() == answers[3].json()
    assert _count_runs(engine, body["run_id"]) == 1
    with UnitOfWork(make_session_factory(engine)) as uow:
        owner = uow.session.scalar(
            select(IdempotencyRecord.api_key_id).where(IdempotencyRecord.key == body["run_id"])
        )
        run_owner = uow.session.scalar(
            select(BenchmarkRun.api_key_id).where(BenchmarkRun.run_id == body["run_id"])
        )
    assert owner == run_owner and owner is not None
    again = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"


def test_idempotency_key_must_equal_run_id(client: TestClient, submit_key: str, gpu: dict[str, Any]) -> None:
    body = run_on(gpu, [result()])
    r = client.post(
        "/v1/benchmark-runs", json=body, headers={**auth(submit_key), "Idempotency-Key": "another-run-id"}
    )
    assert r.status_code == 422
    assert _locs(r.json()) == [["header", "Idempotency-Key"]]


def test_concurrent_twins_store_one_run(engine: Engine, settings: Settings, gpu: dict[str, Any]) -> None:
    """Eight threads submit the same run at once: one insert wins, the rest replay it."""
    body = BenchmarkRunIn.model_validate(
        run_on(gpu, [result(metrics={"throughput": 100.0 + i}) for i in range(20)])
    )
    factory = make_session_factory(engine)
    cache = ReadModel()
    with UnitOfWork(factory) as uow:
        from service.usecases.keys import create_key

        k = create_key(uow, name="twins", scope="submit")
    principal = Principal(key_id=k.id, name="twins", scope="submit", trusted=False)
    answers: list[tuple[int, list[int]]] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def go() -> None:
        try:
            barrier.wait()
            with UnitOfWork(factory) as uow:
                out = benchmarks.submit_run(
                    uow,
                    cache,
                    principal,
                    body.to_core(),
                    policy=settings.outlier_policy(),
                    max_results=settings.max_results_per_run,
                )
            status = 201 if out.stored else 200  # as the route answers
            answers.append((status, [o.result_id for o in out.answer.results]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sorted(code for code, _ in answers) == [200] * 7 + [201]
    assert len({tuple(ids) for _, ids in answers}) == 1
    assert _count_runs(engine, body.run_id) == 1
    with UnitOfWork(factory) as uow:
        n = uow.session.scalar(
            select(func.count())
            .select_from(BenchmarkResult)
            .join(BenchmarkRun)
            .where(BenchmarkRun.run_id == body.run_id)
        )
        recs = uow.session.scalar(select(func.count()).where(IdempotencyRecord.key == body.run_id))
    assert n == 20 and recs == 1


# ---- refusals: 422 with every loc, 413, auth ------------------------------------------------------


def test_vocabulary_errors_name_every_field_and_change_nothing(
    client: TestClient, engine: Engine, submit_key: str, gpu: dict[str, Any]
) -> None:
    fp = fingerprint(gpu["pci"])
    del fp["torch_version"]
    fp["cuda_version"] = None
    results = [
        result(metrics={"throughput": 10.0}),  # fine
        result(metrics={"throughput": 10.0}, units={"throughput": "img/s"}),  # wrong unit
        result("resnet-9000"),  # unknown workload
        result(params={"precision": "fp13", "batch_size": 8}),  # unknown precision
        result(params={"precision": "bf16", "batch_size": 8, "bogus": 1}),  # unknown parameter
        result(metrics={"throughput": math.nan}),  # non-finite
        result(peak_allocated_bytes=-5),  # negative
        result(metrics={"throughput": 1.0, "speed": 3.0}, units={"speed": "x"}),  # unknown metric
        result(params={"precision": "bf16", "batch_size": 8.5}),  # not an integer
        result(metrics={"throughput": -1.0}),  # negative metric
    ]
    body = run_on(gpu, results, fp=fp)
    before = _data_version(engine)
    raw = json.dumps(body)  # NaN goes over the wire as the NaN token Python's parser accepts
    headers = {**auth(submit_key), "Content-Type": "application/json"}
    r = client.post("/v1/benchmark-runs", content=raw, headers=headers)
    assert r.status_code == 422, r.text
    p = r.json()
    assert p["status"] == 422 and r.headers["content-type"].startswith("application/problem+json")
    locs = _locs(p)
    expected = [
        ["body", "fingerprint", "torch_version"],
        ["body", "fingerprint", "cuda_version"],
        ["body", "results", 1, "metrics", "throughput", "unit"],
        ["body", "results", 2, "workload"],
        ["body", "results", 3, "parameters", "precision"],
        ["body", "results", 4, "parameters", "bogus"],
        ["body", "results", 5, "metrics", "throughput", "value"],
        ["body", "results", 6, "peak_allocated_bytes"],
        ["body", "results", 7, "metrics", "speed"],
        ["body", "results", 8, "parameters", "batch_size"],
        ["body", "results", 9, "metrics", "throughput", "value"],
    ]
    for loc in expected:
        assert loc in locs, (loc, locs)
    assert len(locs) == len(expected)
    assert _count_runs(engine, body["run_id"]) == 0
    assert _data_version(engine) == before
    # the agent checks a run before sending with the same rule: the same fields, in the same order
    agent_paths = [problem.split(": ", 1)[0] for problem in agent_validate_run(json.loads(raw))]
    assert agent_paths == [".".join(str(x) for x in loc[1:]) for loc in locs]


def test_schema_errors_come_from_the_wire_model(
    client: TestClient, submit_key: str, gpu: dict[str, Any]
) -> None:
    body = run_on(gpu, [result(), result()])
    body["results"][1]["status"] = "fine"
    body["gpu_count"] = 0
    body["surprise"] = True
    r = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
    assert r.status_code == 422
    locs = _locs(r.json())
    assert ["body", "results", 1, "status"] in locs
    assert ["body", "gpu_count"] in locs
    assert ["body", "surprise"] in locs


def test_too_many_results_and_too_large_bodies_are_413(
    engine: Engine, settings: Settings, submit_key: str
) -> None:
    small = create_app(
        settings.model_copy(update={"max_results_per_run": 5, "max_body_bytes": 20_000}), engine=engine
    )
    gpu = make_gpu(engine)
    with TestClient(small, raise_server_exceptions=False) as c:
        body = run_on(gpu, [result() for _ in range(6)])
        r = c.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
        assert r.status_code == 413, r.text
        assert r.json()["type"].endswith("/payload-too-large")
        assert r.json()["max_results_per_run"] == 5
        # a body with both too many results and schema errors: the count decides first
        body["results"][0]["status"] = "bogus"
        assert c.post("/v1/benchmark-runs", json=body, headers=auth(submit_key)).status_code == 413
        r = c.post("/v1/benchmark-runs/validate", json=body, headers=auth(submit_key))
        assert r.status_code == 413
        big = run_on(gpu, [result() for _ in range(5)], notes="x" * 3999)
        big["results"][0]["error"] = "y" * 3999
        big["results"][1]["error"] = "y" * 3999
        big["results"][2]["error"] = "y" * 3999
        big["results"][3]["error"] = "y" * 3999
        big["results"][4]["error"] = "y" * 3999
        r = c.post("/v1/benchmark-runs", json=big, headers=auth(submit_key))
        assert r.status_code == 413
        assert _count_runs(engine, big["run_id"]) == 0


def test_values_beyond_storage_bounds_are_422(
    client: TestClient, submit_key: str, gpu: dict[str, Any]
) -> None:
    body = run_on(gpu, [result(peak_allocated_bytes=2**64), result(repeats=2**40)])
    body["gpu"]["pci_subsystem_id"] = "0x" + "f" * 40
    r = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
    assert r.status_code == 422
    locs = _locs(r.json())
    assert ["body", "results", 0, "peak_allocated_bytes"] in locs
    assert ["body", "results", 1, "repeats"] in locs
    assert ["body", "gpu", "pci_subsystem_id"] in locs


def test_submission_needs_a_submit_key(client: TestClient, read_key: str, gpu: dict[str, Any]) -> None:
    body = run_on(gpu, [result()])
    assert client.post("/v1/benchmark-runs", json=body).status_code == 401
    assert client.post("/v1/benchmark-runs", json=body, headers=auth(read_key)).status_code == 403


# ---- quarantine ---------------------------------------------------------------------------------


def test_catalog_checks_quarantine_but_keep(
    client: TestClient, submit_key: str, admin_key: str, engine: Engine
) -> None:
    gpu = make_gpu(engine, bf16=400.0, bandwidth=2000.0, usable=40 * GIB)
    body = run_on(
        gpu,
        [
            result("gemm", {"precision": "bf16"}, {"tflops": 350.0}),
            result("gemm", {"precision": "bf16"}, {"tflops": 450.0}),  # above the 400 peak
            result("gemm", {"precision": "int8"}, {"tops": 900.0}),  # above the 800 TOP/s peak
            result("memory-bandwidth", {}, {"bandwidth_gb_per_s": 2100.0}),  # above 2000 GB/s
            result(peak_allocated_bytes=41 * GIB),  # above usable memory
            result(status="oom", peak_reserved_bytes=39 * GIB, error="CUDA out of memory"),
        ],
    )
    r = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
    assert r.status_code == 201, r.text
    out = r.json()
    reasons = [o["quarantine_reason"] for o in out["results"]]
    assert reasons == [
        None,
        "above_catalog_peak",
        "above_catalog_peak",
        "above_catalog_peak",
        "above_usable_memory",
        None,
    ]
    assert out["quarantined_count"] == 4
    assert "450 TFLOP/s" in out["results"][1]["quarantine_detail"]
    assert "2100 GB/s" in out["results"][3]["quarantine_detail"]
    # kept and queryable, with the reason
    rid = out["results"][4]["result_id"]
    g = client.get(f"/v1/benchmark-results/{rid}").json()
    assert g["quarantined"] is True and g["quarantine"]["reason"] == "above_usable_memory"
    # an admin is told, once per reason
    alerts = client.get("/v1/admin/alerts", headers=auth(admin_key), params={"limit": 100}).json()["items"]
    mine = [a for a in alerts if a["run_id"] == body["run_id"]]
    assert sorted((a["kind"], a["result_count"]) for a in mine) == [
        ("above_catalog_peak", 3),
        ("above_usable_memory", 1),
    ]
    assert client.get("/v1/admin/alerts", headers=auth(submit_key)).status_code == 403


def test_outliers_are_reevaluated_as_data_arrives(
    client: TestClient, submit_key: str, engine: Engine
) -> None:
    gpu = make_gpu(engine)
    r1 = client.post(
        "/v1/benchmark-runs",
        json=run_on(gpu, [result(metrics={"throughput": v}) for v in (1000.0, 3000.0)]),
        headers=auth(submit_key),
    )
    assert r1.status_code == 201
    assert r1.json()["quarantined_count"] == 0  # two points: nothing to tell apart
    high_id = r1.json()["results"][1]["result_id"]
    r2 = client.post(
        "/v1/benchmark-runs",
        json=run_on(gpu, [result(metrics={"throughput": 1010.0})]),
        headers=auth(submit_key),
    )
    assert r2.json()["quarantined_count"] == 0
    # the earlier 3000 is now an outlier of {1000, 1010, 3000}
    g = client.get(f"/v1/benchmark-results/{high_id}").json()
    assert g["quarantine"]["reason"] == "statistical_outlier"
    assert "scaled MADs" in g["quarantine"]["detail"]
    # more data near 3000 moves the median: 3000 is released, the low ones become outliers
    r3 = client.post(
        "/v1/benchmark-runs",
        json=run_on(gpu, [result(metrics={"throughput": v}) for v in (2990.0, 3010.0, 3005.0, 2995.0)]),
        headers=auth(submit_key),
    )
    assert r3.json()["quarantined_count"] == 0
    assert client.get(f"/v1/benchmark-results/{high_id}").json()["quarantined"] is False
    low = client.get(f"/v1/benchmark-results/{r1.json()['results'][0]['result_id']}").json()
    assert low["quarantine"]["reason"] == "statistical_outlier"


def test_the_mad_floor_keeps_tight_repeats_apart_from_noise(
    client: TestClient, submit_key: str, engine: Engine
) -> None:
    """Identical repeats give MAD 0; the floor (5% of the median) keeps a 2% deviation in."""
    gpu = make_gpu(engine)
    vals = [1000.0, 1000.0, 1000.0, 1020.0, 1400.0]
    r = client.post(
        "/v1/benchmark-runs",
        json=run_on(gpu, [result(metrics={"throughput": v}) for v in vals]),
        headers=auth(submit_key),
    )
    assert [o["quarantined"] for o in r.json()["results"]] == [False, False, False, False, True]


# ---- GPU resolution and pending GPUs ------------------------------------------------------------


def test_variants_sharing_a_pci_id_are_told_apart_by_memory(
    client: TestClient, submit_key: str, engine: Engine
) -> None:
    pci = new_pci()
    small = make_gpu(engine, pci=pci, usable=40 * GIB)
    large = make_gpu(engine, pci=pci, usable=80 * GIB, physical=80 * GIB + 512 * MIB)
    for mem, slug in ((40 * GIB, small["slug"]), (80 * GIB, large["slug"]), (int(80.4 * GIB), large["slug"])):
        body = run(
            [result()],
            pci=pci,
            gpu_name="NVIDIA Variant",
            memory_total=mem,
            fp=fingerprint(pci, host_id="mid-v"),
        )
        out = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key)).json()
        assert (out["gpu_slug"], out["resolved_by"]) == (slug, "pci_memory"), (mem, out)
    # a memory size no variant has: not guessed
    body = run(
        [result()],
        pci=pci,
        gpu_name="NVIDIA Variant",
        memory_total=60 * GIB,
        fp=fingerprint(pci, host_id="mid-v"),
    )
    out = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key)).json()
    assert out["state"] == "pending" and out["gpu_slug"] is None


def test_nvml_name_resolves_when_the_pci_id_is_unknown(
    client: TestClient, submit_key: str, engine: Engine
) -> None:
    name = f"NVIDIA Testcard {uuid.uuid4().hex[:6]}"
    gpu = make_gpu(engine, aliases=[{"name": name, "kind": "nvml"}])
    pci = new_pci()
    body = run(
        [result()], pci=pci, gpu_name=name, memory_total=gpu["usable"], fp=fingerprint(pci, host_id="mid-n")
    )
    out = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key)).json()
    assert (out["gpu_slug"], out["resolved_by"]) == (gpu["slug"], "name")


def test_unknown_gpu_is_kept_pending_until_mapped(
    client: TestClient, submit_key: str, admin_key: str, engine: Engine
) -> None:
    pci = new_pci()
    name = f"NVIDIA Mystery {uuid.uuid4().hex[:6]}"
    mem = 96 * GIB
    results = [result("gemm", {"precision": "bf16"}, {"tflops": v}) for v in (500.0, 505.0, 510.0)]
    results.append(result("gemm", {"precision": "bf16"}, {"tflops": 900.0}))
    body = run(results, pci=pci, gpu_name=name, memory_total=mem, fp=fingerprint(pci, host_id="mid-p"))
    r = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
    assert r.status_code == 201, r.text
    out = r.json()
    assert out["state"] == "pending" and out["gpu_slug"] is None and out["pending_gpu_id"]
    assert out["quarantined_count"] == 0  # nothing to check against yet
    pid = out["pending_gpu_id"]
    assert any("not in the catalog" in w for w in out["warnings"])
    run_doc = client.get(f"/v1/benchmark-runs/{body['run_id']}").json()
    assert run_doc["state"] == "pending" and run_doc["gpu"]["identity"]["name"] == name
    # a second run from the same device joins the same queue entry
    body2 = run(
        [result("gemm", {"precision": "bf16"}, {"tflops": 507.0})],
        pci=pci,
        gpu_name=name,
        memory_total=mem,
        fp=fingerprint(pci, host_id="mid-p2"),
        host="host-b",
    )
    assert (
        client.post("/v1/benchmark-runs", json=body2, headers=auth(submit_key)).json()["pending_gpu_id"]
        == pid
    )

    queue = client.get("/v1/admin/pending-gpus", headers=auth(admin_key)).json()["items"]
    entry = next(p for p in queue if p["id"] == pid)
    assert (entry["nvml_name"], entry["pci_device_id"], entry["memory_total_bytes"]) == (name, pci, mem)
    assert entry["run_count"] == 2 and entry["result_count"] == 5 and entry["status"] == "pending"
    alerts = client.get(
        "/v1/admin/alerts", headers=auth(admin_key), params={"kind": "pending_gpu", "limit": 500}
    ).json()
    assert any(a.get("pending_gpu_id") == pid for a in alerts["items"])
    assert client.get("/v1/coverage").json()["pending_runs"] >= 2

    # the admin creates the GPU (POST /v1/gpus) and maps the device to it
    slug = f"nvidia-mystery-{uuid.uuid4().hex[:6]}"
    from tests.api.benchmark_fixtures import gpu_document

    doc = gpu_document(slug, new_pci(), name=name, usable=mem, bf16=800.0)
    assert client.post("/v1/gpus", json=doc, headers=auth(admin_key)).status_code == 201
    assert (
        client.post(
            f"/v1/admin/pending-gpus/{pid}/map", json={"slug": "nvidia-nope"}, headers=auth(admin_key)
        ).status_code
        == 404
    )
    m = client.post(f"/v1/admin/pending-gpus/{pid}/map", json={"slug": slug}, headers=auth(admin_key))
    assert m.status_code == 200, m.text
    assert m.json()["status"] == "mapped" and m.json()["mapped_gpu_slug"] == slug
    # its runs count now: in the measurements, with the catalog check applied on the way in
    meas = client.get(f"/v1/gpus/{slug}/measurements", params={"workload": "gemm"}).json()
    (cell,) = meas["cells"]
    assert cell["count"] == 4 and cell["host_count"] == 2
    assert cell["metrics"]["tflops"]["median"] == 506.0
    assert cell["quarantined_count"] == 1  # 900 > 800 peak
    assert client.get(f"/v1/benchmark-runs/{body['run_id']}").json()["state"] == "accepted"
    # later runs with the same identity resolve through the mapping
    body3 = run(
        [result("gemm", {"precision": "bf16"}, {"tflops": 503.0})],
        pci=pci,
        gpu_name=name,
        memory_total=mem,
        fp=fingerprint(pci, host_id="mid-p3"),
    )
    out3 = client.post("/v1/benchmark-runs", json=body3, headers=auth(submit_key)).json()
    assert (out3["gpu_slug"], out3["resolved_by"]) == (slug, "admin_mapping")


# ---- dry run ---------------------------------------------------------------------------------------


def test_validate_is_a_dry_run(client: TestClient, engine: Engine, submit_key: str) -> None:
    gpu = make_gpu(engine, bf16=400.0)
    body = run_on(
        gpu,
        [
            result("gemm", {"precision": "bf16"}, {"tflops": 300.0}),
            result("gemm", {"precision": "bf16"}, {"tflops": 401.0}),
        ],
    )
    before = _data_version(engine)
    r = client.post("/v1/benchmark-runs/validate", json=body, headers=auth(submit_key))
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["dry_run"] is True and out["gpu_slug"] == gpu["slug"]
    assert [o["result_id"] for o in out["results"]] == [None, None]
    assert [o["quarantine_reason"] for o in out["results"]] == [None, "above_catalog_peak"]
    assert _data_version(engine) == before and _count_runs(engine, body["run_id"]) == 0
    assert client.get(f"/v1/benchmark-runs/{body['run_id']}").status_code == 404
    bad = copy.deepcopy(body)
    bad["results"][0]["metrics"]["tflops"]["unit"] = "GFLOP/s"
    r = client.post("/v1/benchmark-runs/validate", json=bad, headers=auth(submit_key))
    assert r.status_code == 422 and _locs(r.json()) == [["body", "results", 0, "metrics", "tflops", "unit"]]
    # the dry run predicts the outlier test against stored data too
    client.post(
        "/v1/benchmark-runs",
        json=run_on(gpu, [result(metrics={"throughput": 100.0 + i}) for i in range(5)]),
        headers=auth(submit_key),
    )
    probe = run_on(gpu, [result(metrics={"throughput": 300.0})])
    out = client.post("/v1/benchmark-runs/validate", json=probe, headers=auth(submit_key)).json()
    assert out["results"][0]["quarantine_reason"] == "statistical_outlier"
    # a stored run validates as "already stored"
    client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
    out = client.post("/v1/benchmark-runs/validate", json=body, headers=auth(submit_key)).json()
    assert out["dry_run"] is True and any("already stored" in w for w in out["warnings"])


# ---- the README example -------------------------------------------------------------------------


def test_h200_run_shows_up_in_measurements(client: TestClient, submit_key: str, engine: Engine) -> None:
    """An H200 (PCI 0x2335, 143,771 MiB) submission resolves to the shipped catalog entry and
    appears in its latest-measured view."""
    torch = f"2.5.1+{uuid.uuid4().hex[:6]}"  # a stack of its own, so other tests do not mix in
    fp = fingerprint("0x2335", torch_version=torch, host_id="mid-h200")
    body = run(
        [
            result("gemm", {"precision": "bf16", "n": 8192}, {"tflops": v, "step_time_s": 0.0016})
            for v in (712.4, 718.9, 715.2)
        ]
        + [
            result(
                "resnet50-train",
                {"precision": "amp_bf16", "batch_size": 256},
                {"throughput": 3051.0},
                peak_allocated_bytes=24 * GIB,
            )
        ],
        fp=fp,
        host="h200-node-1",
    )
    r = client.post("/v1/benchmark-runs", json=body, headers=auth(submit_key))
    assert r.status_code == 201, r.text
    assert r.json()["gpu_slug"] == "nvidia-h200-sxm"
    fph = r.json()["fingerprint_hash"]
    m = client.get("/v1/gpus/nvidia-h200-sxm/measurements", params={"fingerprint_hash": fph}).json()
    gemm = next(c for c in m["cells"] if c["workload"] == "gemm")
    assert gemm["parameters"] == {"precision": "bf16", "n": 8192}
    assert gemm["metrics"]["tflops"]["median"] == 715.2 and gemm["metrics"]["tflops"]["unit"] == "TFLOP/s"
    assert gemm["count"] == 3 and gemm["thin"] is False
    assert gemm["provenance"] is None and gemm["provenance_code"] == "single_untrusted_host"
    rn = next(c for c in m["cells"] if c["workload"] == "resnet50-train")
    assert rn["thin"] is True and rn["memory"]["peak_allocated_bytes"]["median"] == 24 * GIB
