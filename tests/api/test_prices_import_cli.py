"""`gpu-advisor prices import-skypilot` through the real CLI (typer's runner, in process) on a
real migrated and seeded database, read back through the real app."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from typer.testing import CliRunner

from service.api.app import create_app
from service.bootstrap import bootstrap
from service.cli import app as cli
from service.core.pricing.skypilot import parse_vms_csv, render_vms_csv
from service.db.engine import make_engine, make_session_factory
from service.db.models import Price
from service.db.uow import UnitOfWork
from service.settings import Settings
from tests.conftest import fresh_database_url

GOOD = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice
l40-1x,L40,1,16,64,1.10,us-east,,0.55
l40-8x,L40,8,128,512,8.00,us-east,,
l4-1x,L4,1,8,32,0.80,us-east,"{'Gpus': [{'Name': 'L4', 'Manufacturer': 'NVIDIA', 'Count': 1, 'MemoryInfo': {'SizeInMiB': 23034}}]}",
graviton-t4g,T4g,1,4,8,0.42,us-east,,
cpu-only,,,4,16,0.10,us-east,,
"""

BAD = """InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice
l40-1x,L40,1,16,64,1.10,us-east,,0.55
l40-2x,L40,2,32,128,about two,us-east,,
l40-4x,L40,-4,64,256,4.40,us-east,,
"""


@pytest.fixture()
def db(tmp_path: Path) -> Iterator[tuple[str, Engine]]:
    for url in fresh_database_url(tmp_path, "prices"):
        engine = make_engine(url)
        bootstrap(engine, Settings(database_url=url, seed_measurements_dir=None))
        yield url, engine
        engine.dispose()


def _run(url: str, *args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, ["prices", "import-skypilot", *args], env={"GPU_ADVISOR_DATABASE_URL": url})
    return r.exit_code, r.stdout, r.stderr


def _state(engine: Engine) -> tuple[int, str]:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return int(uow.session.scalar(select(func.count()).select_from(Price)) or 0), uow.data_version()


def _write(tmp_path: Path, provider: str, text: str) -> Path:
    p = tmp_path / provider / "vms.csv"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def test_import_maps_known_names_reports_unknown_ones_and_the_prices_route_shows_age(
    db: tuple[str, Engine], tmp_path: Path
) -> None:
    url, engine = db
    n0, _ = _state(engine)
    path = _write(tmp_path, "testcloud", GOOD)
    code, out, err = _run(url, str(path), "--as-of", "2020-01-01")
    assert code == 0, err
    assert out.startswith("testcloud: 4 GPU rows, 1 non-GPU rows")
    assert "4 price rows (2020-01-01)" in out
    assert "not mapped, unknown: 'T4g'" in out
    assert "4 price row(s) added or changed" in out
    n1, _ = _state(engine)
    assert n1 == n0 + 4
    settings = Settings(database_url=url, seed_measurements_dir=None)
    with TestClient(create_app(settings, engine=engine)) as c:
        items = c.get("/v1/gpus/l40/prices").json()["items"]
        mine = {(p["instance_type"], p["pricing_model"]): p for p in items if p["provider"] == "testcloud"}
        assert set(mine) == {("l40-1x", "on_demand"), ("l40-1x", "spot"), ("l40-8x", "on_demand")}
        today = dt.datetime.now(dt.UTC).date()
        big = mine[("l40-8x", "on_demand")]
        assert big["gpus_per_instance"] == 8 and float(big["per_gpu_hour"]) == pytest.approx(1.0)
        assert big["age_days"] == (today - dt.date(2020, 1, 1)).days and big["stale"] is True
        assert big["effective_date"] == "2020-01-01" and "operator import" in big["source"]
        assert "CNY" in big["converted"]
        l4 = [p for p in c.get("/v1/gpus/nvidia-l4/prices").json()["items"] if p["provider"] == "testcloud"]
        assert [(p["instance_type"], float(p["amount"])) for p in l4] == [("l4-1x", 0.8)]
        # the same file dated today: new rows, not stale
        code, out, _ = _run(url, str(path), "--as-of", today.isoformat())
        assert code == 0 and "4 price row(s) added or changed" in out
        fresh = [
            p
            for p in c.get("/v1/gpus/l40/prices").json()["items"]
            if p["provider"] == "testcloud" and p["effective_date"] == today.isoformat()
        ]
        assert len(fresh) == 3 and all(p["age_days"] == 0 and p["stale"] is False for p in fresh)


