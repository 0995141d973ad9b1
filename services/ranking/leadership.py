"""A follower of the log that one instance at a time runs: the leadership both consumers
of the global cursor share (the ranking consumer, services/ranking/ratings/consumer.py, and the
analysis consumer, services/ranking/analysis/consumer.py; docs/ranking.md, Leadership).

`LeasedFollower.run()` stands by until its advisory lock (`lock_key`) is ours, then calls
`step()` until caught up, woken by the store's NOTIFY hints, polling as a fallback.
Leadership is a lease that PostgreSQL enforces with session timeouts; exactly-once never
rests on it: each `step` reads its cursor from the checkpoint row it locks and commits
effects and checkpoint together. Subclasses write `step` (holding `batch_lock` shared for
its transaction, through `self._fence`) and name their log events (`EVENTS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any, ClassVar, Final

import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.events import MatchFinished
from services.ranking.checkpoints import read_checkpoint
from services.shared.background import first_of
from services.shared.errors import count_database_error
from services.shared.eventstore import Backlog, EventStore, HintListener, Notification
from services.shared.logging import describe_exception

__all__ = ["LEASE", "LeasedFollower"]

_log = structlog.get_logger("services.ranking")

# s: how long PostgreSQL lets the leader's sessions sit idle before ending them (run()).
LEASE: Final = 5.0
_HELD_BACK_FIRST: Final = 0.01  # s: the first look again at held-back events
# s: how long a woken leader gathers hints before it steps. A hint comes with every append,
# and a match appends several a second: one step (a few queries) for the hints of a moment
# rather than one for each append. A rating or an analysis is written this much later.
_GATHER: Final = 0.05
# The event type both consumers act on, as the log spells it (the event's tag).
MATCH_FINISHED: Final = str(MatchFinished.__struct_config__.tag)

# The sessions of this database in a live batch (`BATCH_LOCK`), other than this one.
_BATCHES: Final = (
    "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted"
    " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND l.classid::bigint = :hi AND l.objid::bigint = :lo AND l.objsubid = 1"
    " AND l.pid <> pg_backend_pid()"
)


class LeasedFollower:
    """Follows the log in batches (`step`), one instance at a time (see the module doc)."""

    label: ClassVar[str] = "follower"
    # The event types a step acts on: a hint of other types only wakes `heard`/`between`.
    ACTS_ON: ClassVar[frozenset[str]] = frozenset({MATCH_FINISHED})
    # The log events of each situation (docs/operations.md lists them), by subclass.
    EVENTS: ClassVar[dict[str, str]] = {}

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore | None = None,
        *,
        name: str,
        lock_key: int,
        batch_lock: int,
        batch: int = 500,
        poll: float = 1.0,
        standby_poll: float = 2.0,
        lease: float = LEASE,
    ) -> None:
        if lease < 0.5:
            raise ValueError("the lease must be at least 0.5 s")
        self.engine = engine
        self.store = store or EventStore(engine)
        self.name = name
        self.lock_key = lock_key
        self.batch_lock = batch_lock
        self.batch = batch
        self.poll = poll
        self.standby_poll = standby_poll
        self.lease = lease
        # Every batch transaction: PostgreSQL ends it (and its session) when its client
        # leaves it idle for a lease, or one statement runs for three (see `run`).
        ms = int(lease * 1000)
        self._fence = (
            f"SELECT set_config('idle_in_transaction_session_timeout', '{ms}', true),"
            f" set_config('statement_timeout', '{3 * ms}', true),"
            f" pg_advisory_xact_lock_shared({batch_lock})"
        )
        self.active = False  # holds the advisory lock and consumes
        # After a short batch: committed events after it that the xid8 rule still holds
        # back (an older transaction is running). `run()` then looks again soon instead
        # of waiting for the next hint or the poll.
        self.held_back = False

    async def step(self) -> int:
        """One batch in one transaction; the number of events read (0: caught up)."""
        raise NotImplementedError

    def _say(self, what: str, **fields: Any) -> None:
        level = "info" if what in ("active", "batch_ended") else "warning"
        getattr(_log, level)(self.EVENTS[what], **fields)

    async def backlog(self) -> Backlog:
        """How far this consumer's checkpoint is behind the log: events after it, the
        oldest one's age and the match ends among them (`MatchFinished`: what both
        consumers act on), for the metrics' lag, read when scraped, on any instance."""
        async with self.engine.begin() as conn:  # the first read inserts the row
            cursor = await read_checkpoint(conn, self.name)
        return await self.store.backlog(cursor, of_type=MATCH_FINISHED)

    async def catch_up(self, timeout: float = 60.0) -> int:
        """Steps until the checkpoint reaches the log's head as of this call (events of
        transactions still running anywhere on the server are waited for: the xid8 rule
        holds them back until then); returns the number of match ends read."""
        head = await self.store.head()
        deadline = asyncio.get_running_loop().time() + timeout
        total = 0
        while True:
            n = await self.step()
            total += n
            if n:
                continue
            async with self.engine.connect() as conn:
                if await read_checkpoint(conn, self.name) >= head:
                    return total
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"the {self.label} consumer did not reach the log's head")
            await asyncio.sleep(0.02)

    @contextlib.asynccontextmanager
    async def _leadership(self) -> AsyncIterator[AsyncConnection | None]:
        """The advisory lock's session if the lock is ours (else None), set to be ended by
        PostgreSQL after a lease without a statement: a frozen leader loses the lock."""
        async with self.engine.connect() as conn:
            auto = await conn.execution_options(isolation_level="AUTOCOMMIT")
            got = await auto.scalar(sa.select(sa.func.pg_try_advisory_lock(self.lock_key)))
            if not got:
                yield None
                return
            try:
                await auto.execute(sa.text(f"SET idle_session_timeout = {int(self.lease * 1000)}"))
                await self._fence_off(auto)
                yield auto
            finally:
                with contextlib.suppress(Exception):
                    await auto.execute(sa.select(sa.func.pg_advisory_unlock(self.lock_key)))
                # Never back into the pool: the session carries the idle timeout.
                with contextlib.suppress(Exception):
                    await conn.invalidate()

    async def run(self) -> None:
        """Forever: stand by until the advisory lock is ours, then consume (cancel to stop).

        Leadership is a lease that PostgreSQL enforces (docs/ranking.md, Leadership): the
        lock's session has `idle_session_timeout` = `lease` and is pinged every fifth of
        it; every batch transaction has `idle_in_transaction_session_timeout` = `lease`
        (and `statement_timeout` = 3 × `lease`). A leader that stops (SIGSTOP, a paused
        VM) stops pinging; PostgreSQL ends its sessions, which frees the advisory lock and
        any row locks of a batch it was in, and a standby takes over; on taking the lock
        it also ends any batch still running (`_fence_off`: some frozen states escape the
        timeouts). When the old leader runs again its sessions are gone: its batch was
        rolled back, its next ping fails, and it stands by. Exactly-once never rested on
        the lock: each batch reads the cursor from the checkpoint row it locks, and
        commits effects and checkpoint together."""
        while True:
            try:
                async with self._leadership() as lock_conn:
                    if lock_conn is None:
                        await asyncio.sleep(self.standby_poll)
                        continue
                    self.active = True
                    self._say("active")
                    await first_of(self._heartbeat(lock_conn), self._consume())
            except asyncio.CancelledError:
                raise
            except sa.exc.DBAPIError as exc:
                # Mostly: PostgreSQL ended a session of ours (a lease ran out) or went away.
                self._count_failure(exc)
                self._say("standing_by", **describe_exception(exc))
                await asyncio.sleep(self.standby_poll)
            except Exception as exc:
                self._count_failure(exc)
                self._say("error", **describe_exception(exc))
                await asyncio.sleep(self.standby_poll)
            finally:
                self.active = False

    def _count_failure(self, exc: BaseException) -> None:
        counters = self.store.counters  # its app's, as the store's
        counters.child(counters.consumer_errors, self.label).inc()
        count_database_error(exc, counters)

    async def _heartbeat(self, lock_conn: AsyncConnection) -> None:
        """Pings the lock's session every fifth of the lease; raises when it is gone."""
        while True:
            await asyncio.sleep(self.lease / 5)
            await lock_conn.execute(sa.text("SELECT 1"))

    def heard(self, notes: list[Notification]) -> None:
        """The hints that woke the leader (a subclass may keep what they name)."""

    async def between(self) -> bool:
        """Work of the leader's own, done when caught up, before it waits for hints; True
        when more is left (it then only looks for hints, without waiting)."""
        return False

    async def _consume(self) -> None:
        backoff = _HELD_BACK_FIRST
        async with self.store.listen() as listener:
            await self.started()
            while True:
                stepped = time.monotonic()
                if await self.step() >= self.batch:
                    continue
                more = await self.between()
                if self.held_back:
                    # Committed, not yet in the global order: no new hint will come for
                    # it, so look again soon (10 ms, doubling, up to the poll interval).
                    self.heard(await listener.wait(0.0 if more else backoff))
                    backoff = min(backoff * 2, self.poll)
                else:
                    backoff = _HELD_BACK_FIRST
                    await self._until_due(listener, more, stepped)

    async def _until_due(self, listener: HintListener, more: bool, stepped: float) -> None:
        """Hears hints until the next step is due: a hint that may be of a type in
        `ACTS_ON` (or that does not say its types), `between` having more to do, or the
        poll interval since the last step (a lost hint's fallback). Most hints are of
        moves and rolls, several a second while matches are played: a step for each
        would be a transaction read for nothing."""
        while True:
            wait = 0.0 if more else max(0.0, stepped + self.poll - time.monotonic())
            notes = await listener.wait(wait)
            if notes and not more:
                await asyncio.sleep(min(_GATHER, self.poll))
                notes += await listener.wait(0.0)
            self.heard(notes)
            if (
                more
                or not notes
                or any(note.may_hold(self.ACTS_ON) for note in notes)
                or time.monotonic() - stepped >= self.poll
            ):
                return
            more = await self.between()

    async def started(self) -> None:
        """Called once the leader listens, before its first step (a subclass may get ready)."""

    async def _fence_off(self, lock_conn: AsyncConnection) -> None:
        """Ends every batch still running when the lock becomes ours.

        Whoever ran it held the lock before us and lost it: its lease ran out (it was frozen,
        or too slow to ping), or its lock session died. Its own timeouts do not always end
        such a batch: PostgreSQL does not act on them while the session waits for the client
        in the middle of a COPY or of a pipeline, nor while it blocks writing a result to a
        client that does not read. `pg_terminate_backend` ends the session in every case,
        which rolls the batch back and frees the checkpoint row: harmless to exactly-once
        (effects and checkpoint commit together or not at all). It needs the same role as
        the old leader's (or `pg_signal_backend`); without it, the timeouts remain."""
        params = {"hi": self.batch_lock >> 32, "lo": self.batch_lock & 0xFFFFFFFF}
        pids = [pid for (pid,) in await lock_conn.execute(sa.text(_BATCHES), params)]
        for pid in pids:
            try:
                ended = await lock_conn.scalar(sa.select(sa.func.pg_terminate_backend(pid)))
            except sa.exc.DBAPIError as exc:
                self._say("batch_not_ended", pid=pid, **describe_exception(exc))
            else:
                self._say("batch_ended", pid=pid, ended=bool(ended))
