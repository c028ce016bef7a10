"""The read path (docs/architecture.md, "Read path"): watermarks that move only with their
data, the change journal bringing another process's snapshot forward with only the touched
calibrations refitted, stack summaries equal to the rule over raw results, and SQLite reads
that never wait for a writer."""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine

from service.api.app import create_app
from service.core.evidence.aggregate import latest_measured
from service.core.evidence.versions import DataVersion
from service.db.engine import make_session_factory
from service.db.repositories.measurements import point_from_row, points_query
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from service.usecases.read_model import ReadModel
from tests.api.benchmark_fixtures import fingerprint, result, run
from tests.conftest import auth, is_postgres

H200_LLM = {
    "model": "gt-llama-350m",
    "precision": "amp_bf16",
    "batch_size": 4,
    "seq_len": 1024,
}


def _marks(engine: Engine) -> Any:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return uow.watermarks()


def _h200_run(step_s: float, *, host: str, stack: str | None = None) -> dict[str, Any]:
    """A llm-train run on the H200 (PCI 0x2335) on a stack of its own (or the named one)."""
    fp = fingerprint("0x2335", torch_version=f"2.5.1+{stack or uuid.uuid4().hex[:6]}", host_id=host)
    params = {**H200_LLM}
    return run(
        [
            result(
                "llm-train",
                params,
                {"throughput": 4 * 1024 / (step_s * (1 + i / 100)), "step_time_s": step_s * (1 + i / 100)},
            )
            for i in range(3)
        ],
        fp=fp,
        host=host,
    )


def test_watermarks_move_only_with_their_data(
    client: TestClient, engine: Engine, admin_key: str, submit_key: str
) -> None:
    before = _marks(engine)
    # a new key moves neither
    with UnitOfWork(make_session_factory(engine)) as uow:
        create_key(uow, name=f"wm-{uuid.uuid4().hex[:6]}", scope="read")
    assert _marks(engine) == before
    # a result moves the measurement watermark only
    assert (
        client.post(
            "/v1/benchmark-runs", json=_h200_run(0.2, host="wm-a"), headers=auth(submit_key)
        ).status_code
        == 201
    )
    m = _marks(engine)
    assert (m.catalog, m.measurement) == (before.catalog, before.measurement + 1)
    # a price moves the catalog watermark only
    r = client.post(
        "/v1/gpus/nvidia-l4/prices",
        headers=auth(admin_key),
        json={
            "provider": "test",
            "region": "r",
            "instance_type": f"i-{uuid.uuid4().hex[:6]}",
            "gpus_per_instance": 1,
            "pricing_model": "on_demand",
            "currency": "USD",
            "amount": "0.5",
            "effective_date": "2026-12-01",
            "source": "test",
        },
    )
    assert r.status_code in (200, 201, 204), r.text
    c = _marks(engine)
    assert (c.catalog, c.measurement) == (m.catalog + 1, m.measurement)
    est = client.post("/v1/estimate", json={"model": "llama3-8b", "gpu": "nvidia-h200-sxm"}).json()
    assert DataVersion.parse(est["data_version"]).watermarks == c


def test_a_submission_through_one_instance_reaches_the_next_request_of_another(
    settings: Settings, engine: Engine, submit_key: str
) -> None:
    """Two app instances (two processes' worth of snapshots) on one database: a run submitted
    through A changes B's next answer -- its measured cell and provenance -- and B refits only
    the calibration the touched cell feeds."""
    a = create_app(settings, engine=engine)
    b = create_app(settings, engine=engine)
    body = {**H200_LLM, "gpu": "nvidia-h200-sxm", "optimizer_impl": "fused"}
    with TestClient(a) as ca, TestClient(b) as cb:
        first = cb.post("/v1/estimate", json=body).json()
        rm: ReadModel = b.state.read_model
        rm.wait_for_fits()
        fits_before = rm.stats.full_fits
        loads_before = rm.stats.full_measurement_loads
        refits_before = len(rm.stats.refitted_groups)
        step = first["time"]["step_time_s"] * 0.37  # unmistakably new
        stack = uuid.uuid4().hex[:6]
        run_a = _h200_run(step, host="journal-a", stack=stack)
        run_b = _h200_run(step, host="journal-b", stack=stack)  # two hosts: the cell counts as measured
        for r in (run_a, run_b):
            assert ca.post("/v1/benchmark-runs", json=r, headers=auth(submit_key)).status_code == 201
        t0 = time.perf_counter()
        nxt = cb.post("/v1/estimate", json=body).json()
        elapsed = time.perf_counter() - t0
        assert nxt["data_version"] != first["data_version"]
        assert nxt["time"]["provenance"] == "measured"
        assert abs(nxt["time"]["step_time_s"] - step * 1.01) / step < 0.02
        rm.wait_for_fits()
        assert rm.stats.full_measurement_loads == loads_before  # brought forward by the journal
        assert rm.stats.full_fits == fits_before  # never a full refit
        refitted = rm.stats.refitted_groups[refits_before:]
        assert refitted and set(refitted) == {("nvidia-h200-sxm", "llm-train", "16bit")}
        assert elapsed < 2.0  # the journal is applied on the request path, the refit is not
        later = cb.post("/v1/estimate", json={**body, "batch_size": 2}).json()
        assert (
            later["calibration_watermark"] == DataVersion.parse(later["data_version"]).watermarks.measurement
        )


