"""What the three live sockets share: client messages, error frames, one sender per socket.

Client messages are JSON objects of at most `MAX_MESSAGE` bytes, `{"type": ...}` plus the
fields of that type, checked strictly (no conversion of `"0"` to 0, no unknown fields).
A bad message is answered with an error frame and never closes the socket:

    {"type": "error", "id": <the message's id or null>, "status": <the HTTP status of
     the same failure>, "error": code, "detail": text, "field"?: name, "why"?: facts}

A socket refused at connect (unknown id, bad query) gets the same frame without `id`,
then the close code 4404 (not found) or 4422 (anything else).

Client messages over the socket's rate (`LUDO_WS_MESSAGE_RATE` a second, burst twice
that) are refused unread with an error frame of status 429 (`too_many_requests`, no `id`);
a client that keeps on (more refused messages in a row than the burst) is closed with 1008
(policy violation).

When the database cannot be reached, a command is answered with an error frame of status
503 (`database_unavailable`), and the socket stays open. When the reads that feed the socket
fail (the database went away: the socket's own re-read, the lobby's listing, or the load at
connect), the server sends the same 503 frame without `id` (`database_busy` instead when
the read ran past the statement timeout) and closes the socket with 1011
(internal error: this server cannot go on serving it; 1012, service restart, is left for the
server shutting down). The client reconnects from the last version it saw, so it misses
nothing and gets nothing twice; a socket is never left open without its feed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import msgspec
import structlog
from litestar import WebSocket
from litestar.exceptions import WebSocketDisconnect

from domain.errors import AppError, Invalid, Malformed, NotFound, Unauthenticated
from services.match.guests import Guests, Player
from services.shared.bodies import validation_field
from services.shared.errors import (
    DATABASE_BUSY,
    DATABASE_UNAVAILABLE,
    ErrorBody,
    TooLarge,
    count_database_error,
    database_busy,
    database_unavailable,
    known_error,
)
from services.shared.limits import Limits
from services.shared.logging import describe_exception
from services.shared.metrics import UNCOUNTED, Counters, app_metrics

__all__ = [
    "MAX_MESSAGE",
    "PONG",
    "BadMessage",
    "Channel",
    "Hello",
    "Ping",
    "error_frame",
    "hello_player",
    "open_socket",
    "parse_message",
    "ping_only",
    "ping_or_hello",
    "refuse",
    "reply_error",
    "serve",
    "socket_counters",
    "unavailable",
]

_log = structlog.get_logger(__name__)

T = TypeVar("T")

MAX_MESSAGE = 4096  # bytes; uvicorn's own limit (`--ws-max-size`) is checked before this
CLOSE_NOT_FOUND = 4404  # application close codes live in 4000-4999
CLOSE_INVALID = 4422
CLOSE_FEED_FAILED = 1011  # the server cannot go on feeding this socket: reconnect
CLOSE_POLICY = 1008  # the client kept sending faster than the message rate limit
TOO_MANY = ErrorBody(error="too_many_requests", detail="too many messages; slow down")
PONG = b'{"type":"pong"}'

# The header's name in the service's errors is the message field's name on a socket.
_FIELD_NAMES = {"Idempotency-Key": "id"}


class BadMessage(Exception):
    """A client message refused before it is handled: `error` says why, `reply_to` is its
    `id`, if it could be seen."""

    def __init__(self, error: AppError, reply_to: Any = None) -> None:
        super().__init__(error.detail)
        self.error = error
        self.reply_to = reply_to


class Ping(msgspec.Struct, tag_field="type", tag="ping", forbid_unknown_fields=True):
    """`{"type": "ping"}`, answered `{"type": "pong"}`."""


def error_frame(status: int, body: ErrorBody, *, reply_to: Any = ...) -> bytes:
    """An error frame; `reply_to`: the `id` of the message it answers (`...`: none)."""
    frame: dict[str, Any] = {"type": "error"}
    if reply_to is not ...:
        frame["id"] = reply_to
    frame |= {"status": status, "error": body.error, "detail": body.detail}
    if body.field is not None:
        frame["field"] = _FIELD_NAMES.get(body.field, body.field)
    if body.why is not None:
        frame["why"] = body.why
    return msgspec.json.encode(frame)


def socket_counters(socket: WebSocket[Any, Any, Any]) -> Counters:
    """The counters of the socket's app."""
    return app_metrics(socket.app).counters


