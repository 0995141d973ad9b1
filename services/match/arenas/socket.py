"""The arena socket `/ws/tournament/{id}` (docs/arenas.md): the arena live, and a guest's own
state in it.

Frames the server sends:

- `{"type": "arena", "arena": ArenaView}` on connect, after `hello`, and after each change
  of the view (re-read once per change of the arena's stream for every socket of the
  process on that arena, at most once per `ARENA_INTERVAL`, and each `_CLOCK` seconds
  without one, for the clock and the players' states). One socket never gets two arena
  frames within `ARENA_INTERVAL`: what changes meanwhile is sent when the interval is up,
  the latest view only. An unchanged view is sent again every `ARENA_RESEND` seconds (the page
  keeps its own clock from `now`). Each frame's `you` is read from the very view it
  travels with (`arena_views.you_in`), so the two always tell one moment of the arena.
- after `{"type": "hello", "token": ...}`: `{"type": "hello", "player_id": ...}`, from then
  each `arena` frame's `you` is the guest's, and `{"type": "paired", "match_id",
  "party_id"}` when their next match is ready: at once (never held back by the interval),
  from the arena's events as this process's follower of the stream reads them (not after
  the view's re-read), and also told to a socket opened within `_RECENT` seconds of the
  pairing (a reload).

A socket that said hello keeps its guest connected for the arena's pairing (the
lobby's presence heartbeat, `players/lobby_presence.py`). It answers `ping` with `pong`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any, Final

import msgspec
from litestar import WebSocket, websocket
from litestar.di import NamedDependency
from litestar.params import FromPath

from domain import arena as ar
from domain.streams import tournament_stream
from services.match.arenas.schemas import ArenaView
from services.match.arenas.service import Arenas
from services.match.arenas.views import you_in
from services.match.guests import Guests, Player
from services.match.ids import check_id
from services.match.live_hub import LiveHub
from services.match.players.lobby_presence import LobbyPresence
from services.match.sockets import Channel, hello_player, open_socket, ping_or_hello, serve
from services.shared.background import first_of
from services.shared.limits import client_key

__all__ = ["ARENA_INTERVAL", "ARENA_RESEND", "arena_socket"]

# Seconds: the least time between two re-reads of an arena, and between two arena frames
# on one socket.
ARENA_INTERVAL: Final = 0.5
_CLOCK: Final = 1.0  # seconds between two re-reads when nothing changed (the clock moves)
_RECENT: Final = 30.0  # seconds: a pairing this fresh is told to a socket opened after it
ARENA_RESEND: Final = 10.0  # seconds: an unchanged view is sent again this often (the clock)


class _Loaded(msgspec.Struct, frozen=True):
    """One read of the arena: its view for anyone, and its creator (for `you`)."""

    view: ArenaView
    creator_id: str | None


@websocket("/ws/tournament/{arena_id:str}")
async def arena_socket(
    socket: WebSocket[Any, Any, Any],
    arena_id: FromPath[str],
    guests: NamedDependency[Guests],
    lobby: NamedDependency[LobbyPresence],
    arenas: NamedDependency[Arenas],
    hub: NamedDependency[LiveHub],
) -> None:
    """The arena now and after each change (module docstring)."""
    limits = socket.app.state.limits
    client = client_key(socket.scope)

    async def opening() -> str:
        checked_id = check_id(arena_id, "arena")
        await arenas.state(checked_id)  # 404 for an unknown arena
        return checked_id

    opened = await open_socket(socket, "tournament", opening)
    if opened is None:
        return
    arena_id = opened
    channel = Channel(socket)
    player: Player | None = None
    since = time.time()
    told: set[str] = set()
    shown = (b"", 0.0)  # the last arena frame sent without its `now`, and when
    latest: _Loaded | None = None
    sending = asyncio.Lock()
    due = asyncio.Event()  # an arena frame waits for the interval to be up

    async def load() -> _Loaded:
        # The view is built from one state of the fold, synchronously (`arena_view`):
        # `you` is read from it later, never from the fold as it is by then.
        view = await arenas.view(arena_id)
        state = await arenas.state(arena_id)
        assert state.created is not None
        return _Loaded(view, state.created.creator_id)

    def paired(match_id: str, party_id: str | None) -> list[bytes]:
        """The `paired` frame of `match_id`, once per socket."""
        if match_id in told:
            return []
        told.add(match_id)
        frame = {"type": "paired", "match_id": match_id, "party_id": party_id}
        return [msgspec.json.encode(frame)]

    async def deliver() -> None:
        """Send what the latest view calls for (`sending` held): a pairing not told yet (a
        socket opened just after its player's pairing: a reload), then the arena when it
        changed (or every `ARENA_RESEND` seconds) if the last arena frame is `ARENA_INTERVAL`
        old; else the flusher sends it when it is."""
        nonlocal shown
        if latest is None:
            return
        view = latest.view
        if player is not None:
            you = you_in(view, player.id, latest.creator_id)
            view = msgspec.structs.replace(view, you=you)
            if (
                you is not None
                and you.match_id is not None
                and arenas.paired_lately(arena_id, you.match_id, since - _RECENT)
            ):
                await channel.send_all(paired(you.match_id, you.party_id))
        same = msgspec.json.encode(msgspec.structs.replace(view, now=""))
        now = time.monotonic()
        if same == shown[0] and now - shown[1] < ARENA_RESEND:
            return
        if now - shown[1] < ARENA_INTERVAL:
            due.set()
            return
        shown = (same, now)
        await channel.send(msgspec.json.encode({"type": "arena", "arena": view}))

    async def flusher() -> None:
        while True:
            await due.wait()
            # A throttle, not a synchronisation: the frame waits out the interval.
            await asyncio.sleep(max(0.0, shown[1] + ARENA_INTERVAL - time.monotonic()))
            async with sending:
                due.clear()
                await deliver()

    async def view_pump() -> None:
        nonlocal latest
        views = hub.view(tournament_stream(arena_id), load, ARENA_INTERVAL, poll_seconds=_CLOCK)
        async with contextlib.aclosing(views) as values:
            async for value in values:
                async with sending:
                    latest = value
                    await deliver()

    async def pairing_pump() -> None:
        # The player's pairing at once, from the arena's events as they come (one
        # follower per stream and process, no read of its own): not after the view's
        # re-read, which reads every player's rating and completion.
        stream = tournament_stream(arena_id)
        start = (await arenas.state(arena_id)).version
        async with contextlib.aclosing(hub.follow(stream, start)) as batches:
            async for batch in batches:
                if player is None:
                    continue
                for record in batch:
                    if record.type != "TablesPaired":
                        continue
                    event = ar.decode_arena_event(
                        record.data, type_name=record.type, schema_version=record.schema_version
                    )
                    assert isinstance(event, ar.TablesPaired)
                    for table in event.tables:
                        if player.id in table.players:
                            async with sending:
                                await channel.send_all(paired(table.match_id, table.party_id))

    async def pump() -> None:
        await first_of(view_pump(), pairing_pump(), flusher())

    async def hello(token: str) -> None:
        nonlocal player
        if player is None:
            player = await hello_player(guests, limits, client, token)
            await lobby.hold(player.id)
        nonlocal shown
        async with sending:
            await channel.send(msgspec.json.encode({"type": "hello", "player_id": player.id}))
            shown = (b"", shown[1])  # `you` is theirs from now: the arena again, in turn
            await deliver()

    try:
        await serve(channel, pump, ping_or_hello(hello, channel.counters), "tournament")
    finally:
        if player is not None:
            lobby.release(player.id)
