"""The process's live hub: one follower per followed stream, fed by LISTEN/NOTIFY hints.

Any instance serves any match or party: appends on other instances reach this one through
PostgreSQL LISTEN/NOTIFY. A hint is only a wake-up (one can be lost between commit and
NOTIFY, or during a listener reconnect), so the hub also polls every `poll_seconds`: ONE
query for the heads of all the streams it follows (`stream_versions`), waking the
followers that are behind. Reading always starts at the follower's own head, which is why
a lost hint delays an event but never loses it.

What the database sees does not grow with the sockets: per followed stream one read per
hint (`stream_follower.py`: the follower feeds every local socket of its stream from
memory), per view one re-read per change (`live_view.py`: the lobby's listing), and one
poll query every `poll_seconds` in all. A socket's own reads are its catch-up at connect
(when it asks from before the follower's head) and a resync when it fell too far behind.

Two kinds of feeds: `follow(stream_id, from_version)` (the match and party sockets),
the events of one stream; `view(prefix, load, min_interval)` (the lobby socket), the
latest value of `load()`, re-read when some stream whose id starts with `prefix` changed.

The sockets themselves: `play/socket.py`, `parties/socket.py` (with the lobby), and what
they share, `sockets.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable
from typing import Any, TypeVar

import structlog

from services.match.caches import remember
from services.match.live_view import LiveView
from services.match.stream_follower import StreamFollower, Subscription
from services.shared.eventstore import AppendResult, EventStore, Notification, StoredEvent
from services.shared.logging import describe_exception
from services.shared.metrics import stream_kind

__all__ = ["LiveHub"]

_log = structlog.get_logger(__name__)
_T = TypeVar("_T")

# Frames kept for `shared_frame`: one per command of each match being played here (its
# events and the state after them). One evicted before every socket sent it is made again.
_SHARED_FRAMES = 2048


class LiveHub:
    """One per process: listens for NOTIFY hints, polls for the lost ones, and keeps one
    follower per followed stream and one task per view."""

    def __init__(
        self,
        store: EventStore,
        *,
        poll_seconds: float = 2.0,
        on_hint: Callable[[Notification], None] | None = None,
        on_listening: Callable[[bool], None] | None = None,
    ) -> None:
        self.store = store
        self.poll_seconds = poll_seconds
        # Told of every hint, and of the listener coming up (True) or going down (False):
        # the match service's state cache trusts its folds only while it hears them all.
        self._on_hint = on_hint
        self._on_listening = on_listening
        self.polls = 0  # poll queries sent (diagnostics)
        self.listening = asyncio.Event()  # set while the LISTEN connection is up
        self._followers: dict[str, StreamFollower] = {}
        self._views: dict[str, LiveView] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._frames: OrderedDict[Hashable, Any] = OrderedDict()

    async def start(self) -> None:
        if not self._tasks:
            self._tasks = [
                asyncio.create_task(self._listen(), name="live-hub"),
                asyncio.create_task(self._poll(), name="live-hub-poll"),
            ]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for feed in self._feeds():
            await feed.stop()

    def shared_frame(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """`make()`, the text of a frame (or of a few), made once for all the local sockets
        that ask with the same `key` (the frames of one batch of a match, for each of its
        seats and spectators): the latest couple of thousand are kept."""
        frame = self._frames.get(key)
        if frame is None:
            frame = make()
            remember(self._frames, key, frame, _SHARED_FRAMES)
        return frame

    # ------------------------------------------------------------------ waking the feeds

    async def _listen(self) -> None:
        while True:
            try:
                async with self.store.listen() as listener:
                    # After a (re)connect hints may have been missed: wake everyone once.
                    self.listening.set()
                    if self._on_listening is not None:
                        self._on_listening(True)
                    self._wake_all()
                    async for note in listener:
                        if self._on_hint is not None:
                            self._on_hint(note)
                        self._wake(note.stream_id, note.version)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database restarted or the connection dropped
                self.listening.clear()
                if self._on_listening is not None:
                    self._on_listening(False)
                self.store.counters.listener_reconnects.inc()  # its app's, as the store's
                _log.warning("live_listener_reconnecting", **describe_exception(exc))
                self._wake_all()
                await asyncio.sleep(1.0)

    async def _poll(self) -> None:
        """Every `poll_seconds`, one query for the heads of all followed streams; the views
        keep their own timer (one re-read each)."""
        while True:
            await asyncio.sleep(self.poll_seconds)  # a timer, not synchronisation
            if not self._followers:
                continue
            self.polls += 1
            try:
                heads = await self.store.stream_versions(list(self._followers))
            except Exception:  # the database: the followers' own reads fail and say so
                self._wake_all()
                continue
            for stream_id, head in heads.items():
                follower = self._followers.get(stream_id)
                if follower is not None and head > follower.head:
                    follower.wake()

    def _wake(self, stream_id: str, version: int) -> None:
        follower = self._followers.get(stream_id)
        if follower is not None and version >= follower.head:  # else: already offered
            follower.wake()
        for prefix, view in self._views.items():
            if stream_id.startswith(prefix):
                view.wake()

    def committed(self, result: AppendResult) -> None:
        """This process appended `result` (committed): its stream's follower, if any,
        offers the events without reading them back."""
        follower = self._followers.get(result.stream_id)
        if follower is not None and not result.duplicate:
            follower.committed(list(result.events))

    def wake_view(self, prefix: str) -> None:
        """Re-read the view of `prefix` now (something it shows changed without an event:
        the lobby's online count when a guest says hello)."""
        view = self._views.get(prefix)
        if view is not None:
            view.wake()

    def _wake_all(self) -> None:
        for feed in self._feeds():
            feed.wake()

    def _feeds(self) -> list[StreamFollower | LiveView]:
        return [*self._followers.values(), *self._views.values()]

    # ----------------------------------------------------------------------- the feeds

    async def follow(
        self, stream_id: str, from_version: int
    ) -> AsyncGenerator[list[StoredEvent], None]:
        """The events of `stream_id` from `from_version` on, forever (until cancelled), as
        batches: the first at once (possibly empty: nothing to catch up), then every
        non-empty one; each event once, in version order.

        Consume it inside `contextlib.aclosing`: a consumer cancelled while it is not
        waiting on the generator (it is sending a frame, say) leaves the generator paused
        at its `yield`, and its socket would stay subscribed until garbage collection."""
        follower = self._followers.get(stream_id)
        catch_up = follower is not None and from_version < follower.head
        subscription = Subscription(from_version, first=not catch_up)
        if follower is None:
            # Its first read, from this socket's version, is this socket's catch-up.
            follower = StreamFollower(self.store, stream_id, from_version, self._ended)
            self._followers[stream_id] = follower
        follower.add(subscription)
        if not catch_up:
            follower.wake()  # the next shared read is this socket's first batch
        try:
            if catch_up:
                # Joined behind the follower: read what it has passed, once; the shared
                # batches queue meanwhile and are filtered by the subscription's version.
                batch = subscription.fresh(await self.store.read_stream(stream_id, from_version))
                if subscription.next < follower.head:
                    # The follower started where its first socket asked, past the stream's
                    # end: pull it back so it reads what comes next from here.
                    follower.head = subscription.next
                    follower.wake()
                yield batch or []
            while True:
                if subscription.error is not None:
                    raise subscription.error
                if subscription.behind:
                    subscription.behind = False
                    batch = await self.store.read_stream(stream_id, subscription.next)
                    subscription.queue.appendleft(batch)
                if not subscription.queue:
                    subscription.ready.clear()
                    await subscription.ready.wait()
                    continue
                fresh = subscription.fresh(subscription.queue.popleft())
                if fresh is None:  # a gap (cannot happen while reads are contiguous)
                    subscription.behind = True
                elif fresh or subscription.first:
                    subscription.first = False
                    yield fresh
        finally:
            if follower.remove(subscription):
                self._ended(follower)

    async def view(
        self,
        prefix: str,
        load: Callable[[], Awaitable[Any]],
        min_interval: float,
        poll_seconds: float | None = None,
    ) -> AsyncGenerator[Any, None]:
        """The latest value of `load()` now, then after each change of a stream whose id
        starts with `prefix` (`live_view.py`), or after `poll_seconds` without a hint (the
        hub's own by default; `math.inf`: hints only). Every socket of one prefix shares
        one task: they must pass the same `load` (the first one's is used). Consume it
        inside `contextlib.aclosing`, as `follow`."""
        view = self._views.get(prefix)
        if view is None:
            poll = self.poll_seconds if poll_seconds is None else poll_seconds
            view = LiveView(prefix, load, min_interval, poll, self._ended)
            self._views[prefix] = view
        async with contextlib.aclosing(view.values()) as values:
            async for value in values:
                yield value

    def _ended(self, feed: StreamFollower | LiveView) -> None:
        if isinstance(feed, StreamFollower):
            if self._followers.get(feed.stream_id) is feed:
                del self._followers[feed.stream_id]
        elif self._views.get(feed.prefix) is feed:
            del self._views[feed.prefix]

    def followed(self) -> dict[str, int]:
        """How many streams of each kind (`match`, `party`) this process feeds live
        sockets from: the matches and parties in progress here (the metrics)."""
        kinds: dict[str, int] = {}
        for stream_id in self._followers:
            kind = stream_kind(stream_id)
            kinds[kind] = kinds.get(kind, 0) + 1
        return kinds

    def watching(self) -> dict[str, Any]:
        """How many sockets follow each stream or view (for diagnostics)."""
        counts = {stream: len(f.subscriptions) for stream, f in self._followers.items()}
        counts.update({f"{p}*": v.watchers for p, v in self._views.items()})
        return counts
