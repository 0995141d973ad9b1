"""Replays on the web: the replay file, the audit, the viewer's model and the operator's
dispute report (`/api/matches/{id}/replay|audit|steps|report`), and the two pages that
show them: the public replay viewer `/replay/{id}` and the operator's dispute report
`/report/{id}`.

Everything here reads the event store through `replays.store` and `replays.steps.walk`
(the same walk as `ludo replay show`); nothing is written. The report also reads
`seat_connections` (migration 0005), the log of live connections the match service keeps.

The pages are self-contained HTML files next to this module (`replay_viewer.html`,
`dispute_report.html`): inline script and style only, no external request. They are
served under a Content-Security-Policy that allows exactly their inline blocks (by
SHA-256 hash) and `connect-src 'self'`.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from bisect import bisect_right
from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from typing import Any

import msgspec
import sqlalchemy as sa
import structlog
from litestar import Controller, MediaType, Response, get
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.params import FromPath

from domain.board import PIECES, Board, board_for
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
from domain.moves import Move
from domain.rules import RulesetError, parse_ruleset
from replays.format import dump_replay
from replays.steps import Step, describe, walk
from replays.store import ReplayNotFound, audit_match, export_match
from replays.verify import Verdict
from services.match.errors import AppError, error_responses
from services.match.players import Service
from services.match.service import MatchService, check_id, match_stream
from services.shared.eventstore import StoredEvent
from services.shared.operator import is_operator

__all__ = [
    "OPERATOR",
    "ReplaysController",
    "dispute_report_page",
    "replay_viewer_page",
]

OPERATOR: list[dict[str, list[str]]] = [{"operator": []}]

# ------------------------------------------------------------------------------ schemas


class BoardOut(msgspec.Struct, kw_only=True):
    """The geometry the viewer needs to place a piece of seat s at progress p:
    p < 0 nest; 0 <= p <= last_track track square (starts[s] + p) % length;
    home <= p < goal home column square p - home (0-4); p >= goal the goal."""

    kind: str
    players: int
    arms: int
    length: int
    colours: list[str]
    colour_index: list[int]
    starts: list[int]
    safe: list[int]
    last_track: int
    home: int
    goal: int
    pieces: int


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


class OptionOut(msgspec.Struct, kw_only=True):
    """A legal move: piece, progress before and after, captured (seat, piece) pairs."""

    piece: int
    frm: int = msgspec.field(name="from")
    to: int
    captures: list[list[int]]


class StepOut(msgspec.Struct, kw_only=True):
    """One event as the viewer shows it. `options`: the legal moves at a roll that offered
    a choice (and on the move that took one); `chosen`: the piece that was moved;
    `pieces`: every seat's four progresses after the event."""

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


class _Match(msgspec.Struct, kw_only=True):
    """A stored match, walked: its header events, board, and one Step per event."""

    match_id: str
    stored: list[StoredEvent]
    events: list[Event]
    created: MatchCreated
    started: MatchStarted | None
    board: Board | None
    steps: list[Step]


async def _load(service: MatchService, match_id: str) -> _Match:
    """The walked match, or 404 for a malformed or unknown id."""
    match_id = check_id(match_id, "match")
    structlog.contextvars.bind_contextvars(match_id=match_id)
    stored = await service.store.read_stream(match_stream(match_id))
    if not stored:
        raise AppError(404, "not_found", "no such match")
    events = [e.event for e in stored]
    created = events[0]
    if not isinstance(created, MatchCreated):  # pragma: no cover - the decider's invariant
        raise AppError(404, "not_found", "no such match")
    started = next((e for e in events if isinstance(e, MatchStarted)), None)
    try:
        board: Board | None = board_for(parse_ruleset(created.ruleset), len(created.seats))
    except RulesetError:  # pragma: no cover - a stored match had a valid ruleset
        board = None
    actors = [_actor(e) for e in stored]
    times = [e.recorded_at.isoformat() for e in stored]
    steps = list(walk(events, actors=actors, times=times))
    return _Match(
        match_id=match_id,
        stored=stored,
        events=events,
        created=created,
        started=started,
        board=board,
        steps=steps,
    )


def _actor(stored: StoredEvent) -> str | None:
    actor = stored.metadata.get("actor") if isinstance(stored.metadata, dict) else None
    return actor if isinstance(actor, str) else None


