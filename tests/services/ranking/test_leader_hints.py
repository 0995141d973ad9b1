"""Which hints wake a leader's step: the ranking service's consumers act on match ends
only, so the hints of rolls and moves (several a second per match) are heard without a
batch transaction for each (services/ranking/leadership.py, `ACTS_ON`)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from typing import ClassVar

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.events import DieRolled, MatchFinished, PieceMoved, TurnEnded
from services.ranking.leadership import LeasedFollower
from services.shared.eventstore import EventStore, Notification
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


class Counting(LeasedFollower):
    """A leader whose step only counts, and which keeps every hint it hears."""

    label: ClassVar[str] = "counting"
    EVENTS: ClassVar[dict[str, str]] = {
        name: f"counting_{name}"
        for name in ("active", "standing_by", "error", "batch_ended", "batch_not_ended")
    }

    def __init__(self, engine: AsyncEngine, store: EventStore) -> None:
        # A poll far longer than the test: only hints make it step.
        super().__init__(
            engine, store, name="counting", lock_key=0x1EAD, batch_lock=0x1EAE, poll=600.0
        )
        self.steps = 0
        self.hints: list[Notification] = []

    async def step(self) -> int:
        self.steps += 1
        return 0

    def heard(self, notes: list[Notification]) -> None:
        self.hints += notes


async def test_hints_of_moves_are_heard_without_a_step_and_a_match_end_steps(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Five appends of turns are heard and step nothing; the match end after them steps
    once."""
    leader = Counting(engine, pg_store)
    task = asyncio.create_task(leader.run())
    try:
        await wait_until(lambda: leader.active and leader.steps == 1, 30, what="the first step")
        stream = f"match-{uuid.UUID(int=7)}"
        for n in range(5):
            await pg_store.append(
                stream,
                3 * n,
                [
                    DieRolled(seat=0, n=n, value=3),
                    PieceMoved(seat=0, piece=0, frm=4, to=7, die=3),
                    TurnEnded(seat=0, next_seat=1),
                ],
            )
        await wait_until(lambda: len(leader.hints) == 5, 30, what="the turns' hints")
        assert leader.steps == 1
        await pg_store.append(stream, 15, [MatchFinished(placements=(1, 2))])
        await wait_until(lambda: leader.steps == 2, 30, what="a step for the match end")
        assert [note.version for note in leader.hints] == [2, 5, 8, 11, 14, 15]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
