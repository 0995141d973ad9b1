"""A match's request bodies and responses: its state, moves, events, commands' outcomes,
fairness, stamps, the rules oracle, the matches being played now (and the lobby frame
that lists them)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from replays.board_view import BoardOut, OptionOut
from services.match.schemas import Body, StampId


class SendStamp(Body):
    """A quick-chat stamp, by id (`domain.stamps`: `good_luck`, `nice`, ...; no free text)."""

    stamp: StampId


class MovePiece(Body):
    """Move this piece (0-3) by the die just rolled."""

    piece: Annotated[int, msgspec.Meta(ge=0, le=3)]


class LiveSeatOut(msgspec.Struct, kw_only=True):
    """A seat of a running match, as its watchers' list shows it: `name` as the match
    recorded it (a CPU's is the server's; the pages name a CPU by its level), and how far
    its pieces have come: `goal` of them in the goal, `progress` 0-1 (the share of the
    way all four have come)."""

    seat: int
    name: str
    colour: str
    player_id: str | None
    cpu: str | None
    stood_in: str | None
    goal: int
    progress: float


class LiveMatchOut(msgspec.Struct, kw_only=True):
    """A match being played now (`listLiveMatches`): who plays, ranked or not, whose turn,
    how far along (each seat's `goal` and `progress`), when it began (`started_at`, ISO
    8601), and `href`, the page that watches it."""

    match_id: str
    party_id: str
    ranked: bool
    turn_limit: int | None
    arena_id: str | None
    started_at: str
    turn: int
    seats: list[LiveSeatOut]
    href: str


class LiveMatchesOut(msgspec.Struct, kw_only=True):
    """The matches being played now, newest first (at most 20); private arenas' left out."""

    matches: list[LiveMatchOut]


class MatchSeatOut(msgspec.Struct, kw_only=True):
    seat: int
    name: str
    colour: str
    player_id: str | None
    cpu: str | None
    stood_in: str | None
    timeouts: int


class DeadlineOut(msgspec.Struct, kw_only=True):
    kind: str
    due_at: str


class MatchOut(msgspec.Struct, kw_only=True):
    """The public state of a match (never the server seed before `SeedRevealed`)."""

    id: str
    party_id: str | None
    status: str
    rules: dict[str, Any]
    seats: list[MatchSeatOut]
    pieces: dict[str, list[int]]
    # The seat to act and what it must do ("roll" or "move"); once the match is over
    # nobody acts: `turn` is null and `phase` is "over".
    turn: int | None
    phase: Literal["roll", "move", "over"]
    die: int | None
    rolls_left: int
    sixes: int
    rolls_made: int
    first_seat: int
    placements: list[int] | None
    seed_hash: str
    client_seed: str
    server_seed: str | None
    turn_limit: int | None
    ranked: bool
    version: int
    deadline: DeadlineOut | None
    board: BoardOut


class MovesOut(msgspec.Struct, kw_only=True):
    """The legal moves of the seat to act for its die (empty unless it must move; `seat`
    null and `phase` "over" once the match is over)."""

    seat: int | None
    phase: Literal["roll", "move", "over"]
    die: int | None
    moves: list[OptionOut]
    version: int


class EventOut(msgspec.Struct, kw_only=True):
    version: int
    type: str
    data: dict[str, Any]
    recorded_at: str
    hash: str


class EventsOut(msgspec.Struct, kw_only=True):
    events: list[EventOut]
    version: int


class LogOut(msgspec.Struct, kw_only=True):
    """A page of the match's events (`getMatchLog`), in version order. `version`: the
    match's (its count of events); `older`: the `before` of the page before this one
    (null: this page starts at the match's first event)."""

    events: list[EventOut]
    version: int
    older: int | None


class CommandOut(msgspec.Struct, kw_only=True):
    """What a command appended (a replayed Idempotency-Key returns the first outcome)."""

    stream_id: str
    events: list[EventOut]
    version: int
    duplicate: bool


class RollOut(msgspec.Struct, kw_only=True):
    """Roll `n` of the match (counting every die), its event's `version`, who rolled and
    the die."""

    n: int
    version: int
    seat: int
    value: int


class FairnessOut(msgspec.Struct, kw_only=True):
    """The dice commitment and every roll; `server_seed` and `verified` after the end."""

    seed_hash: str
    client_seed: str
    server_seed: str | None
    rolls: list[RollOut]
    verified: bool | None


class RuleOptionsOut(msgspec.Struct, kw_only=True):
    """The presets (every option spelled out) and the values each option may take."""

    default: str
    presets: dict[str, dict[str, Any]]
    values: dict[str, list[Any]]


class StampOut(msgspec.Struct, kw_only=True):
    """One stamp: the stamps stream's `version`, the sender's `seat`, the stamp's id (each
    page words it in its viewer's language), `at` (the service's clock, Unix seconds) and
    `recorded_at` (the stored row's time, as a match event's)."""

    version: int
    seat: int
    stamp: str
    at: float
    recorded_at: str


class StampsOut(msgspec.Struct, kw_only=True):
    """Every stamp of a match in order; `version`: the count (the next one's version)."""

    stamps: list[StampOut]
    version: int


class MatchesFrame(msgspec.Struct, kw_only=True):
    type: Literal["matches"] = "matches"
    matches: list[LiveMatchOut]
