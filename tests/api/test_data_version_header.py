"""Every advisory answer states its data version twice, in the body (``data_version``) and in
``X-Data-Version``, and the two are one string (``service.api.answers`` writes both)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

ESTIMATE = {"model": "llama3-8b", "gpu": "nvidia-h100-sxm", "mode": "inference"}

READS: list[tuple[str, str, Any]] = [
    ("GET", "/v1/gpus?limit=3", None),
    ("GET", "/v1/gpus/nvidia-h200/prices", None),
    ("GET", "/v1/compare?gpus=l40,l20", None),
    ("GET", "/v1/gpus/nvidia-h200/measurements", None),
    ("POST", "/v1/estimate", ESTIMATE),
    ("POST", "/v1/estimate/batch", {"items": [ESTIMATE, ESTIMATE]}),
]


@pytest.mark.parametrize(("method", "path", "body"), READS)
def test_header_and_body_state_one_data_version(
    client: TestClient, method: str, path: str, body: Any
) -> None:
    r = client.request(method, path, json=body)
    assert r.status_code == 200, r.text
    version = r.json()["data_version"]
    assert version.startswith("c") and ".m" in version and ".e" in version
    assert r.headers["X-Data-Version"] == version


def test_a_gpu_answer_carries_the_current_data_version(client: TestClient) -> None:
    listed = client.get("/v1/gpus?limit=1")
    r = client.get("/v1/gpus/nvidia-h200")
    assert r.status_code == 200, r.text
    assert r.headers["X-Data-Version"] == listed.headers["X-Data-Version"]
