"""Limits against abusive or slow clients (docs/api.md: Limits).

The per-address budgets are token buckets keyed by the client's address (`scope["client"]`:
behind a load balancer run uvicorn with `--proxy-headers --forwarded-allow-ips=<the
balancer>` so that it is the real client's). With `LUDO_SHARED_LIMITS` (the default) and
once the app's lifespan has given `Limits.share` its engine, the counts are PostgreSQL's
(`RateStore`, services/shared/rate_store.py): one statement per check, every instance
counting in the same row, so the documented budget holds at any instance count. Without
the store (switched off, not started yet, or the database away), each process counts in
its own memory: N instances then give a client up to N times a budget. The local buckets
are charged on every check too, so that a fallback starts from this process's share.

- every HTTP request and WebSocket upgrade: `LUDO_RATE_LIMIT` per minute per client
  (burst: the same number at once);
- `POST /api/players` (a new guest): `LUDO_GUEST_LIMIT` per hour per client;
- failed bearer-token lookups: `LUDO_AUTH_FAIL_LIMIT` per minute per client; past it, a
  request with a token is refused before the token is looked up (no database query);
- a request body must arrive within `LUDO_REQUEST_TIMEOUT` seconds (408, connection
  closed); `GuardedHttpToolsProtocol` closes a connection whose request headers have not all
  arrived within the same time (uvicorn has no header timeout of its own);
- WebSocket client messages: `LUDO_WS_MESSAGE_RATE` per second, burst twice that, per
  socket (services/match/sockets.py); uvicorn's `--ws-max-size` (`WS_MAX_SIZE`) refuses
  a frame larger than 64 KiB before the app's own 4 KiB check.

A refused request is answered 429 `{"error": "too_many_requests", "detail": ...}` with
`Retry-After` and `Cache-Control: no-store`, before any handler runs; the shared check
writes nothing for it, and the refusal is remembered in the process until its
`Retry-After` has passed (a budget cannot refill sooner, whatever the other instances do),
so that a flood from one address costs the database one statement per instance and
`Retry-After`, not one per request. A 0 in a setting switches that budget off.

Unknown tokens: `check_auth` is synchronous (the handlers call it before a lookup), so it
reads what the request's own check returned of the address's unknown-token row (a
mirror, refreshed on every request of the address), beside the local bucket; a failure
is charged locally at once and written to the store in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections import OrderedDict
from typing import Any

import msgspec
from litestar.enums import ScopeType
from litestar.types import (
    ASGIApp,
    HTTPResponseBodyEvent,
    HTTPResponseStartEvent,
    Receive,
    ReceiveMessage,
    Scope,
    Send,
    WebSocketCloseEvent,
)
from sqlalchemy.ext.asyncio import AsyncEngine
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from services.shared.errors import ErrorBody, TimedOut, TooManyRequests
from services.shared.rate_store import RateStore, gcra_wait
from services.shared.serving import UVICORN_ARGS, WS_MAX_SIZE, uvicorn_options
from services.shared.settings import Settings
from services.shared.transport import CoalescedWrites

__all__ = [
    "UVICORN_ARGS",
    "WS_MAX_SIZE",
    "Bucket",
    "GuardedH11Protocol",
    "GuardedHttpToolsProtocol",
    "Limits",
    "RateLimiter",
    "limits_middleware",
    "uvicorn_options",
]


class Bucket:
    """A token bucket: `burst` tokens, refilled at `rate` per second."""

    __slots__ = ("burst", "rate", "stamp", "tokens")

    def __init__(self, rate: float, burst: float) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = time.monotonic()

    def _refill(self) -> None:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def wait(self) -> float:
        """Seconds until a token is there (0: one is there now); takes none."""
        self._refill()
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def take(self) -> float:
        """Take a token: 0 when there was one, else the seconds until there is."""
        wait = self.wait()
        if wait == 0:
            self.tokens -= 1
        return wait


class RateLimiter:
    """Buckets per key (a client's address), `count` per `per` seconds with a burst of
    `count`; at most `max_keys` kept (the least recently used go first). `count` 0: off."""

    def __init__(self, count: int, per: float, max_keys: int = 50_000) -> None:
        self.count = count
        self.per = per
        self.rate = count / per if count else 0.0
        self.max_keys = max_keys
        self._buckets: OrderedDict[str, Bucket] = OrderedDict()

    def _bucket(self, key: str) -> Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = Bucket(self.rate, self.count)
            if len(self._buckets) > self.max_keys:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket

    def take(self, key: str) -> float:
        """0 when `key` may go on (a token taken), else the seconds to wait."""
        return 0.0 if not self.count else self._bucket(key).take()

    def wait(self, key: str) -> float:
        """0 when `key` has budget left (none taken), else the seconds to wait."""
        return 0.0 if not self.count else self._bucket(key).wait()


class _Until:
    """Monotonic deadlines per key, at most `max_keys` (the oldest go first)."""

    def __init__(self, max_keys: int = 50_000) -> None:
        self.max_keys = max_keys
        self._until: OrderedDict[str, float] = OrderedDict()

    def left(self, key: str) -> float:
        """Seconds until `key`'s deadline (0: none, or past)."""
        until = self._until.get(key)
        if until is None:
            return 0.0
        left = until - time.monotonic()
        if left <= 0:
            del self._until[key]
            return 0.0
        return left

    def set(self, key: str, seconds: float) -> None:
        if seconds <= 0:
            self._until.pop(key, None)
            return
        self._until[key] = time.monotonic() + seconds
        self._until.move_to_end(key)
        if len(self._until) > self.max_keys:
            self._until.popitem(last=False)


class Limits:
    """The per-client budgets of one app (`app.state.limits`)."""

    def __init__(self, settings: Settings) -> None:
        self.requests = RateLimiter(settings.rate_limit, 60)
        self.guests = RateLimiter(settings.guest_limit, 3600)
        self.auth_failures = RateLimiter(settings.auth_fail_limit, 60)
        self.request_timeout = settings.request_timeout
        self.ws_message_rate = settings.ws_message_rate
        self.shared = settings.shared_limits
        self.store: RateStore | None = None
        self._refused: dict[str, _Until] = {"requests": _Until(), "guests": _Until()}
        self._auth_seen = _Until()  # the store's unknown-token wait, as last read

    def share(self, engine: AsyncEngine) -> None:
        """Count in the database of `engine` from now on (unless `LUDO_SHARED_LIMITS` is
        off): the apps' lifespans call it once their engine is open."""
        self.store = RateStore(engine) if self.shared else None

    def share_in(self, stack: contextlib.AsyncExitStack, engine: AsyncEngine) -> None:
        """`share(engine)` for a lifespan, undone (`unshare`) when `stack` closes: before
        the engine is, whose callback was pushed earlier."""
        self.share(engine)
        stack.push_async_callback(self.unshare)

    async def unshare(self) -> None:
        """Back to memory, the store's background writes finished: before the engine
        is closed."""
        store, self.store = self.store, None
        if store is not None:
            await store.drain()

    async def admit(self, client: str, new_guest: bool) -> tuple[float, str]:
        """Take a request (and a new guest's) token of `client`: (0, "") when it may go
        on, else the seconds to wait and why."""
        wait = await self._take(self.requests, "requests", client)
        if wait:
            return wait, "too many requests from this address"
        if new_guest:
            wait = await self._take(self.guests, "guests", client)
            if wait:
                return wait, "too many new guests from this address"
        return 0.0, ""

    async def _take(self, local: RateLimiter, budget: str, client: str) -> float:
        if not local.count:
            return 0.0
        refused = self._refused[budget]
        wait = refused.left(client)
        if wait:
            return wait
        store = self.store
        taken = None if store is None else await store.take(budget, client, local.count, local.per)
        if taken is None:
            return local.take(client)
        local.take(client)  # this process's share, should the store go away
        if budget == "requests" and self.auth_failures.count:
            seen = gcra_wait(taken.auth_tat, taken.now, *self._auth_gcra())
            self._auth_seen.set(client, seen)
        refused.set(client, taken.wait)
        return taken.wait

    def _auth_gcra(self) -> tuple[float, float]:
        per = self.auth_failures.per
        return per / self.auth_failures.count, per

    def check_auth(self, client: str) -> None:
        """Before a token is looked up: 429 when `client` failed too often lately."""
        wait = max(self.auth_failures.wait(client), self._auth_seen.left(client))
        if wait:
            raise TooManyRequests("too many unknown tokens from this address", wait=wait)

    def auth_failed(self, client: str) -> None:
        """A token of `client` was unknown: counted here at once, and in the store in the
        background (the other instances read it at the address's next request)."""
        self.auth_failures.take(client)
        store, count = self.store, self.auth_failures.count
        if store is not None and count:
            store.background(store.take("auth", client, count, self.auth_failures.per))

    def message_bucket(self) -> Bucket | None:
        """A new socket's budget of client messages (None: unlimited)."""
        rate = self.ws_message_rate
        return Bucket(rate, 2 * rate) if rate else None


def client_key(scope: Scope | Any) -> str:
    """The client's address ("unknown" when the server gives none)."""
    client = scope.get("client") if isinstance(scope, dict) else None
    return str(client[0]) if client else "unknown"


async def _refuse(send: Send, wait: float, detail: str) -> None:
    body = msgspec.json.encode(ErrorBody(error="too_many_requests", detail=detail))
    start: HTTPResponseStartEvent = {
        "type": "http.response.start",
        "status": 429,
        "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", b"no-store"),
            (b"retry-after", str(max(1, math.ceil(wait))).encode()),
        ],
    }
    await send(start)
    end: HTTPResponseBodyEvent = {"type": "http.response.body", "body": body, "more_body": False}
    await send(end)


