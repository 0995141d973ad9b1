"""What the site is doing now, over all instances: the play half of the operator's live view.
`GET /api/operator/now` (operator token, moderation/operator_routes.py) answers
it; the ranking service's live view (`GET /api/ranking/live`, services/ranking/dashboard/service.py)
asks it through `LUDO_MATCH_URL` and shows it on the dashboard beside its own figures.

Read from the match service's own tables and the log, each figure "now" as the site means
it elsewhere:

- `matches_now`: the matches being played: not finished, and with a player at the table (a
  live socket on a seat, `seat_presence`, play/presence.py), a seat's player in their grace
  period (a stand-in follows), or a deadline pending (`turn_deadlines`: a CPU's or a
  stand-in's move due, or a turn clock). So a match the CPUs play out after its players
  left counts; a finished match whose result page is still open does not (its stream ends
  with `MatchFinished`, then `SeedRevealed`), nor one waiting, with no clock, for a player
  who closed their page long ago: nothing happens in it;
- `matches_cpu_only`: of those, the ones in which every seat still playing is played by a
  CPU (a CPU seat or a stand-in);
- `players_at_tables`: the seats with a live socket; `players_in_lobby`: guests whose lobby
  was seen within `lobby_presence.PRESENT` seconds (players/lobby_presence.py);
- `arenas`: the arenas running now (started, not over, not cancelled), with their players.

The candidates come from the two small tables above (rows of running matches only, a
finished one's rows aside); one read of the log (`EventLog.read_streams`, only the event
store names its tables) brings their seat events and any `MatchFinished`: the cost
follows the matches being played, not the size of the log.
"""

from __future__ import annotations

from typing import Final

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import events as ev
from domain.decider import fold
from services.match.moderation.schemas import ArenaNow, SiteNowOut
from services.match.players.lobby_presence import PRESENT
from services.shared.eventstore import EventLog

__all__ = ["SiteNow", "cpu_only"]


# The streams that may be matches being played (the module's docstring): a timer due, or a
# seat connected or in its grace. Which of them have ended, the log says (`read`).
_CANDIDATES: Final = sa.text(
    """
    SELECT stream_id FROM turn_deadlines
    UNION
    SELECT stream_id FROM seat_presence WHERE connections > 0 OR grace_due IS NOT NULL
    ORDER BY stream_id
    """
)
_NOW: Final = sa.text(
    """
    SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS at,
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
# What says who plays each seat: the seats, the stand-ins and returns, the seats done; and
# whether the match has ended.
_SEATS: Final = ("MatchCreated", "SeatStoodIn", "SeatReclaimed", "PlayerFinished")
_ENDED: Final = "MatchFinished"


def cpu_only(events: list[ev.Event]) -> bool:
    """Whether every seat still playing is played by a CPU (its own or a stand-in), from
    a match's `MatchCreated`, `SeatStoodIn`, `SeatReclaimed` and `PlayerFinished` events:
    the domain's fold of them alone, since those four set nothing but the seats, their
    stand-ins and the finished seats, which is all `MatchState.controller` reads of a
    seat that is not on a timed-out turn."""
    state = fold(events)
    playing = [seat for seat in range(state.players) if state.playing(seat)]
    return bool(playing) and all(state.controller(seat) != "player" for seat in playing)


class SiteNow:
    """The reads behind `GET /api/operator/now`: two statements and one read of the
    log's seat events of the matches being played."""

    def __init__(self, engine: AsyncEngine, store: EventLog) -> None:
        self._engine = engine
        self._store = store

    async def read(self) -> SiteNowOut:
        async with self._engine.connect() as conn:
            candidates = list((await conn.execute(_CANDIDATES)).scalars())
            row = (await conn.execute(_NOW, {"present": PRESENT})).one()
        seats = await self._store.read_streams(candidates, types=(*_SEATS, _ENDED))
        playing = [
            stream
            for stream, events in seats.items()
            if not any(data.type == _ENDED for data in events)
        ]
        return SiteNowOut(
            at=row.at,
            matches_now=len(playing),
            matches_cpu_only=sum(
                cpu_only([data.event for data in seats.get(stream, ())]) for stream in playing
            ),
            players_at_tables=int(row.players_at_tables),
            players_in_lobby=int(row.players_in_lobby),
            arenas=msgspec.convert(row.arenas, list[ArenaNow]),
        )
