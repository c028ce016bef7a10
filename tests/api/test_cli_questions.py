"""`gpu-advisor estimate | recommend | compare | gpus`: the API's answers from the shell, as
tables for people and as the API's JSON with --json; refusals as one line and exit 2 (an
ambiguous name lists its candidates); full calibration fits kept between runs, per database
and measurement watermark, so a second call does not refit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.shell.advisor import AdvisorError, LocalAdvisor
from tests.conftest import fresh_database_url


def cli(settings: Settings, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "GPU_ADVISOR_DATABASE_URL": settings.database_url,
        "GPU_ADVISOR_CACHE_DIR": str(tmp_path / "cache"),
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
    }
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_recommend_prints_the_ranked_options_and_json_is_the_api_answer(
    settings: Settings, client: TestClient, tmp_path: Path
) -> None:
    args = [
        "recommend",
        "--model",
        "llama2-7b",
        "--mode",
        "fine-tuning",
        "--gpus",
        "L40,L20",
        "--set",
        "tokens=1e9",
    ]
    out = cli(settings, tmp_path, *args, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    api = client.post(
        "/v1/recommend",
        json={
            "workload": {"model": "llama2-7b", "mode": "fine-tuning", "tokens": 1e9},
            "constraints": {"allowed_gpus": ["L40", "L20"]},
            "objective": "fastest",
            "limit": 5,
        },
    ).json()
    ranked = [(o["rank"], o["gpu"]["slug"], o["strategy"]["gpu_count"]) for o in doc["options"]]
    assert ranked == [(o["rank"], o["gpu"]["slug"], o["strategy"]["gpu_count"]) for o in api["options"]]
    assert ranked, "the L40 and the L20 both fit a 7B LoRA"
    table = cli(settings, tmp_path, *args)
    assert table.returncode == 0, table.stderr
    text = table.stdout
    assert "Options (objective: fastest)" in text
    for o in doc["options"]:
        assert o["gpu"]["name"] in text
    # 48 catalog GPUs are not allowed: one counted row, not 48 lines
    assert "NOT_ALLOWED" in text and "more" in text and text.count("not in allowed_gpus") == 0


def test_compare_table_and_ambiguous_names_list_their_candidates(settings: Settings, tmp_path: Path) -> None:
    ok = cli(settings, tmp_path, "compare", "L40", "L20")
    assert ok.returncode == 0, ok.stderr
    assert (
        "NVIDIA L40" in ok.stdout
        and "NVIDIA L20" in ok.stdout
        and "BF16 tensor (dense) (TFLOP/s)" in ok.stdout
    )
    amb = cli(settings, tmp_path, "compare", "L40", "A100")
    assert amb.returncode == 2 and "Traceback" not in amb.stderr
    assert "nvidia-a100-sxm4-80gb" in amb.stderr and "nvidia-a100-pcie-40gb" in amb.stderr
    assert "(the default)" in amb.stderr


def test_gpus_filters_and_sorts_like_the_api(settings: Settings, client: TestClient, tmp_path: Path) -> None:
    out = cli(
        settings,
        tmp_path,
        "gpus",
        "--vendor",
        "nvidia",
        "--supports",
        "fp8",
        "--sort=-usable_memory_bytes",
        "--json",
    )
    assert out.returncode == 0, out.stderr
    slugs = [g["slug"] for g in json.loads(out.stdout)["items"]]
    api = client.get(
        "/v1/gpus",
        params={"vendor": "nvidia", "supports": "fp8", "sort": "-usable_memory_bytes", "limit": 500},
    )
    assert slugs == [g["slug"] for g in api.json()["items"]] and len(slugs) > 3
    table = cli(settings, tmp_path, "gpus", "--vendor", "amd")
    assert table.returncode == 0 and "AMD Instinct MI300X" in table.stdout and "NVIDIA" not in table.stdout


def test_estimate_table_states_units_and_bad_input_is_one_line(settings: Settings, tmp_path: Path) -> None:
    out = cli(settings, tmp_path, "estimate", "--model", "llama3-8b", "--gpu", "L40", "--mode", "fine-tuning")
    assert out.returncode == 0, out.stderr
    for line in ("fits", "memory needed", "GiB", "step time", "tokens/s"):
        assert line in out.stdout
    bad = cli(
        settings, tmp_path, "estimate", "--model", "llama3-8b", "--gpu", "L40", "--set", "batch_size=-1"
    )
    assert bad.returncode == 2 and "batch_size" in bad.stderr and "Traceback" not in bad.stderr


def _estimate(adv: LocalAdvisor) -> dict[str, Any]:
    return adv.estimate({"model": "gt-llama-350m", "gpu": "NVIDIA H200", "batch_size": 4, "seq_len": 1024})


def test_calibrations_are_kept_per_database_and_watermark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    for url in fresh_database_url(tmp_path, "calcache"):
        settings = Settings(database_url=url)
        engine = make_engine(url)
        bootstrap(engine, settings)
        first = LocalAdvisor(settings, engine)
        a = _estimate(first)
        assert first.read.stats.full_fits == 1 and first.store.hits == 0
        assert first.store.path.exists() and oct(first.store.path.stat().st_mode & 0o777) == "0o600"
        second = LocalAdvisor(settings, engine)  # a new process would start the same way
        b = _estimate(second)
        assert second.read.stats.full_fits == 0 and second.store.hits == 1
        assert a["time"] == b["time"] and a["memory"] == b["memory"]
        # new measurements (a moved watermark): the stored fit is not used
        with UnitOfWork(make_session_factory(engine)) as uow:
            uow.touch_every_cell()
            uow.commit()
        third = LocalAdvisor(settings, engine)
        _estimate(third)
        assert third.read.stats.full_fits == 1 and third.store.hits == 0
        # a file someone else could have written is never loaded
        os.chmod(third.store.path, 0o666)
        fourth = LocalAdvisor(settings, engine)
        _estimate(fourth)
        assert fourth.store.hits == 0 and fourth.read.stats.full_fits == 1
        with pytest.raises(AdvisorError) as refused:
            fourth.compare(["L40", "A100"], currency="USD", workload=None)
        assert len(refused.value.candidates) == 4
        engine.dispose()


def test_a_database_behind_the_shipped_migrations_is_migrated_first(tmp_path: Path) -> None:
    from service.db.migrate import downgrade

    for url in fresh_database_url(tmp_path, "behind"):
        settings = Settings(database_url=url)
        engine = make_engine(url)
        bootstrap(engine, settings)
        downgrade(engine, "0004")  # an install from before the newest migration
        engine.dispose()
        out = cli(settings, tmp_path, "estimate", "--model", "llama3-8b", "--gpu", "L40", "--json")
        assert out.returncode == 0, out.stderr
        assert "the database's schema is at 0004: migrating to" in out.stderr
        assert json.loads(out.stdout)["memory"]["fits"] in (True, False)
        again = cli(settings, tmp_path, "estimate", "--model", "llama3-8b", "--gpu", "L40", "--json")
        assert again.returncode == 0 and "migrating" not in again.stderr


def test_recommend_passes_the_2026_serving_inputs_through_set(
    settings: Settings, client: TestClient, tmp_path: Path
) -> None:
    """Issue 28: prefix caching, speculative decoding, LoRA and the layout switches go in --set
    (dots nest) and reach the API as the same body; the table names the layout and the input /
    output token prices."""
    sets = [
        "engine=vllm",
        "input_len=4096",
        "output_len=256",
        "requests_per_s=30",
        "ttft_target_ms=1000",
        "tpot_target_ms=20",
        "prefix_cache_hit_rate=0.5",
        "lora.adapters=4",
        "lora.max_loras=4",
        "constraints.allow_expert_parallel=false",
    ]
    args = ["recommend", "--model", "llama3.1-8b", "--mode", "inference", "--gpus", "nvidia-h100-sxm"]
    # fastest: at the lowest TPOT 16 H100s split into prefill and decode pools win (cheapest,
    # priced on nodes that carry the KV transfer, is 3 aggregated TP2 replicas)
    args += ["--objective", "fastest", "--max-gpus", "16", "--limit", "1"]
    for s in sets:
        args += ["--set", s]
    out = cli(settings, tmp_path, *args, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    w = doc["asked"]["workload"]
    assert w["prefix_cache_hit_rate"] == 0.5 and w["lora"]["adapters"] == 4 and w["lora"]["max_loras"] == 4
    assert doc["asked"]["constraints"]["allow_expert_parallel"] is False
    api = client.post("/v1/recommend", json=doc["asked"]).json()
    assert api["options"][0]["strategy"] == doc["options"][0]["strategy"]
    table = cli(settings, tmp_path, *args)
    assert table.returncode == 0, table.stderr
    pools = doc["options"][0]["strategy"]["disaggregated"]  # 30 req/s of long prompts, TPOT <= 20 ms
    assert f"prefill {pools['prefill_gpus']} + decode {pools['decode_gpus']}" in table.stdout
    assert " in / " in table.stdout and " out" in table.stdout and "USD/1M tokens" in table.stdout


def test_recommend_emit_prints_the_artifact_the_api_renders(
    settings: Settings, client: TestClient, tmp_path: Path
) -> None:
    """Issue 30: ``recommend --emit kubernetes`` prints the manifest the artifacts route gives
    for the same question's option (the same answer id: ids are the question's), the
    placeholders on stderr; a bad target or rank is a refusal (exit 2)."""
    question = ["--model", "llama2-7b", "--mode", "fine-tuning", "--gpus", "L40S,H100", "--set", "tokens=1e9"]
    out = cli(settings, tmp_path, "recommend", *question, "--emit", "kubernetes", "--rank", "1")
    assert out.returncode == 0, out.stderr
    assert 'kind: "Job"' in out.stdout and "nvidia.com/gpu" in out.stdout
    assert "FILL-IN" in out.stderr
    answer = client.post(
        "/v1/recommend",
        json={
            "workload": {"model": "llama2-7b", "mode": "fine-tuning", "tokens": 1e9},
            "constraints": {"allowed_gpus": ["L40S", "H100"]},
            "objective": "fastest",
            "limit": 5,
        },
    ).json()
    api = client.get(
        f"/v1/recommendations/{answer['recommendation_id']}/artifacts",
        params={"target": "kubernetes", "option": 1},
    )
    assert api.status_code == 200, api.text

    def body(text: str) -> list[str]:
        return [
            ln for ln in text.splitlines() if "GPU Advisor answer" not in ln and "recommendation" not in ln
        ]

    assert body(out.stdout) == body(api.json()["content"])
    bad = cli(settings, tmp_path, "recommend", *question, "--emit", "helm")
    assert bad.returncode == 2 and "kubernetes" in bad.stderr
    far = cli(settings, tmp_path, "recommend", *question, "--emit", "slurm", "--rank", "99")
    assert far.returncode == 2 and "ranked 99" in far.stderr


def test_emit_from_a_server_reads_the_stored_answers_artifact(client: TestClient) -> None:
    """With ``--url`` the artifact is the server's, of the answer it stored (the shell's
    RemoteAdvisor over the real app); a refusal names the query field."""
    from service.shell.advisor import RemoteAdvisor

    adv = RemoteAdvisor("http://testserver")
    adv.http = client
    answer = adv.recommend(
        {"workload": {"model": "llama2-7b", "mode": "fine-tuning", "tokens": 1e9}, "limit": 3}
    )
    art = adv.artifact(answer, target="slurm", rank=1)
    assert art["target"] == "slurm" and answer["recommendation_id"] in art["content"]
    assert art["content"].startswith("#!/bin/bash") and "#SBATCH" in art["content"]
    with pytest.raises(AdvisorError) as refused:
        adv.artifact(answer, target="slurm", rank=99)
    assert any(f.startswith("query.option") for f in refused.value.fields)


def test_a_second_cli_call_reuses_the_stored_fit_and_refits_after_new_measurements(tmp_path: Path) -> None:
    """Issue 29: the second `gpu-advisor estimate` against the same database does not refit.
    Observed from outside, as a user would: the first call says on stderr that it fitted and
    wrote the fit; the second says nothing, leaves the file as it was, and answers the same."""
    for url in fresh_database_url(tmp_path, "secondcall"):
        settings = Settings(database_url=url)
        args = ("estimate", "--model", "llama3-8b", "--gpu", "L40", "--mode", "fine-tuning", "--json")
        first = cli(settings, tmp_path, *args)
        assert first.returncode == 0, first.stderr
        assert "fitted the calibrations" in first.stderr
        [stored] = (tmp_path / "cache").glob("calibrations-*.pickle")
        assert str(stored) in first.stderr
        before = stored.stat()
        second = cli(settings, tmp_path, *args)
        assert second.returncode == 0, second.stderr
        assert second.stderr == ""  # no migration, no fit
        after = stored.stat()
        assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
            before.st_ino,
            before.st_mtime_ns,
            before.st_size,
        )
        assert json.loads(second.stdout) == json.loads(first.stdout) | {
            "as_of": json.loads(second.stdout)["as_of"]
        }
        # new measurements move the watermark: the next call fits again and replaces the file
        engine = make_engine(url)
        with UnitOfWork(make_session_factory(engine)) as uow:
            uow.touch_every_cell()
            uow.commit()
        engine.dispose()
        third = cli(settings, tmp_path, *args)
        assert third.returncode == 0 and "fitted the calibrations" in third.stderr
        assert stored.stat().st_mtime_ns != before.st_mtime_ns


def test_a_database_made_again_under_the_same_url_does_not_reuse_the_old_fit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dropped and made again, a database reaches the same watermark numbers with data of its
    own: the stored fit is keyed by when the watermarks last moved too, so it is not reused."""
    from service.db.migrate import downgrade

    monkeypatch.setenv("GPU_ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    for url in fresh_database_url(tmp_path, "remade"):
        settings = Settings(database_url=url)
        engine = make_engine(url)
        bootstrap(engine, settings)
        first = LocalAdvisor(settings, engine)
        _estimate(first)
        with UnitOfWork(make_session_factory(engine)) as uow:
            marks = uow.watermarks()
        downgrade(engine, "base")  # every table dropped: the same URL, a new database
        bootstrap(engine, settings)
        with UnitOfWork(make_session_factory(engine)) as uow:
            assert uow.watermarks() == marks  # the same numbers: they alone cannot tell
        again = LocalAdvisor(settings, engine)
        _estimate(again)
        assert again.store.path == first.store.path
        assert again.store.hits == 0 and again.read.stats.full_fits == 1
        engine.dispose()
