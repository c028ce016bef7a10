"""The committed measurement files (data/benchmarks/*.json) load into a fresh database through
the real start-up path with nothing refused, and the variant cells measured on the H200 come
back through the API as cells of their own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from service.api.app import create_app
from service.bootstrap import bootstrap
from service.db.engine import make_engine
from service.settings import Settings
from service.usecases.benchmarks import load_measurement_files
from tests.conftest import fresh_database_url

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "data" / "benchmarks"


def _results(client: TestClient, **params: str) -> list[dict[str, Any]]:
    r = client.get("/v1/benchmark-results", params={"gpu": "nvidia-h200-sxm", "limit": "10000", **params})
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def test_committed_files_load_into_a_fresh_database(tmp_path: Path) -> None:
    files = sorted(DATA.glob("*.json"))
    runs = [run for f in files for run in json.loads(f.read_text())]
    assert any(f.name.startswith("h200-sxm-2026-12-03-variants") for f in files)
    urls = fresh_database_url(tmp_path, "committed")
    url = next(urls)
    try:
        engine = make_engine(url)
        settings = Settings(database_url=url, seed_measurements_dir=DATA)
        bootstrap(engine, settings.model_copy(update={"seed_measurements_dir": None}))
        report = load_measurement_files(engine, settings)
        assert report.refused == []
        assert (report.files, report.stored, report.replayed) == (len(files), len(runs), 0)
        with TestClient(create_app(settings, engine=engine), raise_server_exceptions=False) as client:
            _check_variant_cells(client)
        engine.dispose()
    finally:
        next(urls, None)


def _check_variant_cells(client: TestClient) -> None:
    policy = _results(client, workload="llm-train", **{"param.mixed_precision": "fsdp_policy"})
    assert len(policy) == 12 and {r["parameters"]["sharding"] for r in policy} == {"fsdp"}
    foreach = _results(client, workload="llm-train", **{"param.optimizer_impl": "foreach"})
    assert len(foreach) == 14  # 6 unsharded + 8 one-rank FSDP2 (autocast and policy)
    keeps = _results(client, workload="llm-train", **{"param.loop": "keeps_outputs"})
    assert len(keeps) == 9
    new = policy + foreach + keeps
    assert {r["status"] for r in new} == {"ok"} and not any(r["quarantined"] for r in new)
    for r in new:  # each variant is its own cell, and reports the optimizer step's peak, which was
        # read on one more step than the timed ones: at most the step's peak, give or take a few
        # hundred bytes of allocator rounding (seen: +512 B on llama2-7b foreach)
        peak = r["metrics"]["optimizer_step_peak_allocated_bytes"]
        assert peak["unit"] == "B" and 0 < peak["value"] <= r["peak_allocated_bytes"] + 2**20
    # a variant and its reference loop: two cells, the reference one holding older results too
    base_params = {"param.model": "gt-llama-1b-v128k", "param.batch_size": "4", "param.seq_len": "2048",
                   "param.precision": "amp_bf16", "param.sharding": "none"}  # fmt: skip
    cells = {r["parameters_hash"] for r in _results(client, workload="llm-train", **base_params)}
    variants = {r["parameters_hash"] for r in keeps + foreach if r["parameters"]["model"] == "gt-llama-1b-v128k"
                and r["parameters"]["batch_size"] == 4 and r["parameters"]["seq_len"] == 2048
                and r["parameters"]["sharding"] == "none"}  # fmt: skip
    assert len(variants) == 2 and variants < cells and len(cells) >= 4  # + reference, + forloop
    infer = _results(client, workload="bert-large-infer")
    assert len(infer) == 9 and all(r["metrics"]["throughput"]["unit"] == "samples/s" for r in infer)
