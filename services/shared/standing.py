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
from services.ranking.ratings import DEFAULT_MODEL, MODELS, Skill

__all__ = ["Completion", "RankedBlock", "Standing", "standing"]

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
_SUSPENDED = (
    "SELECT max(until) FROM reports WHERE reported_id = :p AND decision = 'suspend'"
    " AND until > :now"
)


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
