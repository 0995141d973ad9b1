"""The replay viewer's model of a match (`steps_view`), as data: one step per event with
the legal alternatives at each roll, the board's geometry, the seats and the dice
commitment. Pure: built from the match's events (with who sent each and when it was
recorded) walked by `replays.steps.walk`; the match service reads the store and serves it
(`GET /api/matches/{id}/steps`), the dispute report (`replays.report`) builds on the same
walk.

The steps of a range only (`start`, `limit`) come with what the viewer draws of the whole
match at once, which does not grow with every event: the timeline's marks and the
quick-chat stamps, each placed after the step it follows. The viewer asks for the range it
shows, so its first drawing does not wait for a long match's every step.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime
from typing import assert_never

import msgspec

from domain.board import Board, board_for
from domain.errors import NotFound
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
from domain.rules import RulesetError, parse_ruleset
from replays.board_view import BoardOut, OptionOut, board_view, option_view
from replays.steps import Step, Walker, describe

__all__ = [
    "NO_FACTS",
    "CommitmentOut",
    "EventFacts",
    "MarkOut",
    "SeatOut",
    "StampAtOut",
    "StampLogEntry",
    "StepOut",
    "StepsOut",
    "WalkedMatch",
    "commitment_of",
    "event_facts",
    "event_text",
    "marks_of",
    "placements_of",
    "seats_of",
    "steps_view",
    "walk_match",
    "walk_more",
]


class WalkedMatch(msgspec.Struct, kw_only=True):
    """A match walked: its header events, board (None if its ruleset no longer parses),
    one Step per event, and when each event was recorded."""

    match_id: str
    events: list[Event]
    recorded_at: list[datetime]
    created: MatchCreated
    started: MatchStarted | None
    board: Board | None
    steps: list[Step]


def walk_match(
    match_id: str,
    events: Sequence[Event],
    *,
    actors: Sequence[str | None],
    recorded_at: Sequence[datetime],
    walker: Walker | None = None,
) -> WalkedMatch:
    """Walk a match's events (`actors[i]`, `recorded_at[i]`: who sent event i and when it
    was stored), with `walker` when given (kept by the caller to `walk_more` later).
    NotFound when they are not a match: none, or no `MatchCreated` first."""
    created = events[0] if events else None
    if not isinstance(created, MatchCreated):
        raise NotFound("no such match")
    try:
        board: Board | None = board_for(parse_ruleset(created.ruleset), len(created.seats))
    except RulesetError:  # pragma: no cover - a stored match had a valid ruleset
        board = None
    walked = WalkedMatch(
        match_id=match_id,
        events=[],
        recorded_at=[],
        created=created,
        started=None,
        board=board,
        steps=[],
    )
    walk_more(walked, walker or Walker(), events, actors=actors, recorded_at=recorded_at)
    return walked


def walk_more(
    m: WalkedMatch,
    walker: Walker,
    events: Sequence[Event],
    *,
    actors: Sequence[str | None],
    recorded_at: Sequence[datetime],
) -> None:
    """Walk `m` on over `events`, the ones after its last step, with the `walker` that
    walked it so far."""
    for event, actor, at in zip(events, actors, recorded_at, strict=True):
        if m.started is None and isinstance(event, MatchStarted):
            m.started = event
        m.events.append(event)
        m.recorded_at.append(at)
        m.steps.append(walker.step(event, actor, at.isoformat()))


class SeatOut(msgspec.Struct, kw_only=True):
    seat: int
    name: str
    colour: str
    player_id: str | None
    cpu: str | None


class CommitmentOut(msgspec.Struct, kw_only=True):
    """The dice commitment; `server_seed` is null until `SeedRevealed`."""

    seed_hash: str
    client_seed: str | None
    client_seeds: list[str] | None
    server_seed: str | None


class EventFacts(msgspec.Struct, kw_only=True):
    """An event's own facts, which the pages word it from (site.js `eventWords`), each
    null (`captures` empty) on the events that have none: `die` of a roll or a move (null
    on an auto-enter), `chosen` the piece a move moved, `captures` its `[seat, piece]`,
    `frm` (JSON "from"), `to` and `bonus` of a move, `reason` of a pass or a stand-in,
    `retry` of a pass, `next_seat` of a turn's end, `place` of a finish."""

    die: int | None
    chosen: int | None
    captures: list[list[int]]
    frm: int | None = msgspec.field(name="from")
    to: int | None
    bonus: int | None
    reason: str | None
    retry: bool | None
    next_seat: int | None
    place: int | None


