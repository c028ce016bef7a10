"""Two API replicas on one PostgreSQL, as README "Several replicas" runs them: two real
`gpu-advisor serve --no-migrate` processes, one database, one Redis for rate limits (when it
answers at 127.0.0.1:6379).

- concurrent agents submit through both replicas with retries and duplicate run_ids (the same
  run raced through both at once; a first attempt whose answer is lost, retried through the
  other): every run is stored exactly once, with the results each answer acknowledged;
  another agent's run_id is a 409 through either replica;
- a catalog edit (admin PATCH) through one replica is seen by the very next request to the
  other (names, ETag, and the estimates computed from it);
- both replicas give the same /v1/estimate and /v1/estimate/batch answers (minus `as_of`);
- a rate-limit budget is one budget across the replicas (through Redis).
"""

from __future__ import annotations

import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, func, select

from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.models import BenchmarkResult, BenchmarkRun
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.api.benchmark_fixtures import make_gpu, result, run_on
from tests.conftest import fresh_database_url, is_postgres
from tests.db.servers import ServerProcess

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.skipif(
        not is_postgres(),
        reason="replicas share one PostgreSQL server (set GPU_ADVISOR_TEST_DATABASE_URL); an embedded SQLite "
        "file is one host's database, not a deployment with several API servers",
    ),
]

AGENTS = 6
RUNS_PER_AGENT = 20
RESULTS_PER_RUN = 5
REDIS_URL = os.environ.get("GPU_ADVISOR_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
# the shipped rules, except one route this module keeps for the shared-budget check
RULES = '{"run-read": {"burst": 3, "per_minute": 1}}'


def _redis_up() -> bool:
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=0.5)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


@dataclass
class Deployment:
    a: ServerProcess
    b: ServerProcess
    engine: Engine
    agents: list[str]
    admin: str
    gpu: dict[str, Any]
    redis: bool
    prefix: str

    @property
    def replicas(self) -> tuple[ServerProcess, ServerProcess]:
        return self.a, self.b


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    tmp = tmp_path_factory.mktemp("replicas")
    redis_up = _redis_up()
    prefix = f"gpu-advisor-test:{uuid.uuid4().hex}:"
    for url in fresh_database_url(tmp, "replicas"):
        engine = make_engine(url)
        bootstrap(engine, Settings(database_url=url))  # `gpu-advisor migrate`: once, before the replicas
        with UnitOfWork(make_session_factory(engine)) as uow:
            agents = [create_key(uow, name=f"agent-{i}", scope="submit").secret for i in range(AGENTS)]
        with UnitOfWork(make_session_factory(engine)) as uow:
            admin = create_key(uow, name="ops", scope="admin").secret
        gpu = make_gpu(engine)
        env = {"GPU_ADVISOR_RATE_LIMITS": RULES, "GPU_ADVISOR_RATE_LIMIT_KEY_PREFIX": prefix}
        if redis_up:
            env["GPU_ADVISOR_REDIS_URL"] = REDIS_URL
        a = ServerProcess.serve(url, tmp / "a.log", env=env).launch()
        b = ServerProcess.serve(url, tmp / "b.log", env=env).launch()
        try:
            a.wait_ready()
            b.wait_ready()
            yield Deployment(a, b, engine, agents, admin, gpu, redis_up, prefix)
        finally:
            a.stop()
            b.stop()
            engine.dispose()
            if redis_up:
                import redis

                client = redis.Redis.from_url(REDIS_URL)
                for k in client.scan_iter(prefix + "*"):
                    client.delete(k)
                client.close()


# ---- concurrent agents -----------------------------------------------------------------------


