"""SQLite on a full disk and on a read-only disk (issue 26), with the database file on a small
``tmpfs`` mounted for the test: filled with a filler file to ``ENOSPC``, and remounted
read-only (between two server starts: a file system with a file open for writing cannot be
remounted read-only; a disk that turns read-only under a running server -- ``errors=remount-ro``
-- is the same to SQLite's new connections).

Before: a full disk made submissions answer 500, and ``POST /v1/recommend`` too, because
storing the answer failed; ``/readyz`` said ready. Now: writes are ``507 storage-full`` (full)
or ``503 database-read-only`` (read-only) with ``Retry-After``; reads and recommendations keep
working (the recommendation without an id, saying why); ``/readyz`` is not ready; and once
the disk has room (or is writable) again, writes succeed without a restart."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.benchmark_fixtures import result, run
from tests.db.servers import ServerProcess
from tests.faults.conftest import auth, prepared, remount, serve, stored_runs, tmpfs

pytestmark = pytest.mark.faults

DISK = {"GPU_ADVISOR_MIN_FREE_DISK_BYTES": str(2**20)}
READS = (
    "/v1/gpus/nvidia-l40",
    "/v1/compare?gpus=l40,l20",
    "/v1/benchmark-results?limit=5",
    "/v1/gpus?limit=50",
)


def big_run(run_id: str | None = None, n: int = 400) -> dict[str, Any]:
    """A run of ``n`` results: needs new pages in the database."""
    results = [
        result(
            "resnet50-train",
            params={"precision": "amp_bf16", "batch_size": 8 + i},
            metrics={"throughput": 2400.0},
        )
        for i in range(n)
    ]
    return run(results, run_id=run_id or f"disk-{uuid.uuid4().hex}", host="disk-host")


def question(i: int) -> dict[str, Any]:
    return {
        "workload": {"model": "llama3-8b", "mode": "fine-tuning", "batch_size": 1 + i % 8, "seq_len": 1024},
        "constraints": {"allowed_gpus": ["L40", "H200", "A100 80GB SXM"]},
    }


def fill(where: Path) -> Path:
    """Fill the file system with one file, to the last byte it takes."""
    filler = where / "filler"
    with filler.open("wb") as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        with contextlib.suppress(OSError):
            while True:
                f.write(b"\0" * 512)
                f.flush()
        with contextlib.suppress(OSError):
            f.close()
    return filler


@pytest.fixture()
def disk(tmp_path: Path) -> Iterator[tuple[Path, str, dict[str, str]]]:
    with tmpfs(48) as where:
        url = f"sqlite:///{where / 'advisor.db'}"
        engine, keys = prepared(url, measurements=True)
        engine.dispose()
        yield where, url, keys


def _answers(client: httpx.Client) -> dict[str, int]:
    return {path: client.get(path).status_code for path in READS}


def test_full_disk_refuses_writes_with_507_and_keeps_reads_and_recommendations(
    disk: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    where, url, keys = disk
    server = serve(url, tmp_path / "server.log", **DISK)
    try:
        with httpx.Client(base_url=server.url, timeout=60) as c:
            assert c.get("/readyz").status_code == 200
            assert (
                c.post("/v1/benchmark-runs", json=big_run(n=5), headers=auth(keys["submit"])).status_code
                == 201
            )
            filler = fill(where)
            # the database may still have room in pages it already holds: write until refused
            refused: dict[str, Any] | None = None
            statuses = []
            for _ in range(40):
                body = big_run()
                r = c.post("/v1/benchmark-runs", json=body, headers=auth(keys["submit"]))
                statuses.append(r.status_code)
                if r.status_code != 201:
                    refused = body
                    break
            assert statuses[-1] == 507 and set(statuses[:-1]) <= {201}, statuses
            assert r.headers["retry-after"] and r.json()["type"].endswith("/storage-full"), r.text
            assert _answers(c) == dict.fromkeys(READS, 200)
            recs = [c.post("/v1/recommend", json=question(i)) for i in range(10)]
            assert {x.status_code for x in recs} == {200}, [x.text[:300] for x in recs]
            unstored = [x.json() for x in recs if x.json()["recommendation_id"] is None]
            assert unstored and all("disk is full" in x["not_stored"] for x in unstored), [
                x.json().get("not_stored") for x in recs
            ]
            assert unstored[0]["options"], "the answer itself is complete"
            ready = c.get("/readyz")
            print(
                f"full disk: {len(statuses) - 1} x 201 then {r.status_code} {r.json()['type'].rsplit('/', 1)[-1]} "
                f"(Retry-After {r.headers['retry-after']}); reads {set(_answers(c).values())}; recommend "
                f"{len(recs)} x 200, {len(unstored)} without an id; /readyz {ready.status_code}"
            )
            assert ready.status_code == 503 and "cannot take writes" in ready.json()["detail"], ready.text

            filler.unlink()
            assert refused is not None
            again = c.post("/v1/benchmark-runs", json=refused, headers=auth(keys["submit"]))
            assert again.status_code == 201, again.text
            assert c.get("/readyz").status_code == 200
    finally:
        server.stop()
    from service.db.engine import make_engine

    engine = make_engine(url)
    try:
        assert stored_runs(engine, [refused["run_id"]]) == {refused["run_id"]: 1}
    finally:
        engine.dispose()
    assert "unhandled error" not in Path(server.log_path).read_text()


def test_read_only_disk_refuses_writes_with_503_and_keeps_reads_and_recommendations(
    disk: tuple[Path, str, dict[str, str]], tmp_path: Path
) -> None:
    where, url, keys = disk
    remount(where, "ro")
    server: ServerProcess | None = None
    try:
        server = serve(url, tmp_path / "server.log", **DISK)
        with httpx.Client(base_url=server.url, timeout=60) as c:
            ready = c.get("/readyz")
            assert ready.status_code == 503 and "read-only" in ready.json()["detail"], ready.text
            assert _answers(c) == dict.fromkeys(READS, 200)
            body = big_run(n=3)
            r = c.post("/v1/benchmark-runs", json=body, headers=auth(keys["submit"]))
            assert r.status_code == 503 and r.json()["type"].endswith("/database-read-only"), r.text
            assert int(r.headers["retry-after"]) > 0
            rec = c.post("/v1/recommend", json=question(0))
            assert rec.status_code == 200, rec.text
            assert rec.json()["recommendation_id"] is None and "read-only" in rec.json()["not_stored"]
            assert rec.json()["options"]

            print(
                f"read-only disk: /readyz {ready.status_code}; submission {r.status_code} "
                f"{r.json()['type'].rsplit('/', 1)[-1]} (Retry-After {r.headers['retry-after']}); "
                f"reads {set(_answers(c).values())}; recommend {rec.status_code} without an id"
            )
            remount(where, "rw")
            again = c.post("/v1/benchmark-runs", json=body, headers=auth(keys["submit"]))
            assert again.status_code == 201, again.text
            assert c.get("/readyz").status_code == 200
            assert c.post("/v1/recommend", json=question(0)).json()["recommendation_id"]
    finally:
        if server is not None:
            server.stop()
        with contextlib.suppress(Exception):
            remount(where, "rw")
    assert "unhandled error" not in Path(server.log_path).read_text()
