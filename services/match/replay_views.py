"""What the replay pages show, as data: the viewer's model (`steps_view`) and the
operator's dispute report (`report_view`), built from a stored match walked with
`replays.steps.walk` and, for the report, the `seat_connections` log. Pure: the caller
(services/match/replays_web.py) reads the store and passes everything in.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime

import msgspec

from domain.board import Board
from domain.events import (
    DieRolled,
    Event,
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
from replays.steps import Step, describe
from services.match.schemas import BoardOut, OptionOut
from services.match.views import board_view, option_view
from services.shared.errors import AppError
from services.shared.eventstore import StoredEvent

__all__ = [
    "ConnectionLogEntry",
    "ReportOut",
    "StepsOut",
    "WalkedMatch",
    "report_view",
    "steps_view",
]

# ------------------------------------------------------------------------------ schemas


class SeatOut(msgspec.Struct, kw_only=True):
    seat: int
    name: str
    colour: str
    player_id: str | None
    cpu: str | None


class FairnessOut(msgspec.Struct, kw_only=True):
    """The dice commitment; `server_seed` is null until `SeedRevealed`."""

    seed_hash: str
    client_seed: str | None
    client_seeds: list[str] | None
    server_seed: str | None


class StepOut(msgspec.Struct, kw_only=True):
    """One event as the viewer shows it. `options`: the legal moves at a roll that offered
    a choice (and on the move that took one); `chosen`: the piece that was moved;
    `pieces`: every seat's four progresses after the event. `text` is one English line
    (`replays.steps.describe`); the viewer words the event itself from the fields: `frm`
    (JSON "from"), `to` and `bonus` of a move, `reason` of a pass or a stand-in, `retry`
    of a pass, `next_seat` of a turn's end, `place` of a finish (null elsewhere)."""

    version: int
    type: str
    text: str
    seat: int | None
    by: str
    recorded_at: str | None
    n: int | None
    die: int | None
    options: list[OptionOut] | None
    chosen: int | None
    captures: list[list[int]]
    marks: list[str]
    pieces: list[list[int]]
    frm: int | None = msgspec.field(default=None, name="from")
    to: int | None = None
    bonus: int | None = None
    reason: str | None = None
    retry: bool | None = None
    next_seat: int | None = None
    place: int | None = None


class StepsOut(msgspec.Struct, kw_only=True):
    match_id: str
    status: str
    first_seat: int
    placements: list[int] | None
    board: BoardOut
    seats: list[SeatOut]
    fairness: FairnessOut
    steps: list[StepOut]


class ReportRoll(msgspec.Struct, kw_only=True):
    """One roll of a turn: the die, the legal moves it allowed, what was played and who
    decided (`player`, `timeout`: the CPU after the turn timed out, `stand-in`: the CPU
    standing in for the seat, `cpu`: a CPU seat). `passed`: why the roll had no move.
    An auto-enter (no die) has `die` null and its move in `chosen`."""

    version: int
    at: str | None
    n: int | None
    die: int | None
    rolled_by: str
    actor: str | None
    options: list[OptionOut]
    chosen: OptionOut | None
    chosen_by: str | None
    chosen_actor: str | None
    passed: str | None


class ReportEntry(msgspec.Struct, kw_only=True):
    """One line of the timeline: an event (`kind` "event") or a live connection of a seat
    opening or closing (`connected` / `disconnected`, from `seat_connections`)."""

    at: str | None
    kind: str
    seat: int | None
    version: int | None
    type: str | None
    text: str
    by: str | None
    actor: str | None
    marks: list[str]


class ReportTurn(msgspec.Struct, kw_only=True):
    """One turn: from the moment it became the seat's (the previous turn's end, or the
    start) to its `TurnEnded` (or the end of the match); `ended_at` null while it runs."""

    index: int
    seat: int
    name: str
    player_id: str | None
    cpu: str | None
    started_at: str | None
    ended_at: str | None
    seconds: float | None
    rolls: list[ReportRoll]
    timeouts: int
    stand_ins: list[str]
    reclaims: int
    entries: list[ReportEntry]