def reply_error(exc: Exception, reply_to: Any, what: str, counters: Counters) -> bytes:
    """The error frame answering a message whose handling raised `exc`: the HTTP mapping
    of `services/shared/errors.py` for failures raised on purpose, else `internal` (500),
    logged once (a database error counted in `counters`)."""
    known = known_error(exc.error if isinstance(exc, BadMessage) else exc)
    if known is None or known[0] == 503:
        count_database_error(exc, counters)
    if known is None:
        _log.error("socket_message_failed", message=what, **describe_exception(exc))
        known = 500, ErrorBody(error="internal", detail="internal server error")
    return error_frame(*known, reply_to=reply_to)


@functools.lru_cache(maxsize=16)
def _decoder(kinds: Any) -> msgspec.json.Decoder[Any]:
    return msgspec.json.Decoder(kinds)


def parse_message(raw: str | bytes, kinds: Any) -> tuple[Any, Any]:
    """`(id, message)`: the message decoded as one of the tagged Structs `kinds`, and its
    `id` field when that is a string (else None). Raises `BadMessage`: `too_large`
    (413), `malformed_json` (400), `invalid` (422)."""
    data = raw.encode() if isinstance(raw, str) else raw
    if len(data) > MAX_MESSAGE:
        raise BadMessage(TooLarge(f"a message is at most {MAX_MESSAGE} bytes"))
    try:
        # A good message in one typed decode; any other is read again below, for the
        # error that names what is wrong (the same rules: both decodes are strict).
        message = _decoder(kinds).decode(data)
    except (msgspec.DecodeError, RecursionError):
        pass
    else:
        key = getattr(message, "id", None)
        return (key if isinstance(key, str) else None), message
    try:
        value = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        raise BadMessage(Malformed("a message must be a JSON object")) from None
    if not isinstance(value, dict):
        raise BadMessage(Invalid('a message is a JSON object with a "type"', field="type"))
    key = value.get("id")
    key = key if isinstance(key, str) else None
    try:
        return key, msgspec.convert(value, kinds, strict=True)
    except msgspec.ValidationError as error:
        field, detail = validation_field(error, named=True)
        field = field or "type"
        raise BadMessage(Invalid(f"{field}: {detail}", field=field), key) from None


