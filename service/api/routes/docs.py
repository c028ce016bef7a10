"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) with every file served by this process.

FastAPI's own docs pages load Swagger UI and ReDoc from a CDN and start them with inline
script, so they are blank offline and an admin key typed into "Authorize" shares the page with
third-party script. Here the built files come from a pinned wheel (``fastapi-offline``, read
once from its package data when the app is built) and the start-up script is a shipped file, so
the pages run under a CSP that allows this origin only. The CSP is the page's minus Trusted
Types (both renderers set HTML from rendered Markdown) plus ``data:`` images (Swagger UI's icons
are data URIs) and, for ReDoc, CSSOM-built style elements (styled-components).
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from importlib import resources

from fastapi import APIRouter, Request, Response

from service.api.conditional import etag_matches
from service.api.problems import problem_response
from service.api.routes.page import MEDIA_TYPES, Asset, load_assets

VENDOR_PACKAGE = "fastapi_offline"
VENDOR_FILES = {
    "docs": ("swagger-ui-bundle.js", "swagger-ui.css"),
    "redoc": ("redoc.standalone.js",),
}

OUTSIDE_REFERENCES = {
    # ReDoc's sidebar footer loads its maker's logo from a CDN (an <img>, hidden on error):
    # pointed at this service's icon, the page requests nothing from another origin.
    "redoc.standalone.js": ((b"https://cdn.redoc.ly/redoc/logo-mini.svg", b"/static/favicon.svg"),),
}

_POLICY = [
    "default-src 'none'",
    "script-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
]
DOCS_CSP = {
    "docs": "; ".join([*_POLICY, "style-src 'self'"]),
    # ReDoc's styled-components writes its rules into <style> elements it creates
    "redoc": "; ".join([*_POLICY, "style-src 'self' 'unsafe-inline'", "worker-src 'self' blob:"]),
}


@dataclass(frozen=True)
class DocsFiles:
    html: dict[str, Asset]
    assets: dict[str, dict[str, Asset]]


def _asset(body: bytes, name: str) -> Asset:
    for old, new in OUTSIDE_REFERENCES.get(name, ()):
        body = body.replace(old, new)
    suffix = "." + name.rsplit(".", 1)[-1]
    return Asset(body, MEDIA_TYPES[suffix], '"' + hashlib.sha256(body).hexdigest()[:32] + '"')


@functools.cache
def load_docs_files() -> DocsFiles:
    """The two pages, their start-up script and the vendored renderers, read (and hashed: some
    MB) once per process, not once per app built in it."""
    shipped = load_assets()
    vendor = resources.files(VENDOR_PACKAGE).joinpath("static")
    assets: dict[str, dict[str, Asset]] = {
        prefix: {name: _asset(vendor.joinpath(name).read_bytes(), name) for name in names}
        for prefix, names in VENDOR_FILES.items()
    }
    assets["docs"]["swagger-init.js"] = shipped["apidocs/swagger-init.js"]
    html = {"docs": shipped["apidocs/swagger.html"], "redoc": shipped["apidocs/redoc.html"]}
    return DocsFiles(html=html, assets=assets)


def _serve(asset: Asset, request: Request, csp: str, *, immutable: bool = False) -> Response:
    headers = {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        "X-Frame-Options": "DENY",
        "Cache-Control": "public, max-age=86400" if immutable else "no-cache",
        "ETag": asset.etag,
    }
    if etag_matches(request.headers.get("if-none-match"), asset.etag):
        return Response(status_code=304, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)


def make_router() -> APIRouter:
    """``/docs``, ``/redoc`` and ``/{docs,redoc}/assets/<file>``; none in the OpenAPI document."""
    files = load_docs_files()
    router = APIRouter(include_in_schema=False)

    for prefix in ("docs", "redoc"):
        csp = DOCS_CSP[prefix]

        def page(request: Request, prefix: str = prefix, csp: str = csp) -> Response:
            return _serve(files.html[prefix], request, csp)

        def asset(name: str, request: Request, prefix: str = prefix, csp: str = csp) -> Response:
            found = files.assets[prefix].get(name)
            if found is None:
                return problem_response(404, "not-found", "Not found", f"no {prefix} file {name!r}", request)
            return _serve(found, request, csp, immutable=name != "swagger-init.js")

        router.add_api_route(f"/{prefix}", page, methods=["GET", "HEAD"])
        router.add_api_route(f"/{prefix}/assets/{{name}}", asset, methods=["GET", "HEAD"])
    return router