def _board_out(board: Board) -> BoardOut:
    return BoardOut(
        kind=board.ruleset.board,
        players=board.players,
        arms=board.length // 13,
        length=board.length,
        colours=list(board.colours),
        colour_index=list(board.colour_index),
        starts=list(board.starts),
        safe=sorted(board.safe),
        last_track=board.last_track,
        home=board.home,
        goal=board.goal,
        pieces=PIECES,
    )


def _seats(m: _Match) -> list[SeatOut]:
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


def _option(move: Move) -> OptionOut:
    return OptionOut(
        piece=move.piece, frm=move.frm, to=move.to, captures=[list(c) for c in move.captures]
    )


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


def _text(m: _Match, event: Event) -> str:
    return describe(event, m.board, [s.name for s in m.created.seats])


def _placements(m: _Match) -> list[int] | None:
    finished = next((e for e in reversed(m.events) if isinstance(e, MatchFinished)), None)
    return None if finished is None else list(finished.placements)


def _server_seed(m: _Match) -> str | None:
    revealed = next((e for e in reversed(m.events) if isinstance(e, SeedRevealed)), None)
    return None if revealed is None else revealed.server_seed


def steps_view(m: _Match) -> StepsOut:
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
        die = n = chosen = None
        captures: list[list[int]] = []
        if isinstance(event, DieRolled):
            die, n = event.value, event.n
            chosen = chosen_at.get(step.version)
        elif isinstance(event, PieceMoved):
            die, chosen = event.die, event.piece
            captures = [list(c) for c in event.captures]
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
                options=None if options is None else [_option(o) for o in options],
                chosen=chosen,
                captures=captures,
                marks=_marks(step),
                pieces=step.pieces,
            )
        )
    placements = _placements(m)
    return StepsOut(
        match_id=m.match_id,
        status="finished" if placements is not None else "playing",
        first_seat=m.created.first_seat,
        placements=placements,
        board=_board_out(m.board),
        seats=_seats(m),
        fairness=FairnessOut(
            seed_hash=m.created.seed_hash,
            client_seed=m.started.client_seed if m.started else None,
            client_seeds=list(m.started.client_seeds) if m.started else None,
            server_seed=_server_seed(m),
        ),
        steps=out,
    )


class _Connection(msgspec.Struct, frozen=True):
    seat: int
    kind: str
    at: datetime


async def _connections(service: MatchService, stream: str) -> list[_Connection]:
    async with service.engine.connect() as conn:
        rows = await conn.execute(
            sa.text(
                "SELECT seat, kind, at FROM seat_connections WHERE stream_id = :s ORDER BY at, id"
            ),
            {"s": stream},
        )
        return [_Connection(r.seat, r.kind, r.at) for r in rows]


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


def report_view(m: _Match, connections: Sequence[_Connection]) -> ReportOut:
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
                options=[_option(o) for o in step.options or ()],
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
        board=_board_out(m.board),
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


def _who(m: _Match, seat: int, names: Sequence[str]) -> str:
    colour = m.board.colours[seat] if m.board is not None and seat < m.board.players else "seat"
    name = names[seat] if seat < len(names) else ""
    return f"{colour} ({name})" if name else f"{colour} {seat}"


# ------------------------------------------------------------------------ operator token


def _operator_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """The dispute report is the operator's: `Authorization: Bearer $LUDO_OPERATOR_TOKEN`,
    checked exactly as the ranking API does (401 without it; refused when it is unset)."""
    service: MatchService = connection.app.state.service
    authorization = connection.headers.get("authorization", "")
    if not is_operator(authorization, service.settings.operator_token):
        raise AppError(401, "unauthorized", "send Authorization: Bearer <operator token>")


# ---------------------------------------------------------------------------- endpoints


