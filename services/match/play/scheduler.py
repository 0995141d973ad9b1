"""The deadline worker: fires due `turn_deadlines` rows, exactly once across instances.

Each instance runs `Scheduler.run()`. A firing is one transaction: claim the earliest due
row with `FOR UPDATE SKIP LOCKED` (other instances skip it), then execute through
`MatchCommands.fire_deadline`, which appends with the row's `expected_version` and rewrites
the row from the new state in the same transaction. A row whose version is stale (the
match moved on) is recomputed instead of fired, so a deadline fires at most once, and a
crash before the commit leaves the row for the next poll, so it fires at least once.

- kind `cpu`: the CPU (a CPU seat, a stand-in, or the rest of a timed-out turn) does ONE
  action (roll or move); the next row follows after `LUDO_CPU_DELAY`, so people can follow.
- kind `turn`: the human's time is up: `TimeOut` (three in a row: `SeatStoodIn`), then the
  CPU plays the rest of the turn through `cpu` rows.

It also fires `seat_presence.grace_due`: a player whose last live connection closed and who
has not come back within `LUDO_RECONNECT_GRACE` gets a CPU stand-in (`SeatStoodIn`,
reason `disconnected`) until they return (the match socket, services/match/play/socket.py,
reclaims on reconnect: the one stand-in a reconnection ends).
"""

from __future__ import annotations

import asyncio
import contextlib

import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import AppError
from domain.streams import match_id_of
from services.match.play.deadlines import Deadlines
from services.match.play.presence import Presence
from services.match.play.service import MatchCommands
from services.shared.eventstore import AppendResult, ConcurrencyError, EventStore
from services.shared.logging import describe_exception

__all__ = ["Scheduler"]

_log = structlog.get_logger(__name__)

_CLAIM = sa.text(
    """
    SELECT stream_id, expected_version, kind FROM turn_deadlines
    WHERE due_at <= now()
    ORDER BY due_at
    LIMIT 1
    FOR UPDATE SKIP LOCKED
    """
)


_CLAIM_GRACE = sa.text(
    """
    SELECT stream_id, seat FROM seat_presence
    WHERE grace_due <= now()
    ORDER BY grace_due
    LIMIT 1
    FOR UPDATE SKIP LOCKED
    """
)


# Seconds until the earliest deadline or grace period (negative: overdue; NULL: none).
# LEAST skips a NULL, so one empty table does not hide the other's rows.
_NEXT_DUE = sa.text(
    """
    SELECT EXTRACT(EPOCH FROM LEAST(
        (SELECT min(due_at) FROM turn_deadlines),
        (SELECT min(grace_due) FROM seat_presence)
    ) - clock_timestamp())
    """
)

# The shortest sleep when a row is due yet could not be claimed: another instance holds it
# (SKIP LOCKED) and is firing it; look again once it has likely committed, not at once.
_HELD_ELSEWHERE = 0.005


class Scheduler:
    """Fires due deadlines through `commands` and expired grace periods through `presence`;
    `run()` loops, `run_due()` fires what is due now.

    Between two rounds `run()` sleeps until the earliest row is due, and no longer than
    `poll`; `ring()` ends the sleep early. The app rings it for every hint of a match
    stream (its LISTEN connection, services/match/live_hub.py): an append that wrote a
    deadline due at once (a CPU's next action with no delay, a match started with a CPU
    first) is fired as soon as it is committed. A round begins with one query, when the
    earliest row of both tables is due; only a row due now is claimed, so a ring with
    nothing due, and an idle instance once per `poll`, costs that query alone."""

    def __init__(
        self,
        engine: AsyncEngine,
        store: EventStore,
        commands: MatchCommands,
        deadlines: Deadlines,
        presence: Presence,
        poll: float,
    ) -> None:
        self.engine = engine
        self.store = store
        self.commands = commands
        self.deadlines = deadlines
        self.presence = presence
        self.poll = poll
        self._rung = asyncio.Event()

    async def fire_one(self) -> bool:
        """Claim and fire one due deadline; False when none is due (or all are claimed)."""
        result: AppendResult | None = None
        async with self.engine.connect() as conn, conn.begin():
            row = (await conn.execute(_CLAIM)).one_or_none()
            if row is None:
                return False
            structlog.contextvars.bind_contextvars(match_id=match_id_of(row.stream_id))
            try:
                result = await self.commands.fire_deadline(
                    conn, row.stream_id, row.expected_version, row.kind
                )
            except ConcurrencyError:
                # The match moved on since the row was written: derive it again.
                await self.deadlines.refresh(conn, row.stream_id)
            except AppError as error:
                # Nothing sensible to fire (e.g. the match is over): drop the row.
                _log.warning("deadline_dropped", kind=row.kind, error=error.code)
                await conn.execute(
                    sa.text("DELETE FROM turn_deadlines WHERE stream_id = :s"),
                    {"s": row.stream_id},
                )
        if result is not None:
            await self.store.notify(result)
        structlog.contextvars.unbind_contextvars("match_id")
        return True

    async def fire_grace_one(self) -> bool:
        """Claim one seat whose reconnect grace has run out and stand a CPU in for it."""
        result: AppendResult | None = None
        async with self.engine.connect() as conn, conn.begin():
            row = (await conn.execute(_CLAIM_GRACE)).one_or_none()
            if row is None:
                return False
            try:
                result = await self.presence.fire_grace(conn, row.stream_id, row.seat)
            except (ConcurrencyError, AppError) as error:
                # The match moved on while we decided: the next poll looks again.
                _log.info("grace_retry", error=type(error).__name__)
        if result is not None:
            await self.store.notify(result)
        return True

    async def run_due(self, limit: int = 100_000) -> int:
        """Fire deadlines and expired grace periods until none is due; returns how many."""
        count = 0
        while count < limit and await self.fire_one():
            count += 1
        while count < limit and await self.fire_grace_one():
            count += 1
        return count

    def ring(self) -> None:
        """Something may have written a deadline: look now, not at the end of the sleep."""
        self._rung.set()

    async def next_due_in(self) -> float | None:
        """Seconds until the earliest deadline or grace period (negative: overdue), or
        None when there is neither."""
        async with self.engine.connect() as conn:
            seconds = await conn.scalar(_NEXT_DUE)
        return None if seconds is None else float(seconds)

    async def run(self) -> None:
        """Forever: fire what is due, then sleep until the next row is due (at most `poll`
        seconds) or until rung."""
        _log.info("scheduler_started", poll=self.poll)
        while True:
            # Cleared before the round: a ring during it (an append committed meanwhile)
            # ends the next sleep at once, so no deadline written now waits for `poll`.
            self._rung.clear()
            try:
                # Most rings (an append with no deadline due now) cost this one query.
                due_in = await self.next_due_in()
                if due_in is not None and due_in <= 0:
                    await self.run_due(limit=1000)
                    due_in = await self.next_due_in()
                sleep = self.poll if due_in is None else min(self.poll, due_in)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.error("scheduler_failed", **describe_exception(exc))
                sleep = self.poll
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._rung.wait(), max(sleep, _HELD_ELSEWHERE))