class Channel:
    """One accepted socket: frames go out one at a time (a pump task and the replies share
    it); messages come in as text or bytes."""

    def __init__(self, socket: WebSocket[Any, Any, Any]) -> None:
        self.socket = socket
        self.lock = asyncio.Lock()
        self.counters = socket_counters(socket)

    async def send(self, frame: str | bytes) -> None:
        await self.send_all((frame,))

    async def send_all(self, frames: Iterable[str | bytes]) -> None:
        """`frames` (JSON text, or its UTF-8 bytes) in order, none of another sender's
        between them (the ASGI message built here: `send_data` builds it and checks the
        state again for each)."""
        send = self.socket.send
        async with self.lock:
            for frame in frames:
                text = frame if isinstance(frame, str) else frame.decode()
                await send({"type": "websocket.send", "bytes": None, "text": text})

    async def receive(self) -> str | bytes:
        """The next client message; raises `WebSocketDisconnect` once the client left."""
        event: dict[str, Any] = dict(await self.socket.receive())
        if event["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(detail="disconnect event", code=event.get("code", 1000))
        text = event.get("text")
        return text if isinstance(text, str) else bytes(event.get("bytes") or b"")


async def refuse(socket: WebSocket[Any, Any, Any], error: AppError) -> None:
    """Tell the client why, then close (4404: not found; 4422: anything else)."""
    known = known_error(error)
    assert known is not None
    await socket.send_data(error_frame(*known).decode(), mode="text")
    await socket.close(code=CLOSE_NOT_FOUND if isinstance(error, NotFound) else CLOSE_INVALID)


async def unavailable(socket: WebSocket[Any, Any, Any], exc: Exception, name: str) -> None:
    """The feed of the socket failed (`exc`): say so when the database is the cause (an
    error frame, status 503: away, or a read cancelled by the statement timeout), then
    close with 1011 so that the client reconnects."""
    count_database_error(exc, socket_counters(socket))
    body: ErrorBody | None = None
    if database_unavailable(exc):
        _log.warning("socket_feed_unavailable", socket=name, **describe_exception(exc))
        body = DATABASE_UNAVAILABLE
    elif database_busy(exc):
        _log.warning("socket_feed_busy", socket=name, **describe_exception(exc))
        body = DATABASE_BUSY
    else:
        _log.error("socket_pump_failed", socket=name, **describe_exception(exc))
    if body is not None:
        with contextlib.suppress(Exception):
            await socket.send_data(error_frame(503, body).decode(), mode="text")
    with contextlib.suppress(Exception):
        await socket.close(code=CLOSE_FEED_FAILED)


async def open_socket(
    socket: WebSocket[Any, Any, Any], name: str, load: Callable[[], Awaitable[T]]
) -> T | None:
    """Accept the socket, then run `load` (its checks and first reads) and return what it
    read; None once the socket is closed instead: a refused check (`refuse`: an error frame,
    then 4404 or 4422) or a failed read (`unavailable`: the 503 frame, then 1011, and the
    client retries). `name` is the socket's in the logs and metrics."""
    # Accepted first, checked after: a refused upgrade is a bare HTTP 403 to a browser,
    # while an error frame says what was wrong.
    await socket.accept()
    try:
        return await load()
    except AppError as error:
        await refuse(socket, error)
    except Exception as error:
        await unavailable(socket, error, name)
    return None


async def serve(
    channel: Channel,
    pump: Callable[[], Awaitable[None]],
    handle: Callable[[str | bytes], Awaitable[bytes | None]],
    name: str,
) -> None:
    """Run `pump` (the frames the server sends on its own) beside the loop answering each
    client message with `handle`'s frame, until the client leaves."""

    async def pumping() -> None:
        try:
            await pump()
        except (asyncio.CancelledError, WebSocketDisconnect):
            raise
        except Exception as exc:  # e.g. the database went away: the client reconnects
            async with channel.lock:  # not in the middle of a frame being sent
                await unavailable(channel.socket, exc, name)

    limits = getattr(channel.socket.app.state, "limits", None)
    bucket = None if limits is None else limits.message_bucket()
    refused = 0  # messages refused in a row
    live = channel.counters.socket(channel.socket.scope.get("path_template", ""))
    live.inc()
    task = asyncio.create_task(pumping(), name=name)
    try:
        while True:
            raw = await channel.receive()
            if bucket is not None and bucket.take():
                # Over the rate: refused unread (429 frame); a burst's worth more in a row
                # and the socket is closed (1008), so a flood costs the server little.
                refused += 1
                if refused > bucket.burst:
                    _log.warning("socket_flood_closed", socket=name)
                    async with channel.lock:
                        with contextlib.suppress(Exception):
                            await channel.socket.close(code=CLOSE_POLICY)
                    return
                await channel.send(error_frame(429, TOO_MANY))
                continue
            refused = 0
            reply = await handle(raw)
            if reply is not None:
                await channel.send(reply)
    except WebSocketDisconnect:
        pass
    finally:
        live.dec()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def hello_player(guests: Guests, limits: Limits, client: str, token: str) -> Player:
    """The guest a socket's `hello` names by `token`, or `BadMessage`: 422 for no token,
    401 for an unknown one, 429 (without a lookup) after many unknown ones from `client`."""
    if not token:
        raise BadMessage(Invalid("hello needs the player's token", field="token"))
    limits.check_auth(client)
    player = await guests.for_token(token)
    if player is None:
        limits.auth_failed(client)
        raise BadMessage(Unauthenticated("unknown token", field="token"))
    return player


class Hello(msgspec.Struct, tag_field="type", tag="hello", forbid_unknown_fields=True):
    """`{"type": "hello", "token": "..."}` on the lobby and arena sockets: this guest is
    here (online, holding their pool entry or their place in the arena's pairing)."""

    token: str


def ping_or_hello(
    hello: Callable[[str], Awaitable[object]], counters: Counters
) -> Callable[[str | bytes], Awaitable[bytes | None]]:
    """The `handle` of a socket whose client messages are `ping` (answered `pong`) and
    `hello` (`hello(token)` sends its own frames); anything else, an error frame (a
    database error counted in `counters`)."""

    async def handle(raw: str | bytes) -> bytes | None:
        what = "message"
        try:
            _key, message = parse_message(raw, Ping | Hello)
            what = type(message).__name__
            if isinstance(message, Ping):
                return PONG
            await hello(message.token)
            return None
        except BadMessage as error:
            return reply_error(error, error.reply_to, what, counters)
        except Exception as error:
            return reply_error(error, None, what, counters)

    return handle


async def ping_only(raw: str | bytes) -> bytes:
    """The `handle` of a socket whose only client message is `ping`."""
    try:
        parse_message(raw, Ping)
    except BadMessage as error:
        # A message that is not a ping: never the database's, nothing to count.
        return reply_error(error, error.reply_to, "ping", UNCOUNTED)
    return PONG
