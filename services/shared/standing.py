"""A player's standing as the pools and the pages need it: their player-facing rating, their
completion rate, and whether (and why, until when) they may not enter ranked pools.

The ranking service writes what this reads (ratings, the reputation fold and the
moderation decisions, docs/ranking.md); the match service reads it here, from the same
database, because a pool entry must not wait on (or fail with) another process.

`rating`: the default model's player rating (openskill, `Model.player_rating`, 1500 for a
player never rated). `completion`: `domain.reputation.completion` over the player's rows of
the reputation fold (`reputation_matches`, the ranking consumer's; None before any ended
match). `ranked_block`: the later-ending of the abandon pause (`domain.reputation.
ranked_pause`) and an operator's suspension still in force (`reports`, written with the
report's events): reason `abandons` or `suspended`, and until when. Three reads, no
writes; the match service calls it for a pool entry and for `GET /api/players/me/standing`.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import reputation
from domain.errors import Invalid
from domain.ratings import DEFAULT_MODEL, MODELS, Skill

__all__ = [
    "MAX_IDS",
    "Completion",
    "CompletionOut",
    "PlayerReputation",
    "RankedBlock",
    "Reputations",
    "Standing",
    "completion_out",
    "completions",
    "ratings",
    "reputations",
    "standing",
]

START_RATING = 1500.0


class Completion(msgspec.Struct, frozen=True):
    """Matches played to the end ÷ matches started, over the last 50."""

    finished: int
    started: int

    @property
    def rate(self) -> float:
        return self.finished / self.started if self.started else 1.0


class RankedBlock(msgspec.Struct, frozen=True):
    """Why and until when a player may not enter ranked pools."""

    reason: Literal["abandons", "suspended"]
    until: dt.datetime


class Standing(msgspec.Struct, frozen=True):
    player_id: str
    rating: float
    completion: Completion | None = None
    ranked_block: RankedBlock | None = None


# The newest `RECENT` ended matches (completion) and every ranked abandon (the pauses: a
# pause's length depends on the pauses before it, so on every ranked abandon).
_HISTORY = f"""
    (SELECT match_stream, ended_at, ranked, left_match FROM reputation_matches
     WHERE player_id = :p ORDER BY ended_at DESC, match_stream DESC LIMIT {reputation.RECENT})
    UNION
    (SELECT match_stream, ended_at, ranked, left_match FROM reputation_matches
     WHERE player_id = :p AND ranked AND left_match)
"""
_MU = "SELECT mu FROM ratings WHERE model = :m AND player_id = :p"
_MU_OF_MANY = (
    "SELECT player_id, mu FROM ratings WHERE model = :m AND player_id = ANY(CAST(:ids AS text[]))"
)
_SUSPENDED = (
    "SELECT max(until) FROM reports WHERE reported_id = :p AND decision = 'suspend'"
    " AND until > :now"
)


# Each player's newest `RECENT` ended matches, for many players in one statement.
_RECENT_OF_MANY = (
    "SELECT player_id, match_stream, ended_at, ranked, left_match FROM ("
    " SELECT *, row_number() OVER (PARTITION BY player_id"
    " ORDER BY ended_at DESC, match_stream DESC) AS n"
    " FROM reputation_matches WHERE player_id = ANY(:ids)) r WHERE n <= :recent"
)


async def completions(engine: AsyncEngine, player_ids: list[str]) -> dict[str, Completion]:
    """The completion of each of `player_ids` that has an ended match (the others are
    absent), in one read: the lobby's parties, the table's seats, the public API."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text(_RECENT_OF_MANY), {"ids": player_ids, "recent": reputation.RECENT}
        )
        history: dict[str, list[reputation.Ended]] = {}
        for pid, stream, at, ranked, left in rows:
            history.setdefault(pid, []).append(
                reputation.Ended(stream, at.timestamp(), ranked, left)
            )
    out = {}
    for pid, ended in history.items():
        done = reputation.completion(ended)
        out[pid] = Completion(finished=done.completed, started=done.ended)
    return out


