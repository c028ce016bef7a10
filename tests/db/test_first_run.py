"""The first-run path (issue 16): a served instance keeps a keep-alive connection after a 500,
the CLI says in one line what is wrong with a database instead of printing a traceback, and
`keys revoke` never takes the built-in measurements key by accident."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from tests.conftest import PG_ENV, fresh_database_url, is_postgres
from tests.db.servers import REPO, ServerProcess, free_port


def _cli(url: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"GPU_ADVISOR_DATABASE_URL": url, "PATH": "/usr/bin:/bin"},
        timeout=timeout,
    )


@pytest.fixture()
def empty_db(tmp_path: Path) -> Iterator[str]:
    yield from fresh_database_url(tmp_path, "firstrun")


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One HTTP/1.1 response with a Content-Length, read off a raw socket."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed by the server after {buf!r}")
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        int(v) for k, _, v in (line.partition(": ") for line in lines[1:]) if k.lower() == "content-length"
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed mid-body")
        body += chunk
    return int(lines[0].split()[1]), body


def test_a_500_keeps_the_keep_alive_connection(tmp_path: Path) -> None:
    """A database that was never migrated makes every catalog read a 500; the next request on
    the same connection is still answered (uvicorn used to close it: the app re-raised)."""
    port = free_port()
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        "service.api.asgi:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    env = {"GPU_ADVISOR_DATABASE_URL": f"sqlite:///{tmp_path}/never-migrated.db"}
    server = ServerProcess(argv, port, env, tmp_path / "server.log").start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            request = b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
            sock.sendall(request % b"/v1/gpus")
            status, body = _read_response(sock)
            assert status == 500 and b"internal-error" in body
            sock.sendall(request % b"/healthz")
            assert _read_response(sock)[0] == 200
            sock.sendall(request % b"/v1/gpus")
            assert _read_response(sock)[0] == 500
    finally:
        server.stop()
    log = (tmp_path / "server.log").read_text()
    assert "unhandled error in GET /v1/gpus" in log  # the traceback is logged, once per error
    assert "Exception in ASGI application" not in log  # ... and never reached the server


def test_serve_no_migrate_on_an_empty_database_is_one_line(empty_db: str) -> None:
    out = _cli(empty_db, "serve", "--no-migrate", "--port", str(free_port()))
    assert out.returncode == 2
    assert "has no schema yet" in out.stderr and "gpu-advisor migrate" in out.stderr
    assert "Traceback" not in out.stderr


def test_keys_list_on_an_empty_database_is_one_line(empty_db: str) -> None:
    out = _cli(empty_db, "keys", "list")
    assert out.returncode == 2 and "has no schema yet" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.postgres
@pytest.mark.skipif(not is_postgres(), reason=f"needs {PG_ENV}")
def test_a_missing_postgres_database_is_one_line() -> None:
    import os

    base = make_url(os.environ[PG_ENV]).set(drivername="postgresql+psycopg", database="gpua_never_created_16")
    url = base.render_as_string(hide_password=False)
    for args in (
        ["migrate"],
        ["serve"],
        ["keys", "list"],
        ["keys", "create", "--scope", "read", "--name", "x"],
    ):
        out = _cli(url, *args)
        assert out.returncode == 2, (args, out.stderr)
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
        assert "does not exist" in lines[0] and "createdb" in lines[0] and "gpua_never_created_16" in lines[0]


def test_keys_revoke_by_name_or_id_never_the_builtin_key(empty_db: str) -> None:
    assert _cli(empty_db, "migrate").returncode == 0  # loads the committed measurements: the built-in key
    listing = _cli(empty_db, "keys", "list").stdout.splitlines()
    builtin = [line for line in listing if "built-in" in line]
    assert len(builtin) == 1
    builtin_id = builtin[0].split()[0]
    refused = _cli(empty_db, "keys", "revoke", builtin_id)
    assert refused.returncode == 2 and "built-in agent" in refused.stderr
    created = _cli(empty_db, "keys", "create", "--scope", "admin", "--name", "ops")
    first = created.stdout.splitlines()[0]
    assert "keys revoke" in first
    key_id = first.split("id=")[1].split()[0]
    by_name = _cli(empty_db, "keys", "revoke", "ops")
    assert by_name.returncode == 0 and f"revoked key {key_id} (ops)" in by_name.stdout
    again = _cli(empty_db, "keys", "revoke", "ops")  # revoked: no active key has that name
    assert again.returncode == 2 and "no active API key named 'ops'" in again.stderr
    assert _cli(empty_db, "keys", "revoke", key_id).returncode == 0  # by id, again: nothing changes
    assert "built-in" in _cli(empty_db, "keys", "list").stdout  # still active, untouched