class ReplaysController(Controller):
    path = "/api/matches"
    tags = ("replays",)

    @get(
        "/{match_id:str}/replay",
        operation_id="exportReplay",
        summary="The match's replay file (verifiable offline with `ludo replay verify`)",
        description="The `ludo-replay` JSON file of the match (format in replays/format.py): "
        "ruleset, seats, dice commitment, the revealed seed (null before the end) and every "
        "event with its exact bytes and hash. Sent as an attachment "
        "`match-<id>.ludo-replay.json`.",
        media_type=MediaType.JSON,
        response_description="the replay file",
        responses=error_responses(404),
    )
    async def replay(self, match_id: FromPath[str], service: Service) -> Response[bytes]:
        match_id = check_id(match_id, "match")
        structlog.contextvars.bind_contextvars(match_id=match_id)
        try:
            replay = await export_match(service.store, match_id)
        except ReplayNotFound:
            raise AppError(404, "not_found", "no such match") from None
        return Response(
            dump_replay(replay),
            media_type=MediaType.JSON,
            headers={
                "Content-Disposition": f'attachment; filename="match-{match_id}.ludo-replay.json"'
            },
        )

    @get(
        "/{match_id:str}/audit",
        operation_id="auditMatch",
        summary="Verify the match as stored: hash chain, seed, every die, every move, result",
        description="`ok` only when every check holds; otherwise `failure` names the check, "
        "the event (stream version and type) and why. A match still being played is "
        "audited up to its last event (its dice against the seed the server keeps).",
        responses=error_responses(404),
    )
    async def audit(self, match_id: FromPath[str], service: Service) -> Verdict:
        match_id = check_id(match_id, "match")
        structlog.contextvars.bind_contextvars(match_id=match_id)
        try:
            return await audit_match(service.store, match_id)
        except ReplayNotFound:
            raise AppError(404, "not_found", "no such match") from None

    @get(
        "/{match_id:str}/steps",
        operation_id="getReplaySteps",
        summary="The replay viewer's model: board geometry, seats, fairness, every event",
        responses=error_responses(404),
    )
    async def steps(self, match_id: FromPath[str], service: Service) -> StepsOut:
        return steps_view(await _load(service, match_id))

    @get(
        "/{match_id:str}/report",
        operation_id="getDisputeReport",
        summary="Dispute report: turn by turn, who chose, timeouts, connections (operator)",
        description="Needs `Authorization: Bearer $LUDO_OPERATOR_TOKEN`. One entry per "
        "turn (seat, start, end, seconds, each roll with its legal moves and the move "
        "played and who chose it, timeouts, stand-ins), the seat's live connections and "
        "disconnections merged in time order, and a per-seat summary.",
        guards=[_operator_guard],
        security=OPERATOR,
        responses=error_responses(401, 404),
    )
    async def report(self, match_id: FromPath[str], service: Service) -> ReportOut:
        m = await _load(service, match_id)
        return report_view(m, await _connections(service, match_stream(m.match_id)))


# -------------------------------------------------------------------------------- pages

_BLOCK = re.compile(r"<(script|style)>(.*?)</\1>", re.DOTALL)


def _digest(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


@functools.cache
def _page(name: str) -> tuple[str, str]:
    """A page's HTML and the CSP that allows exactly its inline script and style blocks."""
    html = resources.files("services.match").joinpath(name).read_text("utf-8")
    blocks = _BLOCK.findall(html)
    scripts = " ".join(_digest(body) for kind, body in blocks if kind == "script") or "'none'"
    styles = " ".join(_digest(body) for kind, body in blocks if kind == "style") or "'none'"
    csp = (
        f"default-src 'none'; script-src {scripts}; style-src {styles}; connect-src 'self'; "
        "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    return html, csp


_NOT_FOUND = (
    "<!doctype html><html lang=en><head><meta charset=utf-8><title>No such match</title>"
    "</head><body><h1>No such match</h1><p>There is no match with this id.</p></body></html>"
)


async def _page_response(service: MatchService, match_id: str, name: str) -> Response[str]:
    headers = {
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
    try:
        stream = match_stream(check_id(match_id, "match"))
    except AppError:
        stream = None
    if stream is not None:
        async with service.engine.connect() as conn:
            found = await conn.scalar(
                sa.text("SELECT 1 FROM events WHERE stream_id = :s AND stream_version = 0"),
                {"s": stream},
            )
        if found:
            html, csp = _page(name)
            return Response(
                html,
                media_type=MediaType.HTML,
                headers={"Content-Security-Policy": csp, **headers},
            )
    return Response(
        _NOT_FOUND,
        status_code=404,
        media_type=MediaType.HTML,
        headers={"Content-Security-Policy": "default-src 'none'", **headers},
    )


@get("/replay/{match_id:str}", include_in_schema=False, media_type=MediaType.HTML)
async def replay_viewer_page(match_id: FromPath[str], service: Service) -> Response[str]:
    """The public replay viewer of a match (`replay_viewer.html`)."""
    return await _page_response(service, match_id, "replay_viewer.html")


@get("/report/{match_id:str}", include_in_schema=False, media_type=MediaType.HTML)
async def dispute_report_page(match_id: FromPath[str], service: Service) -> Response[str]:
    """The operator's dispute report of a match (`dispute_report.html`; it asks for the
    operator token and sends it to `getDisputeReport`)."""
    return await _page_response(service, match_id, "dispute_report.html")
