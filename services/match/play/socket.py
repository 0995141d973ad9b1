"""The match socket `/ws/matches/{match_id}?from=N&tail=K` (docs/design.md#the-match-service;
docs/api.md).

It first sends every event with version >= N (what the client missed), then each new event
as it is committed, in version order, each exactly once, and after each batch of events
(the events one read returned; the catch-up is the first batch, even when empty) a
`state` frame: the match as `GET /api/matches/{id}` shows it and the legal moves of the
seat to act, from a fold the socket keeps of the events it streams (no query per event).
A batch goes out as one `batch` frame, `{"type": "batch", "frames": [event frames...,
state frame]}` (a long catch-up in several, `BATCH_EVENTS` events each, the state in the
last): one message per batch and socket instead of one per event and one more for the
state, which had been most of the socket's sends (docs/benchmarks.md).

`?tail=K` bounds the catch-up: when more than K events were missed, only the last K are
sent, after a `{"type": "skipped", "from": N, "until": S}` frame naming the versions left
out (N..S-1, read on demand with `GET /api/matches/{id}/log?before=S`). A page opening a
match of 2,000 events then gets its last K and the state, not the whole match: what it
draws first does not grow with the match (docs/benchmarks.md, `ludo bench site`). Every
event from S on is still sent exactly once, and the state frame is the fold of all.

Client messages: `hello` (presence in a seat, and who the commands are for), `ping`, and
the commands `roll`, `move`, `leave`, `reclaim`, `concede`, carried out through the table the HTTP
routes use too (`player_commands.PLAYER_COMMANDS`: same rules, errors and idempotency; the
message's `id` is the `Idempotency-Key`). A command is answered by a `result` or an `error` frame;
its events arrive as event frames like anyone else's.

Beside the match's own frames (and never counted in their versions), the socket carries the
match's quick-chat stamps and who is connected: `{"type": "stamp", "version", "seat",
"stamp", "at", "recorded_at"}` for each stamp sent from the socket's connection on (or from
`?stamps=N`, the stamps stream's version, after a reconnect), from the stamps stream's own
follower; `{"type": "presence", "connected": [seats]}` at connect and after each change
(a shared view re-read on the presence hints, `play/presence.py`); and, once the match is over,
`{"type": "analysis", "ready": true}` as soon as its analysis is written (a shared view
re-read on the analysis consumer's hints, `services/shared/analysis_hints.py`), so the end
card reads it at once. The client message
`{"type": "stamp", "stamp": id}` sends one (`play/stamps.py`: the HTTP route's rules and
errors), answered `{"type": "stamped", "id", "version", "duplicate"}` or an error frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from datetime import datetime, timedelta
from functools import partial
from typing import Annotated, Any, Literal, NamedTuple

import msgspec
import structlog
from litestar import WebSocket, websocket
from litestar.di import NamedDependency
from litestar.params import FromPath, QueryParameter
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.decider import MatchState, apply, current_legal_moves
from domain.errors import Invalid
from domain.streams import match_stream, stamps_stream
from replays.board_view import OptionOut
from services.match.guests import Guests, Player
from services.match.ids import check_id
from services.match.live_hub import LiveHub
from services.match.play.deadlines import Deadlines
from services.match.play.player_commands import PLAYER_COMMANDS
from services.match.play.presence import Presence, presence_hint_stream
from services.match.play.reads import MatchReads, MatchRow
from services.match.play.schemas import MatchOut
from services.match.play.service import MatchCommands
from services.match.play.stamps import Stamps, stamp_out
from services.match.play.views import match_view, option_view
from services.match.schemas import SeatIndex, StampId
from services.match.sockets import (
    PONG,
    BadMessage,
    Channel,
    Ping,
    error_frame,
    hello_player,
    open_socket,
    parse_message,
    reply_error,
    serve,
    socket_counters,
)
from services.shared.analysis_hints import analysed, analysis_hint_stream
from services.shared.background import first_of
from services.shared.errors import ErrorBody
from services.shared.eventstore import EventStore, StoredEvent
from services.shared.limits import Limits, client_key
from services.shared.logging import describe_exception
from services.shared.metrics import Counters

__all__ = [
    "BATCH_EVENTS",
    "MAX_TAIL",
    "MatchFeed",
    "batch_frames",
    "event_message",
    "match_socket",
]

_log = structlog.get_logger(__name__)

# ------------------------------------------------------------------------ client messages


class _Message(msgspec.Struct, tag_field="type", forbid_unknown_fields=True):
    pass


class Hello(_Message, tag="hello"):
    token: str


class RollMessage(_Message, tag="roll"):
    id: str | None = None


class MoveMessage(_Message, tag="move"):
    piece: SeatIndex  # 0-3, as the HTTP body's
    id: str | None = None


class LeaveMessage(_Message, tag="leave"):
    id: str | None = None


class ReclaimMessage(_Message, tag="reclaim"):
    id: str | None = None


class ConcedeMessage(_Message, tag="concede"):
    id: str | None = None


class StampMessage(_Message, tag="stamp"):
    stamp: StampId  # an id of the fixed set; the decider refuses any other
    id: str | None = None


Command = RollMessage | MoveMessage | LeaveMessage | ReclaimMessage | ConcedeMessage
_MESSAGES = Hello | Ping | Command | StampMessage
# A command message's `type` (its tag) names its entry in PLAYER_COMMANDS
# (tests/services/match/test_player_commands.py checks there is one for every command).
_ACTIONS: dict[type[Any], str] = {
    kind: str(kind.__struct_config__.tag)
    for kind in (RollMessage, MoveMessage, LeaveMessage, ReclaimMessage, ConcedeMessage)
}

# ---------------------------------------------------------------------- frames it sends


class ResultFrame(msgspec.Struct, kw_only=True):
    """A command's outcome: what `POST /api/matches/{id}/<command>` would have returned."""

    type: Literal["result"] = "result"
    id: str | None
    command: str
    version: int
    duplicate: bool
    events: list[ResultEvent]


