"""Long matches, made in a few milliseconds and stored as the match service stores its own:
what `ludo bench site` loads to compare how a page draws a match of 20 events and one of
2,000, and what the page tests load to see a long match's history come on demand.

A match played by the service itself takes a command (a CPU's decision, an append) per
event: 2,000 of them are tens of seconds. Here the same commands are decided by
`domain.decider` (the dice are the seeded derivation, the moves an easy CPU's), and the
events are appended to the event store with the server seed kept in `match_seeds`: the
match then reads, replays, verifies and can be played on (its human seats by their
guests' tokens) like any other. It has no `matches` row, as an imported match: no party,
no turn timer, never rated.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.commands import Command, CreateMatch, MovePiece, RevealSeed, Roll, StartMatch
from domain.cpu import choose_move
from domain.decider import MatchState, current_legal_moves, needs_die
from domain.dice import die_for_roll, seed_commitment
from domain.events import Event, SeatSpec
from domain.rules import PRESETS, Ruleset
from domain.selfplay import execute
from domain.streams import match_stream
from services.shared import match_rows
from services.shared.eventstore import EventStore

__all__ = ["LONG_RULES", "cpu_seats", "long_match", "store_match"]

# Long matches: the standard rules played to the end (every place decided), with no safe
# square and no block, so pieces are sent home again and again. Four easy CPUs play
# 1,200-2,000 events under them, against ~950 under the standard rules.
LONG_RULES: Final = msgspec.structs.replace(
    PRESETS["standard"], play_to_end=True, safe_squares="none", blocks="none"
)

# Events appended in one statement at most (the store's batches are of this order).
_APPEND_RUN: Final = 200


def cpu_seats(count: int = 4) -> tuple[SeatSpec, ...]:
    return tuple(SeatSpec(name=f"cpu-{i}", cpu="easy") for i in range(count))


def long_match(
    at_least: int,
    *,
    seats: Sequence[SeatSpec] | None = None,
    finished: bool = False,
    left: int = 200,
    ruleset: Ruleset = LONG_RULES,
) -> tuple[list[Event], bytes]:
    """The events of a match and its server seed: the first of the seeds tried whose match
    plays long enough (ValueError if none does). `finished`: the whole match, of
    `at_least` events or more, its seed revealed. Otherwise a match in play: its events
    up to the first command's end at or after `at_least` events, with at least `left`
    more to come (so that it can be played on)."""
    chosen = tuple(seats) if seats is not None else cpu_seats()
    for attempt in range(200):
        seed = hashlib.sha256(f"long-match:{attempt}".encode()).digest()
        events, ends = _play(ruleset, chosen, seed)
        if finished and len(events) >= at_least:
            return events, seed
        if not finished and len(events) >= at_least + left:
            cut = next(end for end in ends if end >= at_least)
            return events[:cut], seed
    raise ValueError(f"no match of {at_least} events or more among the seeds tried")


def _play(
    ruleset: Ruleset, seats: tuple[SeatSpec, ...], seed: bytes
) -> tuple[list[Event], list[int]]:
    """A whole match, its seed revealed, and the count of events after each command."""
    state = MatchState()
    events: list[Event] = []
    ends: list[int] = []

    def run(command: Command) -> None:
        execute(state, command, events)
        ends.append(len(events))

    run(CreateMatch(ruleset=ruleset, seats=seats, seed_hash=seed_commitment(seed)))
    run(StartMatch(client_seeds=tuple(f"seat-{i}" for i in range(len(seats)))))
    while state.status != "finished":
        seat = state.turn
        if state.phase == "roll":
            die = (
                die_for_roll(seed, state.client_seed, state.rolls_made)
                if needs_die(state)
                else None
            )
            run(Roll(seat=seat, die=die))
        else:
            move = choose_move("easy", state, current_legal_moves(state), f"seat-{seat}")
            run(MovePiece(seat=seat, piece=move.piece))
    run(RevealSeed(server_seed=seed.hex()))
    return events, ends


async def store_match(
    engine: AsyncEngine, match_id: str, events: Sequence[Event], seed: bytes
) -> None:
    """Append `events` as the stream of match `match_id` and keep its seed, in one
    transaction."""
    store = EventStore(engine)
    stream = match_stream(match_id)
    async with engine.begin() as conn:
        for start in range(0, len(events), _APPEND_RUN):
            await store.append(
                stream,
                start,
                list(events[start : start + _APPEND_RUN]),
                metadata={"actor": "long-match"},
                conn=conn,
            )
        await match_rows.insert_seed(conn, stream, seed)