def test_reimport_changes_nothing_and_a_rendered_copy_round_trips(
    db: tuple[str, Engine], tmp_path: Path
) -> None:
    url, engine = db
    path = _write(tmp_path, "lambda", GOOD)
    src = ["--as-of", "2026-11-30", "--source", "test file"]
    code, out, err = _run(url, str(path), *src)
    assert code == 0, err
    assert out.startswith("lambda: ")  # provider from the folder
    n1, v1 = _state(engine)
    code, out, _ = _run(url, str(path), *src)
    assert code == 0 and "0 price row(s) added or changed" in out
    assert _state(engine) == (n1, v1)  # no row, and the catalog watermark did not move
    # parse -> render (another column order, GpuInfo as SkyPilot writes it) -> import: same rows
    parsed = parse_vms_csv(GOOD)
    assert parsed.ok
    copy = _write(tmp_path / "copy", "lambda", render_vms_csv(parsed.rows))
    code, out, _ = _run(url, str(copy), *src)
    assert code == 0 and "4 price rows" in out and "0 price row(s) added or changed" in out
    assert _state(engine) == (n1, v1)


def test_bad_rows_are_named_by_line_and_column_and_nothing_is_imported(
    db: tuple[str, Engine], tmp_path: Path
) -> None:
    url, engine = db
    before = _state(engine)
    code, _out, err = _run(url, str(_write(tmp_path, "testcloud", BAD)), "--as-of", "2026-11-30")
    assert code == 2
    assert "2 malformed row(s)" in err and "nothing was imported" in err
    assert "line 3, Price: not a number: 'about two'" in err
    assert "line 4, AcceleratorCount: negative: '-4'" in err
    assert _state(engine) == before  # the good row on line 2 was not imported either


def test_dry_run_and_bad_arguments_write_nothing(db: tuple[str, Engine], tmp_path: Path) -> None:
    url, engine = db
    before = _state(engine)
    path = _write(tmp_path, "testcloud", GOOD)
    code, out, _ = _run(url, str(path), "--dry-run")
    assert code == 0 and "4 price rows" in out and "dry run: nothing written" in out
    code, _, err = _run(url, str(path), "--as-of", "yesterday")
    assert code == 2 and "--as-of" in err
    code, _, err = _run(url, str(path), "--provider", "x" * 65)
    assert code == 2 and "provider" in err
    assert _state(engine) == before


def test_an_import_without_as_of_says_the_prices_are_at_least_that_old(
    db: tuple[str, Engine], tmp_path: Path
) -> None:
    url, engine = db
    path = _write(tmp_path, "undated", GOOD)
    code, out, err = _run(url, str(path))
    assert code == 0, err
    assert "the day read: no --as-of, so their age is a lower bound" in out
    code, out, err = _run(url, str(_write(tmp_path, "dated", GOOD)), "--as-of", "2026-11-02")
    assert code == 0, err and "lower bound" not in out
    settings = Settings(database_url=url, seed_measurements_dir=None)
    with TestClient(create_app(settings, engine=engine)) as c:
        items = c.get("/v1/gpus/l40/prices").json()["items"]
        undated = [p for p in items if p["provider"] == "undated"]
        dated = [p for p in items if p["provider"] == "dated"]
        assert undated and all(p["date_basis"] == "retrieved" and p["age_is_lower_bound"] for p in undated)
        assert dated and all(p["date_basis"] == "effective" and not p["age_is_lower_bound"] for p in dated)
        assert all(p["effective_date"] == "2026-11-02" for p in dated)
