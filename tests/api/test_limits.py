"""Operating limits at the edge, against the real app and the real database (and the real
Redis at 127.0.0.1:6379 where buckets are shared): rate limits per key and per client address,
429 with Retry-After that changes nothing, trusted-proxy forwarding, buckets shared through
Redis and the fallback when it is down, 413 for an oversized chunked body, request ids, the
/metrics access setting and the ingestion / provenance counters, no secrets in logs."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select

from service.api.app import create_app
from service.api.logs import JsonFormatter, logging_config, redact
from service.api.ratelimit import MemoryLimiter, RedisLimiter
from service.db.engine import make_session_factory
from service.db.models import BenchmarkRun
from service.db.uow import UnitOfWork
from service.settings import DEFAULT_RATE_LIMITS, Settings, merge_rate_limits
from tests.api.benchmark_fixtures import make_gpu, result, run_on
from tests.conftest import _key, auth

REDIS_ENV = "GPU_ADVISOR_TEST_REDIS_URL"
ESTIMATE = {
    "model": "llama3-8b",
    "gpu": "nvidia-h200-sxm",
    "batch_size": 1,
    "seq_len": 2048,
    "optimizer_impl": "fused",
}


_SHARED: dict[str, Any] = {}


@pytest.fixture(autouse=True)
def _shared_caches(app: FastAPI) -> None:
    """The apps built here share the session app's per-process caches (alias index,
    calibrations), as apps in one process would: no test pays for a calibration rebuild."""
    _SHARED.update(read_model=app.state.read_model)


def fresh(settings: Settings, engine: Engine, **update: Any) -> FastAPI:
    new = create_app(settings.model_copy(update=update), engine=engine)
    for name, cache in _SHARED.items():
        setattr(new.state, name, cache)
    return new


def limited(settings: Settings, engine: Engine, rules: dict[str, Any], **over: Any) -> FastAPI:
    """An app of its own with limits on (its own in-memory buckets, or its own Redis prefix)."""
    update: dict[str, Any] = {
        "rate_limits_enabled": True,
        "rate_limits": rules,
        "rate_limit_key_prefix": f"gpu-advisor-test:{uuid.uuid4().hex}:",
    }
    return fresh(settings, engine, **{**update, **over})


def _runs(engine: Engine, run_id: str) -> int:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return int(uow.session.scalar(select(func.count()).where(BenchmarkRun.run_id == run_id)) or 0)


def _data_version(engine: Engine) -> int:
    with UnitOfWork(make_session_factory(engine)) as uow:
        return uow.data_version()


def _is_429(r: Any, rule: str) -> None:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert int(r.headers["Retry-After"]) >= 1
    p = r.json()
    assert p["type"].endswith("/rate-limited") and p["rule"] == rule
    assert p["retry_after_s"] == int(r.headers["Retry-After"])


@pytest.fixture()
def redis_url() -> Iterator[str]:
    import redis

    url = os.environ.get(REDIS_ENV, "redis://127.0.0.1:6379/0")
    client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
    try:
        client.ping()
    except redis.RedisError as exc:
        client.close()
        pytest.skip(f"no Redis at {url} ({exc}); .ci/run starts one (README: Redis)")
    yield url
    for k in client.scan_iter("gpu-advisor-test:*"):
        client.delete(k)
    client.close()


# ---- rate limits ---------------------------------------------------------------------------------


def test_a_refused_write_is_429_with_retry_after_and_changes_nothing(
    settings: Settings, engine: Engine, submit_key: str
) -> None:
    app = limited(settings, engine, {"benchmark-submit": {"burst": 2, "per_minute": 1}})
    gpu = make_gpu(engine)
    bodies = [run_on(gpu, [result(metrics={"throughput": 2000.0 + i})]) for i in range(3)]
    with TestClient(app) as c:
        acked = [c.post("/v1/benchmark-runs", json=b, headers=auth(submit_key)) for b in bodies[:2]]
        assert [r.status_code for r in acked] == [201, 201]
        before = _data_version(engine)
        r = c.post("/v1/benchmark-runs", json=bodies[2], headers=auth(submit_key))
        _is_429(r, "benchmark-submit")
        assert r.headers["X-Request-ID"]
        assert _runs(engine, bodies[2]["run_id"]) == 0 and _data_version(engine) == before
        # the dry run shares the bucket; a replay of an acknowledged run is refused too, and
        # the acknowledged runs stay stored exactly once
        _is_429(
            c.post("/v1/benchmark-runs/validate", json=bodies[2], headers=auth(submit_key)),
            "benchmark-submit",
        )
        _is_429(c.post("/v1/benchmark-runs", json=bodies[0], headers=auth(submit_key)), "benchmark-submit")
        assert [_runs(engine, b["run_id"]) for b in bodies] == [1, 1, 0]
        # another key has its own bucket
        other = _key(engine, "submit")
        assert c.post("/v1/benchmark-runs", json=bodies[2], headers=auth(other)).status_code == 201
        # reads that no rule covers are never limited
        assert c.get(f"/v1/gpus/{gpu['slug']}").status_code == 200


@pytest.mark.parametrize("now", [0.1, 7.3, 1234.567, 98765.4321, 1.7e9 + 0.123])
@pytest.mark.parametrize("burst", [1, 2, 5])
def test_a_fresh_bucket_allows_its_burst_whatever_the_clock_reads(now: float, burst: int) -> None:
    """GCRA with the clock at any value: a fresh bucket allows exactly ``burst`` requests, then
    refuses. (Computed as ``tat + interval - burst * interval``, the allowance rounded up by an ulp
    at some clock readings -- 0.1 among them -- and a burst-1 rule refused a fresh bucket's first
    request: the CI flake of the two burst-1 tests here and in test_recommend.py.)"""
    limiter = MemoryLimiter(clock=lambda: now)
    decisions = [limiter.hit("k", 60.0, burst).allowed for _ in range(burst + 1)]
    assert decisions == [True] * burst + [False]


def test_keys_have_their_own_buckets_and_anything_else_is_limited_by_address(
    settings: Settings, engine: Engine, read_key: str
) -> None:
    app = limited(settings, engine, {"estimate": {"burst": 1, "per_minute": 1}})
    other = _key(engine, "read")
    with TestClient(app, client=("192.0.2.10", 40000)) as c:
        assert c.post("/v1/estimate", json=ESTIMATE, headers=auth(read_key)).status_code == 200
        _is_429(c.post("/v1/estimate", json=ESTIMATE, headers=auth(read_key)), "estimate")
        assert c.post("/v1/estimate", json=ESTIMATE, headers=auth(other)).status_code == 200
        # no key: the address's bucket (a fresh one)
        assert c.post("/v1/estimate", json=ESTIMATE).status_code == 200
        r = c.post("/v1/estimate", json=ESTIMATE)
        _is_429(r, "estimate")
        assert "client address" in r.json()["detail"]
        # an invalid or made-up key cannot open a bucket of its own: it counts as its address
        for fake in ("gpa_deadbeef_notakey", "gpa_" + uuid.uuid4().hex[:8] + "_" + uuid.uuid4().hex):
            _is_429(c.post("/v1/estimate", json=ESTIMATE, headers=auth(fake)), "estimate")
    with TestClient(app, client=("192.0.2.11", 40000)) as c:
        assert c.post("/v1/estimate", json=ESTIMATE).status_code == 200


def test_large_pages_only_are_limited(settings: Settings, engine: Engine) -> None:
    app = limited(settings, engine, {"large-page": {"burst": 1, "per_minute": 1}})
    with TestClient(app) as c:
        for _ in range(3):
            assert c.get("/v1/gpus?limit=100").status_code == 200
        assert c.get("/v1/gpus?limit=101").status_code == 200
        _is_429(c.get("/v1/gpus?limit=500"), "large-page")
        _is_429(c.get("/v1/benchmark-results?limit=200"), "large-page")
        assert c.get("/v1/benchmark-results?limit=20").status_code == 200


def test_forwarded_for_counts_only_through_trusted_proxies(settings: Settings, engine: Engine) -> None:
    rules = {"estimate": {"burst": 1, "per_minute": 1}}
    proxied = limited(settings, engine, rules, trusted_proxies=["10.0.0.0/8"])
    with TestClient(proxied, client=("10.1.2.3", 40000)) as c:
        xff = {"X-Forwarded-For": "198.51.100.7"}
        assert c.post("/v1/estimate", json=ESTIMATE, headers=xff).status_code == 200
        _is_429(c.post("/v1/estimate", json=ESTIMATE, headers=xff), "estimate")
        # a client cannot pick its bucket by writing its own X-Forwarded-For: the proxy appends
        # the real address, which is read from the right
        spoofed = {"X-Forwarded-For": "203.0.113.99, 198.51.100.7"}
        _is_429(c.post("/v1/estimate", json=ESTIMATE, headers=spoofed), "estimate")
        # two trusted hops: the first untrusted address from the right is the client
        assert (
            c.post(
                "/v1/estimate", json=ESTIMATE, headers={"X-Forwarded-For": "198.51.100.8, 10.9.9.9"}
            ).status_code
            == 200
        )
        _is_429(
            c.post("/v1/estimate", json=ESTIMATE, headers={"X-Forwarded-For": "198.51.100.8"}), "estimate"
        )
    # the same header from a peer that is not a trusted proxy is ignored
    direct = limited(settings, engine, rules, trusted_proxies=["10.0.0.0/8"])
    with TestClient(direct, client=("192.0.2.20", 40000)) as c:
        assert (
            c.post("/v1/estimate", json=ESTIMATE, headers={"X-Forwarded-For": "198.51.100.1"}).status_code
            == 200
        )
        _is_429(
            c.post("/v1/estimate", json=ESTIMATE, headers={"X-Forwarded-For": "198.51.100.2"}), "estimate"
        )


def test_buckets_are_shared_through_redis(
    settings: Settings, engine: Engine, read_key: str, redis_url: str
) -> None:
    """Two apps (as two replicas would be) on one Redis and one prefix: one budget."""
    rules = {"estimate": {"burst": 3, "per_minute": 1}}
    a = limited(settings, engine, rules, redis_url=redis_url)
    b = limited(
        settings,
        engine,
        rules,
        redis_url=redis_url,
        rate_limit_key_prefix=a.state.settings.rate_limit_key_prefix,
    )
    with TestClient(a) as ca, TestClient(b) as cb:
        codes = [
            c.post("/v1/estimate", json=ESTIMATE, headers=auth(read_key)).status_code for c in (ca, cb, ca)
        ]
        assert codes == [200, 200, 200]
        _is_429(cb.post("/v1/estimate", json=ESTIMATE, headers=auth(read_key)), "estimate")
        _is_429(ca.post("/v1/estimate", json=ESTIMATE, headers=auth(read_key)), "estimate")
    assert a.state.metrics.registry.get_sample_value("gpu_advisor_rate_limit_backend_errors_total") == 0
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(a.state.settings.rate_limit_key_prefix + "*"))
        assert len(keys) == 1 and keys[0].decode().startswith(
            a.state.settings.rate_limit_key_prefix + "estimate:key:"
        )
        assert 0 < client.pttl(keys[0]) <= 4 * 60_000 + 1000  # gone once the bucket is full again
    finally:
        client.close()


def test_a_redis_outage_falls_back_to_process_buckets(settings: Settings, engine: Engine) -> None:
    app = limited(
        settings, engine, {"estimate": {"burst": 1, "per_minute": 1}}, redis_url="redis://127.0.0.1:1/0"
    )
    with TestClient(app) as c:
        assert c.post("/v1/estimate", json=ESTIMATE).status_code == 200
        _is_429(c.post("/v1/estimate", json=ESTIMATE), "estimate")
    assert app.state.metrics.registry.get_sample_value("gpu_advisor_rate_limit_backend_errors_total") == 2


def test_rule_overrides_merge_by_name_and_the_schema_states_them(settings: Settings, engine: Engine) -> None:
    rules = merge_rate_limits(
        {
            "estimate-batch": {"per_minute": 30},
            "run-read": None,
            "models-parse": {
                "methods": ["post"],
                "paths": ["/v1/models/parse"],
                "per_minute": 60,
                "burst": 5,
            },
        }
    )
    assert (
        rules["estimate-batch"].per_minute == 30
        and rules["estimate-batch"].burst == DEFAULT_RATE_LIMITS["estimate-batch"].burst
    )
    assert "run-read" not in rules and rules["models-parse"].methods == ("POST",)
    with pytest.raises(ValueError):
        Settings(rate_limits={"new-rule": {"per_minute": 5}})  # a new rule names everything
    with pytest.raises(ValueError):
        Settings(trusted_proxies="10.0.0.0/8, not-an-address")
    assert Settings(trusted_proxies="10.0.0.0/8, 127.0.0.1").trusted_proxies == ["10.0.0.0/8", "127.0.0.1"]

    doc = create_app(settings, engine=engine).openapi()
    batch = doc["paths"]["/v1/estimate/batch"]["post"]
    assert batch["x-rate-limit"] == {
        "rule": "estimate-batch",
        "per_minute": 12.0,
        "burst": 4,
        "per": "API key, else client address",
    }
    assert "429" in batch["responses"] and "408" in batch["responses"]
    assert batch["responses"]["429"]["headers"]["Retry-After"]
    items = doc["components"]["schemas"]["BatchRequest"]["properties"]["items"]
    assert items["maxItems"] == 256
    results = doc["components"]["schemas"]["BenchmarkRunIn"]["properties"]["results"]
    assert results["maxItems"] == 10_000
    page = next(p for p in doc["paths"]["/v1/benchmark-results"]["get"]["parameters"] if p["name"] == "limit")
    assert "at most 500" in page["description"]
    assert doc["paths"]["/v1/benchmark-results"]["get"]["x-rate-limit"]["above_page_size"] == 100
    assert "x-rate-limit" not in doc["paths"]["/v1/gpus/{ident}"]["get"]


# ---- bodies ------------------------------------------------------------------------------------


def test_an_oversized_chunked_body_is_413(settings: Settings, engine: Engine, submit_key: str) -> None:
    app = fresh(settings, engine, max_body_bytes=4096)
    gpu = make_gpu(engine)
    body = json.dumps(run_on(gpu, [result() for _ in range(40)])).encode()
    assert len(body) > 4096

    def chunks() -> Iterator[bytes]:
        for i in range(0, len(body), 1000):
            yield body[i : i + 1000]

    with TestClient(app) as c:
        r = c.post(
            "/v1/benchmark-runs",
            content=chunks(),
            headers={**auth(submit_key), "Content-Type": "application/json"},
        )
        assert r.status_code == 413, r.text
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["max_body_bytes"] == 4096 and r.headers["connection"] == "close"
        assert _runs(engine, json.loads(body)["run_id"]) == 0
        # a small chunked body is read and handled as usual
        small = json.dumps(run_on(gpu, [result()])).encode()
        r = c.post(
            "/v1/benchmark-runs",
            content=iter([small[:50], small[50:]]),
            headers={**auth(submit_key), "Content-Type": "application/json"},
        )
        assert r.status_code == 201, r.text


# ---- request ids, metrics, logs ----------------------------------------------------------------


def test_request_ids_are_echoed_or_made(client: TestClient) -> None:
    r = client.get("/healthz", headers={"X-Request-ID": "lb-7f3a:abc.123"})
    assert r.headers["X-Request-ID"] == "lb-7f3a:abc.123"
    made = {client.get("/healthz").headers["X-Request-ID"] for _ in range(2)}
    assert len(made) == 2 and all(re.fullmatch(r"[0-9a-f]{32}", m) for m in made)
    for insane in (b"x" * 129, b"two words", "a\u00e9b".encode(), b"id\x00"):
        got = client.get("/healthz", headers={"X-Request-ID": insane}).headers["X-Request-ID"]
        assert re.fullmatch(r"[0-9a-f]{32}", got), got
    r = client.get("/v1/gpus/no-such-gpu-at-all", headers={"X-Request-ID": "req-404"})
    assert r.status_code == 404 and r.headers["X-Request-ID"] == "req-404"


def test_metrics_access_follows_the_setting(
    settings: Settings, engine: Engine, admin_key: str, read_key: str
) -> None:
    with TestClient(fresh(settings, engine)) as c:
        assert settings.metrics_access == "admin"
        assert c.get("/metrics").status_code == 401
        assert c.get("/metrics", headers=auth(read_key)).status_code == 403
        r = c.get("/metrics", headers=auth(admin_key))
        assert r.status_code == 200 and "gpu_advisor_http_requests_total" in r.text
    with TestClient(fresh(settings, engine, metrics_access="open")) as c:
        assert c.get("/metrics").status_code == 200
    with TestClient(fresh(settings, engine, metrics_access="port")) as c:
        assert c.get("/metrics", headers=auth(admin_key)).status_code == 404


def _sample(text: str, name: str, **labels: str) -> float:
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    line = f"{name}{{{want}}} " if labels else f"{name} "
    for row in text.splitlines():
        if row.startswith(line):
            return float(row.split()[-1])
    return 0.0


def test_metrics_count_ingestion_and_answers_by_provenance(
    settings: Settings, engine: Engine, submit_key: str, admin_key: str
) -> None:
    app = fresh(settings, engine, metrics_access="open")
    gpu = make_gpu(engine, bf16=100.0)
    # 4 results, one far above the catalog's dense bf16 peak -> quarantined at ingestion
    body = run_on(
        gpu, [result("gemm", {"precision": "bf16"}, {"tflops": v}) for v in (80.0, 81.0, 82.0, 900.0)]
    )
    unknown = {"pci": f"0x{random.randrange(0xED00, 0xF000):04x}", "usable": 7 * 2**30, "name": "Mystery GPU"}
    pending = run_on(unknown, [result() for _ in range(3)])
    with TestClient(app) as c:
        assert c.post("/v1/benchmark-runs", json=body, headers=auth(submit_key)).status_code == 201
        assert c.post("/v1/benchmark-runs", json=body, headers=auth(submit_key)).status_code == 200
        r = c.post("/v1/benchmark-runs", json=pending, headers=auth(submit_key))
        assert r.status_code == 201 and r.json()["state"] == "pending", r.text
        one = c.post("/v1/estimate", json=ESTIMATE).json()
        batch = c.post(
            "/v1/estimate/batch", json={"items": [ESTIMATE, {**ESTIMATE, "gpu": "nvidia-l40s"}]}
        ).json()
        text = c.get("/metrics").text
    assert _sample(text, "gpu_advisor_benchmark_runs_total", outcome="stored") == 2
    assert _sample(text, "gpu_advisor_benchmark_runs_total", outcome="replayed") == 1
    assert _sample(text, "gpu_advisor_benchmark_results_ingested_total") == 7
    assert _sample(text, "gpu_advisor_benchmark_results_quarantined_total", reason="above_catalog_peak") == 1
    assert _sample(text, "gpu_advisor_benchmark_results_pending_total") == 3
    assert one["time"]["provenance"] == "measured"
    assert (
        _sample(text, "gpu_advisor_answers_total", endpoint="estimate", part="time", provenance="measured")
        == 1
    )
    assert (
        _sample(
            text,
            "gpu_advisor_answers_total",
            endpoint="estimate",
            part="memory",
            provenance=one["memory"]["provenance"],
        )
        == 1
    )
    l40s = batch["items"][1]["result"]["time"]["provenance"]
    assert (
        _sample(text, "gpu_advisor_answers_total", endpoint="estimate_batch", part="time", provenance=l40s)
        >= 1
    )
    assert (
        _sample(
            text, "gpu_advisor_http_requests_total", method="POST", route="/v1/benchmark-runs", status="201"
        )
        == 2
    )
    assert (
        _sample(text, "gpu_advisor_http_request_duration_seconds_count", method="POST", route="/v1/estimate")
        == 1
    )


def test_no_secrets_in_logs(
    settings: Settings, engine: Engine, admin_key: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Every record logged while requests carrying keys are handled -- accepted, refused,
    failing -- rendered by the service's JSON formatter: the request id is there, no key is."""
    app = limited(settings, engine, {"estimate": {"burst": 1, "per_minute": 1}})
    revoked = "gpa_0badc0de_" + "S3cr3tS3cr3tS3cr3tS3cr3tS3cr3tS3cr3t-_x"
    fmt = JsonFormatter()
    with caplog.at_level(logging.DEBUG), TestClient(app, raise_server_exceptions=False) as c:
        c.get("/v1/admin/alerts", headers={**auth(admin_key), "X-Request-ID": "find-me-1"})
        c.post("/v1/estimate", json=ESTIMATE, headers=auth(admin_key))
        c.post("/v1/estimate", json=ESTIMATE, headers=auth(admin_key))  # 429
        c.get("/v1/admin/alerts", headers=auth(revoked))  # 401
        c.post(
            "/v1/gpus", content=b"{not json", headers={**auth(admin_key), "Content-Type": "application/json"}
        )
        c.get("/metrics?token=" + admin_key, headers=auth(admin_key))
    lines = [fmt.format(rec) for rec in caplog.records]
    access = [json.loads(line) for line in lines if '"gpu_advisor.access"' in line]
    assert len(access) == 6
    assert access[0]["request_id"] == "find-me-1" and access[0]["route"] == "/v1/admin/alerts"
    assert [a["status"] for a in access] == [200, 200, 429, 401, 422, 200]
    assert all(
        set(a) >= {"ts", "level", "msg", "request_id", "method", "path", "status", "duration_ms", "client"}
        for a in access
    )
    blob = "\n".join(lines)
    for secret in (admin_key, admin_key.split("_", 2)[2], revoked, revoked.split("_", 2)[2]):
        assert secret not in blob
    # the formatter masks key-shaped strings whoever logs them
    logging.getLogger("gpu_advisor.test").warning("client sent Authorization: Bearer %s", admin_key)
    logging.getLogger("gpu_advisor.test").warning("key=%s", admin_key)
    masked = [fmt.format(rec) for rec in caplog.records[-2:]]
    assert admin_key not in "".join(masked)
    assert "Bearer ***" in masked[0] and "key=gpa_" + admin_key.split("_")[1] + "_***" in masked[1]
    assert redact("Authorization: Bearer abc.def") == "Authorization: Bearer ***"
    assert logging_config("json", "info")["handlers"]["stderr"]["filters"] == ["request_id"]


