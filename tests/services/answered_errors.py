"""Every error a service test gets over HTTP is listed for its operation in that service's
OpenAPI document (the status's enum of `error` codes: services/shared/openapi_docs.py).

`watch()` wraps the services' exception handlers (before any app is built: `service_app`
copies them) so that each error answer is held to the document of the app that answered
it; what is not listed is kept, and tests/services/conftest.py fails the session with it.
So every request of every service test, not only tests/services/test_error_codes.py's, is
a check that the documents list what the services answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from litestar import Litestar, Request, Response

from services.shared import errors
from services.shared.openapi_docs import error_codes_of

__all__ = ["watch"]

_METHODS = ("get", "put", "post", "delete", "patch")


def _listings(app: Litestar) -> dict[str, dict[str, set[str]]]:
    """operationId -> status -> the codes the app's document lists."""
    document = app.openapi_schema.to_schema()
    return {
        op["operationId"]: error_codes_of(op)
        for item in document["paths"].values()
        for method, op in item.items()
        if method in _METHODS and "operationId" in op
    }


@contextmanager
def watch() -> Iterator[list[str]]:
    """While open: every HTTP error answer not listed for its operation, as text."""
    unlisted: list[str] = []
    seen: dict[int, tuple[Litestar, dict[str, dict[str, set[str]]]]] = {}
    handlers = errors.exception_handlers
    originals = dict(handlers)

    def checked(handler: Callable[..., Response[Any]]) -> Callable[..., Response[Any]]:
        def answer(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
            response = handler(request, exc)
            status = response.status_code or 0
            operation = getattr(request.scope.get("route_handler"), "operation_id", None)
            if status < 400 or status == 500 or not isinstance(operation, str):
                return response  # a fault, or no operation (an unknown route, a page)
            app = request.app
            if id(app) not in seen:
                seen[id(app)] = (app, _listings(app))
            listed = seen[id(app)][1].get(operation)
            if listed is None:
                return response  # a route left out of the document (a page)
            content = response.content
            code = json.loads(content)["error"] if isinstance(content, bytes) else None
            if code not in listed.get(str(status), set()):
                unlisted.append(f"{operation}: {status} {code} ({request.method} {request.url})")
            return response

        return answer

    for kind, handler in originals.items():
        handlers[kind] = checked(handler)
    try:
        yield unlisted
    finally:
        handlers.update(originals)