async def ratings(engine: AsyncEngine, player_ids: list[str]) -> dict[str, float]:
    """The player-facing rating of each of `player_ids` now (the starting one for a player
    never rated), in one read: an arena's standings, a ranked table's seats."""
    async with engine.connect() as conn:
        rows = await conn.execute(sa.text(_MU_OF_MANY), {"m": DEFAULT_MODEL, "ids": player_ids})
        mus: dict[str, float] = {row.player_id: row.mu for row in rows}
    model = MODELS[DEFAULT_MODEL]
    return {
        pid: START_RATING if pid not in mus else model.player_rating(Skill(mu=mus[pid], sigma=0.0))
        for pid in player_ids
    }


async def standing(engine: AsyncEngine, player_id: str, now: dt.datetime) -> Standing:
    """The standing of `player_id` at `now` (a new player: the starting rating, no
    completion, no block)."""
    async with engine.connect() as conn:
        mu = await conn.scalar(sa.text(_MU), {"m": DEFAULT_MODEL, "p": player_id})
        rows = (await conn.execute(sa.text(_HISTORY), {"p": player_id})).all()
        suspended: dt.datetime | None = await conn.scalar(
            sa.text(_SUSPENDED), {"p": player_id, "now": now}
        )
    model = MODELS[DEFAULT_MODEL]
    rating = START_RATING if mu is None else model.player_rating(Skill(mu=mu, sigma=0.0))
    history = [
        reputation.Ended(r.match_stream, r.ended_at.timestamp(), r.ranked, r.left_match)
        for r in rows
    ]
    done = reputation.completion(history)
    completion = Completion(finished=done.completed, started=done.ended) if done.ended else None
    blocks: list[RankedBlock] = []
    pause = reputation.ranked_pause(history, now.timestamp())
    if pause is not None:
        until = dt.datetime.fromtimestamp(pause.until, dt.UTC)
        blocks.append(RankedBlock(reason="abandons", until=until))
    if suspended is not None:
        blocks.append(RankedBlock(reason="suspended", until=suspended))
    block = max(blocks, key=lambda b: b.until, default=None)
    return Standing(player_id=player_id, rating=rating, completion=completion, ranked_block=block)


# ------------------------------------------------------------- the public reputation read


class CompletionOut(msgspec.Struct, kw_only=True):
    """Matches played to the end (`finished`) of the player's last ended ones (`started`,
    at most 50; casual and ranked): leaving, or losing the connection for good, is not
    finishing; a CPU standing in for timeouts is. `rate` = finished / started."""

    finished: int
    started: int
    rate: float


class PlayerReputation(msgspec.Struct, kw_only=True):
    """A player's completion rate (null: no ended match yet) and player rating (the
    default model's, rounded: the rating a ranked table shows beside the name; 1500 for a
    player never rated)."""

    player_id: str
    completion: CompletionOut | None
    rating: int


class Reputations(msgspec.Struct, kw_only=True):
    players: list[PlayerReputation]


MAX_IDS = 100


def completion_out(done: Completion | None) -> CompletionOut | None:
    """The API's completion (null without an ended match)."""
    if done is None or not done.started:
        return None
    return CompletionOut(finished=done.finished, started=done.started, rate=done.rate)


async def reputations(engine: AsyncEngine, ids: str) -> Reputations:
    """The answer to `?ids=a,b,c` (both services serve it): each id once, in the order
    asked; 1 to `MAX_IDS` ids, else `Invalid` (422)."""
    wanted = list(dict.fromkeys(i.strip() for i in ids.split(",") if i.strip()))
    if not wanted or len(wanted) > MAX_IDS or any("\x00" in i or len(i) > 200 for i in wanted):
        raise Invalid(f"ids: 1 to {MAX_IDS} player ids, comma-separated", field="ids")
    found = await completions(engine, wanted)
    rated = await ratings(engine, wanted)
    return Reputations(
        players=[
            PlayerReputation(
                player_id=i, completion=completion_out(found.get(i)), rating=round(rated[i])
            )
            for i in wanted
        ]
    )
