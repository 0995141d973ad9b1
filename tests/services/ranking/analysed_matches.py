"""Analysed matches written straight into `match_analyses` and `analysis_seats`, as the
analysis consumer writes them, for the tests of what reads them
(services/ranking/analysis/stats.py, its pages). The body is a stand-in: nothing here reads it."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.tables import analysis_seats, match_analyses


@dataclass(frozen=True)
class Seat:
    """One analysed seat: `player_id` None is a CPU; `faces[i]`: its rolls of i + 1."""

    player_id: str | None
    name: str = ""
    luck: float = 0.0
    faces: Sequence[int] = (0, 0, 0, 0, 0, 0)
    choices: int = 0
    own_error: float = 0.0
    best_choices: int = 0
    place: int | None = None
    error: float | None = None  # None: own_error (no stand-in made a choice)


async def insert_analysis(
    engine: AsyncEngine,
    seats: Sequence[Seat],
    *,
    ended_at: datetime | None = None,
    ranked: bool = True,
    luck_gap: float | None = None,
    match_id: str | None = None,
) -> str:
    """One analysed match of `seats` (seat i is `seats[i]`) ended at `ended_at` (now);
    `luck_gap` defaults to the largest difference of luck. Returns the match id."""
    match_id = match_id or str(uuid.uuid4())
    ended = ended_at or datetime.now(UTC)
    lucks = [s.luck for s in seats]
    async with engine.begin() as conn:
        await conn.execute(
            sa.insert(match_analyses).values(
                match_id=match_id,
                stream_id=f"match-{match_id}",
                position=1,
                ended_at=ended,
                evaluator="test-evaluator",
                players=len(seats),
                luck_gap=max(lucks) - min(lucks) if luck_gap is None else luck_gap,
                body=b"{}",
            )
        )
        await conn.execute(
            sa.insert(analysis_seats),
            [
                {
                    "match_id": match_id,
                    "seat": i,
                    "player_id": s.player_id,
                    "name": s.name or s.player_id or f"cpu-{i}",
                    "ended_at": ended,
                    "ranked": ranked,
                    "place": s.place,
                    "luck": s.luck,
                    "error": s.own_error if s.error is None else s.error,
                    "choices": s.choices,
                    "own_error": s.own_error,
                    "best_choices": s.best_choices,
                    "faces": list(s.faces),
                }
                for i, s in enumerate(seats)
            ],
        )
    return match_id