class SeatSummary(msgspec.Struct, kw_only=True):
    seat: int
    name: str
    colour: str
    player_id: str | None
    cpu: str | None
    place: int | None
    turns: int
    mean_seconds: float | None
    max_seconds: float | None
    timeouts: int
    stand_ins: int
    reclaims: int
    connects: int
    disconnects: int


class ReportOut(msgspec.Struct, kw_only=True):
    """The dispute timeline: `prologue` (creation, start, connections before the first
    turn), one entry per turn, `epilogue` (the seed reveal, later connections)."""

    match_id: str
    status: str
    placements: list[int] | None
    board: BoardOut
    seats: list[SeatOut]
    started_at: str | None
    ended_at: str | None
    prologue: list[ReportEntry]
    turns: list[ReportTurn]
    epilogue: list[ReportEntry]
    summary: list[SeatSummary]


# ------------------------------------------------------------------------------ helpers


class WalkedMatch(msgspec.Struct, kw_only=True):
    """A stored match, walked: its header events, board, and one Step per event."""

    match_id: str
    stored: list[StoredEvent]
    events: list[Event]
    created: MatchCreated
    started: MatchStarted | None
    board: Board | None
    steps: list[Step]


def _seats(m: WalkedMatch) -> list[SeatOut]:
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


def _moved(event: PieceMoved) -> OptionOut:
    return OptionOut(
        piece=event.piece,
        frm=event.frm,
        to=event.to,
        captures=[list(c) for c in event.captures],
    )


def _marks(step: Step) -> list[str]:
    """Timeline marks: capture, timeout, stand-in, reclaim, finish."""
    event = step.event
    marks: list[str] = []
    if isinstance(event, PieceMoved) and event.captures:
        marks.append("capture")
    if isinstance(event, TurnTimedOut):
        marks.append("timeout")
    if isinstance(event, SeatStoodIn):
        marks.append("stand-in")
    if isinstance(event, SeatReclaimed):
        marks.append("reclaim")
    if isinstance(event, PlayerFinished | MatchFinished):
        marks.append("finish")
    return marks


def _text(m: WalkedMatch, event: Event) -> str:
    return describe(event, m.board, [s.name for s in m.created.seats])


def _placements(m: WalkedMatch) -> list[int] | None:
    finished = next((e for e in reversed(m.events) if isinstance(e, MatchFinished)), None)
    return None if finished is None else list(finished.placements)


def _server_seed(m: WalkedMatch) -> str | None:
    revealed = next((e for e in reversed(m.events) if isinstance(e, SeedRevealed)), None)
    return None if revealed is None else revealed.server_seed


def steps_view(m: WalkedMatch) -> StepsOut:
    """The viewer's model of a walked match."""
    if m.board is None:  # pragma: no cover - see _load
        raise AppError(404, "not_found", "this match has no board to show")
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
    for step in m.steps:
        event = step.event
        options = step.options
        die = n = chosen = frm = to = bonus = next_seat = place = None
        reason: str | None = None
        retry: bool | None = None
        captures: list[list[int]] = []
        if isinstance(event, DieRolled):
            die, n = event.value, event.n
            chosen = chosen_at.get(step.version)
        elif isinstance(event, PieceMoved):
            die, chosen = event.die, event.piece
            captures = [list(c) for c in event.captures]
            frm, to, bonus = event.frm, event.to, event.bonus
        elif isinstance(event, RollPassed):
            reason, retry = event.reason, event.retry
        elif isinstance(event, SeatStoodIn):
            reason = event.reason
        elif isinstance(event, TurnEnded):
            next_seat = event.next_seat
        elif isinstance(event, PlayerFinished):
            place = event.place
        out.append(
            StepOut(
                version=step.version,
                type=type(event).__name__,
                text=_text(m, event),
                seat=step.seat,
                by=step.by,
                recorded_at=step.recorded_at,
                n=n,
                die=die,
                options=None if options is None else [option_view(o) for o in options],
                chosen=chosen,
                captures=captures,
                marks=_marks(step),
                pieces=step.pieces,
                frm=frm,
                to=to,
                bonus=bonus,
                reason=reason,
                retry=retry,
                next_seat=next_seat,
                place=place,
            )
        )
    placements = _placements(m)
    return StepsOut(
        match_id=m.match_id,
        status="finished" if placements is not None else "playing",
        first_seat=m.created.first_seat,
        placements=placements,
        board=board_view(m.board),
        seats=_seats(m),
        fairness=FairnessOut(
            seed_hash=m.created.seed_hash,
            client_seed=m.started.client_seed if m.started else None,
            client_seeds=list(m.started.client_seeds) if m.started else None,
            server_seed=_server_seed(m),
        ),
        steps=out,
    )


