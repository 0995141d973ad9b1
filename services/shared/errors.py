"""The HTTP edge of the application's errors: `{"error": code, "detail": text}` and a status.

The application raises errors by meaning (`domain.errors`: NotFound, Conflict, Invalid…,
no status), or lets the event store's `ConcurrencyError` / `IdempotencyKeyReused` through;
this module is the one place that maps them to HTTP: `STATUS` (a kind to its status,
looked up along the class's ancestry), `known_error` (the status and body, for the
exception handlers below and the WebSocket error frames), `exception_handlers` (Litestar).
Every failure becomes that JSON shape with a 4xx status (5xx only for real server faults,
with no detail).

The transport adds kinds of its own, raised only at the edge (body reading, limits, socket
messages), still without a status: `TooLarge`, `UnsupportedMediaType`, `TimedOut` and
`TooManyRequests` (which says when to retry).

A database that cannot be reached (the server down or restarting, a dropped connection,
the pool exhausted) is not a fault of the request: `database_unavailable(exc)` recognises
it anywhere in the exception chain, and it answers 503 `database_unavailable` with
`Retry-After` (HTTP), or an error frame with status 503 (sockets). A statement the server
cancelled (the services' statement timeout, `LUDO_STATEMENT_TIMEOUT`, or an operator's
`pg_cancel_backend`) answers the same way as 503 `database_busy` (`database_busy(exc)`):
its transaction rolled back, so nothing was written, and the same request with its
Idempotency-Key may be sent again. Faults are logged as
their type and a scrubbed message (`services/shared/logging.py`), never their text.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

import msgspec
import psycopg
import sqlalchemy as sa
import structlog
from litestar import MediaType, Request, Response
from litestar.exceptions import HTTPException, ValidationException
from litestar.openapi.datastructures import ResponseSpec
from litestar.openapi.spec import Example

from domain.cannot_move import CannotMove
from domain.errors import (
    AppError,
    Conflict,
    Forbidden,
    Invalid,
    Malformed,
    NotFound,
    Unauthenticated,
    Unavailable,
)
from services.shared.error_codes import ERROR_CODES, codes_by_status
from services.shared.eventstore import ConcurrencyError, IdempotencyKeyReused
from services.shared.logging import describe_exception
from services.shared.metrics import Counters, app_metrics

__all__ = [
    "DATABASE_BUSY",
    "DATABASE_UNAVAILABLE",
    "HEALTH_RESPONSES",
    "RETRY_AFTER",
    "STATUS",
    "ErrorBody",
    "TimedOut",
    "TooLarge",
    "TooManyRequests",
    "UnsupportedMediaType",
    "count_database_error",
    "database_busy",
    "database_error_kind",
    "database_unavailable",
    "describe_codes",
    "error_responses",
    "exception_handlers",
    "http_error",
    "known_error",
    "status_of",
]

_log = structlog.get_logger(__name__)


class ErrorBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Every error response. `field` names the bad input when there is one; `why` gives
    an `illegal_move`'s rule as facts (`domain.cannot_move.CannotMove`), for a client to
    word in its own language, where `detail` says it in English."""

    error: str
    detail: str
    field: str | None = None
    why: Annotated[
        CannotMove | None,
        msgspec.Meta(
            description="Only with `illegal_move`: the rule that stops the piece, as facts "
            "to word in any language (`detail` says it in English). `rule` is one of "
            "`enter_on` (`values`: the entering values), `in_goal`, `exact_finish` "
            "(`needs`: the value that reaches the goal), `block` (`square`, and `seat` "
            "owning the pair) and `no_overtaking` (`seat` whose piece stands between, and "
            "its `square`, left out in the mover's home column)"
        ),
    ] = None
    until: Annotated[
        str | None,
        msgspec.Meta(
            description="Only with `ranked_paused`: when the pause from ranked pools ends "
            "(ISO 8601), for a client to word in its own language."
        ),
    ] = None


class TooLarge(Invalid):
    """A body or message larger than the edge reads."""

    default_code = "too_large"


class UnsupportedMediaType(Invalid):
    """A body declared as something other than JSON."""

    default_code = "unsupported_media_type"


class TimedOut(AppError):
    """The request did not arrive in time (its body came too slowly)."""

    default_code = "request_timeout"


class TooManyRequests(AppError):
    """A budget of the rate limiter is spent; `wait`: seconds until it has room again."""

    default_code = "too_many_requests"

    def __init__(self, detail: str, *, wait: float) -> None:
        super().__init__(detail)
        self.wait = wait


# A kind of error -> its HTTP status; a kind not listed takes its nearest ancestor's.
STATUS: dict[type[AppError], int] = {
    AppError: 400,
    Malformed: 400,
    Unauthenticated: 401,
    Forbidden: 403,
    NotFound: 404,
    TimedOut: 408,
    Conflict: 409,
    TooLarge: 413,
    UnsupportedMediaType: 415,
    Invalid: 422,
    TooManyRequests: 429,
    Unavailable: 503,
}


