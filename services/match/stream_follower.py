"""One reader per followed stream, feeding every local socket of that stream from memory.

A `StreamFollower` is the only task of this process that reads new events of its stream
(`read_stream` from its `head`, when the hub wakes it: a NOTIFY hint of an event past its
head, the safety poll, a socket joining). Events this process appended itself are handed
to it as they commit (`committed`), so they cost no read at all. Each batch is offered to
every `Subscription` of the stream; a subscription keeps its own next version, so a socket
that joined from an older version (its one catch-up read is its own) filters what it has
already sent and never skips.

Offering never waits: a subscription holds at most `MAX_QUEUED` batches. One whose socket
does not keep up (a client that stops reading, a slow link) overflows: its queue is
dropped and it is marked `behind`, and when its socket next asks for a batch it re-reads
the store from its own next version once (its own read, not the follower's), then goes
on with the shared batches. Resync rather than close: the client keeps its socket and
still gets every event once, in order, while the others never wait for it; the cost, one
read per overflow, falls on the slow socket alone.

A read that fails (the database went away) fails every subscription of the stream (their
sockets send a 503 frame and close, and the clients reconnect) and ends the follower; the
next socket of the stream starts a new one.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from services.shared.eventstore import EventStore, StoredEvent

__all__ = ["MAX_QUEUED", "StreamFollower", "Subscription"]

MAX_QUEUED = 64  # batches (a command's events each) a socket may lag before it resyncs


class Subscription:
    """One socket's place in a stream: its next version and the batches not yet taken."""

    def __init__(self, next_version: int, *, first: bool = True) -> None:
        self.next = next_version
        self.first = first  # wants its first batch even when empty (nothing to catch up)
        self.queue: deque[list[StoredEvent]] = deque()
        self.behind = False  # overflowed: re-read the store from `next` before going on
        self.error: Exception | None = None
        self.ready = asyncio.Event()

    def offer(self, batch: list[StoredEvent]) -> None:
        """Called by the follower; never waits."""
        if len(self.queue) >= MAX_QUEUED:
            self.queue.clear()
            self.behind = True
        self.queue.append(batch)
        self.ready.set()

    def fail(self, error: Exception) -> None:
        self.error = error
        self.ready.set()

    def fresh(self, batch: list[StoredEvent]) -> list[StoredEvent] | None:
        """The events of `batch` this socket has not had, advancing `next`; None when the
        batch starts past `next` (a gap: resync)."""
        events = [stored for stored in batch if stored.version >= self.next]
        if events and events[0].version != self.next:
            return None
        if events:
            self.next = events[-1].version + 1
        return events


class StreamFollower:
    """The task that reads `stream_id` from `head` on for every subscription of it."""

    def __init__(
        self,
        store: EventStore,
        stream_id: str,
        head: int,
        on_end: Callable[[StreamFollower], None],
    ) -> None:
        self.store = store
        self.stream_id = stream_id
        self.head = head  # the next version to read: every event below it was offered
        self.subscriptions: set[Subscription] = set()
        self.reads = 0
        self._wake = asyncio.Event()
        self._on_end = on_end
        self._task = asyncio.create_task(self._run(), name=f"follow-{stream_id}")

    def wake(self) -> None:
        self._wake.set()

    def committed(self, events: list[StoredEvent]) -> None:
        """Events this process just appended: offered at once, without a read, when they
        start at `head` (otherwise a read in order will bring them)."""
        if events and events[0].version == self.head:
            self.head = events[-1].version + 1
            for subscription in list(self.subscriptions):
                subscription.offer(events)

    def add(self, subscription: Subscription) -> None:
        self.subscriptions.add(subscription)

    def remove(self, subscription: Subscription) -> bool:
        """Drop `subscription`; True when it was the last (the follower then stops)."""
        self.subscriptions.discard(subscription)
        if self.subscriptions:
            return False
        self._task.cancel()
        return True

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                self.reads += 1
                batch = await self.store.read_stream(self.stream_id, self.head)
                if batch:
                    # `committed` may have moved the head on during the read; the
                    # subscriptions drop what they already have.
                    self.head = max(self.head, batch[-1].version + 1)
                for subscription in list(self.subscriptions):
                    if batch or subscription.first:
                        subscription.offer(batch)
        except Exception as error:  # the database: every socket of the stream reconnects
            for subscription in self.subscriptions:
                subscription.fail(error)
        finally:
            self._on_end(self)