class _FlakyRedis:
    """A TCP relay to a real Redis that can be cut (every connection closed, new ones closed as
    they come) and restored: a Redis that flaps, as a network or a restart would make it."""

    def __init__(self, target: str) -> None:
        import socket
        import threading
        from urllib.parse import urlsplit

        parts = urlsplit(target)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self.up = True
        self.conns: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"redis://127.0.0.1:{self.listener.getsockname()[1]}/0"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            if not self.up:
                conn.close()
                continue
            upstream = socket.create_connection(self.target)
            self.conns += [conn, upstream]
            for a, b in ((conn, upstream), (upstream, conn)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: Any, dst: Any) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.close()

    def cut(self) -> None:
        import socket

        self.up = False
        for s in self.conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        self.conns.clear()

    def restore(self) -> None:
        self.up = True

    def close(self) -> None:
        self.cut()
        self.listener.close()


def test_a_flapping_redis_does_not_refill_buckets(redis_url: str) -> None:
    """Each time Redis goes away the process answers from its own buckets, and each time it
    comes back from Redis's: two buckets, each keeping its state across flaps, so a client gets
    at most two bursts however often Redis flaps (had a flap refilled a bucket, 6 flaps would
    have allowed 6 bursts more). The relay and the 0.25 s socket timeout race on a loaded
    machine (a CI run saw one scenario's cut land late); a refill is the same on every run, so
    the scenario is run up to three times on fresh keys and one clean run must hold exactly."""
    import asyncio

    burst, interval_s = 3, 60.0  # one request a minute refills: nothing refills during the test

    def scenario() -> list[int]:
        flaky = _FlakyRedis(redis_url)
        limiter = RedisLimiter(flaky.url, fallback=MemoryLimiter())
        limiter.BACKOFF_S = 0.05  # ask Redis again soon after each cut, as the flaps need
        key = f"gpu-advisor-test:flap:{uuid.uuid4().hex}"

        async def until_refused() -> int:
            for allowed in range(50):
                await asyncio.sleep(0.06)  # past the back-off: each hit asks Redis when it is up
                if not (await limiter.hit(key, interval_s, burst)).allowed:
                    return allowed
            return 50

        async def flaps() -> list[int]:
            counts = []
            for _ in range(6):
                flaky.restore()
                counts.append(await until_refused())
                flaky.cut()
                counts.append(await until_refused())
            await limiter.aclose()
            return counts

        try:
            return asyncio.run(flaps())
        finally:
            flaky.close()

    runs = []
    for _ in range(3):
        counts = scenario()
        runs.append(counts)
        if counts[:2] == [burst, burst] and sum(counts) == 2 * burst:
            break
    print("flaps:", runs)
    assert runs[-1][:2] == [burst, burst] and sum(runs[-1]) == 2 * burst, runs