@dataclass
class Tally:
    acked: dict[str, set[tuple[int, ...]]] = field(default_factory=dict)  # run_id -> result ids answered
    posts: int = 0
    created: int = 0
    replays: int = 0
    limited: int = 0
    lost_answers: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _submit(
    clients: dict[str, httpx.Client],
    url: str,
    key: str,
    body: dict[str, Any],
    tally: Tally,
    *,
    lose_first_answer: bool = False,
) -> None:
    """One agent's delivery of one run: retried on a lost answer, 5xx or 429 (Retry-After)
    until acknowledged; after a lost answer through the other replica, as a load balancer
    would send it."""
    deadline = time.monotonic() + 45
    attempt = 0
    while time.monotonic() < deadline:
        timeout = (
            httpx.Timeout(10.0, read=0.001) if lose_first_answer and attempt == 0 else httpx.Timeout(10.0)
        )
        attempt += 1
        with tally.lock:
            tally.posts += 1
        try:
            r = clients[url].post(
                "/v1/benchmark-runs",
                json=body,
                timeout=timeout,
                headers={"Authorization": f"Bearer {key}", "Idempotency-Key": body["run_id"]},
            )
        except httpx.TransportError:
            with tally.lock:
                tally.lost_answers += 1
            url = next(u for u in clients if u != url)
            continue
        if r.status_code == 429:
            with tally.lock:
                tally.limited += 1
            time.sleep(float(r.headers["Retry-After"]))
            continue
        if r.status_code >= 500:
            time.sleep(0.1)
            continue
        assert r.status_code in (200, 201), r.text
        with tally.lock:
            tally.acked.setdefault(body["run_id"], set()).add(
                tuple(o["result_id"] for o in r.json()["results"])
            )
            tally.created += r.status_code == 201
            tally.replays += r.status_code == 200
        return
    raise AssertionError(f"{body['run_id']} was never acknowledged")


