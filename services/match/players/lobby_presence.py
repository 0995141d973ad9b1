"""Who holds the lobby open, over all instances: the life of a pool entry
(docs/design.md#above-a-match-pools-arenas-stamps-reports).

Each instance counts the lobby sockets that said hello, per guest, in memory, and every
`HEARTBEAT` seconds writes ONE statement refreshing `lobby_presence.seen_at` for all the
guests it holds (migration 0008). Nothing is written when a socket closes: a guest is seen
until the heartbeats stop, so a reload onto another instance, or an instance killed with
its sockets open, needs no bookkeeping. A guest seen within `PRESENT` seconds is connected
now (pairing seats only them); one not seen for the pool's grace is gone.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from typing import Final

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.logging import describe_exception

__all__ = ["HEARTBEAT", "PRESENT", "LobbyPresence", "Online"]

_log = structlog.get_logger(__name__)

HEARTBEAT: Final = 2.0  # seconds between two refreshes of the guests an instance holds
# Seen this recently: connected now (a heartbeat, and room for one late by a loaded loop).
PRESENT: Final = HEARTBEAT * 2.5

_SEEN = sa.text(
    """
    INSERT INTO lobby_presence (player_id, seen_at)
    SELECT id, now() FROM unnest(CAST(:ids AS text[])) AS id
    ON CONFLICT (player_id) DO UPDATE SET seen_at = EXCLUDED.seen_at
    """
)
_AGES = sa.text(
    """
    SELECT player_id, extract(epoch FROM now() - seen_at) AS age
    FROM lobby_presence WHERE player_id = ANY(CAST(:ids AS text[]))
    """
)
# Online: a lobby seen lately, or a seat with a live connection (a table's page); and, in
# the same statement, which of this process's guests that count holds (`Online.here`).
_ONLINE = sa.text(
    """
    SELECT (SELECT count(*) FROM lobby_presence
             WHERE seen_at > now() - make_interval(secs => :present))
         + (SELECT count(*) FROM seat_presence WHERE connections > 0) AS online,
           ARRAY(SELECT player_id FROM lobby_presence
                  WHERE player_id = ANY(CAST(:held AS text[]))
                    AND seen_at > now() - make_interval(secs => :present)) AS here
    """
)


class Online(msgspec.Struct, frozen=True):
    """How many are online over all instances (`count`), and which of the guests whose
    lobby this process holds are among them (`here`): a lobby socket whose guest is not
    (no hello yet, or one said after the count was read) adds its reader to the count it
    shows, so a reader always counts once."""

    count: int
    here: frozenset[str] = frozenset()


class LobbyPresence:
    """The guests whose lobby socket this process holds, and the heartbeat that says so."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._writer = engine.execution_options(isolation_level="AUTOCOMMIT")
        self.held: Counter[str] = Counter()

    async def hold(self, player_id: str) -> None:
        """A socket of `player_id` said hello: seen now, and at every heartbeat after."""
        self.held[player_id] += 1
        await self._seen([player_id])

    def release(self, player_id: str) -> None:
        """One of `player_id`'s sockets here closed (no write: the heartbeats stop)."""
        self.held[player_id] -= 1
        if self.held[player_id] <= 0:
            del self.held[player_id]

    async def run(self) -> None:
        """The heartbeat, until cancelled; a failed beat is logged and the next one tried."""
        while True:
            await asyncio.sleep(HEARTBEAT)  # a period, not a synchronisation
            if self.held:
                try:
                    await self._seen(list(self.held))
                except Exception as error:  # the database away: the next beat retries
                    _log.warning("lobby_heartbeat_failed", **describe_exception(error))

    async def ages(self, player_ids: Sequence[str]) -> dict[str, float]:
        """Seconds since each guest was last seen (absent: never seen)."""
        async with self._writer.connect() as conn:
            rows = await conn.execute(_AGES, {"ids": list(player_ids)})
            return {row.player_id: float(row.age) for row in rows}

    async def online(self) -> Online:
        """Guests with a lobby or a table open now, over all instances, and which of the
        guests held here they count."""
        async with self._writer.connect() as conn:
            row = (await conn.execute(_ONLINE, {"present": PRESENT, "held": list(self.held)})).one()
        return Online(int(row.online or 0), frozenset(row.here or ()))

    async def _seen(self, player_ids: list[str]) -> None:
        async with self._writer.connect() as conn:
            await conn.execute(_SEEN, {"ids": player_ids})
