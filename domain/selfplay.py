"""Whole matches between CPU players, through the same `decide`/`apply` as live play.

Used by `ludo simulate`, `ludo bench domain`, the golden-match tests and property tests.
Dice are the fair derivation of docs/design.md#fair-dice from a server seed the caller supplies; a
caller that only needs statistics may pass any `dice` function instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

import msgspec
from mypy_extensions import mypyc_attr

from domain.board import PIECES
from domain.commands import Command, CreateMatch, MovePiece, Rejection, Roll, StartMatch
from domain.cpu import CPU_LEVELS
from domain.decider import MatchState, apply, current_legal_moves, decide, needs_die
from domain.dice import DiceStream, seed_commitment
from domain.events import CpuLevel, Event, SeatSpec
from domain.rules import Ruleset

__all__ = ["MatchRecord", "RejectedCommand", "execute", "play_match"]

# A match that has not ended after this many events is a bug (a real one ends in ~1-3k).
_EVENT_LIMIT: Final = 200_000


# Not a native class when mypyc compiles this module (see docs/benchmarks.md): a msgspec
# Struct or an exception subclass must stay an ordinary Python class.
@mypyc_attr(native_class=False)
class RejectedCommand(RuntimeError):
    """A command a self-play driver issued was refused: an engine bug, never user input."""

    def __init__(self, command: Command, rejection: Rejection) -> None:
        super().__init__(f"{command!r} rejected: {rejection.code}: {rejection.reason}")
        self.rejection = rejection


@mypyc_attr(native_class=False)
class MatchRecord(msgspec.Struct, kw_only=True):
    """What a self-played match produced. `events` is empty when not kept."""

    state: MatchState
    event_count: int
    events: list[Event]


def execute(state: MatchState, command: Command, sink: list[Event] | None = None) -> int:
    """Decide `command`, apply its events to `state` in place, return how many there were."""
    events = decide(command, state)
    if type(events) is Rejection:
        raise RejectedCommand(command, events)
    assert isinstance(events, list)
    for event in events:
        apply(state, event)
    if sink is not None:
        sink.extend(events)
    return len(events)


def play_match(
    ruleset: Ruleset,
    levels: Sequence[CpuLevel],
    *,
    server_seed: bytes,
    client_seeds: Sequence[str] | None = None,
    cpu_seed: str = "",
    first_seat: int = 0,
    keep_events: bool = True,
    dice: Callable[[int], int] | None = None,
) -> MatchRecord:
    """Play one match to its end, seat i played by a CPU of `levels[i]`."""
    seats = tuple(SeatSpec(name=f"cpu-{i}", cpu=level) for i, level in enumerate(levels))
    seeds = tuple(client_seeds) if client_seeds is not None else ("",) * len(seats)
    state = MatchState()
    sink: list[Event] | None = [] if keep_events else None
    count = execute(
        state,
        CreateMatch(
            ruleset=ruleset,
            seats=seats,
            seed_hash=seed_commitment(server_seed),
            first_seat=first_seat,
        ),
        sink,
    )
    count += execute(state, StartMatch(client_seeds=seeds), sink)
    if dice is None:
        dice = DiceStream(server_seed, state.client_seed)  # = die_for_roll(server_seed, …, n)
    seat_seeds = [f"{cpu_seed}:{seat}" for seat in range(len(seats))]
    choosers = [CPU_LEVELS[level] for level in levels]
    # Commands are frozen values: the few a match can issue are built once.
    order = range(len(seats))
    rolls = [[Roll(seat=seat, die=die) for die in (None, 1, 2, 3, 4, 5, 6)] for seat in order]
    picks = [[MovePiece(seat=seat, piece=piece) for piece in range(PIECES)] for seat in order]
    assert state.ruleset is not None
    auto_enter = state.ruleset.empty_course == "auto_enter"  # else every roll needs a die
    while state.status != "finished":
        seat = state.turn
        command: Command
        if state.phase == "roll":
            if auto_enter and not needs_die(state):
                command = rolls[seat][0]
            else:
                command = rolls[seat][dice(state.rolls_made)]
        else:
            moves = current_legal_moves(state)
            # `choose_move`, inlined: a single legal move needs no choice
            move = moves[0] if len(moves) == 1 else choosers[seat](state, moves, seat_seeds[seat])
            command = picks[seat][move.piece]
        # `execute`, inlined: this loop is what `ludo bench domain` measures.
        events = decide(command, state)
        # `not isinstance(…, list)` rather than `is Rejection`: it tells the compiler that
        # `events` is a list below, so iterating it needs no generic iterator.
        if not isinstance(events, list):
            raise RejectedCommand(command, events)
        for event in events:
            apply(state, event)
        count += len(events)
        if sink is not None:
            sink.extend(events)
        if count > _EVENT_LIMIT:
            raise RuntimeError(f"match did not end within {_EVENT_LIMIT} events")
    return MatchRecord(state=state, event_count=count, events=sink or [])