def test_concurrent_agents_through_both_replicas_store_every_run_once(deployment: Deployment) -> None:
    d = deployment
    rng = random.Random(17)
    tag = uuid.uuid4().hex[:8]
    plans: list[list[tuple[dict[str, Any], str]]] = []  # per agent: (run, how it is sent)
    for k in range(AGENTS):
        plan = []
        for i in range(RUNS_PER_AGENT):
            body = run_on(
                d.gpu,
                [result(metrics={"throughput": 1000.0 + rng.random() * 20}) for _ in range(RESULTS_PER_RUN)],
                run_id=f"replica-{tag}-{k}-{i}",
                host=f"node-{k}",
            )
            how = "race" if i % 3 == 0 else ("lose-answer" if i % 3 == 1 and i % 2 == 0 else "once")
            plan.append((body, how))
        plans.append(plan)
    tally = Tally()
    errors: list[BaseException] = []

    def agent(k: int) -> None:
        clients = {r.url: httpx.Client(base_url=r.url) for r in d.replicas}
        try:
            for i, (body, how) in enumerate(plans[k]):
                first, second = d.replicas[(k + i) % 2].url, d.replicas[(k + i + 1) % 2].url
                if how == "race":  # the same run through both replicas at the same moment
                    ts = [
                        threading.Thread(target=_submit, args=(clients, u, d.agents[k], body, tally))
                        for u in (first, second)
                    ]
                    for t in ts:
                        t.start()
                    for t in ts:
                        t.join()
                else:
                    _submit(clients, first, d.agents[k], body, tally, lose_first_answer=how == "lose-answer")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            for c in clients.values():
                c.close()

    start = time.monotonic()
    threads = [threading.Thread(target=agent, args=(k,)) for k in range(AGENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - start
    assert not errors, errors[0]

    runs = AGENTS * RUNS_PER_AGENT
    run_ids = [body["run_id"] for plan in plans for body, _ in plan]
    with UnitOfWork(make_session_factory(d.engine)) as uow:
        s = uow.session
        stored = dict(
            s.execute(
                select(BenchmarkRun.run_id, func.count())
                .where(BenchmarkRun.run_id.in_(run_ids))
                .group_by(BenchmarkRun.run_id)
            ).all()
        )
        results = {rid: tuple(sorted(ids)) for rid, ids in _results_by_run(s, run_ids).items()}
    print(
        f"\nreplicas: {runs} runs submitted by {AGENTS} agents through 2 replicas in {took:.1f} s; "
        f"{tally.posts} POSTs = {tally.posts - runs} duplicates sent "
        f"({tally.lost_answers} answers lost and retried, {tally.limited} 429s); "
        f"{tally.created} created, {tally.replays} replays; stored {sum(stored.values())} runs, "
        f"{sum(len(v) for v in results.values())} results"
    )
    assert tally.posts - runs >= runs // 3, "the scenario sent too few duplicates to test anything"
    assert tally.lost_answers > 0
    assert set(tally.acked) == set(run_ids)
    assert stored == {rid: 1 for rid in run_ids}, "a run stored more or less than once"
    for rid in run_ids:  # every answer, first or replayed, through either replica, names the stored results
        assert tally.acked[rid] == {results[rid]}, rid
        assert len(results[rid]) == RESULTS_PER_RUN
    # one 201 per run at most (a lost answer may have been the 201); every other answer a replay
    assert tally.created <= runs <= tally.created + tally.lost_answers

    # another agent's run_id, through either replica: 409, nothing stored
    for k, replica in enumerate(d.replicas):
        body = plans[k][0][0]
        r = httpx.post(
            f"{replica.url}/v1/benchmark-runs",
            json=body,
            headers={"Authorization": f"Bearer {d.agents[k + 1]}"},
        )
        assert r.status_code == 409 and r.json()["type"].endswith("/run-id-taken"), r.text
    with UnitOfWork(make_session_factory(d.engine)) as uow:
        n = uow.session.scalar(select(func.count()).where(BenchmarkRun.run_id.in_(run_ids)))
    assert n == runs


def _results_by_run(session: Any, run_ids: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    q = (
        select(BenchmarkRun.run_id, BenchmarkResult.id)
        .join(BenchmarkResult, BenchmarkResult.run_pk == BenchmarkRun.id)
        .where(BenchmarkRun.run_id.in_(run_ids))
    )
    for rid, result_id in session.execute(q):
        out.setdefault(rid, []).append(int(result_id))
    return out


# ---- reads across replicas ---------------------------------------------------------------------

ESTIMATES: list[dict[str, Any]] = [
    {"model": "llama3-8b", "gpu": "NVIDIA H200", "batch_size": 1, "seq_len": 2048, "optimizer_impl": "fused"},
    {
        "model": "meta-llama/Llama-2-13b-hf",
        "gpu": "L40",
        "gpu_count": 2,
        "mode": "fine-tuning",
        "precision": "bf16",
        "batch_size": 1,
        "seq_len": 2048,
        "gradient_checkpointing": True,
    },
    {
        "model": "llama3-8b",
        "gpu": "L20",
        "mode": "inference",
        "engine": "vllm",
        "input_len": 7168,
        "output_len": 1024,
        "solve_for": "max_concurrency",
    },
    {
        "model": "llama3-8b",
        "gpu": "nvidia-l4",
        "mode": "inference",
        "engine": "vllm",
        "input_len": 2048,
        "output_len": 256,
        "solve_for": "max_concurrency",
    },
]


def _without_as_of(answer: Any) -> Any:
    if isinstance(answer, dict):
        return {k: _without_as_of(v) for k, v in answer.items() if k != "as_of"}
    if isinstance(answer, list):
        return [_without_as_of(v) for v in answer]
    return answer


def _estimate(url: str, body: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(f"{url}/v1/estimate", json=body, timeout=30)
    assert r.status_code == 200, r.text
    answer: dict[str, Any] = r.json()
    return answer


def _estimates(url: str) -> list[dict[str, Any]]:
    return [_estimate(url, body) for body in ESTIMATES]


def test_both_replicas_give_the_same_estimates(deployment: Deployment) -> None:
    a, b = (_estimates(r.url) for r in deployment.replicas)
    assert a[0]["time"]["provenance"] == "measured"
    assert _without_as_of(a) == _without_as_of(b)
    batch = {"items": ESTIMATES}
    ba, bb = (
        httpx.post(f"{r.url}/v1/estimate/batch", json=batch, timeout=60).json() for r in deployment.replicas
    )
    assert _without_as_of(ba) == _without_as_of(bb)
    assert _without_as_of([i["result"] for i in ba["items"]]) == _without_as_of(a)


def test_a_catalog_edit_through_one_replica_is_seen_by_the_next_request_to_the_other(
    deployment: Deployment,
) -> None:
    d = deployment
    admin = {"Authorization": f"Bearer {d.admin}"}
    # warm both replicas' caches (alias index, calibrations, estimates) on the old figures
    before = [httpx.get(f"{r.url}/v1/gpus/nvidia-l4").json() for r in d.replicas]
    old = _estimate(d.b.url, ESTIMATES[3])
    etag = httpx.get(f"{d.a.url}/v1/gpus/nvidia-l4").headers["ETag"]
    usable = before[0]["memory"]["usable_memory_bytes"] - 2 * 2**30
    patch = {
        "memory": {"usable_memory_bytes": usable},
        "aliases": [*before[0]["aliases"], {"name": "L4 replica test", "kind": "short"}],
    }
    r = httpx.patch(f"{d.a.url}/v1/gpus/nvidia-l4", json=patch, headers={**admin, "If-Match": etag})
    assert r.status_code == 200, r.text
    # the next request to the other replica
    seen = httpx.get(f"{d.b.url}/v1/gpus/nvidia-l4")
    assert seen.json()["memory"]["usable_memory_bytes"] == usable
    assert seen.headers["ETag"] == r.headers["ETag"] != etag
    assert httpx.get(f"{d.b.url}/v1/gpus/L4%20replica%20test").json()["slug"] == "nvidia-l4"
    new_b = _estimate(d.b.url, ESTIMATES[3])
    assert new_b["memory"]["usable_memory_bytes"] == usable != old["memory"]["usable_memory_bytes"]
    assert new_b["solve"]["value"] < old["solve"]["value"]  # 2 GiB less KV cache: fewer sequences
    assert _without_as_of(_estimate(d.a.url, ESTIMATES[3])) == _without_as_of(new_b)
    # the old ETag is stale through either replica
    r = httpx.patch(
        f"{d.b.url}/v1/gpus/nvidia-l4", json={"power": {"tdp_w": 70}}, headers={**admin, "If-Match": etag}
    )
    assert r.status_code == 412


def test_one_rate_limit_budget_across_replicas(deployment: Deployment) -> None:
    d = deployment
    if not d.redis:
        pytest.skip(
            f"no Redis at {REDIS_URL}: each replica keeps its own buckets (README: Redis; .ci/run starts it)"
        )
    run_id = f"replica-budget-{uuid.uuid4().hex[:8]}"
    body = run_on(d.gpu, [result()], run_id=run_id)
    key = {"Authorization": f"Bearer {d.agents[0]}"}
    assert httpx.post(f"{d.a.url}/v1/benchmark-runs", json=body, headers=key).status_code == 201
    # run-read: bursts of 3 per caller, one budget whichever replica answers
    codes = [
        httpx.get(f"{r.url}/v1/benchmark-runs/{run_id}", headers=key).status_code for r in (d.a, d.b, d.a)
    ]
    assert codes == [200, 200, 200]
    for r in (d.b, d.a):
        refused = httpx.get(f"{r.url}/v1/benchmark-runs/{run_id}", headers=key)
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1
    # another caller has its own budget
    assert httpx.get(f"{d.b.url}/v1/benchmark-runs/{run_id}").status_code == 200
