"""The cross-origin policy of both services: none (same-origin only).

The pages are served by the service that answers their requests, and bots and tools use
HTTP directly with their tokens, which CORS does not concern. So no response carries an
`Access-Control-Allow-*` header (a browser keeps other sites' scripts from reading any
answer), and a CORS preflight (`OPTIONS`) is refused: 405 `method_not_allowed` in the
usual error shape with `Allow` listing the route's methods, instead of Litestar's
automatic 204 (which granted nothing either, but looked like an answer). docs/api.md,
"Cross-origin requests".
"""

from __future__ import annotations

from typing import Any

from litestar import Request
from litestar.exceptions import MethodNotAllowedException

__all__ = ["refuse_options"]


def refuse_options(request: Request[Any, Any, Any]) -> None:
    """`before_request` part: an `OPTIONS` request (a CORS preflight) is 405."""
    if request.method != "OPTIONS":
        return
    template = request.scope.get("path_template", "")
    methods = request.app.route_handler_method_map.get(template, {})
    allow = ", ".join(sorted(m for m in methods if m != "OPTIONS"))
    raise MethodNotAllowedException(
        detail="no cross-origin access: OPTIONS (a CORS preflight) is not served",
        headers={"Allow": allow},
    )
