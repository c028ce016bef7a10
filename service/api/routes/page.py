"""The page for people at ``/``: a build-free ES-module app served by this same process.

Every file is read from the package once, when the app is built, and served from memory with
an ETag, so the page works offline and behind any proxy, and a path can only name a shipped
file (no filesystem lookup per request). Page responses carry a strict Content-Security-Policy
(no inline script or style, no third-party origin, Trusted Types on, so ``innerHTML`` and
friends throw); the JSON API's responses are untouched. None of these routes is part of the
OpenAPI document: the page is a client of the API, not part of it.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import resources

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from service.api.conditional import etag_matches
from service.api.problems import problem_response

WEB_PACKAGE = "service"
WEB_DIR = "web"

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        # No HTML-from-string sink (innerHTML, outerHTML, insertAdjacentHTML, document.write)
        # accepts a plain string: data can only ever reach the page as text.
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    ]
)
"""One policy for the document and its assets; ``'self'`` only, nothing inline."""

PAGE_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".txt": "text/plain; charset=utf-8",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    media_type: str
    etag: str


def load_assets() -> dict[str, Asset]:
    """Every shipped page file by its URL path below ``/static/`` (``index.html`` for ``/``)."""
    return dict(_read_assets())


@functools.cache
def _read_assets() -> dict[str, Asset]:
    """Read and hashed once per process: package files do not change under a running process,
    and every app built in it (the tests build one per test) serves the same bytes."""
    root = resources.files(WEB_PACKAGE).joinpath(WEB_DIR)
    out: dict[str, Asset] = {}

    def walk(node: resources.abc.Traversable, prefix: str) -> None:
        for child in node.iterdir():
            name = prefix + child.name
            if child.is_dir():
                walk(child, name + "/")
                continue
            suffix = "." + child.name.rsplit(".", 1)[-1]
            if suffix not in MEDIA_TYPES:
                continue
            body = child.read_bytes()
            out[name] = Asset(body, MEDIA_TYPES[suffix], '"' + hashlib.sha256(body).hexdigest()[:32] + '"')

    walk(root, "")
    return out


def _serve(asset: Asset, request: Request) -> Response:
    headers = {**PAGE_HEADERS, "ETag": asset.etag}
    if etag_matches(request.headers.get("if-none-match"), asset.etag):
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


def make_router() -> APIRouter:
    """Routes for ``/`` (the app shell) and ``/static/...`` (its modules, styles, icon)."""
    assets = load_assets()
    router = APIRouter(include_in_schema=False)

    @router.api_route("/", methods=["GET", "HEAD"])
    async def page(request: Request) -> Response:
        return _serve(assets["index.html"], request)

    @router.get("/favicon.ico")
    async def favicon() -> Response:
        return RedirectResponse("/static/favicon.svg", status_code=308)

    @router.api_route("/static/{path:path}", methods=["GET", "HEAD"])
    async def static(path: str, request: Request) -> Response:
        asset = assets.get("static/" + path)
        if asset is None:
            return problem_response(404, "not-found", "Not found", f"no page file {path!r}", request)
        return _serve(asset, request)

    return router
