"""What the site is doing now, over all instances: the play half of the operator's live view
(issue 31, point 6). `GET /api/operator/now` (operator token, operator_routes.py) answers
it; the ranking service's live view (`GET /api/ranking/live`, services/ranking/live_view.py)
asks it through `LUDO_MATCH_URL` and shows it on the dashboard beside its own figures.

Read from the match service's own tables in one statement, each figure "now" as the site
means it elsewhere:

- `matches_now`: matches with a player at the table (a live socket on a seat, over all
  instances: `seat_presence`, presence.py). A match only CPUs play is not counted;
- `players_at_tables`: the seats with a live socket; `players_in_lobby`: guests whose lobby
  was seen within `lobby_presence.PRESENT` seconds (lobby_presence.py);
- `arenas`: the arenas running now (started, not over, not cancelled), with their players.
"""

from __future__ import annotations

from typing import Final

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.lobby_presence import PRESENT

__all__ = ["ArenaNow", "SiteNow", "SiteNowOut"]


class ArenaNow(msgspec.Struct, kw_only=True):
    """An arena running now."""

    tournament_id: str
    name: str
    seats: int
    players: int
    private: bool
    ends_at: str


class SiteNowOut(msgspec.Struct, kw_only=True):
    """What the site is doing now (the module's docstring says what each figure counts)."""

    at: str
    matches_now: int
    players_at_tables: int
    players_in_lobby: int
    arenas: list[ArenaNow]


_NOW: Final = sa.text(
    """
    SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at,
           (SELECT count(DISTINCT stream_id) FROM seat_presence WHERE connections > 0)
               AS matches_now,
           (SELECT count(*) FROM seat_presence WHERE connections > 0) AS players_at_tables,
           (SELECT count(*) FROM lobby_presence
             WHERE seen_at > now() - make_interval(secs => :present)) AS players_in_lobby,
           (SELECT coalesce(json_agg(json_build_object(
                        'tournament_id', arena_id, 'private', private,
                        'ends_at', to_char(ends_at AT TIME ZONE 'UTC',
                                           'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                        'name', summary ->> 'name',
                        'seats', (summary ->> 'seats')::int,
                        'players', (summary ->> 'players')::int) ORDER BY ends_at), '[]')
              FROM arenas
             WHERE starts_at <= now() AND ends_at > now() AND status <> 'cancelled')
               AS arenas
    """
)


class SiteNow:
    """The one read behind `GET /api/operator/now`."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine

    async def read(self) -> SiteNowOut:
        async with self._engine.connect() as conn:
            row = (await conn.execute(_NOW, {"present": PRESENT})).one()
        return SiteNowOut(
            at=row.at,
            matches_now=int(row.matches_now),
            players_at_tables=int(row.players_at_tables),
            players_in_lobby=int(row.players_in_lobby),
            arenas=msgspec.convert(row.arenas, list[ArenaNow]),
        )
