"""A player's standing as the pools and the pages need it: their player-facing rating, their
completion rate, and whether (and why, until when) they may not enter ranked pools.

The ranking service writes what this reads (ratings, the reputation fold and the
moderation decisions, docs/ranking.md); the match service reads it here, from the same
database, because a pool entry must not wait on (or fail with) another process.

SKELETON (issue 28): rating only; completion and blocks are filled in by the reputation
work. The signature is the contract the pool service calls.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

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


async def standing(engine: AsyncEngine, player_id: str, now: dt.datetime) -> Standing:
    """The standing of `player_id` at `now` (a new player: the starting rating, no block)."""
    del engine, now
    return Standing(player_id=player_id, rating=START_RATING)
