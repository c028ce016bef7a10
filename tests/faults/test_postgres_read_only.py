"""A PostgreSQL server that turns read-only under a running service (issue 26), on the private
throwaway cluster: ``default_transaction_read_only = on`` set with ``ALTER SYSTEM`` and a
reload, as an operator fencing a primary would (a standby is read-only the same way).

The SQLite tests (``test_sqlite_disk``) cover a disk that cannot write; this is the
PostgreSQL side of "``/readyz`` is not ready when the database cannot write": ``/readyz`` 503
naming it, submissions ``503 database-read-only`` with ``Retry-After`` and nothing stored,
reads and recommendations keep working (the recommendation without an id, saying why), and
once the server takes writes again the next write succeeds without a restart."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from sqlalchemy import Engine

from tests.db.servers import ServerProcess
from tests.faults.conftest import (
    PrivateCluster,
    auth,
    new_pg_database,
    prepared,
    serve,
    small_run,
    stored_runs,
    wait_ready,
)
from tests.faults.test_sqlite_disk import READS, question

pytestmark = pytest.mark.faults


def _read_only(cluster: PrivateCluster, on: bool) -> None:
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        if on:
            conn.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        else:
            conn.execute("ALTER SYSTEM RESET default_transaction_read_only")
        conn.execute("SELECT pg_reload_conf()")


@pytest.fixture()
def served(
    pg_cluster: PrivateCluster, tmp_path: Path
) -> Iterator[tuple[PrivateCluster, ServerProcess, Engine, dict[str, str]]]:
    url = new_pg_database(pg_cluster)
    engine, keys = prepared(url)
    server = serve(url, tmp_path / "server.log")
    try:
        wait_ready(server)
        yield pg_cluster, server, engine, keys
    finally:
        _read_only(pg_cluster, False)
        server.stop()
        engine.dispose()


def test_read_only_server_refuses_writes_with_503_and_keeps_reads_and_recommendations(
    served: tuple[PrivateCluster, ServerProcess, Engine, dict[str, str]],
) -> None:
    cluster, server, engine, keys = served
    with httpx.Client(base_url=server.url, timeout=60) as c:
        assert c.post("/v1/benchmark-runs", json=small_run(), headers=auth(keys["submit"])).status_code == 201
        _read_only(cluster, True)
        refused_id = f"ro-{uuid.uuid4().hex}"
        r = c.post("/v1/benchmark-runs", json=small_run(refused_id), headers=auth(keys["submit"]))
        ready = c.get("/readyz")
        reads = {p: c.get(p).status_code for p in READS}
        rec = c.post("/v1/recommend", json=question(0))
        print(
            f"read-only PostgreSQL: /readyz {ready.status_code}; submission {r.status_code} "
            f"{r.json().get('type', '').rsplit('/', 1)[-1]} (Retry-After {r.headers.get('retry-after')}); "
            f"reads {set(reads.values())}; recommend {rec.status_code}, id {rec.json().get('recommendation_id')}"
        )
        assert r.status_code == 503 and r.json()["type"].endswith("/database-read-only"), r.text
        assert int(r.headers["retry-after"]) > 0
        assert ready.status_code == 503 and "read-only" in ready.json()["detail"], ready.text
        assert reads == dict.fromkeys(READS, 200)
        assert rec.status_code == 200 and rec.json()["options"], rec.text
        assert rec.json()["recommendation_id"] is None and "read-only" in rec.json()["not_stored"]

        _read_only(cluster, False)
        again = c.post("/v1/benchmark-runs", json=small_run(refused_id), headers=auth(keys["submit"]))
        assert again.status_code == 201, again.text
        assert c.get("/readyz").status_code == 200
        assert c.post("/v1/recommend", json=question(0)).json()["recommendation_id"]
    assert stored_runs(engine, [refused_id]) == {refused_id: 1}
    assert "unhandled error" not in Path(server.log_path).read_text()