class ResultEvent(msgspec.Struct, kw_only=True):
    """An `EventOut` (the same JSON) with its data embedded as stored: the exact bytes,
    not decoded and encoded again for each command."""

    version: int
    type: str
    data: msgspec.Raw
    recorded_at: str
    hash: str


def event_message(stored: StoredEvent) -> bytes:
    """The JSON frame of one stored event (its data bytes embedded as is)."""
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


# Events in one batch frame at most: a catch-up of a long match (a few hundred events of
# ~250 bytes) goes out in frames of a few tens of kilobytes, not one of hundreds.
BATCH_EVENTS = 200


def batch_frames(events: list[StoredEvent], state: bytes) -> list[str]:
    """The batch frames (text) of `events` (one read of the stream) and the `state` frame
    after them: one frame, or more for a long catch-up, the state in the last."""
    frames = []
    for start in range(0, max(len(events), 1), BATCH_EVENTS):
        parts = [event_message(e) for e in events[start : start + BATCH_EVENTS]]
        if start + BATCH_EVENTS >= len(events):
            parts.append(state)
        frames.append((b'{"type":"batch","frames":[' + b",".join(parts) + b"]}").decode())
    return frames


def result_event(e: StoredEvent) -> ResultEvent:
    return ResultEvent(
        version=e.version,
        type=e.type,
        data=msgspec.Raw(e.data),
        recorded_at=e.recorded_at.isoformat(),
        hash=e.hash.hex(),
    )


class StateFrame(msgspec.Struct, kw_only=True):
    """The match after the last event sent: `GET /api/matches/{id}` and its legal moves."""

    type: Literal["state"] = "state"
    version: int
    match: MatchOut
    moves: list[OptionOut]


