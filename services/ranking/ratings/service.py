"""The ratings' one command: `POST /api/ranking/recompute`, rebuilding every rating from the
log (`recompute`, services/ranking/ratings/consumer.py), one at a time in this process.
Reads need no service of their own: the routes call the queries
(services/ranking/ratings/queries.py)."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import Conflict, Unavailable
from services.ranking.ratings.consumer import (
    RecomputeBusy,
    RecomputeNotPermitted,
    ratings_hash,
    recompute,
)
from services.ranking.ratings.schemas import RecomputeOut

__all__ = ["Recomputer"]


class Recomputer:
    """Recomputes over the service's engine; a second call while one runs in this process
    is a `Conflict` (another process's is refused by the recompute's own lock)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._lock = asyncio.Lock()

    async def run(self) -> RecomputeOut:
        """The new ratings' hash and row count; `Conflict` while another recompute runs,
        `Unavailable` (`recompute_not_permitted`) when the role may not swap tables."""
        if self._lock.locked():
            raise Conflict("a recompute is already running")
        async with self._lock:
            try:
                digest = await recompute(self._engine)
            except RecomputeBusy as exc:
                raise Conflict(str(exc)) from exc
            except RecomputeNotPermitted as exc:
                raise Unavailable(str(exc), code="recompute_not_permitted") from exc
        _, rows = await ratings_hash(self._engine)
        return RecomputeOut(hash=digest, ratings=rows)
