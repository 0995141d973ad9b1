"""Structured logging for both services (structlog).

`configure_logging(settings)` sets structlog up once per process: JSON lines when stdout
is not a TTY (containers, files), the console renderer on a TTY; `LUDO_LOG_FORMAT` forces
either. Context bound with `structlog.contextvars.bind_contextvars` (request id, match id,
party id) is merged into every line logged while it is bound. Standard-library loggers
(uvicorn, alembic) go through the same renderer.

Never log tokens, request bodies, or a server seed before its SeedRevealed event.
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from typing import Any, TextIO

import structlog
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from services.shared.settings import Settings

__all__ = ["configure_logging", "request_logging"]

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def _use_json(fmt: str) -> bool:
    if fmt == "json":
        return True
    if fmt == "console":
        return False
    return not sys.stdout.isatty()


def configure_logging(settings: Settings | None = None, stream: TextIO | None = None) -> None:
    """Configure structlog and the standard `logging` root for this process (lines go to
    `stream`, default stdout)."""
    level = _LEVELS.get((settings.log_level if settings else "info").lower(), logging.INFO)
    fmt = settings.log_format if settings else "auto"
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer() if _use_json(fmt) else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,  # reconfigurable (tests, CLI)
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
    )
    handler = logging.StreamHandler(sys.stdout if stream is None else stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)


_request_log = structlog.get_logger("services.http")


def request_logging(app: ASGIApp) -> ASGIApp:
    """One line per request with its status and duration; binds a request id for the
    request's other lines. Never logs bodies, headers or tokens."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != ScopeType.HTTP:
            await app(scope, receive, send)
            return
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=uuid.uuid4().hex[:16])
        status = 500
        started = time.perf_counter()

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await app(scope, receive, send_wrapper)
        finally:
            _request_log.info(
                "request",
                method=scope.get("method"),
                path=scope.get("path"),
                status=status,
                ms=round((time.perf_counter() - started) * 1000, 1),
            )
            structlog.contextvars.clear_contextvars()

    return middleware
