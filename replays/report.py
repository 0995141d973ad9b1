"""The operator's dispute report of a match (`report_view`), as data: turn by turn, each
roll with its legal moves, what was played and who chose it, timeouts and stand-ins, the
seats' live connections merged in, and a per-seat summary. Pure: built from a walked
match (`replays.viewer.walk_match`) and the log of live connections, both read by the
match service (`GET /api/matches/{id}/report`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime
from typing import assert_never

import msgspec

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
from replays.board_view import BoardOut, OptionOut, board_view, option_view
from replays.viewer import (
    NO_FACTS,
    CommitmentOut,
    EventFacts,
    SeatOut,
    StampLogEntry,
    WalkedMatch,
    commitment_of,
    event_facts,
    event_text,
    marks_of,
    placements_of,
    seats_of,
)

__all__ = [
    "ConnectionLogEntry",
    "ReportEntry",
    "ReportOut",
    "ReportRoll",
    "ReportTurn",
    "SeatSummary",
    "StampLogEntry",
    "report_view",
]


class ConnectionLogEntry(msgspec.Struct, frozen=True):
    """A seat's live connection opening (`connected`) or closing (`disconnected`)."""

    seat: int
    kind: str
    at: datetime


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


class ReportEntry(EventFacts, kw_only=True):
    """One line of the timeline: an event (`kind` "event", with its facts, which the page
    words it from as the replay viewer does), a live connection of a seat opening or
    closing (`connected` / `disconnected`, from `seat_connections`), or a quick-chat stamp
    a seat sent (`stamp`, its id in `type`); the facts are null on these."""

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
    turn), one entry per turn, `epilogue` (the seed reveal, later connections). As in the
    replay viewer's model: `first_seat` and the dice commitment `fairness`."""

    match_id: str
    status: str
    first_seat: int
    fairness: CommitmentOut
    placements: list[int] | None
    board: BoardOut
    seats: list[SeatOut]
    started_at: str | None
    ended_at: str | None
    prologue: list[ReportEntry]
    turns: list[ReportTurn]
    epilogue: list[ReportEntry]
    summary: list[SeatSummary]


def _moved(event: PieceMoved) -> OptionOut:
    return OptionOut(
        piece=event.piece,
        frm=event.frm,
        to=event.to,
        captures=[list(c) for c in event.captures],
    )


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


def report_view(
    m: WalkedMatch,
    connections: Sequence[ConnectionLogEntry],
    stamps: Sequence[StampLogEntry] = (),
) -> ReportOut:
    """The dispute timeline of a walked match (see ReportOut)."""
    if m.board is None:  # pragma: no cover - a stored match had a valid ruleset
        raise NotFound("this match has no board to show")
    names = [s.name for s in m.created.seats]
    when = m.recorded_at
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
            text=event_text(m, event),
            by=step.by,
            actor=step.actor,
            marks=marks_of(step),
            **msgspec.structs.asdict(event_facts(event)),
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
        current.entries.append((at, entry))
        # The seat on turn acts (others only leave/return): it sets the turn's seat.
        match event:
            case DieRolled():
                current.seat = event.seat
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
            case PieceMoved():
                current.seat = event.seat
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
            case RollPassed():
                current.seat = event.seat
                if roll is not None:
                    roll.passed = event.reason
                roll = None
            case TurnTimedOut():
                current.seat = event.seat
                current.timeouts += 1
            case SeatStoodIn():
                current.stand_ins.append(event.reason)
            case SeatReclaimed():
                current.reclaims += 1
            case TurnEnded() | MatchFinished():
                current.ended = at
                turns.append(current)
                current = None
                turn_began = at
                if isinstance(event, TurnEnded):
                    next_seat = event.next_seat
                else:
                    over = True
            case PlayerFinished() | MatchConceded():
                pass  # an entry of the turn, nothing more
            case MatchCreated() | MatchStarted() | SeedRevealed():
                pass  # in the prologue or the epilogue, placed above
            case _:
                assert_never(event)
    if current is not None:
        turns.append(current)  # the turn being played

    # Connections and stamps go to the turn whose time span holds them (prologue /
    # epilogue outside).
    starts = [t.started for t in turns]
    beside: list[tuple[datetime, ReportEntry]] = []
    for c in connections:
        who = _who(m, c.seat, names)
        text = f"{who}: live connection {'opened' if c.kind == 'connected' else 'closed'}"
        beside.append((c.at, _beside(c.at, c.kind, c.seat, None, text)))
    for s in stamps:
        text = f"{_who(m, s.seat, names)}: stamp {s.stamp}"
        beside.append((s.at, _beside(s.at, "stamp", s.seat, s.stamp, text)))
    for at, entry in beside:
        i = bisect_right(starts, at) - 1
        last_end = turns[-1].ended if turns else None
        if i < 0:
            prologue.append((at, entry))
        elif i == len(turns) - 1 and last_end is not None and at > last_end:
            epilogue.append((at, entry))
        else:
            turns[i].entries.append((at, entry))

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

    placements = placements_of(m)
    seats = seats_of(m)
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
        first_seat=m.created.first_seat,
        fairness=commitment_of(m),
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


def _beside(at: datetime, kind: str, seat: int, type_: str | None, text: str) -> ReportEntry:
    """A line of the timeline that is not one of the match's events."""
    return ReportEntry(
        at=_iso(at),
        kind=kind,
        seat=seat,
        version=None,
        type=type_,
        text=text,
        by=None,
        actor=None,
        marks=[],
        **msgspec.structs.asdict(NO_FACTS),
    )


def _count(events: Sequence[Event], kind: type[Event], seat: int) -> int:
    return sum(1 for e in events if isinstance(e, kind) and getattr(e, "seat", None) == seat)


def _who(m: WalkedMatch, seat: int, names: Sequence[str]) -> str:
    colour = m.board.colours[seat] if m.board is not None and seat < m.board.players else "seat"
    name = names[seat] if seat < len(names) else ""
    return f"{colour} ({name})" if name else f"{colour} {seat}"
