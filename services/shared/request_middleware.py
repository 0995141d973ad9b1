"""The one ASGI middleware every HTTP request of both services passes: it binds the
request's log context, reads the response's status from the one wrapping of `send`, and
once answered logs the request's line (`services.shared.logging.log_request`) and times it
into the metrics (`services.shared.metrics.observe_request`). One layer, not one each: the
two read the same status and the same clock, and each layer costs every request."""

from __future__ import annotations

import time

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from services.shared.logging import SLOW_REQUEST_MS, bind_request, log_request
from services.shared.metrics import observe_request

__all__ = ["request_middleware"]


def request_middleware(app: ASGIApp, slow_ms: float = SLOW_REQUEST_MS) -> ASGIApp:
    """Each HTTP request logged (`slow_ms`: the slow-request threshold) and timed; other
    scopes (sockets, lifespan) pass untouched. In an app:
    `DefineMiddleware(request_middleware, slow_ms=settings.slow_request_ms)`."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        bind_request()
        status = 500  # what a request that raised before its response start answered
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_wrapper)
        finally:
            seconds = time.perf_counter() - started
            try:
                observe_request(scope, status, seconds)
            finally:
                log_request(scope, status, seconds * 1000, slow_ms)

    return middleware
