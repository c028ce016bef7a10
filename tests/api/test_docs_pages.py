"""``/docs`` and ``/redoc``: every file from this process (the pinned fastapi-offline wheel's
built Swagger UI and ReDoc, and the service's own start-up script), under a CSP that allows
this origin only, so they work offline and no third-party script shares the page with an API
key typed into "Authorize". (In a browser: tests/page/test_docs_pages.py.)"""

from __future__ import annotations

import re
from importlib import metadata

from fastapi import FastAPI
from fastapi.testclient import TestClient


def _directives(csp: str) -> dict[str, str]:
    return dict(d.strip().split(" ", 1) for d in csp.split(";"))


def test_docs_and_redoc_load_only_same_origin_files(client: TestClient) -> None:
    for path, bundle in (
        ("/docs", "/docs/assets/swagger-ui-bundle.js"),
        ("/redoc", "/redoc/assets/redoc.standalone.js"),
    ):
        r = client.get(path)
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        refs = re.findall(r'(?:src|href)="([^"]+)"', r.text)
        assert bundle in refs
        assert all(ref.startswith("/") and not ref.startswith("//") for ref in refs), refs
        assert not re.search(r"<script(?![^>]*\bsrc=)", r.text), "no inline script"
        for ref in refs:
            got = client.get(ref)
            assert got.status_code == 200, ref
            assert got.headers["x-content-type-options"] == "nosniff"
        csp = _directives(r.headers["content-security-policy"])
        assert csp["default-src"] == "'none'" and csp["script-src"] == "'self'"
        assert csp["connect-src"] == "'self'" and csp["frame-ancestors"] == "'none'"
        assert "http" not in r.headers["content-security-policy"], "no other origin"


def test_the_vendored_files_are_the_pinned_wheels(client: TestClient) -> None:
    assert metadata.version("fastapi-offline") == "1.7.7"  # pyproject pins it: the assets are its
    bundle = client.get("/docs/assets/swagger-ui-bundle.js")
    assert bundle.headers["content-type"].startswith("text/javascript") and len(bundle.content) > 1_000_000
    assert (
        client.get(
            "/docs/assets/swagger-ui-bundle.js", headers={"If-None-Match": bundle.headers["etag"]}
        ).status_code
        == 304
    )
    init = client.get("/docs/assets/swagger-init.js").text
    assert '"/openapi.json"' in init and "validatorUrl: null" in init  # no badge from validator.swagger.io
    redoc = client.get("/redoc/assets/redoc.standalone.js").content
    assert b"cdn.redoc.ly" not in redoc and b"/static/favicon.svg" in redoc
    missing = client.get("/docs/assets/../../etc/passwd")
    assert missing.status_code == 404
    assert client.get("/redoc/assets/swagger-ui.css").status_code == 404  # each page names its own files


def test_docs_routes_are_not_in_the_openapi_document(app: FastAPI) -> None:
    paths = app.openapi()["paths"]
    assert not any(p.startswith(("/docs", "/redoc")) for p in paths)
