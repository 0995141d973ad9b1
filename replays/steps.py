"""A match event by event, as people read it: who acted, what they could have done, and
what they chose. The one walk behind `ludo replay show`, the replay viewer and the dispute
report. Pure: it folds the events it is given and judges nothing (`replays.verify` does).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Literal, assert_never

import msgspec

from domain.board import Board
from domain.decider import Controller, MatchState, apply, current_legal_moves, third_six
from domain.events import (
    DieRolled,
    Event,
    MatchConceded,
    MatchCreated,
    MatchFinished,
    MatchStarted,
    PieceMoved,
    PlayerFinished,
    RollPassed,
    SeatReclaimed,
    SeatStoodIn,
    SeedRevealed,
    TurnEnded,
    TurnTimedOut,
)
from domain.moves import Move

__all__ = ["Chooser", "Step", "Walker", "describe", "walk"]

# Who made the decision an event records. "auto": the rules alone (a forced pass, the
# turn passing, the result); "system": the service (creation, start, the seed reveal).
Chooser = Controller | Literal["auto", "system"]


class Step(msgspec.Struct, kw_only=True):
    """One event with what surrounded it. `options` are the legal moves the roll just
    made allowed (on the DieRolled that offered a choice, and on the PieceMoved that
    took one): () for a roll with no legal move, None where no choice arose (a third
    six, passed at once; any other event). `pieces` is the position after the event."""

    version: int
    event: Event
    seat: int | None
    by: Chooser
    actor: str | None
    recorded_at: str | None
    options: tuple[Move, ...] | None
    pieces: list[list[int]]


class Walker:
    """A walk that goes on: each `step` folds one more event (version = the count of
    events before it) and returns its `Step`. The viewer's cache of a match still being
    played walks its new events only, not the whole match again."""

    def __init__(self) -> None:
        self.state = MatchState()
        self.version = 0
        self._options: tuple[Move, ...] | None = None

    def step(self, event: Event, actor: str | None = None, recorded_at: str | None = None) -> Step:
        state = self.state
        seat: int | None = getattr(event, "seat", None)
        by: Chooser = "auto"
        shown: tuple[Move, ...] | None = None
        # A third six is passed at once: it offers no choice, whatever its die would allow.
        offers = False
        match event:
            case MatchCreated() | MatchStarted() | SeedRevealed():
                by = "system"
            case DieRolled():
                assert state.board is not None
                by = state.controller(event.seat)
                offers = not third_six(state.board, state.sixes, event.value)
            case PieceMoved():
                # A move after a roll chose among the roll's options; one without a die
                # (auto_enter) was made by the roll action itself.
                by = state.controller(event.seat)
                shown = self._options if event.die is not None else None
            case TurnTimedOut():
                by = "timeout"
            case SeatStoodIn():
                by = "player" if event.reason == "left" else "auto"
            case SeatReclaimed() | MatchConceded():
                by = "player"
            case RollPassed() | TurnEnded() | PlayerFinished() | MatchFinished():
                pass  # the rules alone decided these: "auto"
            case _:
                assert_never(event)
        apply(state, event)
        if offers:
            self._options = shown = current_legal_moves(state)
        else:
            self._options = None
        step = Step(
            version=self.version,
            event=event,
            seat=seat,
            by=by,
            actor=actor,
            recorded_at=recorded_at,
            options=shown,
            pieces=[row[:] for row in state.pieces],
        )
        self.version += 1
        return step


def walk(
    events: Sequence[Event],
    *,
    actors: Sequence[str | None] | None = None,
    times: Sequence[str | None] | None = None,
) -> Iterator[Step]:
    """Fold `events`, yielding one `Step` per event (version = index)."""
    walker = Walker()
    for version, event in enumerate(events):
        yield walker.step(
            event,
            actors[version] if actors is not None else None,
            times[version] if times is not None else None,
        )


def describe(event: Event, board: Board | None, seats: Sequence[str]) -> str:
    """One line of plain English for an event (`ludo replay show`, the viewer, reports)."""

    def who(seat: int) -> str:
        colour = board.colours[seat] if board is not None else f"seat {seat}"
        name = seats[seat] if seat < len(seats) else ""
        return f"{colour} ({name})" if name else colour

    def where(progress: int) -> str:
        if board is None:
            return str(progress)
        if progress < 0:
            return "the nest"
        if progress >= board.goal:
            return "the goal"
        if progress > board.last_track:
            return f"home {progress - board.last_track}"
        return f"square {progress}"

    match event:
        case MatchCreated():
            return f"match created: {len(event.seats)} seats, dice committed to {event.seed_hash}"
        case MatchStarted():
            return f"match started; client seed {event.client_seed!r}"
        case DieRolled():
            return f"{who(event.seat)} rolls {event.value} (roll {event.n})"
        case PieceMoved():
            how = "enters" if event.frm < 0 else "moves"
            text = f"{who(event.seat)} {how} piece {event.piece}: "
            text += f"{where(event.frm)} → {where(event.to)}"
            if event.die is None:
                text += " (auto-enter)"
            for s, p in event.captures:
                text += f", captures {who(s)} piece {p}"
            if event.bonus:
                text += f", +{event.bonus} roll{'s' if event.bonus > 1 else ''}"
            return text
        case RollPassed():
            why = "no legal move" if event.reason == "no_legal_move" else "third six in a row"
            return f"{who(event.seat)} passes: {why}" + (" (rolls again)" if event.retry else "")
        case TurnEnded():
            return f"turn passes to {who(event.next_seat)}"
        case PlayerFinished():
            return f"{who(event.seat)} finishes in place {event.place}"
        case MatchConceded():
            return f"{who(event.seat)} concedes: the match ends, {who(event.seat)} last"
        case MatchFinished():
            ranking = ", ".join(
                f"{who(s)} {p}" for s, p in sorted(enumerate(event.placements), key=lambda x: x[1])
            )
            return f"match over: {ranking}"
        case TurnTimedOut():
            return f"{who(event.seat)} timed out ({event.consecutive} in a row); the CPU plays"
        case SeatStoodIn():
            return f"a CPU stands in for {who(event.seat)} ({event.reason})"
        case SeatReclaimed():
            return f"{who(event.seat)} is back"
        case SeedRevealed():
            return f"server seed revealed: {event.server_seed}"
        case _:
            assert_never(event)
