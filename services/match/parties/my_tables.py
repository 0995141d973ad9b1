"""The tables a guest sits at (`GET /api/players/me/tables`, the lobby's "your tables"):
the open parties they hold a seat in, the parties whose match they play is running, and
those whose match finished lately (so one press brings them back to もう一度).

Read from the `parties` read model (its `settings` is the party's public view; migration
0008's GIN index `parties_seats` on `settings -> 'seats'` finds a player's parties with
`@>`) and, for a party that plays, from its match stream through the event store: a match
is finished once its stream holds `MatchFinished`, at the time of its last event.

`tables_of` is the one read; the pool service asks it too (`holding`: the table that keeps
a player out of the pools, 409 `seated_elsewhere`, docs/pools.md).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final, Literal

import msgspec
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.streams import match_stream
from services.match.parties.schemas import PartySeatOut, TableOut
from services.shared.eventstore import EventLog

__all__ = ["FINISHED_WITHIN", "TABLES_MAX", "holding", "tables_of"]

# A finished match stays among the player's tables this long after its last event.
FINISHED_WITHIN: Final = timedelta(hours=2)
# At most this many open parties, and this many playing ones (newest change first).
TABLES_MAX: Final = 20

# The guest's open and playing parties, each kind newest first; `now` is the database's.
_MY_PARTIES: Final = sa.text(
    """
    (SELECT party_id, status, settings, updated_at, now() AS now FROM parties
      WHERE settings -> 'seats' @> CAST(:seats AS jsonb) AND status = 'open'
      ORDER BY updated_at DESC LIMIT :limit)
    UNION ALL
    (SELECT party_id, status, settings, updated_at, now() AS now FROM parties
      WHERE settings -> 'seats' @> CAST(:seats AS jsonb) AND status = 'playing'
      ORDER BY updated_at DESC LIMIT :limit)
    """
)

Status = Literal["open", "playing", "finished"]
Action = Literal["open_party", "return_to_match", "see_result"]
_ORDER: Final = {"playing": 0, "open": 1, "finished": 2}


class _Seat(msgspec.Struct):
    seat: int
    name: str | None = None
    player_id: str | None = None
    cpu: str | None = None


class _Party(msgspec.Struct):
    """The fields of a party's stored view (`parties.settings`) a table needs."""

    id: str
    host_id: str
    seats: list[_Seat]
    ranked: bool = False
    turn_limit: int | None = None
    match_id: str | None = None


async def tables_of(
    engine: AsyncEngine,
    store: EventLog,
    player_id: str,
    *,
    finished_within: timedelta = FINISHED_WITHIN,
) -> list[TableOut]:
    """The tables `player_id` sits at: running matches first, then open parties, then
    matches finished within `finished_within`, each newest first."""
    seats = msgspec.json.encode([{"player_id": player_id}]).decode()
    async with engine.connect() as conn:
        rows = (await conn.execute(_MY_PARTIES, {"seats": seats, "limit": TABLES_MAX})).all()
    parties = [(r, msgspec.convert(r.settings, _Party)) for r in rows]
    streams = [match_stream(p.match_id) for r, p in parties if r.status == "playing" and p.match_id]
    finished = set(await store.read_streams(streams, types=["MatchFinished"])) if streams else set()
    lengths = await store.stream_versions(sorted(finished))
    found: list[tuple[Status, datetime, _Party]] = []
    for row, party in parties:
        status: Status = row.status
        changed: datetime = row.updated_at
        if status == "playing":
            if party.match_id is None:
                continue
            stream = match_stream(party.match_id)
            if stream in finished:
                last = await store.read_stream(stream, lengths[stream] - 1, limit=1)
                changed = last[-1].recorded_at if last else changed
                if row.now - changed > finished_within:
                    continue
                status = "finished"
        found.append((status, changed, party))
    found.sort(key=lambda f: (_ORDER[f[0]], -f[1].timestamp()))
    return [_table(party, status, at) for status, at, party in found]


def holding(tables: list[TableOut]) -> TableOut | None:
    """The table that keeps its player out of the pools: a running match, else an open
    party (None: neither)."""
    for status in ("playing", "open"):
        for table in tables:
            if table.status == status:
                return table
    return None


_ACTIONS: Final[dict[Status, Action]] = {
    "open": "open_party",
    "playing": "return_to_match",
    "finished": "see_result",
}


def _table(party: _Party, status: Status, at: datetime) -> TableOut:
    return TableOut(
        party_id=party.id,
        match_id=party.match_id,
        status=status,
        host_id=party.host_id,
        seats=[
            PartySeatOut(seat=s.seat, name=s.name, player_id=s.player_id, cpu=s.cpu)
            for s in party.seats
        ],
        ranked=party.ranked,
        turn_limit=party.turn_limit,
        updated_at=at.isoformat(timespec="seconds"),
        action=_ACTIONS[status],
        href=f"/party/{party.id}",
    )
