"""Group commit: the appends of many streams, made at about the same time, committed
together in one transaction on one dedicated connection, in one round trip.

Why: an append on its own is a transaction with its own WAL flush, its own round trip
and, in the service, its own pool checkout and SQLAlchemy execution; at a few hundred
commands a second those costs, not the statement, are most of what a command costs the
database and the service. While one batch is on its way, the appends that arrive queue
up and go together as the next one, so a batch is as large as the load makes it and no
append waits for a timer.

Each append keeps its own checks: its statement (`_sql.append_statement`) inserts only
on its stream's head, exactly as on its own. A statement that finds the head moved
returns no rows and writes nothing, and the others commit. A statement that fails (a
unique violation: another instance appended to the same stream, or a command id already
recorded; a deadlock with another writer) rolls the whole batch back, and every append
of it is then made on its own by the caller (`Fallback`), where the ordinary rules sort
out the winner. A statement cancelled by the statement timeout (`LUDO_STATEMENT_TIMEOUT`)
rolls its batch back too: with others in it, they are made on their own (the stuck one
then waits a second timeout before its 503 `database_busy`); alone, it fails at once with
the driver's error. A connection that breaks fails every append of the batch with the
driver's error (the outcome of a commit whose answer was lost is unknown, as for an
append on its own): the service answers 503 and the client retries with its
Idempotency-Key. The next batch opens a new connection.

After the commit, each append's `finish` runs (the store builds its result and tells
the service, `on_commit`), and only then do the batch's NOTIFY hints go out, in a
transaction of their own (docs/event-store.md: NOTIFY), so that this process knows of its
own events before its listener hears of them: in the next batch's pipeline, after its
COMMIT, or on their own when no batch follows at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable, Sequence
from typing import Any, Final

import msgspec
import psycopg
import structlog

from services.shared.metrics import UNCOUNTED, Counters
from services.shared.reconnect import connect_patiently, ended_by_server

from ._listener import CHANNEL
from ._pipeline import Pipeline

__all__ = ["Fallback", "GroupCommit"]

_log = structlog.get_logger("services.shared.eventstore")

# Appends per batch at most: enough for every match of a busy instance at once, small
# enough that one batch's statements stay a few hundred kilobytes.
MAX_BATCH: Final = 64
# One statement for every hint of a batch, the payloads as one JSON array of strings (one
# text parameter: the driver's dumping of a text[] list had been a fiftieth of the
# service's CPU per command).
_NOTIFY_MANY: Final = (
    "SELECT pg_notify(%s, payload) FROM json_array_elements_text(%s::json) AS payload"
)


class Fallback(Exception):
    """The batch this append was in rolled back: make the append on its own."""


class _Pending:
    __slots__ = ("finish", "future", "params", "payload", "sql")

    def __init__(
        self,
        sql: str,
        params: dict[str, Any],
        payload: str,
        finish: Callable[[Sequence[Any]], Any],
        future: asyncio.Future[Any],
    ) -> None:
        self.sql = sql
        self.params = params
        self.payload = payload
        self.finish = finish
        self.future = future


class GroupCommit:
    """Batches of append statements on one connection of its own (see the module)."""

    def __init__(
        self, conninfo: str, counters: Counters = UNCOUNTED, connect_patience: float = 0.0
    ) -> None:
        self._conninfo = conninfo
        self._counters = counters
        # Its connection opened again as the pool's are (services/shared/reconnect.py).
        self._patience = connect_patience
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._pipeline: Pipeline | None = None
        self._queue: list[_Pending] = []
        # Payloads of committed appends whose hints have not gone out: the next batch's
        # pipeline carries them, or they go on their own when no batch follows.
        self._hints: list[str] = []
        self._worker: asyncio.Task[None] | None = None
        self._closed = False
        self.batches = 0  # committed batches, and the appends in them (for the bench)
        self.appends = 0

    async def append(
        self, sql: str, params: dict[str, Any], payload: str, finish: Callable[[Sequence[Any]], Any]
    ) -> Any:
        """Run one append statement in the next batch; after the commit, `finish(rows)`
        (its rows: none when the head had moved) gives what this returns, and `payload`
        goes out as the NOTIFY hint when there were rows. Raises `Fallback` when the batch
        rolled back, or the driver's error when the connection failed."""
        if self._closed:
            raise RuntimeError("the event store is closed")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(sql, params, payload, finish, future))
        if self._worker is None:
            # Runs while there is work, then ends: nothing is left running between bursts.
            # In a context of its own: it serves every request's appends, so it must not
            # log with the context (request id, match id) of the one that started it.
            self._worker = asyncio.create_task(
                self._work(), name="ludo-group-commit", context=contextvars.Context()
            )
        return await future

    async def close(self) -> None:
        self._closed = True
        worker, self._worker = self._worker, None
        if worker is not None:
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker
        for pending in self._queue:
            if not pending.future.done():
                pending.future.set_exception(RuntimeError("the event store was closed"))
        self._queue.clear()
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()

    async def _work(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                await self._run(batch)
                if not self._queue and self._hints and self._conn is not None:
                    # Nothing follows to carry them: the hints go out on their own.
                    hints, self._hints = self._hints, []
                    await self._notify(self._conn, hints)
        finally:
            self._worker = None

    async def _run(self, batch: list[_Pending]) -> None:
        conn = None
        hints: list[str] = []
        try:
            conn = await self._connection()
            statements: list[tuple[str, Any]] = [("BEGIN", None)]
            statements += [(pending.sql, pending.params) for pending in batch]
            statements.append(("COMMIT", None))
            # The previous batch's hints, after this batch's COMMIT: a transaction of
            # their own (until the pipeline's Sync), and no round trip of their own.
            hints, self._hints = self._hints, []
            if hints:
                statements.append((_NOTIFY_MANY, (CHANNEL, _payloads(hints))))
            assert self._pipeline is not None
            results = (await self._pipeline.run(statements))[1 : len(batch) + 1]
        except psycopg.Error as exc:
            self._hints = hints + self._hints  # not sent: the next batch carries them
            if conn is None or conn.broken or conn.closed:
                self._conn = None
                for pending in batch:
                    _settle(pending.future, exc)
                return
            with contextlib.suppress(psycopg.Error):
                if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    await conn.execute("ROLLBACK")
            cancelled = isinstance(exc, psycopg.errors.QueryCanceled)
            if not (cancelled and len(batch) == 1):
                self._counters.group_fallbacks.inc()
            for pending in batch:
                # An append cancelled on its own (the statement timeout) would only wait
                # for the same lock again on its own: a second full timeout for a 503.
                _settle(pending.future, exc if cancelled and len(batch) == 1 else Fallback())
            return
        except BaseException as exc:  # cancelled mid-batch: its outcome is unknown
            self._hints = hints + self._hints
            self._conn = None
            if conn is not None:
                with contextlib.suppress(Exception):
                    await conn.close()
            for pending in batch:
                _settle(pending.future, RuntimeError("the batch was interrupted"))
            raise exc from None
        self.batches += 1
        self.appends += len(batch)
        self._counters.batch_size.observe(len(batch))
        for pending, rows in zip(batch, results, strict=True):
            try:
                outcome = pending.finish(rows)
            except Exception as exc:  # the caller's to raise, not the batch's
                _settle(pending.future, exc)
                continue
            if not pending.future.done():
                pending.future.set_result(outcome)
            if rows:
                self._hints.append(pending.payload)

    async def _notify(self, conn: psycopg.AsyncConnection[Any], payloads: list[str]) -> None:
        # Its own transaction after the batch's commit (see EventStore._notify for why);
        # the events are committed, so a failure is logged, never raised.
        try:
            await conn.execute(_NOTIFY_MANY, (CHANNEL, _payloads(payloads)))
        except psycopg.Error as exc:
            _log.warning("notify_failed", streams=len(payloads), error=type(exc).__name__)
            if conn.broken or conn.closed:
                self._conn = None

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is not None and not self._conn.closed and ended_by_server(self._conn.pgconn):
            # Its server went away between batches (a crashed primary): a new one, before
            # the batch is sent on a connection that would only fail it.
            with contextlib.suppress(psycopg.Error):
                await self._conn.close()
            self._conn = None
        if self._conn is None or self._conn.closed:
            conn = await connect_patiently(
                lambda: psycopg.AsyncConnection.connect(self._conninfo, autocommit=True),
                self._patience,
            )
            self._conn, self._pipeline = conn, Pipeline(conn)
            return conn
        return self._conn


def _payloads(hints: list[str]) -> str:
    return msgspec.json.encode(hints).decode()


def _settle(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
