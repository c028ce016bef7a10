"""``OPTIONS``: answered for every path the API serves, with the methods it accepts there.

RFC 9110 section 9.3.7: ``OPTIONS`` asks which methods a resource supports. Before, it was a
405 whose ``Allow`` named the path's methods but not OPTIONS itself -- an answer the document
did not describe. Now: ``204`` with ``Allow`` (the path's methods and OPTIONS; HEAD is not
served, as the document declares none);
a path no route serves is 404 as for any method. (There is no CORS: this is not a preflight.)
"""

from __future__ import annotations

from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api.problems import allowed_methods, problem_response


class OptionsAnswer:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "OPTIONS":
            await self.app(scope, receive, send)
            return
        methods = allowed_methods(scope["app"], scope)
        if not methods:
            resp: Response = problem_response(
                404, "not-found", "Not Found", None, None, instance=scope.get("path")
            )
        else:
            resp = Response(status_code=204, headers={"Allow": ", ".join(sorted({*methods, "OPTIONS"}))})
        await resp(scope, receive, send)