class ConnectionLogEntry(msgspec.Struct, frozen=True):
    seat: int
    kind: str
    at: datetime


class _Turn:
    """A turn being collected (see ReportTurn)."""

    def __init__(self, index: int, seat: int, started: datetime) -> None:
        self.index = index
        self.seat = seat
        self.started = started
        self.ended: datetime | None = None
        self.rolls: list[ReportRoll] = []
        self.timeouts = 0
        self.stand_ins: list[str] = []
        self.reclaims = 0
        self.entries: list[tuple[datetime, ReportEntry]] = []


def _iso(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def report_view(m: WalkedMatch, connections: Sequence[ConnectionLogEntry]) -> ReportOut:
    """The dispute timeline of a walked match (see ReportOut)."""
    if m.board is None:  # pragma: no cover - see _load
        raise AppError(404, "not_found", "this match has no board to show")
    names = [s.name for s in m.created.seats]
    when = [e.recorded_at for e in m.stored]
    prologue: list[tuple[datetime, ReportEntry]] = []
    epilogue: list[tuple[datetime, ReportEntry]] = []
    turns: list[_Turn] = []
    current: _Turn | None = None
    next_seat = m.created.first_seat
    turn_began: datetime | None = None
    roll: ReportRoll | None = None
    over = False

    for step in m.steps:
        event = step.event
        at = when[step.version]
        entry = ReportEntry(
            at=_iso(at),
            kind="event",
            seat=step.seat,
            version=step.version,
            type=type(event).__name__,
            text=_text(m, event),
            by=step.by,
            actor=step.actor,
            marks=_marks(step),
        )
        if isinstance(event, MatchCreated | MatchStarted):
            prologue.append((at, entry))
            turn_began = at
            continue
        if over or isinstance(event, SeedRevealed):
            epilogue.append((at, entry))
            continue
        if current is None:
            current = _Turn(len(turns), next_seat, turn_began or at)
            roll = None
        if isinstance(event, DieRolled | PieceMoved | RollPassed | TurnTimedOut):
            current.seat = event.seat  # the seat on turn acts (others only leave/return)
        current.entries.append((at, entry))
        if isinstance(event, DieRolled):
            roll = ReportRoll(
                version=step.version,
                at=_iso(at),
                n=event.n,
                die=event.value,
                rolled_by=step.by,
                actor=step.actor,
                options=[option_view(o) for o in step.options or ()],
                chosen=None,
                chosen_by=None,
                chosen_actor=None,
                passed=None,
            )
            current.rolls.append(roll)
        elif isinstance(event, PieceMoved):
            if event.die is None or roll is None:  # auto-enter: the roll action moved
                current.rolls.append(
                    ReportRoll(
                        version=step.version,
                        at=_iso(at),
                        n=None,
                        die=event.die,
                        rolled_by=step.by,
                        actor=step.actor,
                        options=[],
                        chosen=_moved(event),
                        chosen_by=step.by,
                        chosen_actor=step.actor,
                        passed=None,
                    )
                )
            else:
                roll.chosen = _moved(event)
                roll.chosen_by = step.by
                roll.chosen_actor = step.actor
            roll = None
        elif isinstance(event, RollPassed):
            if roll is not None:
                roll.passed = event.reason
            roll = None
        elif isinstance(event, TurnTimedOut):
            current.timeouts += 1
        elif isinstance(event, SeatStoodIn):
            current.stand_ins.append(event.reason)
        elif isinstance(event, SeatReclaimed):
            current.reclaims += 1
        if isinstance(event, TurnEnded | MatchFinished):
            current.ended = at
            turns.append(current)
            current = None
            turn_began = at
            if isinstance(event, TurnEnded):
                next_seat = event.next_seat
            else:
                over = True
    if current is not None:
        turns.append(current)  # the turn being played

    # Connections go to the turn whose time span holds them (prologue / epilogue outside).
    starts = [t.started for t in turns]
    for c in connections:
        who = _who(m, c.seat, names)
        entry = ReportEntry(
            at=_iso(c.at),
            kind=c.kind,
            seat=c.seat,
            version=None,
            type=None,
            text=f"{who}: live connection {'opened' if c.kind == 'connected' else 'closed'}",
            by=None,
            actor=None,
            marks=[],
        )
        i = bisect_right(starts, c.at) - 1
        last_end = turns[-1].ended if turns else None
        if i < 0:
            prologue.append((c.at, entry))
        elif i == len(turns) - 1 and last_end is not None and c.at > last_end:
            epilogue.append((c.at, entry))
        else:
            turns[i].entries.append((c.at, entry))

    def ordered(entries: list[tuple[datetime, ReportEntry]]) -> list[ReportEntry]:
        """Events in stream order (never re-sorted by time: a transaction's clock is its
        start), each connection placed before the first event recorded after it."""
        events = [e for e in entries if e[1].kind == "event"]
        links = sorted((e for e in entries if e[1].kind != "event"), key=lambda e: e[0])
        out: list[ReportEntry] = []
        i = 0
        for at, entry in events:
            while i < len(links) and links[i][0] < at:
                out.append(links[i][1])
                i += 1
            out.append(entry)
        out.extend(entry for _, entry in links[i:])
        return out

    placements = _placements(m)
    seats = _seats(m)
    summary: list[SeatSummary] = []
    for seat in seats:
        mine = [t for t in turns if t.seat == seat.seat]
        secs = [(t.ended - t.started).total_seconds() for t in mine if t.ended is not None]
        summary.append(
            SeatSummary(
                seat=seat.seat,
                name=seat.name,
                colour=seat.colour,
                player_id=seat.player_id,
                cpu=seat.cpu,
                place=placements[seat.seat] if placements else None,
                turns=len(mine),
                mean_seconds=round(sum(secs) / len(secs), 3) if secs else None,
                max_seconds=round(max(secs), 3) if secs else None,
                timeouts=_count(m.events, TurnTimedOut, seat.seat),
                stand_ins=_count(m.events, SeatStoodIn, seat.seat),
                reclaims=_count(m.events, SeatReclaimed, seat.seat),
                connects=sum(
                    1 for c in connections if (c.seat, c.kind) == (seat.seat, "connected")
                ),
                disconnects=sum(
                    1 for c in connections if (c.seat, c.kind) == (seat.seat, "disconnected")
                ),
            )
        )
    started = next((when[i] for i, e in enumerate(m.events) if isinstance(e, MatchStarted)), None)
    ended = next((when[i] for i, e in enumerate(m.events) if isinstance(e, MatchFinished)), None)
    return ReportOut(
        match_id=m.match_id,
        status="finished" if placements is not None else "playing",
        placements=placements,
        board=board_view(m.board),
        seats=seats,
        started_at=_iso(started),
        ended_at=_iso(ended),
        prologue=ordered(prologue),
        turns=[
            ReportTurn(
                index=t.index,
                seat=t.seat,
                name=names[t.seat] if t.seat < len(names) else "",
                player_id=m.created.seats[t.seat].player_id,
                cpu=m.created.seats[t.seat].cpu,
                started_at=_iso(t.started),
                ended_at=_iso(t.ended),
                seconds=(
                    None if t.ended is None else round((t.ended - t.started).total_seconds(), 3)
                ),
                rolls=t.rolls,
                timeouts=t.timeouts,
                stand_ins=t.stand_ins,
                reclaims=t.reclaims,
                entries=ordered(t.entries),
            )
            for t in turns
        ],
        epilogue=ordered(epilogue),
        summary=summary,
    )


def _count(events: Sequence[Event], kind: type[Event], seat: int) -> int:
    return sum(1 for e in events if isinstance(e, kind) and getattr(e, "seat", None) == seat)


def _who(m: WalkedMatch, seat: int, names: Sequence[str]) -> str:
    colour = m.board.colours[seat] if m.board is not None and seat < m.board.players else "seat"
    name = names[seat] if seat < len(names) else ""
    return f"{colour} ({name})" if name else f"{colour} {seat}"