def limits_middleware(app: ASGIApp, limits: Limits) -> ASGIApp:
    """The request budgets and the body deadline (module doc). In an app:
    `DefineMiddleware(limits_middleware, limits=limits)`."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in (ScopeType.HTTP, ScopeType.WEBSOCKET):
            await app(scope, receive, send)
            return
        if kind == ScopeType.HTTP and scope.get("path", "").startswith("/static/"):
            # The pages' files (services/shared/pages.py): read from memory, never the
            # database, a dozen per page load; a budget's shared count would cost each one
            # a database round trip and spend the budget the API and sockets need.
            await app(scope, receive, send)
            return
        client = client_key(scope)
        new_guest = (
            kind == ScopeType.HTTP
            and scope.get("method") == "POST"
            and _path(scope) == "/api/players"
        )
        wait, detail = await limits.admit(client, new_guest)
        if wait:
            if kind == ScopeType.WEBSOCKET:
                # Refused before the handshake completes: the client sees HTTP 403.
                close: WebSocketCloseEvent = {"type": "websocket.close", "code": 1008, "reason": ""}
                await send(close)
            else:
                await _refuse(send, wait, detail)
            return
        if kind == ScopeType.HTTP and limits.request_timeout:
            receive = _deadline(receive, limits.request_timeout)
        await app(scope, receive, send)

    return middleware


def _path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    return path.rstrip("/")


def _deadline(receive: Receive, seconds: float) -> Receive:
    """`receive`, but the whole body must have arrived `seconds` after the request did:
    else 408 `request_timeout` (and the connection is closed)."""
    loop = asyncio.get_running_loop()
    until = loop.time() + seconds
    done = False

    async def receiving() -> ReceiveMessage:
        nonlocal done
        if done:  # the body is in: what is left is waiting for a disconnect
            return await receive()
        try:
            async with asyncio.timeout_at(until):
                message = await receive()
        except TimeoutError:
            detail = f"the request body did not arrive within {seconds:g} s"
            raise TimedOut(detail) from None
        if message["type"] != "http.request" or not message.get("more_body", False):
            done = True
        return message

    return receiving


class _HeaderDeadline:
    """A header timeout for one of uvicorn's HTTP/1.1 protocols: a connection whose request
    line and headers have not all arrived `LUDO_REQUEST_TIMEOUT` seconds after its first
    byte (or after it opened) is closed, without an answer. (uvicorn's `--timeout-keep-alive`
    only covers the idle time between requests.) Mixed in before the protocol class, whose
    `cycle`, `loop` and `transport` it reads."""

    # Seconds; None: `LUDO_REQUEST_TIMEOUT` (default 10; 0: no header timeout).
    HEADER_TIMEOUT: float | None = None
    _header_timer: asyncio.TimerHandle | None = None
    _timeout = 0.0
    cycle: Any
    loop: asyncio.AbstractEventLoop
    transport: Any

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _arm(self) -> None:
        if self._header_timer is None and self._timeout:
            self._header_timer = self.loop.call_later(self._timeout, self._headers_late)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        timeout = self.HEADER_TIMEOUT
        if timeout is None:
            timeout = float(os.environ.get("LUDO_REQUEST_TIMEOUT", "").strip() or 10)
        self._timeout = timeout
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._between_requests():
            self._arm()
        super().data_received(data)  # type: ignore[misc]
        if not self._between_requests():  # the headers are in: the app has the request
            self._disarm()

    def handle_websocket_upgrade(self, *event: Any) -> None:
        self._disarm()
        super().handle_websocket_upgrade(*event)  # type: ignore[misc]

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        if self._between_requests():
            self._disarm()  # idle now: the keep-alive timeout covers it until data comes

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def _headers_late(self) -> None:
        self._header_timer = None
        if self.transport.get_protocol() is not self:  # upgraded to a WebSocket
            return
        if self._between_requests() and not self.transport.is_closing():
            self.transport.close()


class GuardedH11Protocol(_HeaderDeadline, CoalescedWrites, H11Protocol):
    """uvicorn's h11 protocol (pure Python), plus the header timeout and coalesced writes
    (services/shared/transport.py). Select it with
    `uvicorn --http services.shared.limits:GuardedH11Protocol`."""


class GuardedHttpToolsProtocol(_HeaderDeadline, CoalescedWrites, HttpToolsProtocol):
    """uvicorn's httptools protocol (llhttp, in C: what every service process is served
    with, `UVICORN_ARGS`), plus the header timeout and coalesced writes."""
