"""The one migration tree on the test database (SQLite or PostgreSQL): round trip, no drift,
one head."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect

from service.db.engine import make_engine
from service.db.migrate import alembic_config, downgrade, upgrade
from service.db.models import Base
from tests.conftest import fresh_database_url


@pytest.fixture()
def empty_engine(tmp_path: Path) -> Iterator[Engine]:
    for url in fresh_database_url(tmp_path, "mig"):
        eng = make_engine(url)
        yield eng
        eng.dispose()


def test_one_head() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert len(script.get_heads()) == 1


def test_upgrade_downgrade_upgrade_and_no_drift(empty_engine: Engine) -> None:
    upgrade(empty_engine)
    tables = set(inspect(empty_engine).get_table_names())
    assert {
        "gpus",
        "gpu_aliases",
        "prices",
        "fx_rates",
        "api_keys",
        "watermarks",
        "measurement_journal",
        "benchmark_stacks",
        "idempotency_records",
        "benchmark_fingerprints",
        "benchmark_runs",
        "benchmark_results",
        "pending_gpus",
        "admin_alerts",
        "recommendations",
    } <= tables
    downgrade(empty_engine, "base")
    assert set(inspect(empty_engine).get_table_names()) <= {"alembic_version"}
    upgrade(empty_engine)
    with empty_engine.connect() as conn:
        diff = compare_metadata(
            MigrationContext.configure(conn, opts={"compare_type": True, "render_as_batch": True}),
            Base.metadata,
        )
    assert diff == [], diff


def test_alembic_check_command(empty_engine: Engine) -> None:
    upgrade(empty_engine)
    with empty_engine.begin() as conn:
        command.check(alembic_config(conn))