NO_FACTS = EventFacts(
    die=None,
    chosen=None,
    captures=[],
    frm=None,
    to=None,
    bonus=None,
    reason=None,
    retry=None,
    next_seat=None,
    place=None,
)


def event_facts(event: Event) -> EventFacts:
    """The facts of `event` (see EventFacts)."""
    match event:
        case DieRolled():
            return msgspec.structs.replace(NO_FACTS, die=event.value)
        case PieceMoved():
            return msgspec.structs.replace(
                NO_FACTS,
                die=event.die,
                chosen=event.piece,
                captures=[list(c) for c in event.captures],
                frm=event.frm,
                to=event.to,
                bonus=event.bonus,
            )
        case RollPassed():
            return msgspec.structs.replace(NO_FACTS, reason=event.reason, retry=event.retry)
        case SeatStoodIn():
            return msgspec.structs.replace(NO_FACTS, reason=event.reason)
        case TurnEnded():
            return msgspec.structs.replace(NO_FACTS, next_seat=event.next_seat)
        case PlayerFinished():
            return msgspec.structs.replace(NO_FACTS, place=event.place)
        case (
            MatchCreated()
            | MatchStarted()
            | MatchConceded()
            | MatchFinished()
            | TurnTimedOut()
            | SeatReclaimed()
            | SeedRevealed()
        ):
            return NO_FACTS  # their facts are in the step's seat and text
        case _:
            assert_never(event)


class StepOut(EventFacts, kw_only=True):
    """One event as the viewer shows it: its facts (EventFacts; at a roll `chosen` is the
    piece its choice moved) and `options`: the legal moves at a roll that offered a choice
    (and on the move that took one); `pieces`: every seat's four progresses after the
    event. `text` is one English line (`replays.steps.describe`); the viewer words the
    event itself from its facts."""

    version: int
    type: str
    text: str
    seat: int | None
    by: str
    recorded_at: str | None
    n: int | None
    options: list[OptionOut] | None
    marks: list[str]
    pieces: list[list[int]]


class StampLogEntry(msgspec.Struct, frozen=True):
    """A quick-chat stamp sent from a seat (`stamp`: its id), from the match's stamps
    stream, beside the match's own and outside its hash chain (`domain.stamps`): what the
    viewer and the dispute report place among the events."""

    seat: int
    stamp: str
    at: datetime


class MarkOut(msgspec.Struct, kw_only=True):
    """A mark of the timeline: the step's version and what it marks (`marks_of`)."""

    version: int
    mark: str


class StampAtOut(msgspec.Struct, kw_only=True):
    """A quick-chat stamp (`version` in the match's stamps stream) placed after `step`,
    the last event recorded at or before it (0 when none was)."""

    version: int
    seat: int
    stamp: str
    step: int
    recorded_at: str


class StepsOut(msgspec.Struct, kw_only=True):
    """The viewer's model: the match (`count` steps in all, one per event) and the steps
    from version `start` on (all of them, or the range asked for)."""

    match_id: str
    status: str
    first_seat: int
    placements: list[int] | None
    board: BoardOut
    seats: list[SeatOut]
    fairness: CommitmentOut
    count: int
    start: int
    marks: list[MarkOut]
    stamps: list[StampAtOut]
    steps: list[StepOut]


def seats_of(m: WalkedMatch) -> list[SeatOut]:
    colours = m.board.colours if m.board is not None else ()
    return [
        SeatOut(
            seat=i,
            name=s.name,
            colour=colours[i] if i < len(colours) else f"seat {i}",
            player_id=s.player_id,
            cpu=s.cpu,
        )
        for i, s in enumerate(m.created.seats)
    ]


