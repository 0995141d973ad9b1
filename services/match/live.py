"""Live updates: a WebSocket per match streaming its events (DESIGN.md §5).

A client connects to `/ws/matches/{match_id}?from=N` and first receives every event with
version >= N (what it missed), then each new event as it is committed, in version order,
each exactly once. Any instance serves any match: appends on other instances reach this
one through PostgreSQL LISTEN/NOTIFY.

NOTIFY is only a wake-up hint (a hint can be lost between commit and NOTIFY, or during a
listener reconnect), so every socket also re-reads its stream after `poll_seconds` without
a hint. Reading always starts at the socket's own next version, which is why a lost hint
delays an event but never loses it, and a reconnecting client that names the version it
has seen loses nothing.

Messages sent (JSON): one frame per event, `{"type": "event", "version": v,
"event_type": t, "recorded_at": iso, "hash": hex, "data": {...}}` (the fields of
`GET /api/matches/{id}/events`). Client messages: `{"type": "hello", "token": ...}` claims
presence in a seat (answered `{"type": "hello", "seat": n | null}`), `{"type": "ping"}` is
answered `{"type": "pong"}`. A message that is not JSON, of another type, or a hello with
an unknown token is answered `{"type": "error", "error": code, "detail", "field"?}` and
the stream goes on; a bad `?from=` or an unknown match gets an error frame and the close
code 4422 or 4404.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Annotated, Any

import msgspec
import structlog
from litestar import WebSocket, websocket
from litestar.di import NamedDependency
from litestar.exceptions import WebSocketDisconnect
from litestar.params import FromPath, QueryParameter

from services.match.service import MatchService, check_id, match_stream
from services.shared.errors import AppError
from services.shared.eventstore import EventStore, StoredEvent

__all__ = ["LiveHub", "event_message", "match_socket"]

_log = structlog.get_logger(__name__)


def event_message(stored: StoredEvent) -> bytes:
    """The JSON frame a client receives for one stored event (its data bytes embedded as is)."""
    head = msgspec.json.encode(
        {
            "type": "event",
            "version": stored.version,
            "event_type": stored.type,
            "recorded_at": stored.recorded_at.isoformat(),
            "hash": stored.hash.hex(),
        }
    )
    # Splice the stored bytes in verbatim: they are the hashed form of the event.
    return head[:-1] + b',"data":' + stored.data + b"}"


class LiveHub:
    """One per process: listens for NOTIFY hints and wakes the sockets of that stream."""

    def __init__(self, store: EventStore, *, poll_seconds: float = 2.0) -> None:
        self.store = store
        self.poll_seconds = poll_seconds
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._listen(), name="live-hub")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _listen(self) -> None:
        while True:
            try:
                async with self.store.listen() as listener:
                    # After a (re)connect hints may have been missed: wake everyone once.
                    self._wake_all()
                    async for note in listener:
                        for waiter in self._waiters.get(note.stream_id, ()):
                            waiter.set()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database restarted or the connection dropped
                _log.warning("live_listener_reconnecting", exc_info=True)
                self._wake_all()
                await asyncio.sleep(1.0)

    def _wake_all(self) -> None:
        for waiters in self._waiters.values():
            for waiter in waiters:
                waiter.set()

    async def follow(self, stream_id: str, from_version: int) -> AsyncIterator[StoredEvent]:
        """Every event of `stream_id` from `from_version` on, forever (until cancelled)."""
        waiter = asyncio.Event()
        self._waiters[stream_id].add(waiter)
        try:
            next_version = from_version
            while True:
                waiter.clear()
                for stored in await self.store.read_stream(stream_id, next_version):
                    next_version = stored.version + 1
                    yield stored
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.wait(), self.poll_seconds)
        finally:
            waiters = self._waiters.get(stream_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self._waiters[stream_id]

    def watching(self) -> dict[str, Any]:
        """How many sockets follow each stream (for diagnostics)."""
        return {stream: len(waiters) for stream, waiters in self._waiters.items()}


# ------------------------------------------------------------------------------ the socket

_CLOSE_NOT_FOUND = 4404  # application close codes live in 4000-4999
_CLOSE_INVALID = 4422


def _from_version(text: str | None) -> int:
    """`?from=N`: the first version to send (default 0)."""
    if text is None:
        return 0
    if not text.isascii() or not text.isdigit():
        raise AppError(422, "invalid", f"from: expected a version >= 0, got {text!r}", "from")
    return int(text)


def _error(code: str, detail: str, field: str | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "error", "error": code, "detail": detail}
    if field is not None:
        frame["field"] = field
    return frame


def _error_frame(code: str, detail: str, field: str | None = None) -> bytes:
    return msgspec.json.encode(_error(code, detail, field))


async def _hello(
    service: MatchService, match_id: str, token: object, seat: int | None
) -> tuple[int | None, bytes]:
    """The seat after a `hello` (None: a spectator) and the frame that answers it."""
    if seat is None:  # a repeated hello, once present in a seat, changes nothing
        if not isinstance(token, str) or not token:
            return None, _error_frame("invalid", "hello needs the player's token", "token")
        player = await service.player_for_token(token)
        if player is None:
            return None, _error_frame("unauthorized", "unknown token", "token")
        seat = await service.connected(match_id, player)
    return seat, msgspec.json.encode({"type": "hello", "seat": seat})


@websocket("/ws/matches/{match_id:str}")
async def match_socket(
    socket: WebSocket[Any, Any, Any],
    match_id: FromPath[str],
    service: NamedDependency[MatchService],
    from_text: Annotated[str | None, QueryParameter(name="from")] = None,
) -> None:
    """Events of one match from `?from=N` on, then live. Send `{"type": "hello", "token":
    "..."}` to be counted as present in your seat (a CPU stand-in hands the seat back, and
    closing the last socket starts the reconnect grace period); the token goes in a message,
    not the URL, so it never lands in access logs."""
    hub: LiveHub = socket.app.state.hub
    # Accepted first, checked after: a refused upgrade is a bare HTTP 403 to a browser,
    # while an error frame says what was wrong.
    await socket.accept()
    try:
        from_version = _from_version(from_text)
        match_id = check_id(match_id, "match")
        if (await service.match_state(match_id)).status == "new":
            raise AppError(404, "not_found", "no such match")
    except AppError as error:
        await socket.send_json(_error(error.code, error.detail, error.field))
        await socket.close(code=_CLOSE_NOT_FOUND if error.status == 404 else _CLOSE_INVALID)
        return
    structlog.contextvars.bind_contextvars(match_id=match_id)
    lock = asyncio.Lock()  # one frame at a time: the pump and the replies share the socket

    async def send(frame: bytes) -> None:
        async with lock:
            await socket.send_data(frame.decode(), mode="text")

    async def pump() -> None:
        async for stored in hub.follow(match_stream(match_id), from_version):
            await send(event_message(stored))

    seat: int | None = None
    pumping = asyncio.create_task(pump(), name=f"live-{match_id}")
    try:
        while True:
            # A bad client message is answered with an error frame; the stream goes on.
            try:
                message = msgspec.json.decode(await socket.receive_data(mode="text"))
            except (msgspec.DecodeError, RecursionError):
                await send(_error_frame("malformed_json", "a message must be a JSON object"))
                continue
            kind = message.get("type") if isinstance(message, dict) else None
            if kind == "ping":
                await send(b'{"type":"pong"}')
            elif kind == "hello":
                seat, reply = await _hello(service, match_id, message.get("token"), seat)
                await send(reply)
            else:
                await send(_error_frame("invalid", 'expected {"type": "hello" | "ping"}', "type"))
    except WebSocketDisconnect:
        pass
    finally:
        pumping.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await pumping
        if seat is not None:
            await service.disconnected(match_id, seat)
        structlog.contextvars.unbind_contextvars("match_id")