def test_stack_summaries_equal_the_rule_over_raw_results(
    client: TestClient, engine: Engine, settings: Settings
) -> None:
    """Every stored stack summary, read back through the snapshot, gives the same view as the
    rule applied to the raw results (the measurements view never scans results)."""
    rm = ReadModel(
        min_points=settings.measurements_min_points, window=settings.measurement_window, background=False
    )
    with UnitOfWork(make_session_factory(engine, write=False)) as uow:
        snap = rm.snapshot(uow).measurements
        checked = 0
        for (slug, workload, ph), cell in list(snap.cells.items())[:60]:
            gpu_id = uow.catalog._gpu_id(slug)
            from service.db.models import BenchmarkResult

            rows = uow.session.execute(
                points_query().where(BenchmarkResult.gpu_id == gpu_id, BenchmarkResult.params_hash == ph)
            )
            raw = latest_measured([point_from_row(r) for r in rows], 3, settings.measurement_window)
            assert cell.view(3) == raw, (slug, workload)
            checked += 1
    assert checked > 20


def test_sqlite_reads_do_not_wait_for_a_writer(client: TestClient, settings: Settings) -> None:
    """A writer holding SQLite's write lock does not block GET requests (deferred reads);
    a second writer waits for it (IMMEDIATE)."""
    if is_postgres():
        return
    path = settings.database_url.removeprefix("sqlite:///")
    holder = sqlite3.connect(path, timeout=30, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("UPDATE watermarks SET updated_at = updated_at WHERE id = 1")
    try:
        done: list[float] = []

        def read() -> None:
            t0 = time.perf_counter()
            r = client.get("/v1/gpus/nvidia-h200-sxm")
            assert r.status_code == 200
            r = client.post("/v1/estimate", json={"model": "llama3-8b", "gpu": "nvidia-h100-sxm"})
            assert r.status_code == 200
            done.append(time.perf_counter() - t0)

        t = threading.Thread(target=read)
        t.start()
        t.join(20)
        assert done and done[0] < 5.0, "a read waited for the writer"
        # a write transaction from the service's own write factory waits for the lock
        from service.db.engine import make_engine

        eng = make_engine(settings.database_url, sqlite_busy_timeout_ms=300)
        blocked = False
        try:
            with make_session_factory(eng)() as s:
                from sqlalchemy import text

                s.execute(text("SELECT 1"))
        except Exception:
            blocked = True
        finally:
            eng.dispose()
        assert blocked
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_dropped_postgresql_connection_is_retried_once(settings: Settings, engine: Engine) -> None:
    """No pre-ping per checkout: when the server has dropped a pooled connection, the watermark
    read fails once, the pool invalidates the connection and the read is retried."""
    if not is_postgres():
        return
    from sqlalchemy import text

    from service.db.engine import make_engine

    eng = make_engine(settings.database_url)
    try:
        factory = make_session_factory(eng, write=False)
        with UnitOfWork(factory) as uow:
            pid = uow.session.execute(text("SELECT pg_backend_pid()")).scalar_one()
            uow.session.rollback()
        with engine.connect() as admin:
            admin.execute(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
            admin.commit()
        with UnitOfWork(factory) as uow:
            assert uow.watermarks().catalog >= 0
    finally:
        eng.dispose()


def _h200_cell_run(
    workload: str,
    params: dict[str, Any],
    metrics: dict[str, float],
    *,
    host: str,
    stack: str,
    units: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Three results of one cell on the H200, on the named stack (the metrics scaled by 1, 1.01, 1.02)."""
    fp = fingerprint("0x2335", torch_version=f"2.5.1+{stack}", host_id=host)
    return run(
        [
            result(workload, params, {k: v * (1 + i / 100) for k, v in metrics.items()}, units=units)
            for i in range(3)
        ],
        fp=fp,
        host=host,
    )


def test_serving_workloads_on_the_read_path(settings: Settings, engine: Engine, submit_key: str) -> None:
    """The serving branch's workloads through the snapshot: a bert-large-infer cell measured
    through A makes B's next encoder-inference answer ``measured`` and refits only the
    (H200, bert-large-infer, 16bit) calibration; an agent's vLLM llm-infer cell (the engine
    plug-in) answers its own configuration as ``measured`` and refits nothing."""
    a = create_app(settings, engine=engine)
    b = create_app(settings, engine=engine)
    bert = {
        "model": "bert-large",
        "gpu": "nvidia-h200-sxm",
        "mode": "inference",
        "precision": "amp_bf16",
        "batch_size": 24,
        "seq_len": 384,
    }
    vllm = {
        "model": "gt-llama-350m",
        "gpu": "nvidia-h200-sxm",
        "mode": "inference",
        "engine": "vllm",
        "precision": "bf16",
        "batch_size": 4,
        "input_len": 384,
        "output_len": 96,
    }
    with TestClient(a) as ca, TestClient(b) as cb:
        first = cb.post("/v1/estimate", json=bert).json()
        assert first["time"]["provenance"] == "interpolated"  # the committed H200 bert-large-infer sweep
        rm: ReadModel = b.state.read_model
        rm.wait_for_fits()
        refits_before = len(rm.stats.refitted_groups)
        step = first["time"]["step_time_s"] * 0.37
        stack = uuid.uuid4().hex[:6]
        params = {"precision": "amp_bf16", "batch_size": 24, "seq_len": 384}
        for host in ("enc-a", "enc-b"):  # two hosts: the cell counts as measured
            r = _h200_cell_run(
                "bert-large-infer",
                params,
                {"throughput": 24 / step, "step_time_s": step},
                host=host,
                stack=stack,
            )
            assert ca.post("/v1/benchmark-runs", json=r, headers=auth(submit_key)).status_code == 201
        nxt = cb.post("/v1/estimate", json=bert).json()
        assert nxt["time"]["provenance"] == "measured"
        assert abs(nxt["time"]["step_time_s"] - step * 1.01) / step < 0.02
        rm.wait_for_fits()
        assert set(rm.stats.refitted_groups[refits_before:]) == {
            ("nvidia-h200-sxm", "bert-large-infer", "16bit")
        }

        before = cb.post("/v1/estimate", json=vllm).json()["serving"]
        assert before["provenance"] == "transferred"
        rm.wait_for_fits()
        refits_before = len(rm.stats.refitted_groups)
        fits_before = rm.stats.full_fits
        cell = {
            "model": "gt-llama-350m",
            "precision": "bf16",
            "engine": "vllm",
            "batch_size": 4,
            "input_len": 384,
            "output_len": 96,
        }
        ms = {
            "ttft_ms_p50": before["ttft_ms"] * 2.0,
            "tpot_ms_p50": before["tpot_ms"] * 2.0,
            "output_tokens_per_s": 4 / (before["tpot_ms"] * 2e-3),
        }
        for host in ("eng-a", "eng-b"):
            r = _h200_cell_run(
                "llm-infer",
                cell,
                ms,
                host=host,
                stack=stack,
                units={"ttft_ms_p50": "ms", "tpot_ms_p50": "ms"},
            )
            assert ca.post("/v1/benchmark-runs", json=r, headers=auth(submit_key)).status_code == 201
        after = cb.post("/v1/estimate", json=vllm).json()["serving"]
        assert after["provenance"] == "measured" and after["engine"] == "vllm"
        assert abs(after["ttft_ms"] - before["ttft_ms"] * 2.02) / after["ttft_ms"] < 0.02
        rm.wait_for_fits()
        assert rm.stats.full_fits == fits_before
        assert rm.stats.refitted_groups[refits_before:] == []  # engine cells feed no fit


def test_start_up_warms_the_read_model_so_no_request_pays_the_full_fit(
    settings: Settings, engine: Engine
) -> None:
    """With ``warm_read_model`` (the default outside tests) the snapshot and every calibration
    are built at start-up in a background thread; /readyz is 503 'warming' until then, and the
    first estimate afterwards fits nothing."""
    app = create_app(settings.model_copy(update={"warm_read_model": True}), engine=engine)
    rm: ReadModel = app.state.read_model
    with TestClient(app) as c:
        deadline = time.monotonic() + 120
        seen: list[int] = []
        while time.monotonic() < deadline:
            r = c.get("/readyz")
            seen.append(r.status_code)
            if r.status_code == 200:
                break
            assert r.status_code == 503 and "warming" in r.json()["detail"]
            time.sleep(0.05)
        assert seen[-1] == 200, seen
        assert rm.warmed and rm.stats.full_fits == 1
        # the start-up heap, the fitted snapshot included, is settled out of the collector's way
        # (later full collections scan only what requests allocate)
        import gc

        assert gc.get_freeze_count() > 0
        est = c.post("/v1/estimate", json={"model": "llama3-8b", "gpu": "nvidia-h100-sxm"})
        assert est.status_code == 200, est.text
        rm.wait_for_fits()
        assert rm.stats.full_fits == 1 and rm.stats.full_measurement_loads == 1
