"""The typed client (client/, package gpu_advisor_client) against a real served app (uvicorn,
its own database): every operation's round trip, pagination, idempotent benchmark submission,
problem+json as typed exceptions, Retry-After; its models in step with the committed OpenAPI
document; and ``pip install ./client`` into an empty venv bringing in no server dependency."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gpu_advisor_client as gac
import httpx
import pytest
from gpu_advisor_client import models as m

from service.bootstrap import bootstrap
from service.db.engine import make_engine, make_session_factory
from service.db.uow import UnitOfWork
from service.settings import Settings
from service.usecases.keys import create_key
from tests.api.benchmark_fixtures import result, run
from tests.conftest import fresh_database_url
from tests.db.servers import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
ASK = {
    "workload": {
        "model": "meta-llama/Llama-2-7b-hf",
        "mode": "fine-tuning",
        "finetune": "lora",
        "seq_len": 2048,
    },
    "constraints": {"max_gpus": 1, "vendors": ["nvidia"]},
    "limit": 3,
}


@dataclass(frozen=True)
class Served:
    url: str
    submit_key: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("client")
    for url in fresh_database_url(tmp, "client"):
        eng = make_engine(url)
        bootstrap(eng, Settings(database_url=url, seed_measurements_dir=None))
        with UnitOfWork(make_session_factory(eng)) as uow:
            submit = create_key(uow, name="client-agent", scope="submit").secret
        eng.dispose()
        server = ServerProcess.serve(url, tmp / "stderr.log").start()
        try:
            yield Served(server.url, submit)
        finally:
            server.stop()


def test_models_are_generated_from_the_committed_openapi_document() -> None:
    r = subprocess.run(
        [sys.executable, "scripts/generate_client.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    spec = json.loads((ROOT / "openapi/openapi.json").read_text())
    assert len(m.__all__) == len(spec["components"]["schemas"])


def test_sync_round_trips(served: Served) -> None:
    with gac.Client(served.url) as c:
        answer = c.recommend(m.RecommendRequest.model_validate(ASK))
        assert isinstance(answer, m.RecommendResponse) and answer.options
        assert answer.recommendation_id is not None
        again = c.get_recommendation(answer.recommendation_id)
        assert again.options[0].gpu.slug == answer.options[0].gpu.slug
        art = c.artifact(answer.recommendation_id, "kubernetes", option=1)
        assert art.recommendation_id == answer.recommendation_id and 'kind: "Job"' in art.content
        est = c.estimate({"model": "llama3-8b", "gpu": answer.options[0].gpu.slug, "mode": "inference"})
        assert isinstance(est, m.EstimateResponse)
        cmp = c.compare(["l40", "l20"])
        assert isinstance(cmp, m.CompareOut)
        every = list(c.gpus(limit=7))
        assert len(every) > 7 and len({g.slug for g in every}) == len(every)  # several pages, no repeats
        assert every[0].slug == c.gpu(every[0].slug).slug
        assert isinstance(c.prices(every[0].slug), m.PriceList)


def test_problems_are_typed_exceptions(served: Served) -> None:
    with gac.Client(served.url) as c:
        with pytest.raises(gac.NotFound) as nf:
            c.get_recommendation("rec_000000000000000000000000")
        assert nf.value.status == 404 and nf.value.detail
        with pytest.raises(gac.ValidationFailed) as bad:
            c.recommend({"workload": {"model": "no-such-model-xyz"}})
        assert bad.value.errors[0]["loc"] == ["body", "workload", "model"]
    with gac.Client(served.url, api_key="gpa_nope") as c, pytest.raises(gac.Unauthorized):
        c.recommend(ASK)


def test_benchmark_submission_is_idempotent(served: Served) -> None:
    body = run([result()])
    with gac.Client(served.url, api_key=served.submit_key) as c:
        first = c.submit_benchmark_run(body)
        second = c.submit_benchmark_run(body)  # a retry after a lost answer: the same run, once
    assert first.run_id == second.run_id == body["run_id"]
    with gac.Client(served.url) as c:
        assert [r for r in c.benchmark_results(run_id=body["run_id"])]


def test_measurement_plan_pages_in_plan_order(served: Served) -> None:
    """The agent's read: every cell of the plan across pages of one, ranks in order, and the
    question this key asked named among the answers its top cell narrows."""
    with gac.Client(served.url, api_key=served.submit_key) as c:
        asked = c.recommend(ASK)
        cells = list(c.measurement_plan(limit=1))
        assert len(cells) >= 2 and [x.rank for x in cells] == list(range(1, len(cells) + 1))
        assert all(isinstance(x, m.PlanCellOut) and x.reasons for x in cells)
        assert asked.recommendation_id in {a.recommendation_id for a in cells[0].answers}
        assert {x.gpu.slug for x in cells} <= {o.gpu.slug for o in asked.options}

    async def go() -> list[m.PlanCellOut]:
        async with gac.AsyncClient(served.url, api_key=served.submit_key) as c:
            return [x async for x in c.measurement_plan(limit=2)]

    assert [x.parameters_hash for x in asyncio.run(go())] == [x.parameters_hash for x in cells]
    with gac.Client(served.url) as c, pytest.raises(gac.Unauthorized):
        next(c.measurement_plan())


def test_async_round_trip(served: Served) -> None:
    async def go() -> tuple[m.RecommendResponse, list[m.GpuOut]]:
        async with gac.AsyncClient(served.url, language="zh") as c:
            answer = await c.recommend(ASK)
            gpus = [g async for g in c.gpus(limit=10)]
            return answer, gpus

    answer, gpus = asyncio.run(go())
    assert answer.options and len(gpus) > 10
    assert any("\u4e00" <= ch <= "\u9fff" for ch in answer.options[0].reasons[0].message)


def test_429_and_503_are_retried_after_retry_after() -> None:
    """A server that answers 429 then 503 (Retry-After: 0) before the answer: one call, three
    requests; past max_retries the last refusal is raised with its Retry-After."""
    seen: list[int] = []
    script = [
        httpx.Response(
            429, headers={"Retry-After": "0"}, json={"title": "Too Many Requests", "detail": "slow down"}
        ),
        httpx.Response(
            503, headers={"Retry-After": "0"}, json={"title": "Service Unavailable", "detail": "busy"}
        ),
    ]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(1)
        if len(seen) <= len(script):
            return script[len(seen) - 1]
        return httpx.Response(
            200, json={"count": 0, "data_version": "c1.m1.e1", "items": [], "next_cursor": None}
        )

    with gac.Client("http://x", transport=httpx.MockTransport(handler)) as c:
        assert list(c.gpus()) == [] and len(seen) == 3
    seen.clear()
    with (
        gac.Client("http://x", transport=httpx.MockTransport(handler), max_retries=0) as c,
        pytest.raises(gac.RateLimited) as e,
    ):
        list(c.gpus())
    assert e.value.retry_after_s == 0.0


@pytest.mark.slow
def test_the_client_installs_alone_and_answers(served: Served, tmp_path: Path) -> None:
    """Offline: from the wheels .ci/run downloads (``GPU_ADVISOR_CLIENT_WHEELS``), nothing else."""
    wheels = os.environ.get("GPU_ADVISOR_CLIENT_WHEELS")
    if not wheels:
        if os.environ.get("GPU_ADVISOR_REQUIRE_TOOLS") == "1":
            pytest.fail("GPU_ADVISOR_CLIENT_WHEELS is not set (.ci/run downloads them)")
        pytest.skip("GPU_ADVISOR_CLIENT_WHEELS not set: pip download -d DIR ./client 'setuptools>=69' wheel")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    pip = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels, str(ROOT / "client")],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    listed = subprocess.run(
        [str(py), "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True
    )
    names = {p["name"].lower() for p in json.loads(listed.stdout)}
    assert "gpu-advisor-client" in names
    assert not names & {
        "fastapi",
        "starlette",
        "sqlalchemy",
        "alembic",
        "torch",
        "uvicorn",
        "gpu-advisor",
        "psycopg",
    }
    code = textwrap.dedent(
        f"""
        import gpu_advisor_client as gac
        with gac.Client({served.url!r}) as c:
            a = c.recommend({ASK!r})
            print(a.recommendation_id, a.options[0].gpu.slug, a.options[0].strategy.gpu_count)
        """
    )
    out = subprocess.run([str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    rec_id, slug, count = out.stdout.split()
    assert rec_id.startswith("rec_") and slug and int(count) == 1
