"""The page at ``/``: served by the app itself from package files, under a strict CSP that the
JSON API does not carry; outside the OpenAPI document. (Its behaviour in a browser is tested
in tests/page/.)"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.api.routes.page import CONTENT_SECURITY_POLICY, load_assets

WEB = Path(__file__).resolve().parents[2] / "service" / "web"


def test_the_page_is_served_at_root_with_a_strict_csp(client: TestClient) -> None:
    r = client.get("/")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/static/app.js"></script>' in r.text
    csp = r.headers["content-security-policy"]
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert directives["connect-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
    assert directives["require-trusted-types-for"] == "'script'"
    assert "unsafe" not in csp and "http" not in csp, "nothing inline, nothing from another origin"
    assert r.headers["x-content-type-options"] == "nosniff"


def test_static_files_come_from_the_package_with_etags(client: TestClient) -> None:
    r = client.get("/static/app.js")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/javascript")
    assert r.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert client.get("/static/app.js", headers={"If-None-Match": r.headers["etag"]}).status_code == 304
    assert client.get("/static/views/estimate.js").status_code == 200
    assert client.head("/").status_code == 200


def test_unknown_or_escaping_paths_are_404_problems(client: TestClient) -> None:
    for path in (
        "/static/nope.js",
        "/static/../../pyproject.toml",
        "/static/%2e%2e/%2e%2e/pyproject.toml",
        "/static/../api/app.py",
    ):
        r = client.get(path)
        assert r.status_code == 404, path
        assert r.headers["content-type"] == "application/problem+json", path


def test_the_json_api_carries_no_page_headers(client: TestClient) -> None:
    r = client.get("/v1/gpus/nvidia-l40")
    assert r.status_code == 200 and "content-security-policy" not in r.headers
    assert "content-security-policy" not in client.get("/healthz").headers


def test_page_routes_are_not_in_the_openapi_document(app: FastAPI) -> None:
    paths = app.openapi()["paths"]
    assert "/" not in paths and not any(p.startswith("/static") for p in paths)


def test_every_shipped_file_is_served() -> None:
    on_disk = {p.relative_to(WEB).as_posix() for p in WEB.rglob("*") if p.is_file()}
    assert on_disk == set(load_assets()), "a file under service/web has a type the page does not serve"


def test_no_html_from_strings_and_nothing_inline() -> None:
    """The code that renders API data never parses it as HTML (Trusted Types would refuse it at
    run time; this finds it before), and the markup has no inline script, style or handler."""
    sinks = re.compile(
        r"\.(innerHTML|outerHTML)\b|insertAdjacentHTML|document\.write|\beval\(|new Function|DOMParser|createContextualFragment"
    )
    for path in WEB.rglob("*.js"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            assert not sinks.search(line), f"{path.name}:{n}: {line.strip()}"
    for path in WEB.rglob("*.html"):
        html = path.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), "inline <script>"
        assert not re.search(r"\sstyle=|<style|\son[a-z]+=", html), "inline style or event handler"
