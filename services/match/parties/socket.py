"""The party socket `/ws/parties/{party_id}` (docs/api.md); the lobby's is lobby/socket.py.

It sends `{"type": "party", "party": <GET /api/parties/{id}>}` on connect and again after
every batch of new events on the party's stream (seats, settings, the match it plays),
folded with `domain.party`, and answers `ping` with `pong`.
"""

from __future__ import annotations

import contextlib
from typing import Any

import msgspec
import structlog
from litestar import WebSocket, websocket
from litestar.di import NamedDependency
from litestar.params import FromPath

from domain import party as pd
from domain.streams import party_stream
from services.match.ids import check_id
from services.match.live_hub import LiveHub
from services.match.parties.schemas import PartyFrame
from services.match.parties.service import PartyCommands
from services.match.parties.views import party_view
from services.match.sockets import Channel, open_socket, ping_only, serve

__all__ = ["party_socket"]


@websocket("/ws/parties/{party_id:str}")
async def party_socket(
    socket: WebSocket[Any, Any, Any],
    party_id: FromPath[str],
    parties: NamedDependency[PartyCommands],
    hub: NamedDependency[LiveHub],
) -> None:
    """The party, now and after each change."""

    async def opening() -> tuple[str, pd.PartyState]:
        checked_id = check_id(party_id, "party")
        return checked_id, await parties.load(checked_id)  # 404 for an unknown party

    opened = await open_socket(socket, "party", opening)
    if opened is None:
        return
    party_id, state = opened
    structlog.contextvars.bind_contextvars(party_id=party_id)
    channel = Channel(socket)

    async def pump() -> None:
        # The first batch (what changed since the load, often nothing) sends the first frame.
        async with contextlib.aclosing(
            hub.follow(party_stream(party_id), state.version)
        ) as batches:
            async for batch in batches:
                pd.fold([pd.decode_party_event(e.data) for e in batch], state)
                frame = PartyFrame(party=party_view(party_id, state))
                await channel.send(msgspec.json.encode(frame))

    try:
        await serve(channel, pump, ping_only, party_stream(party_id))
    finally:
        structlog.contextvars.unbind_contextvars("party_id")
