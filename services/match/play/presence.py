"""Who is connected to a seat (`seat_presence`), the connection log behind the dispute
report (`seat_connections`, append-only), and the grace period: a player whose last
connection closed and who has not come back within `LUDO_RECONNECT_GRACE` seconds gets a
CPU standing in (docs/design.md#timers-presence-and-cpu-stand-ins).

Who is connected is shown at the table: each change of a match's presence sends a NOTIFY
hint for the pseudo-stream `presence-<match id>` (no events: a wake-up only), which the
match sockets' shared view of that prefix re-reads (`seats_connected`, `live_hub.view`)."""

from __future__ import annotations

import contextlib

import msgspec
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.commands import Reclaim, StandIn
from domain.decider import decide
from domain.errors import AppError
from domain.streams import match_id_of, match_stream
from services.match.guests import Player
from services.match.ids import check_id
from services.match.play.reads import MatchReads
from services.match.play.service import MatchCommands, seat_of
from services.shared.eventstore import CHANNEL, AppendResult, ConcurrencyError, Notification
from services.shared.logging import describe_exception
from services.shared.settings import Settings

__all__ = ["PRESENCE_PREFIX", "Presence", "presence_hint_stream"]

_log = structlog.get_logger(__name__)

PRESENCE_PREFIX = "presence-"


def presence_hint_stream(match_id: str) -> str:
    """The id a presence hint of the match names (no stream holds events under it)."""
    return f"{PRESENCE_PREFIX}{match_id}"


_CONNECTED_SEATS = sa.text(
    "SELECT seat FROM seat_presence WHERE stream_id = :stream_id AND connections > 0"
)

# Each change of `seat_presence` and its line in the append-only connection log behind
# the dispute report (`seat_connections`, migration 0005) are ONE statement (the log's
# insert beside the change, a data-modifying WITH), so they commit together in one round
# trip of their own (autocommit) instead of four (BEGIN, two statements, COMMIT).
_LOG_CONNECTION = (
    " INSERT INTO seat_connections (stream_id, seat, kind) VALUES (:stream_id, :seat, :kind)"
)
_CONNECTED = sa.text(
    """
    WITH presence AS (
        INSERT INTO seat_presence (stream_id, seat, connections) VALUES (:stream_id, :seat, 1)
        ON CONFLICT (stream_id, seat) DO UPDATE
            SET connections = seat_presence.connections + 1,
                disconnected_at = NULL,
                grace_due = NULL
    )
    """
    + _LOG_CONNECTION
)
_DISCONNECTED = sa.text(
    """
    WITH presence AS (
        UPDATE seat_presence
           SET connections = greatest(connections - 1, 0),
               disconnected_at = CASE WHEN connections <= 1 THEN now() END,
               grace_due = CASE WHEN connections <= 1
                                THEN now() + make_interval(secs => :grace) END
         WHERE stream_id = :stream_id AND seat = :seat
    )
    """
    + _LOG_CONNECTION
)
_GRACE_DONE = sa.text(
    "UPDATE seat_presence SET grace_due = NULL WHERE stream_id = :stream_id AND seat = :seat"
)


class Presence:
    def __init__(
        self,
        engine: AsyncEngine,
        reads: MatchReads,
        commands: MatchCommands,
        settings: Settings,
    ) -> None:
        self.engine = engine
        self._writer = engine.execution_options(isolation_level="AUTOCOMMIT")
        self.reads = reads
        self.commands = commands
        self.settings = settings

    async def connected(self, match_id: str, player: Player) -> int | None:
        """A live connection of `player` to the match opened: count it (and log it in
        `seat_connections`), cancel any grace deadline, and give the seat back if a CPU
        stands in for it because the player's connection was lost (`SeatReclaimed`); a
        stand-in the player chose (`left`) or earned (`timeouts`) stays until they reclaim
        the seat. Returns the player's seat (None: a spectator)."""
        state = await self.reads.state(match_id)
        seat = seat_of(state, player)
        if seat is None:
            return None
        stream = match_stream(check_id(match_id, "match"))
        async with self._writer.connect() as conn:
            await conn.execute(_CONNECTED, {"stream_id": stream, "seat": seat, "kind": "connected"})
            await self._hint(conn, match_id)
        # Asked of `decide` first on the state just read, to spare the usual case (nobody
        # stands in, or a stand-in that stays) the locked round trip; `reclaim` decides
        # again on the state it reads under the deadline row's lock.
        if isinstance(decide(Reclaim(seat=seat, returning=True), state), list):
            # `reclaim` retries the version race with a stand-in playing on another
            # instance; still losing after every try, the match ended meanwhile, or a
            # stand-in that stays: nothing to do.
            with contextlib.suppress(ConcurrencyError, AppError):
                await self.commands.reclaim(match_id, player, None, returning=True)
        return seat

    async def disconnected(self, match_id: str, seat: int) -> None:
        """A live connection to `seat` closed; with none left, the grace period starts.
        Every close is logged in `seat_connections` (the dispute report reads it)."""
        stream = match_stream(check_id(match_id, "match"))
        grace = self.settings.reconnect_grace
        async with self._writer.connect() as conn:
            await conn.execute(
                _DISCONNECTED,
                {"stream_id": stream, "seat": seat, "kind": "disconnected", "grace": grace},
            )
            await self._hint(conn, match_id)

    async def seats_connected(self, match_id: str) -> list[int]:
        """The seats of the match with at least one live connection now, in seat order."""
        stream = match_stream(check_id(match_id, "match"))
        async with self.engine.connect() as conn:
            rows = await conn.execute(_CONNECTED_SEATS, {"stream_id": stream})
            return sorted(int(r.seat) for r in rows)

    @staticmethod
    async def _hint(conn: AsyncConnection, match_id: str) -> None:
        """The NOTIFY hint of a presence change, after its own commit (autocommit), like
        the event store's: a wake-up only, so a lost one delays the marker, never more."""
        payload = msgspec.json.encode(Notification(presence_hint_stream(match_id), 0)).decode()
        try:
            await conn.execute(sa.select(sa.func.pg_notify(CHANNEL, payload)))
        except sa.exc.SQLAlchemyError as exc:
            _log.warning("presence_hint_failed", **describe_exception(exc))

    async def fire_grace(
        self, conn: AsyncConnection, stream: str, seat: int
    ) -> AppendResult | None:
        """The seat's player has not come back within the grace period: a CPU stands in,
        unless the match is over or a CPU already plays for the seat."""
        state = await self.reads.state(match_id_of(stream))
        result = None
        # `decide` says whether a stand-in may start (refused once the match is over or a
        # CPU already plays the seat); the append decides it again at this version.
        if isinstance(decide(StandIn(seat=seat, reason="disconnected"), state), list):
            # A ConcurrencyError leaves grace_due set, so the next poll tries again.
            result = await self.commands.stand_in(conn, stream, seat, state.version)
        await conn.execute(_GRACE_DONE, {"stream_id": stream, "seat": seat})
        return result
