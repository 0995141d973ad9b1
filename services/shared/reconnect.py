"""The services' database connections through a failover: a connection the server already
ended is not used, and a new one is tried again for a few seconds.

When the primary dies (docs/operations.md, High availability) its sessions end with it,
and a new primary takes writes a few seconds later (docs/reliability.md, Failover). Two
things would otherwise fail the requests of those seconds with 503 and send them back
only after their `Retry-After`:

- **A pooled connection its server already ended.** Its goodbye (a FATAL error, then the
  end of the stream) waits unread in the socket; the first statement sent on it would
  fail. `ended_by_server` reads what is there without waiting (two non-blocking reads, no
  round trip), and such a connection is replaced before use: the pool's checkout
  (`replace_ended_connections`) and the match service's group-commit connection. A
  connection that dies while a statement is on it is not caught here: that statement may
  have run, so its request answers 503 and the client sends it again with its key.
- **A new connection while nothing takes it**: the node is down, HAProxy has no primary to
  send it to and closes it at once (`retries 0`), or the node it reaches is still a
  standby (the services' URL asks for `target_session_attrs=read-write`, so libpq refuses
  it at connect time instead of the first write failing as read-only). It is tried again
  every `RECONNECT_EVERY` seconds for up to `LUDO_DB_CONNECT_PATIENCE` seconds
  (`connect_patiently`, `patient_connects`), and the request goes on within a twentieth of a
  second of the database taking writes again. Past the patience the failure is the
  request's: 503 `database_unavailable`.

Only what is worth waiting for is tried again (`worth_waiting`): no answer at all (refused,
reset, closed by the balancer, a timeout), a standby refused for `target_session_attrs`, a
server starting, stopping or in recovery. A refused password, an unknown role or database
fail at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Final, TypeVar

import psycopg
import sqlalchemy as sa
from psycopg import pq
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import await_only

__all__ = [
    "RECONNECT_EVERY",
    "connect_patiently",
    "ended_by_server",
    "impatient",
    "patient_connects",
    "replace_ended_connections",
    "worth_waiting",
]

# Seconds between two tries: at most this late once the database is back; a connection
# refused by a dead node or closed by the balancer costs a fraction of a millisecond.
RECONNECT_EVERY: Final = 0.05
# The server is starting up, shutting down or in recovery; an administrator command ended
# the session being opened; the connection failed or could not be made.
_WAITABLE_STATES: Final = frozenset({"57P03", "57P01", "08006", "08001"})
# libpq's connection errors carry no SQLSTATE: the server's own refusals are known by their
# text after "FATAL:" (57P03's "the database system is starting up", "... is shutting
# down", "... is in recovery mode", "... is not yet accepting connections"; 57P01's).
_WAITABLE_FATALS: Final = ("the database system is", "terminating connection due to administrator")

T = TypeVar("T")

# Set for a block (`impatient`): its new connections are tried once.
_IMPATIENT: contextvars.ContextVar[bool] = contextvars.ContextVar("ludo_impatient", default=False)


@contextlib.contextmanager
def impatient() -> Iterator[None]:
    """New connections opened in the block (this task's) are tried once, whatever the
    engine's patience: for a question that must be answered now, the health check's
    "can this process reach its database?" (HAProxy takes an instance out when its check
    does not answer within a second)."""
    token = _IMPATIENT.set(True)
    try:
        yield
    finally:
        _IMPATIENT.reset(token)


def worth_waiting(error: BaseException) -> bool:
    """Whether a failed connection attempt may succeed if tried again shortly: the
    connection itself failed (no "FATAL:" from the server in libpq's message), or the
    server refused it only for now. A server whose messages are not in English has every
    refusal waited for, up to the patience: slower to fail, never wrong."""
    if not isinstance(error, psycopg.OperationalError):
        return False
    if error.sqlstate is not None:
        return error.sqlstate in _WAITABLE_STATES
    message = str(error)
    return "FATAL:" not in message or any(text in message for text in _WAITABLE_FATALS)


def ended_by_server(pgconn: pq.abc.PGconn) -> bool:
    """Whether the server already ended this idle connection: what it sent is read without
    waiting (the first read may stop at its goodbye message, the second then meets the
    end of the stream). Nothing is sent; what is read (a notice, say) stays buffered for
    the next statement, as libpq would have read it then."""
    try:
        pgconn.consume_input()
        pgconn.consume_input()
    except psycopg.OperationalError:
        return True
    return pgconn.status != pq.ConnStatus.OK


async def connect_patiently(connect: Callable[[], Awaitable[T]], patience: float) -> T:
    """`connect()`, tried again every `RECONNECT_EVERY` s while it fails in a way
    `worth_waiting`, for up to `patience` s; then its last error."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return await connect()
        except psycopg.OperationalError as error:
            if not worth_waiting(error) or time.monotonic() + RECONNECT_EVERY > deadline:
                raise
        await asyncio.sleep(RECONNECT_EVERY)


def patient_connects(engine: AsyncEngine, patience: float) -> None:
    """Every new connection of `engine`'s pool opened as `connect_patiently` does (the
    pool runs it on the event loop's greenlet: `await_only` sleeps there). 0: at once."""
    if patience <= 0:
        return

    @event.listens_for(engine.sync_engine, "do_connect")
    def _connect(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        if _IMPATIENT.get():
            return dialect.connect(*cargs, **cparams)
        deadline = time.monotonic() + patience
        while True:
            try:
                return dialect.connect(*cargs, **cparams)
            except psycopg.OperationalError as error:
                if not worth_waiting(error) or time.monotonic() + RECONNECT_EVERY > deadline:
                    raise
            await_only(asyncio.sleep(RECONNECT_EVERY))


def replace_ended_connections(engine: AsyncEngine) -> None:
    """A pooled connection `ended_by_server` is replaced at checkout by a new one (opened
    as `patient_connects` says), and so is every connection pooled before it when it is
    next checked out: a server that ended one (restarted, crashed) ended them all.
    (SQLAlchemy's `DisconnectionError` from a checkout event: the pool reconnects that
    record and checks again, three times at most.)"""

    @event.listens_for(engine.sync_engine, "checkout")
    def _checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        if ended_by_server(dbapi_connection.driver_connection.pgconn):
            ended = sa.exc.DisconnectionError("the server ended this connection")
            ended.invalidate_pool = True
            raise ended