def status_of(error: AppError) -> int:
    """The HTTP status of an application error: that of its kind (see `STATUS`)."""
    return next(STATUS[k] for k in type(error).__mro__ if k in STATUS)


def _headers(error: AppError) -> dict[str, str] | None:
    """The response headers a kind asks for: when to retry, or that the connection is
    dropped (a body that arrives too slowly is not read to its end)."""
    if isinstance(error, TooManyRequests):
        return {"Retry-After": str(max(1, math.ceil(error.wait)))}
    if isinstance(error, TimedOut):
        return {"Connection": "close"}
    return None


_STATUS_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "too_many_requests",
}


def _response(status: int, body: ErrorBody, headers: dict[str, str] | None = None) -> Response[Any]:
    # Errors too are never kept by a cache (docs/api.md): the app's `cache_control` only
    # reaches handlers' own responses, not those of the exception handlers.
    return Response(
        content=msgspec.json.encode(body),
        status_code=status,
        media_type=MediaType.JSON,
        headers={"Cache-Control": "no-store", **(headers or {})},
    )


# Seconds, in the Retry-After of a 503 `database_unavailable`: the request already waited
# for a new connection (`LUDO_DB_CONNECT_PATIENCE`), or lost the one it had with a server
# that died (the pool opens new ones for the next): sent again a second later, it finds
# the new primary as soon as it takes writes (docs/reliability.md, Failover).
RETRY_AFTER = "1"
# Of a 503 `database_busy`: a statement ran past the statement timeout; not sooner.
BUSY_RETRY_AFTER = "2"
DATABASE_UNAVAILABLE = ErrorBody(
    error="database_unavailable", detail="the database is unreachable; try again shortly"
)

DATABASE_BUSY = ErrorBody(
    error="database_busy", detail="the database did not answer in time; try again shortly"
)

# SQLSTATE classes of an unreachable server: 08 connection exception, 57P admin/crash
# shutdown and "cannot connect now" (starting up), 53300 too many connections.
_UNAVAILABLE_STATES = ("08", "57P", "53300")


def database_unavailable(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it came from) says the database cannot be reached
    right now, as opposed to a statement that failed on a reachable server."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa.exc.TimeoutError):  # no pooled connection in time
            return True
        if isinstance(current, sa.exc.DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, psycopg.InterfaceError):
            return True
        if isinstance(current, psycopg.errors.ReadOnlySqlTransaction):
            # A write reached a server that is no longer the primary (a failover demoted it
            # while the balancer still sent there): the next connection finds the new one.
            return True
        if isinstance(current, psycopg.OperationalError):
            state = current.sqlstate
            # No SQLSTATE: libpq could not connect, or the connection broke mid-statement.
            if state is None or state.startswith(_UNAVAILABLE_STATES):
                return True
        current = current.__cause__ or current.__context__
    return False


def database_busy(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it came from) is a statement the server cancelled
    (SQLSTATE 57014: the statement timeout, or `pg_cancel_backend`)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, psycopg.errors.QueryCanceled):
            return True
        current = current.__cause__ or current.__context__
    return False


# SQLSTATEs of a statement that ran out of time: statement_timeout (57014, also a
# cancel), lock_timeout (55P03), idle_in_transaction_session_timeout (25P03).
_TIMEOUT_STATES = ("57014", "55P03", "25P03")


def database_error_kind(exc: BaseException) -> str | None:
    """What kind of database error `exc` is, for `ludo_db_errors_total` (one of
    `services.shared.metrics.DB_ERROR_KINDS`); None when no database error is in its chain."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sa.exc.TimeoutError):
            return "pool_timeout"
        if isinstance(current, psycopg.Error):
            state = current.sqlstate or ""
            if database_unavailable(current):
                return "unavailable"
            if state.startswith(_TIMEOUT_STATES):
                return "timeout"
            if state == "40001":
                return "serialization"
            if state == "40P01":
                return "deadlock"
            return "other"
        current = current.__cause__ or current.__context__
    return "unavailable" if database_unavailable(exc) else None


def count_database_error(exc: BaseException, counters: Counters) -> None:
    """Count `exc` in `counters`' `ludo_db_errors_total` when it is a database error."""
    kind = database_error_kind(exc)
    if kind is not None:
        counters.db_error(kind)


def known_error(exc: Exception) -> tuple[int, ErrorBody] | None:
    """The status and body of a failure raised on purpose (an `AppError`, `ConcurrencyError`,
    `IdempotencyKeyReused`) or of an unreachable database (503); None for anything else
    (a fault). The HTTP handlers below and the WebSocket command replies both answer with
    it."""
    if isinstance(exc, AppError):
        body = ErrorBody(
            error=exc.code, detail=exc.detail, field=exc.field, why=exc.why, until=exc.until
        )
        return status_of(exc), body
    if isinstance(exc, ConcurrencyError):
        detail = "another command changed this first; reload and retry"
        return 409, ErrorBody(error="conflict", detail=detail)
    if isinstance(exc, IdempotencyKeyReused):
        return 422, ErrorBody(
            error="idempotency_key_reused",
            detail="this Idempotency-Key was already used for another stream",
            field="Idempotency-Key",
        )
    if database_unavailable(exc):
        return 503, DATABASE_UNAVAILABLE
    if database_busy(exc):
        return 503, DATABASE_BUSY
    return None


