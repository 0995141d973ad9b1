"""Quick-chat stamps at a match: `domain.stamps`' decider over the match's own
stamps stream (`stamps-<match id>`), beside the match's stream and never in its hash chain,
so a match's replay and its verification stay byte-identical whatever was said beside it.

A stamp is decided on the fold of the stamps stream (who stamped when), the caller's seat
at the match (None: a spectator) and the party's `stamps` switch (an imported match, with
no party, has them on), at `now` from this module's clock; then appended with the expected
version. Losing the append race to another seat's stamp is no reason to refuse it: it is
decided again on the new fold (which may now refuse it: the same seat stamped meanwhile).
Both ways in call `send`: `POST /api/matches/{id}/stamps` (`play/routes.py`) and the match
socket's `{"type": "stamp"}` message (`play/socket.py`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from domain import party as pd
from domain import stamps as ds
from domain.chain import GENESIS
from domain.errors import AppError, Conflict, Forbidden, Invalid
from domain.streams import match_stream, stamps_stream
from replays.viewer import StampLogEntry
from services.match.guests import Player
from services.match.idempotency import command_id as command_id_of
from services.match.idempotency import done_meanwhile, metadata
from services.match.ids import check_id
from services.match.play.reads import MatchReads
from services.match.play.schemas import StampOut
from services.match.play.service import seat_of
from services.shared.errors import TooManyRequests
from services.shared.eventstore import AppendResult, ConcurrencyError, EventStore, StoredEvent

__all__ = ["Stamps", "TooSoon", "stamp_out"]

# Each round of a race some seat wins, so this bounds the retries of N seats stamping at once.
_ATTEMPTS = 8


class TooSoon(TooManyRequests):
    """The seat stamped less than `domain.stamps.STAMP_EVERY` seconds ago (429, with
    Retry-After)."""

    default_code = "too_soon"


def stamp_out(stored: StoredEvent) -> StampOut:
    event = ds.decode_stamp_event(stored.data)
    return StampOut(
        version=stored.version,
        seat=event.seat,
        stamp=event.stamp,
        at=event.at,
        recorded_at=stored.recorded_at.isoformat(),
    )


def _refusal(rejection: ds.StampRejection) -> AppError:
    """A stamp refusal by meaning: a spectator 403, stamps off 409, a stamp not in the
    set 422, too soon 429 (with how long to wait)."""
    if rejection.code == "too_soon":
        return TooSoon(rejection.reason, wait=rejection.wait)
    kind = {"spectator": Forbidden, "stamps_off": Conflict}.get(rejection.code, Invalid)
    return kind(rejection.reason, code=rejection.code, field=rejection.field)


class Stamps:
    """Send and read a match's stamps (see the module docstring)."""

    def __init__(
        self,
        store: EventStore,
        reads: MatchReads,
        load_party: Callable[[str], Awaitable[pd.PartyState]],
        clock: Callable[[], float] = time.time,
        on_appended: Callable[[AppendResult], None] | None = None,
    ) -> None:
        self.store = store
        self.reads = reads
        self.load_party = load_party  # a party's state (its `stamps` switch)
        self.clock = clock
        # Told of every append this instance committed (the live hub offers the stamp to
        # the match's sockets here without reading it back), as `MatchCommands`'.
        self.on_appended = on_appended

    async def read(self, match_id: str) -> list[StoredEvent]:
        """Every stamp of the match, in order (404 for an unknown match)."""
        match_id = check_id(match_id, "match")
        await self.reads.state(match_id)  # NotFound for a match nobody started
        return await self.store.read_stream(stamps_stream(match_id))

    async def log(self, match_id: str) -> list[StampLogEntry]:
        """Every stamp of the match as the dispute report places it in time."""
        entries = []
        for stored in await self.read(match_id):
            sent = ds.decode_stamp_event(stored.data)
            entries.append(StampLogEntry(seat=sent.seat, stamp=sent.stamp, at=stored.recorded_at))
        return entries

    async def enabled(self, match_id: str) -> bool:
        """Whether the match's party has stamps on (a match without a party: on)."""
        row = await self.reads.row(match_stream(match_id))
        if not row.party_id:
            return True
        return (await self.load_party(row.party_id)).stamps

    async def send(
        self, match_id: str, player: Player, stamp: str, key: str | None
    ) -> AppendResult:
        """Decide and append `player`'s stamp; the outcome (`duplicate`: the same
        Idempotency-Key stamped before, its first outcome)."""
        match_id = check_id(match_id, "match")
        stream = stamps_stream(match_id)
        command_id = command_id_of(player, key)
        request = f"stamp:{stamp}"
        done = await done_meanwhile(self.store, command_id, stream, request)
        if done is not None:
            return done
        state = await self.reads.state(match_id)
        seat = seat_of(state, player)
        enabled = await self.enabled(match_id) if seat is not None else True
        for attempt in range(_ATTEMPTS):
            stored = await self.store.read_stream(stream)
            fold = ds.StampsState()
            for e in stored:
                ds.apply(fold, ds.decode_stamp_event(e.data))
            command = ds.SendStamp(seat=seat, stamp=stamp, now=self.clock(), enabled=enabled)
            decided = ds.decide(command, fold)
            if isinstance(decided, ds.StampRejection):
                raise _refusal(decided)
            try:
                return await self.store.append(
                    stream,
                    fold.version,
                    decided,
                    command_id=command_id,
                    metadata=metadata(player.id, command_id, request),
                    prev_hash=stored[-1].hash if stored else GENESIS,
                    on_commit=self.on_appended,
                )
            except ConcurrencyError:
                done = await done_meanwhile(self.store, command_id, stream, request)
                if done is not None:
                    return done
                if attempt + 1 == _ATTEMPTS:
                    raise
        raise AssertionError("unreachable")  # the last attempt returned or raised