class MatchFeed:
    """The socket's fold of its match, advanced by the batches it streams, and the state
    frame of it. Starts from the service's (cached) state, so a client joining late does
    not make the socket read the whole stream."""

    def __init__(
        self,
        store: EventStore,
        deadlines: Deadlines,
        match_id: str,
        state: MatchState,
        row: MatchRow,
    ) -> None:
        self.store = store
        self.deadlines = deadlines
        self.match_id = match_id
        self.state = state
        self.row = row
        self.last_at: datetime | None = None  # recorded_at of event state.version - 1

    async def advance(self, batch: list[StoredEvent]) -> None:
        """Fold the events of `batch` the state has not seen yet."""
        for stored in batch:
            if stored.version > self.state.version:
                # Only when the client asked from past the state's version: read the gap.
                await self._read(stored.version)
            if stored.version == self.state.version:
                apply(self.state, stored.event)
                self.last_at = stored.recorded_at
            elif stored.version == self.state.version - 1:
                self.last_at = stored.recorded_at
        if self.last_at is None and self.state.version:
            await self._read(self.state.version, last=True)

    async def _read(self, upto: int, *, last: bool = False) -> None:
        """Fold the stored events before version `upto` (`last`: re-read the last one
        folded, for its time)."""
        start = upto - 1 if last else self.state.version
        for stored in await self.store.read_stream(
            match_stream(self.match_id), start, limit=upto - start
        ):
            if stored.version == self.state.version:
                apply(self.state, stored.event)
            self.last_at = stored.recorded_at

    def frames(self, batch: list[StoredEvent]) -> list[str]:
        """The batch frames of `batch`, advanced over, with the state frame after it."""
        return batch_frames(batch, self.frame())

    def frame(self) -> bytes:
        state, row = self.state, self.row
        deadline = None
        timing = self.deadlines.timing(state, row)
        if timing is not None and self.last_at is not None:
            # The deadline row was written with the same now() as the last event.
            kind, seconds = timing
            deadline = (kind, (self.last_at + timedelta(seconds=seconds)).isoformat())
        match = match_view(self.match_id, state, row, deadline)
        moves = [option_view(m) for m in current_legal_moves(state)]
        return msgspec.json.encode(StateFrame(version=state.version, match=match, moves=moves))


# -------------------------------------------------------------------------------- socket


def _from_version(text: str | None) -> int:
    """`?from=N`: the first version to send (default 0)."""
    if text is None:
        return 0
    if not text.isascii() or not text.isdigit():
        raise Invalid(f"from: expected a version >= 0, got {text!r}", field="from")
    return int(text)


# The longest catch-up `?tail=` may ask for: one batch frame.
MAX_TAIL = BATCH_EVENTS


def _tail(text: str | None) -> int | None:
    """`?tail=K`: at most the last K missed events (None: all of them)."""
    if text is None:
        return None
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_TAIL:
        raise Invalid(f"tail: expected 1 to {MAX_TAIL} events, got {text!r}", field="tail")
    return int(text)


def skipped_frame(from_version: int, until: int) -> bytes:
    """What a bounded catch-up left out: the events from `from_version` to `until` - 1."""
    return msgspec.json.encode({"type": "skipped", "from": from_version, "until": until})


def _stamps_from(text: str | None) -> int | None:
    """`?stamps=N`: the first stamp version to send (None: only stamps sent from now)."""
    if text is None:
        return None
    if not text.isascii() or not text.isdigit():
        raise Invalid(f"stamps: expected a version >= 0, got {text!r}", field="stamps")
    return int(text)


def stamp_frames(batch: list[StoredEvent]) -> list[bytes]:
    """The `stamp` frames of a batch of the stamps stream."""
    return [
        msgspec.json.encode({"type": "stamp", **msgspec.structs.asdict(stamp_out(e))})
        for e in batch
    ]


class _SessionParts(NamedTuple):
    """The parts a socket's client messages go to."""

    guests: Guests
    commands: MatchCommands
    presence: Presence
    stamps: Stamps


