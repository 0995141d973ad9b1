"""The per-address budgets' shared counts: PostgreSQL's `rate_buckets` (migration 0013).

Every instance checks a client's budget in the same row, so N instances behind a balancer
give a client the documented budget, not N times it (docs/api.md: Limits).
A budget is a GCRA (the generic cell rate algorithm, the token bucket's arithmetic kept
as one number): `tat`, the *theoretical arrival time*, in seconds since the epoch on the
database's clock (so that the instances' clocks do not matter). A budget of `count` per
`per` seconds spaces takes `step = per / count` apart and allows a burst of `count`: a
take is allowed when `max(tat, now) + step <= now + per`, and moves `tat` there. A row
whose `tat` is past is a full bucket, the same as no row: `sweep` deletes those, at most
once every `SWEEP_EVERY` seconds per instance, started by a take (an idle site sends
nothing).

One prepared statement per check, in autocommit: an `INSERT … ON CONFLICT DO UPDATE …
WHERE` that writes the row only when the take is allowed (a refused request writes
nothing), and returns, beside whether it took, the row as it was (for `Retry-After`) and
the address's unknown-token row (`check_auth` reads it without a query of its own). The
checks that arrive while one statement runs share the next (a batch: one row per address,
its waiting takes all at once or none, then one by one near the end of its budget).

The table is UNLOGGED (no WAL: budgets are not worth a write-ahead log, and a crash
empties them as a restart emptied the in-memory ones) with `fillfactor` 50, so that the
update of a row usually stays on its page (a HOT update, no index write).

When the database cannot be reached (or refuses the statement), `take` returns None and
the caller counts locally (services/shared/limits.py); the first failure logs
`limits_store_unavailable` (warning), the store is tried again every `RETRY` seconds,
and `limits_store_back` (info) says it answers again. No address is logged.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from typing import Any, Final, NamedTuple

import psycopg
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = ["RETRY", "SWEEP_EVERY", "RateStore", "Taken", "gcra_wait"]

RETRY: Final = 2.0  # seconds between tries of a store that failed
SWEEP_EVERY: Final = 60.0  # seconds between one instance's deletes of full buckets

_log = structlog.get_logger("services.shared.limits")

# One statement for a batch of addresses of one budget, `n` takes for each address (an
# address once: ON CONFLICT may not touch a row twice), all or none of them; inserted in
# address order so that two instances' batches lock their rows in the same order (no
# deadlock). `old` and `auth` are read from the statement's snapshot, before its writes.
# A take is allowed half a step early (`slack`): the float sums of a burst's steps may
# round either way, and half a step cannot let a whole take more through.
_TAKE_SQL: Final = """
    WITH clock AS (SELECT extract(epoch FROM now())::float8 AS now),
    req AS (SELECT * FROM unnest(%(clients)s::text[], %(counts)s::int[]) AS r(client, n)),
    took AS (
        INSERT INTO rate_buckets AS b (budget, client, tat)
        SELECT %(budget)s, req.client, clock.now + req.n * %(step)s
        FROM req, clock ORDER BY req.client
        ON CONFLICT (budget, client) DO UPDATE
            SET tat = greatest(b.tat + excluded.tat - (SELECT now FROM clock), excluded.tat)
            WHERE greatest(b.tat + excluded.tat - (SELECT now FROM clock), excluded.tat)
                <= (SELECT now FROM clock) + %(per)s + %(slack)s
        RETURNING b.client, b.tat
    )
    SELECT req.client, clock.now, took.tat, old.tat, auth.tat
    FROM req CROSS JOIN clock
    LEFT JOIN took ON took.client = req.client
    LEFT JOIN rate_buckets old ON old.budget = %(budget)s AND old.client = req.client
    LEFT JOIN rate_buckets auth ON auth.budget = 'auth' AND auth.client = req.client
    """
_SWEEP: Final = sa.text("DELETE FROM rate_buckets WHERE tat < extract(epoch FROM now())")


class Taken(NamedTuple):
    """A take's outcome: `wait` 0 when taken, else the seconds until a take would be
    allowed; `auth_tat` the address's unknown-token row (None: none), `now` the database's
    clock, both in seconds since the epoch."""

    wait: float
    auth_tat: float | None
    now: float


def gcra_wait(tat: float | None, now: float, step: float, per: float) -> float:
    """Seconds until a take is allowed in a bucket at `tat` (0: now)."""
    if tat is None:
        return 0.0
    return max(0.0, max(tat, now) + step / 2 - now - per)


class RateStore:
    """The shared buckets in the database of `engine` (module doc)."""

    def __init__(self, engine: AsyncEngine) -> None:
        # Autocommit: one statement, no BEGIN/COMMIT round trips around it.
        self.engine = engine.execution_options(isolation_level="AUTOCOMMIT")
        self.away = False
        self._retry_at = 0.0
        self._sweep_at = time.monotonic() + SWEEP_EVERY
        self._tasks: set[asyncio.Task[Any]] = set()
        # budget -> address -> its waiting takes (the next batch holds one per address)
        self._pending: dict[str, dict[str, list[asyncio.Future[Taken | None]]]] = {}
        self._flushing: set[str] = set()  # budgets whose batches are being written

    async def take(self, budget: str, client: str, count: int, per: float) -> Taken | None:
        """Take one of `count` per `per` seconds from `client`'s `budget`; None when the
        store cannot answer (the caller counts locally). The takes that arrive while a
        statement of this budget runs go together in the next one (one round trip for
        all: under load, a fraction of a statement per request)."""
        now = time.monotonic()
        if self.away and now < self._retry_at:
            return None
        if now >= self._sweep_at:
            self._sweep_at = now + SWEEP_EVERY
            self.background(self.sweep())
        waiting: asyncio.Future[Taken | None] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(budget, {}).setdefault(client, []).append(waiting)
        if budget not in self._flushing:
            self._flushing.add(budget)
            self.background(self._flush(budget, count, per))
        return await waiting

    async def _flush(self, budget: str, count: int, per: float) -> None:
        pending = self._pending[budget]
        # Addresses whose takes go one at a time: n at once were refused (near the end
        # of the budget, where each take counts).
        single: set[str] = set()
        batch: dict[str, list[asyncio.Future[Taken | None]]] = {}
        try:
            while pending:
                batch = {}
                for client, queued in list(pending.items()):
                    n = 1 if client in single else min(len(queued), count)
                    batch[client] = queued[:n]
                    del queued[:n]
                    if not queued:
                        del pending[client]
                counts = {client: len(waiters) for client, waiters in batch.items()}
                answers = await self._take_many(budget, counts, count, per)
                for client, waiters in batch.items():
                    answer = None if answers is None else answers[client]
                    if answer is not None and answer.wait and len(waiters) > 1:
                        pending[client] = waiters + pending.get(client, [])
                        single.add(client)
                        continue
                    # Those queued behind a refused take come later still: refused too.
                    behind = pending.pop(client, []) if answer is not None and answer.wait else []
                    if client not in pending:
                        single.discard(client)
                    for waiting in [*waiters, *behind]:
                        if not waiting.done():
                            waiting.set_result(answer)
                batch = {}
        finally:
            self._flushing.discard(budget)
            left = [*batch.values(), *pending.values()]
            for waiting in (f for waiters in left for f in waiters):
                if not waiting.done():  # only when this task was cancelled mid-batch
                    waiting.set_result(None)
            pending.clear()

    async def _take_many(
        self, budget: str, counts: dict[str, int], count: int, per: float
    ) -> dict[str, Taken] | None:
        """`counts[client]` takes for each client, all or none: what each got."""
        step = per / count
        clients = sorted(counts)
        params = {
            "budget": budget,
            "clients": clients,
            "counts": [counts[client] for client in clients],
            "step": step,
            "per": per,
            "slack": step / 2,
        }
        try:
            async with self.engine.connect() as conn:
                # psycopg's own connection: a prepared statement, without SQLAlchemy's
                # per-execute work (a third of the check's CPU: docs/benchmarks.md).
                driver: Any = (await conn.get_raw_connection()).driver_connection
                cursor = await driver.execute(_TAKE_SQL, params, prepare=True)
                rows = await cursor.fetchall()
        except (sa.exc.SQLAlchemyError, psycopg.Error, OSError) as exc:
            self._failed(exc)
            return None
        if self.away:
            self.away = False
            _log.info("limits_store_back")
        answers = {}
        for client, clock, taken, before, auth in rows:
            wait = 0.0 if taken is not None else gcra_wait(before, clock, step, per) or step
            answers[client] = Taken(wait, auth, clock)
        return answers

    def _failed(self, exc: BaseException) -> None:
        self._retry_at = time.monotonic() + RETRY
        if not self.away:
            self.away = True
            # The type only: a driver's message may carry the URL or the statement's values.
            _log.warning("limits_store_unavailable", error=type(exc).__name__, retry_s=RETRY)

    async def sweep(self) -> int:
        """Delete the full buckets (their `tat` is past: the same as no row); how many."""
        try:
            async with self.engine.connect() as conn:
                return (await conn.execute(_SWEEP)).rowcount
        except (sa.exc.SQLAlchemyError, psycopg.Error, OSError) as exc:
            self._failed(exc)
            return 0

    def background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` on its own (a reference kept until it ends)."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        """Wait for the background writes (before the engine is disposed)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
