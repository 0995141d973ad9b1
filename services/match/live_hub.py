"""The process's live hub: LISTEN/NOTIFY hints wake the sockets that follow a stream.

Any instance serves any match or party: appends on other instances reach this one through
PostgreSQL LISTEN/NOTIFY. A hint is only a wake-up (one can be lost between commit and
NOTIFY, or during a listener reconnect), so every follower also re-reads after
`poll_seconds` without a hint. Reading always starts at the follower's own next version,
which is why a lost hint delays an event but never loses it.

Two kinds of followers: `follow(stream_id, from_version)` (the match and party sockets)
reads one stream; `changes(prefix)` (the lobby socket) only learns that some stream whose
id starts with `prefix` changed, and re-reads what it shows itself.

The sockets themselves: `match_socket.py`, `party_socket.py` (with the lobby), and what
they share, `sockets.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import structlog

from services.shared.eventstore import EventStore, StoredEvent
from services.shared.logging import describe_exception

__all__ = ["LiveHub", "event_message"]

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
    """One per process: listens for NOTIFY hints and wakes the followers of that stream
    (and those of any stream id prefix it starts with)."""

    def __init__(self, store: EventStore, *, poll_seconds: float = 2.0) -> None:
        self.store = store
        self.poll_seconds = poll_seconds
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
        self._prefix_waiters: dict[str, set[asyncio.Event]] = defaultdict(set)
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
                        self._wake(note.stream_id)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database restarted or the connection dropped
                _log.warning("live_listener_reconnecting", **describe_exception(exc))
                self._wake_all()
                await asyncio.sleep(1.0)

    def _wake(self, stream_id: str) -> None:
        for waiter in self._waiters.get(stream_id, ()):
            waiter.set()
        for prefix, waiters in self._prefix_waiters.items():
            if stream_id.startswith(prefix):
                for waiter in waiters:
                    waiter.set()

    def _wake_all(self) -> None:
        for table in (self._waiters, self._prefix_waiters):
            for waiters in table.values():
                for waiter in waiters:
                    waiter.set()

    async def follow(self, stream_id: str, from_version: int) -> AsyncIterator[list[StoredEvent]]:
        """The events of `stream_id` from `from_version` on, forever (until cancelled), as
        the batches the reads returned: the first batch at once (possibly empty: nothing
        to catch up), then every non-empty one."""
        waiter = asyncio.Event()
        self._waiters[stream_id].add(waiter)
        try:
            next_version = from_version
            first = True
            while True:
                waiter.clear()
                batch = await self.store.read_stream(stream_id, next_version)
                if batch or first:
                    first = False
                    if batch:
                        next_version = batch[-1].version + 1
                    yield batch
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.wait(), self.poll_seconds)
        finally:
            _discard(self._waiters, stream_id, waiter)

    async def changes(self, prefix: str, min_interval: float) -> AsyncIterator[None]:
        """Yields at once, then after each hint for a stream whose id starts with `prefix`
        (or `poll_seconds` without one, for lost hints): at most once per `min_interval`,
        however many hints arrive, and never missing the last (a hint during the wait or
        while the caller works sets the waiter again, so one more round follows)."""
        waiter = asyncio.Event()
        self._prefix_waiters[prefix].add(waiter)
        try:
            while True:
                started = time.monotonic()
                waiter.clear()
                yield
                # Rate limit, not synchronisation: hints meanwhile coalesce into one round.
                await asyncio.sleep(max(0.0, started + min_interval - time.monotonic()))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(waiter.wait(), self.poll_seconds)
        finally:
            _discard(self._prefix_waiters, prefix, waiter)

    def watching(self) -> dict[str, Any]:
        """How many sockets follow each stream or prefix (for diagnostics)."""
        counts = {stream: len(waiters) for stream, waiters in self._waiters.items()}
        counts.update({f"{p}*": len(w) for p, w in self._prefix_waiters.items()})
        return counts


def _discard(table: dict[str, set[asyncio.Event]], key: str, waiter: asyncio.Event) -> None:
    waiters = table.get(key)
    if waiter is not None and waiters is not None:
        waiters.discard(waiter)
        if not waiters:
            del table[key]
