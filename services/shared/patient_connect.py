"""New database connections tried again for a few seconds: how a request rides through a
failover instead of failing at its first refused connection.

When the primary dies (docs/operations.md, High availability), a new one takes writes a
few seconds later. Until then a new connection finds nothing to connect to: the node is
down, HAProxy has no primary to send it to and closes it at once, or the node it reaches
is still a standby (the services' URL asks for `target_session_attrs=read-write`, so libpq
refuses it at connect time instead of the first write failing as read-only). A request
that needs such a connection (one of the first after the crash, every pooled connection
to the old primary being gone) waits: the connection is tried again every
`RECONNECT_EVERY` seconds for up to the setting `LUDO_DB_CONNECT_PATIENCE`, and the request
goes on a tenth of a second after the database takes writes again, rather than
answering 503 and being sent again only after its `Retry-After`. Past the patience the
failure is the request's: 503 `database_unavailable`, as before.

Only what is worth waiting for is tried again: no answer at all (refused, reset, closed
by the balancer, a timeout), a server starting, stopping or in recovery (SQLSTATE 57P03,
57P01, 08006, 08001). A refused password or an unknown database fails at once.

Used by the services' pools (`patient_connects`, on SQLAlchemy's `do_connect`) and by the
match service's group-commit connection (`connect_patiently`). A statement that fails on
a connection that was already open is never sent again here: it may have run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import psycopg
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.util import await_only

__all__ = ["RECONNECT_EVERY", "connect_patiently", "patient_connects", "worth_waiting"]

# Seconds between two tries: a tenth of a second late at most once the database is back;
# a connection refused by a dead node or closed by the balancer costs microseconds.
RECONNECT_EVERY: Final = 0.1
# The server is starting up, shutting down or in recovery; an administrator command ended
# the session being opened; the connection failed or could not be made.
_WAITABLE_STATES: Final = frozenset({"57P03", "57P01", "08006", "08001"})

T = TypeVar("T")


def worth_waiting(error: BaseException) -> bool:
    """Whether a failed connection attempt may succeed if tried again shortly."""
    if not isinstance(error, psycopg.OperationalError):
        return False
    return error.sqlstate is None or error.sqlstate in _WAITABLE_STATES


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
        deadline = time.monotonic() + patience
        while True:
            try:
                return dialect.connect(*cargs, **cparams)
            except psycopg.OperationalError as error:
                if not worth_waiting(error) or time.monotonic() + RECONNECT_EVERY > deadline:
                    raise
            await_only(asyncio.sleep(RECONNECT_EVERY))
