"""What the ratings routes answer with (services/ranking/ratings/routes.py): the rows of
the ratings queries as the operator API shows them (`RatingOut`, `ChangeOut`, `Bucket`,
`DayCount`, `Swing`, `Lag`; services/ranking/ratings/queries.py returns them), the operator
leaderboard and player pages built on them, and the public reads' shapes, whose ratings are
rounded player ratings (`Model.shown_rating`, domain/ratings.py)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import msgspec

from services.shared.standing import CompletionOut

__all__ = [
    "BoardEntry",
    "Bucket",
    "ChangeOut",
    "DayCount",
    "Distribution",
    "HistoryEntry",
    "Lag",
    "Leaderboard",
    "LeaderboardEntry",
    "MatchChange",
    "PlayerRatings",
    "PublicLeaderboard",
    "PublicMatch",
    "PublicPlayer",
    "RatingOut",
    "RecomputeOut",
    "Swing",
]

# ------------------------------------------------------------------ the queries' rows


class RatingOut(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    model: str
    rating: float
    mu: float
    sigma: float
    provisional: bool
    matches: int
    last_match_at: datetime


class ChangeOut(msgspec.Struct, kw_only=True):
    match_id: str
    model: str
    place: int
    players: int
    left_match: bool
    rating_before: float
    rating_after: float
    delta: float
    mu_before: float
    mu_after: float
    sigma_before: float
    sigma_after: float
    finished_at: datetime
    library: str
    params: dict[str, Any]


class Bucket(msgspec.Struct, kw_only=True):
    low: float
    high: float
    players: int


class DayCount(msgspec.Struct, kw_only=True):
    day: date
    matches: int


class Swing(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    match_id: str
    model: str
    rating_before: float
    rating_after: float
    delta: float
    finished_at: datetime


class Lag(msgspec.Struct, kw_only=True):
    checkpoint_tx: int
    checkpoint_position: int
    head_position: int
    events_behind: int
    seconds_behind: float
    consuming_here: bool


# ------------------------------------------------------------------- the operator API


class LeaderboardEntry(RatingOut, kw_only=True):
    """A player on the operator's leaderboard: `rating` is the operator rating (openskill:
    the conservative ordinal, the list's order); `player_rating` the figure the site shows
    players (on mu, rounded: the public leaderboard's `rating`)."""

    rank: int
    player_rating: int


class Leaderboard(msgspec.Struct, kw_only=True):
    model: str
    entries: list[LeaderboardEntry]


class PlayerRatings(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    ratings: list[RatingOut]
    history: list[ChangeOut]


class Distribution(msgspec.Struct, kw_only=True):
    model: str
    bucket: float
    buckets: list[Bucket]


class RecomputeOut(msgspec.Struct, kw_only=True):
    hash: str
    ratings: int


# -------------------------------------------------------------------- the public reads


class BoardEntry(msgspec.Struct, kw_only=True):
    rank: int
    player_id: str
    name: str | None
    rating: int
    provisional: bool
    matches: int


class PublicLeaderboard(msgspec.Struct, kw_only=True):
    model: str
    entries: list[BoardEntry]


class HistoryEntry(msgspec.Struct, kw_only=True):
    """One rated match of the player: `place` of `players` (the match's seats, CPUs
    included); a player who left is placed after every seat that stayed."""

    match_id: str
    at: datetime
    place: int
    players: int
    left_match: bool
    rating_before: int
    rating_after: int
    delta: int


class PublicPlayer(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    model: str
    rating: int
    provisional: bool
    matches: int
    history: list[HistoryEntry]
    completion: CompletionOut | None = None


class MatchChange(msgspec.Struct, kw_only=True):
    player_id: str
    name: str | None
    place: int
    rating_before: int
    rating_after: int
    delta: int
    provisional: bool


class PublicMatch(msgspec.Struct, kw_only=True):
    match_id: str
    model: str
    rated: bool
    changes: list[MatchChange]
