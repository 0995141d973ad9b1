"""The arenas' request bodies and responses: create, join, cancel; what the arena API and
socket show (summaries, the full view, yours)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from domain.settings import (
    ARENA_MINUTES,
    ARENA_RULES,
    ARENA_SEATS,
    ARENA_TURN_LIMITS,
    ArenaMinutes,
    ArenaSeats,
    PresetName,
    TurnLimit,
)
from services.shared.standing import CompletionOut


class ArenaSummary(msgspec.Struct, kw_only=True):
    """An arena in the list: settings, clock, status, players and who leads."""

    tournament_id: str
    name: str
    seats: int
    rules: str
    turn_limit: int
    minutes: int
    starts_at: str
    ends_at: str
    status: str
    players: int
    schedule: str | None
    leader: str | None
    # A scheduled arena's title by language ({"en", "ja"}); null for a guest's arena.
    title: dict[str, str] | None = None


class ArenaListOut(msgspec.Struct, kw_only=True):
    """The public arenas: starting later, running now, and the last finished."""

    upcoming: list[ArenaSummary]
    live: list[ArenaSummary]
    finished: list[ArenaSummary]


class ArenaStandingOut(msgspec.Struct, kw_only=True):
    """A line of the standings (`on_fire`: the next result counts double)."""

    rank: int
    player_id: str
    name: str
    score: float
    streak: int
    on_fire: bool
    matches: int
    rating: float
    completion: CompletionOut | None
    state: Literal["waiting", "playing", "paused"]


class PlayerRef(msgspec.Struct, kw_only=True):
    player_id: str
    name: str


class RunningOut(msgspec.Struct, kw_only=True):
    """A match being played now (watch it at `/match/{match_id}`)."""

    match_id: str
    party_id: str
    players: list[PlayerRef]


class ResultOut(msgspec.Struct, kw_only=True):
    """A player's result in a scored match."""

    player_id: str
    name: str
    place: int
    left: bool
    points: float
    doubled: bool


class MatchResultOut(msgspec.Struct, kw_only=True):
    """A scored match (its replay at `/replay/{match_id}`)."""

    match_id: str
    party_id: str
    results: list[ResultOut]


class CancelledOut(msgspec.Struct, kw_only=True):
    reason: str
    by: str


class YouOut(msgspec.Struct, kw_only=True):
    """The caller's own state: `out` when they have not joined."""

    state: Literal["waiting", "playing", "paused", "out"]
    match_id: str | None = None
    party_id: str | None = None
    score: float = 0.0
    rank: int | None = None
    creator: bool = False  # the private arena's creator (who may cancel it)


class ArenaView(msgspec.Struct, kw_only=True):
    """An arena in full: `GET /api/tournaments/{id}` and the socket's `arena` frames."""

    tournament_id: str
    name: str
    seats: int
    rules: str
    turn_limit: int
    minutes: int
    private: bool
    schedule: str | None
    starts_at: str
    ends_at: str
    now: str
    status: str
    cancelled: CancelledOut | None
    standings: list[ArenaStandingOut]
    running: list[RunningOut]
    matches: list[MatchResultOut]  # the last `MATCHES_SHOWN` scored, latest first
    matches_total: int
    podium: list[ArenaStandingOut]
    you: YouOut | None = None
    title: dict[str, str] | None = None
    # The arena stream's version this view was folded from: the answer to a command and a
    # socket frame made earlier may reach a page in either order, and the page keeps the
    # view of the higher version (an older one would undo what the player just did).
    version: int = 0


_ClientSeed = Annotated[str, msgspec.Meta(max_length=64, pattern=r"^[ -~]*$")]


class _Body(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class ArenaCreate(_Body):
    """A private arena: reached only by its link. `starts_in`: seconds from now."""

    name: Annotated[str, msgspec.Meta(min_length=1, max_length=60)]
    seats: ArenaSeats = ARENA_SEATS[0]
    rules: PresetName = ARENA_RULES[0]
    turn_limit: TurnLimit = ARENA_TURN_LIMITS[0]
    minutes: ArenaMinutes = ARENA_MINUTES[0]
    starts_in: Annotated[int, msgspec.Meta(ge=0, le=86400)] = 60


class ArenaJoin(_Body):
    """Join an arena; `client_seed` goes into the dice of your matches
    (docs/design.md#fair-dice)."""

    client_seed: _ClientSeed = ""


class ArenaCancel(_Body):
    """Why the arena is cancelled (shown on its page)."""

    # The length is the Decider's to judge (`domain.arena`, 422 `bad_reason`): one answer
    # for an empty, a blank and a too long reason alike.
    reason: Annotated[
        str, msgspec.Meta(description="1 to 200 characters, blanks aside (else 422 bad_reason)")
    ]