def _known(exc: Exception) -> Response[Any]:
    known = known_error(exc)
    assert known is not None
    return _response(*known)


def _app_error(request: Request[Any, Any, Any], exc: AppError) -> Response[Any]:
    _log.info("request_rejected", status=status_of(exc), error=exc.code)
    known = known_error(exc)
    assert known is not None
    return _response(*known, _headers(exc))


def _conflict(request: Request[Any, Any, Any], exc: ConcurrencyError) -> Response[Any]:
    _log.info("request_conflict", expected=exc.expected, actual=exc.actual)
    return _known(exc)


def _key_reused(request: Request[Any, Any, Any], exc: IdempotencyKeyReused) -> Response[Any]:
    return _known(exc)


# Python names of parameters whose HTTP name differs.
_PARAMETER_NAMES = {"from_version": "from", "idempotency_key": "Idempotency-Key"}


def _validation(request: Request[Any, Any, Any], exc: ValidationException) -> Response[Any]:
    extra = exc.extra if isinstance(exc.extra, list) else []
    if not extra:
        if request.method in ("GET", "HEAD"):
            # No body is read: the query string is what could not be read (a key given
            # several times where one value is taken, say).
            detail = "query: the query string cannot be read"
            return _response(422, ErrorBody(error="invalid", detail=detail, field="query"))
        # msgspec could not parse the body at all.
        return _response(400, ErrorBody(error="malformed_json", detail="the body is not JSON"))
    first = extra[0] if isinstance(extra[0], dict) else {}
    key = str(first.get("key", "data"))
    key = _PARAMETER_NAMES.get(key, key)
    message = str(first.get("message", "invalid value"))
    if key == "data":
        key = "body"
        if message.startswith("'data'"):
            return _response(
                400, ErrorBody(error="malformed_json", detail="a JSON body is required")
            )
    return _response(422, ErrorBody(error="invalid", detail=f"{key}: {message}", field=key))


def http_error(request: Request[Any, Any, Any], exc: HTTPException) -> Response[Any]:
    """An HTTPException (Litestar's own: unknown route, wrong method, body too large…) as
    our JSON error."""
    if isinstance(exc, ValidationException):
        return _validation(request, exc)
    status = exc.status_code
    if status >= 500:
        return _internal(request, exc)
    code = _STATUS_CODES.get(status, "bad_request")
    detail = str(exc.detail)
    if status == 400 and "Validation" not in detail:
        code, detail = "malformed_json", f"the body is not valid JSON: {detail}"
    return _response(status, ErrorBody(error=code, detail=detail), exc.headers)


def _internal(request: Request[Any, Any, Any], exc: Exception) -> Response[Any]:
    count_database_error(exc, app_metrics(request.app).counters)
    if database_unavailable(exc):
        _log.warning("database_unavailable", **describe_exception(exc))
        return _response(503, DATABASE_UNAVAILABLE, {"Retry-After": RETRY_AFTER})
    if database_busy(exc):
        # describe_exception: the error's type, SQLSTATE and scrubbed message; never the
        # statement's parameters (the engines hide them, create_engine).
        _log.warning("database_busy", **describe_exception(exc))
        return _response(503, DATABASE_BUSY, {"Retry-After": BUSY_RETRY_AFTER})
    _log.error("request_failed", **describe_exception(exc))
    return _response(500, ErrorBody(error="internal", detail="internal server error"))


exception_handlers: dict[type[Exception] | int, Any] = {
    AppError: _app_error,
    ConcurrencyError: _conflict,
    IdempotencyKeyReused: _key_reused,
    HTTPException: http_error,
    Exception: _internal,
}


# `/healthz` of both services: 200 {"status": "ok"}, or this.
HEALTH_RESPONSES = {
    503: ResponseSpec(
        data_container=dict[str, str],
        description='The database does not answer: {"status": "database unreachable"}',
        generate_examples=False,
    )
}


def error_responses(*codes: str) -> dict[int, ResponseSpec]:
    """OpenAPI documentation of the error codes a route's handler can answer (from
    `ERROR_CODES`, grouped by status). Those of the edge (a bad body, no token, the rate
    limiter...) are added to every route of their kind by `openapi_docs.truthful_errors`."""
    return {
        status: ResponseSpec(
            data_container=ErrorBody,
            description=describe_codes(group),
            examples=[
                Example(summary=code, value={"error": code, "detail": ERROR_CODES[code].meaning})
                for code in group
            ],
            generate_examples=False,
        )
        for status, group in codes_by_status(codes).items()
    }


def describe_codes(codes: list[str]) -> str:
    """The description of a status answered with `codes`: one line per code."""
    return "\n".join(f"- `{code}`: {ERROR_CODES[code].meaning}" for code in codes)
