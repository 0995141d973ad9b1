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
from typing import Any, TextIO

import structlog

from services.shared.settings import Settings

__all__ = ["configure_logging"]

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
