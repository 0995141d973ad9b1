"""The lobby socket `/ws/lobby` (docs/api.md, docs/pools.md): the open parties, quick play's
counts, and a guest's own wait.

Frames the server sends:

- `{"type": "parties", "parties": [...]}`: on connect and whenever a party changes (any hint
  for a `party-` stream wakes it; bursts coalesce into one re-read per `LOBBY_INTERVAL`,
  made once for every lobby socket of the process; the same list is not sent again);
- `{"type": "pools", "online": n, "pools": [...]}`: as `GET /api/pools`, but `online`
  counts the socket's reader (once, hello or not); on connect and when a count changes
  (one re-read per change of a `pool-` stream for all the process's sockets, at most once
  per `POOLS_INTERVAL`, and every poll for the online count);
- `{"type": "matches", "matches": [...]}`: as `GET /api/matches/live`, on connect and when
  it changed (a re-read after a change of any match stream, at most once per
  `MATCHES_INTERVAL`, for all the process's sockets);
- after `{"type": "hello", "token": ...}`: `{"type": "hello", "player_id": ...}`, then
  `{"type": "pool", ...}` on every change of the guest's wait (`"pool": null`: not
  waiting), and `{"type": "seated", "pool", "party_id", "match_id"}` once their table
  formed (also told to a lobby opened within a minute after it: a reload).

A socket that said hello holds the guest's pool entry (`players/lobby_presence.py`). It answers
`ping` with `pong`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Final

import msgspec
from litestar import WebSocket, websocket
from litestar.di import NamedDependency
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.streams import MATCH_PREFIX, PARTY_PREFIX, POOL_PREFIX
from services.match.guests import Guests, Player
from services.match.live_hub import LiveHub
from services.match.parties.schemas import PartiesFrame
from services.match.parties.service import PartyCommands
from services.match.parties.views import party_list_view
from services.match.play.live_matches import live_matches
from services.match.play.reads import MatchReads
from services.match.play.schemas import MatchesFrame
from services.match.players.lobby_presence import LobbyPresence
from services.match.pools.routes import entry_view, pools_view
from services.match.pools.service import KINDS, Pools, PoolsSnapshot
from services.match.sockets import Channel, hello_player, ping_or_hello, serve
from services.shared.background import first_of
from services.shared.eventstore import EventStore
from services.shared.limits import client_key

__all__ = ["LOBBY_INTERVAL", "MATCHES_INTERVAL", "POOLS_INTERVAL", "lobby_socket"]

LOBBY_INTERVAL: Final = 0.5  # seconds: the least time between two re-reads of the listing
POOLS_INTERVAL: Final = 0.5  # seconds: the least time between two re-reads of the pools
# Seconds between two re-reads of the live matches: every move changes one, and a list to
# pick a match to watch from need not follow each move.
MATCHES_INTERVAL: Final = 2.0
_RECENT: Final = 60.0  # seconds: a seating this fresh is told to a lobby opened after it


class _Guest:
    """What one lobby socket has told its guest, to send only what changed."""

    def __init__(self) -> None:
        self.player: Player | None = None
        self.since = 0.0  # when the guest said hello (seconds since the epoch)
        self.snapshot: PoolsSnapshot | None = None
        self.counts = b""
        self.pool = b""
        self.told: set[str] = set()  # match ids whose seating was sent

    def frames(self) -> list[bytes]:
        """The frames the latest snapshot calls for on this socket."""
        snapshot = self.snapshot
        if snapshot is None:
            return []
        out = []
        view = msgspec.to_builtins(pools_view(snapshot))
        # The reader counts once: a socket whose guest the count does not hold yet (no
        # hello, or a hello after the count was read) adds its reader.
        if self.player is None or self.player.id not in snapshot.here:
            view["online"] += 1
        counts = msgspec.json.encode({"type": "pools", **view})
        if counts != self.counts:
            self.counts = counts
            out.append(counts)
        if self.player is None:
            return out
        # The seating first: a page leaves for its table rather than show "not waiting".
        seated = snapshot.seated.get(self.player.id)
        if (
            seated is not None
            and seated.match_id not in self.told
            and seated.at >= self.since - _RECENT
        ):
            self.told.add(seated.match_id)
            frame = {"type": "seated", **msgspec.to_builtins(seated)}
            del frame["at"]
            out.append(msgspec.json.encode(frame))
        now = time.time()
        pool = self._pool_frame(snapshot, self.player.id, now)
        # Without `now`, which moves every time: a frame only when the wait changed.
        if pool != self.pool:
            self.pool = pool
            out.append(pool[:-1] + b',"now":' + msgspec.json.encode(now) + b"}")
        return out

    @staticmethod
    def _pool_frame(snapshot: PoolsSnapshot, player_id: str, now: float) -> bytes:
        for name, waiting in snapshot.waiting.items():
            for entry in waiting:
                if entry.player_id == player_id:
                    view = entry_view(KINDS[name], entry, len(waiting), now)
                    return msgspec.json.encode({"type": "pool", **msgspec.to_builtins(view)})
        return b'{"type":"pool","pool":null}'


@websocket("/ws/lobby")
async def lobby_socket(
    socket: WebSocket[Any, Any, Any],
    engine: NamedDependency[AsyncEngine],
    store: NamedDependency[EventStore],
    guests: NamedDependency[Guests],
    matches: NamedDependency[MatchReads],
    parties: NamedDependency[PartyCommands],
    lobby: NamedDependency[LobbyPresence],
    pools: NamedDependency[Pools],
    hub: NamedDependency[LiveHub],
) -> None:
    """The open parties and quick play, now and after each change (module docstring)."""
    limits = socket.app.state.limits
    client = client_key(socket.scope)
    await socket.accept()
    channel = Channel(socket)
    guest = _Guest()
    sending = asyncio.Lock()  # the pools pump and a hello both send the guest's frames

    async def listing() -> bytes:
        listed = party_list_view(await parties.list_open()).parties
        return msgspec.json.encode(PartiesFrame(parties=listed))

    async def parties_pump() -> None:
        sent = b""
        # One re-read per change for all the lobby sockets of this process (live_view.py).
        async with contextlib.aclosing(hub.view(PARTY_PREFIX, listing, LOBBY_INTERVAL)) as frames:
            async for frame in frames:
                if frame != sent:
                    await channel.send(frame)
                    sent = frame

    async def pools_pump() -> None:
        snapshots = hub.view(POOL_PREFIX, pools.snapshot, POOLS_INTERVAL)
        async with contextlib.aclosing(snapshots) as values:
            async for snapshot in values:
                async with sending:
                    guest.snapshot = snapshot
                    await channel.send_all(guest.frames())

    async def live_listing() -> bytes:
        live = await live_matches(engine, store, matches)
        return msgspec.json.encode(MatchesFrame(matches=live))

    async def matches_pump() -> None:
        sent = b""
        # One re-read for all the lobby sockets of this process, after a change of any
        # match stream (a start, a move, an end), at most once per `MATCHES_INTERVAL`.
        views = hub.view(MATCH_PREFIX, live_listing, MATCHES_INTERVAL)
        async with contextlib.aclosing(views) as frames:
            async for frame in frames:
                if frame != sent:
                    await channel.send(frame)
                    sent = frame

    async def pump() -> None:
        await first_of(parties_pump(), pools_pump(), matches_pump())

    async def hello(token: str) -> None:
        if guest.player is None:
            player = await hello_player(guests, limits, client, token)
            await lobby.hold(player.id)
            hub.wake_view(POOL_PREFIX)  # one more online
            guest.player, guest.since = player, time.time()
        async with sending:
            # The guest's wait at once, from the latest snapshot (the pump sends the rest).
            await channel.send(msgspec.json.encode({"type": "hello", "player_id": guest.player.id}))
            await channel.send_all(guest.frames())

    try:
        await serve(channel, pump, ping_or_hello(hello, channel.counters), "lobby")
    finally:
        if guest.player is not None:
            lobby.release(guest.player.id)
