"""Structured logging for both services (structlog).

`configure_logging(settings)` sets structlog up once per process: JSON lines when stdout
is not a TTY (containers, files), the console renderer on a TTY; `LUDO_LOG_FORMAT` forces
either. Context bound with `structlog.contextvars.bind_contextvars` (request id, match id,
party id) is merged into every line logged while it is bound. Standard-library loggers
that reach the root logger (alembic; uvicorn's when it runs in-process) go through the
same renderer; under the uvicorn command line its own loggers keep uvicorn's handlers
(plain text on stderr; its access log is off: docs/operations.md, Logs).

What `info` holds is what an operator acts on: commands, matches started and finished,
rejected commands (`request_rejected`: why a player's click did nothing), faults, and
slow requests. The one `request` line per request is at `debug` (polls would bury the
rest), except a request slower than `LUDO_SLOW_REQUEST_MS` (`warning`, `"slow": true`) and
a 5xx (`error`). Alembic's `INFO` lines ("Context impl …", "Will assume transactional
DDL") are silenced below `debug`: a service migrates at every start, and `ludo db upgrade`
says the revision itself.

Never log tokens, request bodies, or a server seed before its SeedRevealed event. An
exception is logged as its type, a scrubbed message and where it was raised
(`describe_exception`), never as its text or traceback: a database error's text can echo
the statement's bound values (an event's data, a SeedRevealed's seed) and psycopg's
`DETAIL: Key (...)=(...)`. Every `exc_info` passed to a logger, structlog's or the
standard library's (uvicorn), goes through that, in one processor.
"""

from __future__ import annotations

import logging
import random
import re
import sys
import traceback
from typing import Any, TextIO

import structlog
from litestar.types import Scope

from services.shared.settings import Settings

__all__ = [
    "SLOW_REQUEST_MS",
    "bind_request",
    "configure_logging",
    "describe_exception",
    "log_request",
    "scrub_message",
]

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


# What may carry a value in an exception's message: quoted text, `(...)=(...)` of a key
# violation, long runs of hex or base64url (seeds, hashes, tokens), `key: value` remainders.
_VALUES = re.compile(
    r"""(?x)
    "[^"]*"? | '[^']*'?            # quoted values
    | \([^()]*\)=\([^()]*\)        # DETAIL: Key (col)=(value)
    | \b[0-9a-fA-F]{16,}\b          # seeds, hashes
    | [A-Za-z0-9_\-+/=]{22,}         # tokens and other long opaque strings
    """
)
_MAX_MESSAGE = 200


def scrub_message(text: str) -> str:
    """The first line of an exception's message, with every value it might echo replaced
    by `…` (and SQLAlchemy's `[SQL: ...]`/`[parameters: ...]` parts dropped)."""
    first = text.strip().split("\n", 1)[0].split("[SQL:", 1)[0].strip()
    scrubbed = _VALUES.sub("…", first)
    return scrubbed[:_MAX_MESSAGE]


def describe_exception(exc: BaseException) -> dict[str, Any]:
    """What a log line says about `exc`: `error_type` (and `cause_type`, the exception it
    came from), `error` (its scrubbed message), `sqlstate` for a database error, `where`
    (the innermost frame of its traceback: file, line, function). No values."""
    described: dict[str, Any] = {"error_type": type(exc).__name__, "error": scrub_message(str(exc))}
    cause = exc.__cause__ or exc.__context__
    origin = getattr(exc, "orig", None) or cause
    if cause is not None:
        described["cause_type"] = type(cause).__name__
    sqlstate = getattr(origin, "sqlstate", None) or getattr(exc, "sqlstate", None)
    if sqlstate:
        described["sqlstate"] = sqlstate
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if frames:
        last = frames[-1]
        described["where"] = f"{last.filename}:{last.lineno} in {last.name}"
    return described


def _exception_of(exc_info: Any) -> BaseException | None:
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple) and len(exc_info) == 3:
        return exc_info[1] if isinstance(exc_info[1], BaseException) else None
    if exc_info is True:
        return sys.exc_info()[1]
    return None


def _scrub_exc_info(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """Replace `exc_info` (structlog's or a standard-library record's) with
    `describe_exception`'s fields: no exception text or traceback reaches the output."""
    exc_info = event_dict.pop("exc_info", None)
    exc = _exception_of(exc_info)
    if exc is not None:
        for key, value in describe_exception(exc).items():
            event_dict.setdefault(key, value)
    if "exception" in event_dict:  # an already formatted traceback: drop it
        event_dict["exception"] = "(traceback withheld: see error_type and where)"
    return event_dict


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
        _scrub_exc_info,
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer() if _use_json(fmt) else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            # First: a line below the level (the `request` line of every request at
            # `debug`) is dropped before the timestamp and the rest are made for it.
            structlog.stdlib.filter_by_level,
            *shared,
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
    logging.getLogger("alembic").setLevel(
        logging.NOTSET if level <= logging.DEBUG else logging.WARNING
    )


_request_log = structlog.get_logger("services.http")
# The same logger's level, asked of the standard library before the debug line of a
# request: through structlog's lazy proxy (`cache_logger_on_first_use` is off, so that the
# logging can be configured again) each call binds a new logger and runs the chain up to
# its level filter before the line is dropped, at the usual levels, for every request.
_request_level = logging.getLogger("services.http")
# Request ids only tell one request's lines from another's: 64 random bits, from a
# generator seeded once (a `uuid4` each, from the OS, was 3% of the service's CPU).
_request_ids = random.Random()


SLOW_REQUEST_MS = 500.0


def bind_request() -> None:
    """A new request: what the last one bound is dropped and a request id is bound for
    this one's lines."""
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(request_id=f"{_request_ids.getrandbits(64):016x}")


def log_request(scope: Scope, status: int, ms: float, slow_ms: float = SLOW_REQUEST_MS) -> None:
    """The request's one `request` line with its status and duration (at `debug`;
    `warning` with `slow` when it took over `slow_ms`, `error` for a 5xx), then its bound
    context dropped. Never logs bodies, headers or tokens."""
    failed, slow = status >= 500, ms > slow_ms
    if failed or slow or _request_level.isEnabledFor(logging.DEBUG):
        line = {
            "method": scope.get("method"),
            "path": scope.get("path"),
            "status": status,
            "ms": round(ms, 1),
        }
        if failed:
            _request_log.error("request", **line)
        elif slow:
            _request_log.warning("request", slow=True, **line)
        else:
            _request_log.debug("request", **line)
    structlog.contextvars.clear_contextvars()