class _Session:
    """The client messages of one match socket: who said hello, and their commands."""

    def __init__(
        self,
        parts: _SessionParts,
        match_id: str,
        limits: Limits,
        client: str,
        counters: Counters,
    ) -> None:
        self.parts = parts
        self.counters = counters
        self.match_id = match_id
        self.limits = limits
        self.client = client
        self.player: Player | None = None
        self.seat: int | None = None

    async def handle(self, raw: str | bytes) -> bytes:
        key: str | None = None
        what = "message"
        try:
            key, message = parse_message(raw, _MESSAGES)
            what = type(message).__name__
            if isinstance(message, Ping):
                return PONG
            if isinstance(message, Hello):
                return await self._hello(message.token)
            if isinstance(message, StampMessage):
                return await self._stamp(message, key)
            return await self._command(message, key)
        except BadMessage as error:
            return reply_error(error, error.reply_to, what, self.counters)
        except Exception as error:
            return reply_error(error, key, what, self.counters)

    async def _hello(self, token: str) -> bytes:
        """Presence in the seat (None: a spectator). Once in a seat, a repeated hello
        changes nothing."""
        if self.seat is None:
            player = await hello_player(self.parts.guests, self.limits, self.client, token)
            self.seat = await self.parts.presence.connected(self.match_id, player)
            self.player = player
        return msgspec.json.encode({"type": "hello", "seat": self.seat})

    async def _command(self, message: Command, key: str | None) -> bytes:
        action = _ACTIONS[type(message)]
        if self.player is None:
            body = ErrorBody(error="unauthorized", detail="say hello with your token first")
            return error_frame(401, body, reply_to=key)
        piece = message.piece if isinstance(message, MoveMessage) else None
        command = PLAYER_COMMANDS[action]
        result = await command.run(
            self.parts.commands, self.match_id, self.player, message.id, piece
        )
        frame = ResultFrame(
            id=message.id,
            command=action,
            version=result.next_version,
            duplicate=result.duplicate,
            events=[result_event(e) for e in result.events],
        )
        return msgspec.json.encode(frame)

    async def _stamp(self, message: StampMessage, key: str | None) -> bytes:
        if self.player is None:
            body = ErrorBody(error="unauthorized", detail="say hello with your token first")
            return error_frame(401, body, reply_to=key)
        result = await self.parts.stamps.send(self.match_id, self.player, message.stamp, message.id)
        return msgspec.json.encode(
            {
                "type": "stamped",
                "id": message.id,
                "version": result.events[0].version,
                "duplicate": result.duplicate,
            }
        )

    async def close(self) -> None:
        if self.seat is not None:
            # Shielded: the socket's task may be cancelled as it closes (the server
            # stopping), and a cancel inside the write would leave its pooled connection
            # unreturned and the close unrecorded (no grace period, no line for disputes).
            write = asyncio.ensure_future(
                self.parts.presence.disconnected(self.match_id, self.seat)
            )
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:
                write.add_done_callback(_log_failed_disconnect)
                raise
            except Exception as exc:  # the database is away: the presence is not recorded
                _log.warning("socket_disconnect_failed", **describe_exception(exc))


def _log_failed_disconnect(write: asyncio.Future[None]) -> None:
    if not write.cancelled() and isinstance(exc := write.exception(), Exception):
        _log.warning("socket_disconnect_failed", **describe_exception(exc))