def marks_of(step: Step) -> list[str]:
    """Timeline marks: capture, timeout, stand-in, reclaim, concede, finish."""
    event = step.event
    match event:
        case PieceMoved(captures=captures) if captures:
            return ["capture"]
        case TurnTimedOut():
            return ["timeout"]
        case SeatStoodIn():
            return ["stand-in"]
        case SeatReclaimed():
            return ["reclaim"]
        case MatchConceded():
            return ["concede"]
        case PlayerFinished() | MatchFinished():
            return ["finish"]
        case (
            MatchCreated()
            | MatchStarted()
            | DieRolled()
            | PieceMoved()
            | RollPassed()
            | TurnEnded()
            | SeedRevealed()
        ):
            return []
        case _:
            assert_never(event)


def event_text(m: WalkedMatch, event: Event) -> str:
    return describe(event, m.board, [s.name for s in m.created.seats])


def placements_of(m: WalkedMatch) -> list[int] | None:
    finished = next((e for e in reversed(m.events) if isinstance(e, MatchFinished)), None)
    return None if finished is None else list(finished.placements)


def commitment_of(m: WalkedMatch) -> CommitmentOut:
    """The match's dice commitment, its seats' seeds once started, its seed once revealed."""
    revealed = next((e for e in reversed(m.events) if isinstance(e, SeedRevealed)), None)
    return CommitmentOut(
        seed_hash=m.created.seed_hash,
        client_seed=m.started.client_seed if m.started else None,
        client_seeds=list(m.started.client_seeds) if m.started else None,
        server_seed=None if revealed is None else revealed.server_seed,
    )


def stamps_at(m: WalkedMatch, stamps: Sequence[StampLogEntry]) -> list[StampAtOut]:
    """The stamps (the whole stamps stream, in order: its versions are the indexes), each
    with the step it follows."""
    return [
        StampAtOut(
            version=version,
            seat=s.seat,
            stamp=s.stamp,
            step=max(0, bisect_right(m.recorded_at, s.at) - 1),
            recorded_at=s.at.isoformat(),
        )
        for version, s in enumerate(stamps)
    ]


def steps_view(
    m: WalkedMatch,
    *,
    start: int = 0,
    limit: int | None = None,
    stamps: Sequence[StampLogEntry] = (),
) -> StepsOut:
    """The viewer's model of a walked match: its steps from `start`, `limit` of them at
    most (None: to the end), with the marks of all and its `stamps` placed."""
    if m.board is None:  # pragma: no cover - a stored match had a valid ruleset
        raise NotFound("this match has no board to show")
    end = len(m.steps) if limit is None else min(len(m.steps), start + limit)
    # The piece each roll's choice went to: the move that took the roll's options.
    chosen_at: dict[int, int] = {}
    last_roll: int | None = None
    for step in m.steps:
        if isinstance(step.event, DieRolled):
            last_roll = step.version
        elif isinstance(step.event, PieceMoved) and step.event.die is not None:
            if last_roll is not None:
                chosen_at[last_roll] = step.event.piece
            last_roll = None
    out: list[StepOut] = []
    for step in m.steps[start:end]:
        event = step.event
        options = step.options
        facts = event_facts(event)
        if isinstance(event, DieRolled):
            facts = msgspec.structs.replace(facts, chosen=chosen_at.get(step.version))
        out.append(
            StepOut(
                version=step.version,
                type=type(event).__name__,
                text=event_text(m, event),
                seat=step.seat,
                by=step.by,
                recorded_at=step.recorded_at,
                n=event.n if isinstance(event, DieRolled) else None,
                options=None if options is None else [option_view(o) for o in options],
                marks=marks_of(step),
                pieces=step.pieces,
                **msgspec.structs.asdict(facts),
            )
        )
    placements = placements_of(m)
    return StepsOut(
        match_id=m.match_id,
        status="finished" if placements is not None else "playing",
        first_seat=m.created.first_seat,
        placements=placements,
        board=board_view(m.board),
        seats=seats_of(m),
        fairness=commitment_of(m),
        count=len(m.steps),
        start=start,
        marks=[
            MarkOut(version=step.version, mark=mark) for step in m.steps for mark in marks_of(step)
        ],
        stamps=stamps_at(m, stamps),
        steps=out,
    )