@websocket("/ws/matches/{match_id:str}")
async def match_socket(
    socket: WebSocket[Any, Any, Any],
    match_id: FromPath[str],
    engine: NamedDependency[AsyncEngine],
    store: NamedDependency[EventStore],
    guests: NamedDependency[Guests],
    matches: NamedDependency[MatchReads],
    deadlines: NamedDependency[Deadlines],
    hub: NamedDependency[LiveHub],
    commands: NamedDependency[MatchCommands],
    presence: NamedDependency[Presence],
    stamps: NamedDependency[Stamps],
    from_text: Annotated[str | None, QueryParameter(name="from")] = None,
    stamps_text: Annotated[str | None, QueryParameter(name="stamps")] = None,
    tail_text: Annotated[str | None, QueryParameter(name="tail")] = None,
) -> None:
    """Events of one match from `?from=N` on (`?tail=K`: at most the last K of those
    missed, after a `skipped` frame), then live, each batch followed by a state
    frame. Send `{"type": "hello", "token": "..."}` to be counted as present in your seat
    (a CPU stand-in hands the seat back, and closing the last socket starts the reconnect
    grace period) and to send commands; the token goes in a message, not the URL, so it
    never lands in access logs."""

    async def opening() -> tuple[int, int | None, int | None, str, MatchState, MatchRow]:
        # The query first, then the id: the order the refusals were always named in.
        from_version = _from_version(from_text)
        stamps_from = _stamps_from(stamps_text)
        tail = _tail(tail_text)
        checked_id = check_id(match_id, "match")
        state = await matches.state(checked_id)  # 404 for an unknown match
        row = await matches.row(match_stream(checked_id))
        return from_version, stamps_from, tail, checked_id, state, row

    opened = await open_socket(socket, "match", opening)
    if opened is None:
        return
    from_version, stamps_from, tail, match_id, state, row = opened
    structlog.contextvars.bind_contextvars(match_id=match_id)
    channel = Channel(socket)
    head = state.version  # the feed advances `state` in place from here on
    feed = MatchFeed(store, deadlines, match_id, state, row)
    session = _Session(
        _SessionParts(guests, commands, presence, stamps),
        match_id,
        socket.app.state.limits,
        client_key(socket.scope),
        socket_counters(socket),
    )

    over = asyncio.Event()  # the match is over: its analysis is coming

    async def pump() -> None:
        await first_of(match_pump(), stamps_pump(), presence_pump(), analysis_pump())

    async def stamps_pump() -> None:
        stream = stamps_stream(match_id)
        start = stamps_from
        if start is None:
            start = await store.stream_version(stream)
        async with contextlib.aclosing(hub.follow(stream, start)) as batches:
            async for batch in batches:
                if batch:
                    key = ("stamps", match_id, batch[0].version, batch[-1].version)
                    await channel.send_all(hub.shared_frame(key, partial(stamp_frames, batch)))

    async def presence_pump() -> None:
        # One shared re-read per presence change of the match, on its hints only: no
        # poll, so an idle match costs the database nothing (the hub wakes every view
        # when its listener reconnects, the one time hints may have been missed).
        hint = presence_hint_stream(match_id)
        load = partial(presence.seats_connected, match_id)
        views = hub.view(hint, load, min_interval=0.25, poll_seconds=math.inf)
        sent = None
        async with contextlib.aclosing(views) as values:
            async for connected in values:
                if connected != sent:
                    sent = connected
                    await channel.send(
                        msgspec.json.encode({"type": "presence", "connected": connected})
                    )

    async def analysis_pump() -> None:
        # Once the match is over: one shared re-read per analysis hint of the match (no
        # poll), until the analysis is written; then `ready` once, and nothing more.
        await over.wait()
        load = partial(analysed, engine, match_id)
        views = hub.view(analysis_hint_stream(match_id), load, 0.1, poll_seconds=math.inf)
        async with contextlib.aclosing(views) as values:
            async for ready in values:
                if ready:
                    break
        await channel.send(msgspec.json.encode({"type": "analysis", "ready": True}))
        await asyncio.Future()  # done: the other pumps go on

    async def match_pump() -> None:
        start = from_version
        if tail is not None and head - from_version > tail:
            # The head was read at connect: the events from `start` on reach it and beyond.
            start = head - tail
            await channel.send(skipped_frame(from_version, start))
        batches_of = hub.follow(match_stream(match_id), start)
        async with contextlib.aclosing(batches_of) as batches:
            async for batch in batches:
                await feed.advance(batch)
                if feed.state.status == "finished":
                    over.set()
                # Every socket of the match here that got the same batch (all of them, but
                # for catch-ups) sends the same bytes: made once for all. The events of a
                # version never change, nor the state after them (given the last one's time).
                first = batch[0].version if batch else None
                key = ("batch", match_id, first, feed.state.version, feed.last_at)
                frames = hub.shared_frame(key, partial(feed.frames, batch))
                await channel.send_all(frames)

    try:
        await serve(channel, pump, session.handle, f"live-{match_id}")
    finally:
        await session.close()
        structlog.contextvars.unbind_contextvars("match_id")
