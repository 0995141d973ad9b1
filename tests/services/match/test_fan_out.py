"""The live hub's fan-out: one reader per followed stream, whatever the number of sockets.

The hub runs on the real PostgreSQL store (appends send real NOTIFY hints), wrapped so
that the test counts every read the hub makes. The feeds are the ones the sockets iterate
(`LiveHub.follow`, `LiveHub.view`); no socket is opened, so what is counted is the hub's
own cost and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, cast

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.live_hub import LiveHub
from services.match.stream_follower import MAX_QUEUED
from services.shared.eventstore import EventData, EventStore, StoredEvent

pytestmark = pytest.mark.anyio

TIMEOUT = 15.0  # seconds: a bound on waits that end as soon as their condition holds


class CountingStore:
    """The real store, counting the hub's reads; `deaf`: its listener never hears a hint
    (every hint lost: only the safety poll can find new events)."""

    def __init__(self, store: EventStore, *, deaf: bool = False) -> None:
        self.store = store
        self.deaf = deaf
        self.reads = 0
        self.polls: list[int] = []  # the number of streams each poll asked for
        self.polled = asyncio.Condition()

    async def read_stream(
        self, stream_id: str, from_version: int = 0, *, limit: int | None = None
    ) -> list[StoredEvent]:
        self.reads += 1
        return await self.store.read_stream(stream_id, from_version, limit=limit)

    async def stream_versions(self, stream_ids: Sequence[str]) -> dict[str, int]:
        heads = await self.store.stream_versions(stream_ids)
        async with self.polled:
            self.polls.append(len(stream_ids))
            self.polled.notify_all()
        return heads

    def listen(self) -> Any:
        return _Deaf() if self.deaf else self.store.listen()


class _Deaf:
    async def __aenter__(self) -> _Deaf:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def __aiter__(self) -> AsyncIterator[Any]:
        await asyncio.Event().wait()  # no hint, ever
        yield


class Collector:
    """One socket's feed: the versions it was given, in order."""

    def __init__(self, hub: LiveHub, stream_id: str, since: int, changed: asyncio.Condition):
        self.versions: list[int] = []
        self.batches = 0
        self._feed = hub.follow(stream_id, since)
        self._changed = changed
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async with contextlib.aclosing(self._feed) as feed:
            async for batch in feed:
                self.batches += 1
                self.versions += [stored.version for stored in batch]
                async with self._changed:
                    self._changed.notify_all()


def _all_at(followers: Sequence[Collector], version: int) -> bool:
    """Every follower's last event is `version`."""
    return all(f.versions[-1:] == [version] for f in followers)


async def until(changed: asyncio.Condition, predicate: Callable[[], bool]) -> None:
    async with changed:
        await asyncio.wait_for(changed.wait_for(predicate), TIMEOUT)


@pytest.fixture
async def counting(engine: AsyncEngine) -> CountingStore:
    return CountingStore(EventStore(engine))


@pytest.fixture
async def hub(counting: CountingStore) -> AsyncIterator[LiveHub]:
    """A hub whose safety poll never fires within a test: every read follows a hint."""
    live = LiveHub(cast(EventStore, counting), poll_seconds=3600)
    await live.start()
    await asyncio.wait_for(live.listening.wait(), TIMEOUT)
    try:
        yield live
    finally:
        await live.stop()


def _stream() -> str:
    return f"fanout-{uuid.uuid4().hex[:12]}"


async def _append(store: CountingStore, stream_id: str, version: int) -> None:
    note = EventData("Note", 1, b'{"n":%d}' % version)
    await store.store.append(stream_id, version, [note])


async def _stop(collectors: Sequence[Collector]) -> None:
    for collector in collectors:
        collector.task.cancel()
    await asyncio.gather(*(c.task for c in collectors), return_exceptions=True)


async def test_this_processs_own_appends_cost_no_read(
    hub: LiveHub, counting: CountingStore
) -> None:
    """Appends this process committed are handed to the follower before their hints go out
    (`LiveHub.committed` as the append's `on_commit`): every follower gets them once, in
    order, and nothing is read back; an append of another process is still read."""
    stream, changed = _stream(), asyncio.Condition()
    followers = [Collector(hub, stream, 0, changed) for _ in range(20)]
    await until(changed, lambda: all(f.batches for f in followers))
    before = counting.reads
    for version in range(10):
        note = EventData("Note", 1, b'{"n":%d}' % version)
        await counting.store.append(stream, version, [note], on_commit=hub.committed)
        await until(changed, functools.partial(_all_at, followers, version))
    assert counting.reads == before
    await _append(counting, stream, 10)  # another process's: its hint wakes a read
    await until(changed, functools.partial(_all_at, followers, 10))
    assert counting.reads == before + 1
    assert all(f.versions == list(range(11)) for f in followers)
    await _stop(followers)


async def test_many_sockets_on_one_stream_cost_one_read_per_append(
    hub: LiveHub, counting: CountingStore
) -> None:
    """200 followers of one stream: each append is read once (not once per follower), and
    every follower gets every event once, in order; the follower stops with the last."""
    stream, changed = _stream(), asyncio.Condition()
    followers = [Collector(hub, stream, 0, changed) for _ in range(200)]
    await until(changed, lambda: all(f.batches for f in followers))
    before = counting.reads
    appends = 20
    for version in range(appends):
        await _append(counting, stream, version)
        await until(changed, functools.partial(_all_at, followers, version))
    reads = counting.reads - before
    assert 1 <= reads <= appends, f"{reads} reads for {appends} appends"
    assert all(f.versions == list(range(appends)) for f in followers)
    assert hub.watching() == {stream: 200}
    await _stop(followers)
    assert hub.watching() == {}


async def test_a_socket_joining_mid_stream_gets_every_event_once_in_order(
    hub: LiveHub, counting: CountingStore
) -> None:
    """A follower joining behind the shared reader while appends go on gets each event
    from its version on exactly once, in order; one joining from past the stream's end
    does not make a later one from 0 miss the events in between."""
    stream, changed = _stream(), asyncio.Condition()
    first = Collector(hub, stream, 0, changed)
    for version in range(5):
        await _append(counting, stream, version)
    await until(changed, lambda: first.versions[-1:] == [4])
    late = Collector(hub, stream, 2, changed)
    for version in range(5, 12):  # appended while the late one catches up
        await _append(counting, stream, version)
    await until(changed, lambda: first.versions[-1:] == late.versions[-1:] == [11])
    assert first.versions == list(range(12))
    assert late.versions == list(range(2, 12))

    other = _stream()
    ahead = Collector(hub, other, 100, changed)
    await until(changed, lambda: ahead.batches == 1)
    behind = Collector(hub, other, 0, changed)
    await until(changed, lambda: behind.batches == 1)
    for version in range(3):
        await _append(counting, other, version)
    await until(changed, lambda: behind.versions[-1:] == [2])
    assert behind.versions == [0, 1, 2]
    assert ahead.versions == []
    await _stop([first, late, ahead, behind])


async def test_a_slow_socket_does_not_delay_the_others(
    hub: LiveHub, counting: CountingStore
) -> None:
    """A follower that takes nothing holds at most MAX_QUEUED batches while another gets
    every event as it comes; when it reads again it gets every event once, in order,
    after one resync read of its own."""
    stream, changed = _stream(), asyncio.Condition()
    slow = hub.follow(stream, 0)
    assert await anext(slow) == []
    fast = Collector(hub, stream, 0, changed)
    await until(changed, lambda: fast.batches == 1)
    before = counting.reads
    appends = MAX_QUEUED + 20
    for version in range(appends):
        await _append(counting, stream, version)
        await until(changed, functools.partial(_all_at, [fast], version))
    subscriptions = hub._followers[stream].subscriptions
    assert max(len(s.queue) for s in subscriptions) <= MAX_QUEUED
    got: list[int] = []
    while len(got) < appends:
        got += [stored.version for stored in await asyncio.wait_for(anext(slow), TIMEOUT)]
    assert got == list(range(appends))
    assert fast.versions == list(range(appends))
    assert counting.reads - before <= appends + 1  # the shared reads, and one resync
    await slow.aclose()
    await _stop([fast])


async def test_the_safety_poll_is_one_query_for_every_followed_stream(
    counting: CountingStore,
) -> None:
    """With every hint lost, idle followers of 30 streams cost one poll query per period
    (asking for all 30 heads) and no read; an append is then found by the poll and read
    once, by its stream's follower alone."""
    counting.deaf = True
    hub = LiveHub(cast(EventStore, counting), poll_seconds=0.05)
    await hub.start()
    try:
        changed = asyncio.Condition()
        streams = [_stream() for _ in range(30)]
        followers = [Collector(hub, s, 0, changed) for s in streams]
        await until(changed, lambda: all(f.batches for f in followers))
        reads, polls = counting.reads, len(counting.polls)
        await until(counting.polled, lambda: len(counting.polls) >= polls + 5)
        assert counting.reads == reads, "idle followers read the store"
        assert set(counting.polls[polls:]) == {30}
        await _append(counting, streams[7], 0)
        await until(changed, lambda: followers[7].versions == [0])
        assert counting.reads == reads + 1
        assert all(f.versions == [] for i, f in enumerate(followers) if i != 7)
        await _stop(followers)
    finally:
        await hub.stop()


async def test_lobby_sockets_share_one_re_read_per_change(
    hub: LiveHub, counting: CountingStore
) -> None:
    """50 lobby feeds load the listing once, and once more after a party changes; each
    gets the new listing."""
    loads = 0

    async def load() -> int:
        nonlocal loads
        loads += 1
        return loads

    changed = asyncio.Condition()
    seen: list[list[int]] = [[] for _ in range(50)]

    async def watch(mine: list[int]) -> None:
        async with contextlib.aclosing(hub.view("party-", load, 0.0)) as values:
            async for value in values:
                mine.append(value)
                async with changed:
                    changed.notify_all()

    tasks = [asyncio.create_task(watch(mine)) for mine in seen]
    await until(changed, lambda: all(seen))
    assert loads == 1
    await _append(counting, f"party-{uuid.uuid4()}", 0)
    await until(changed, lambda: all(mine[-1:] == [2] for mine in seen))
    assert loads == 2
    assert all(mine == [1, 2] for mine in seen)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert hub.watching() == {}


async def test_a_shared_frame_is_made_once_for_all_its_sockets(hub: LiveHub) -> None:
    """The sockets of a match at one version get one frame, made once; a new version
    makes a new one."""
    made: list[int] = []

    def make(version: int) -> Callable[[], str]:
        def frame() -> str:
            made.append(version)
            return f'{{"version":{version}}}'

        return frame

    frames = [hub.shared_frame(("state", "m", 7), make(7)) for _socket in range(5)]
    assert frames == ['{"version":7}'] * 5 and made == [7]
    assert hub.shared_frame(("state", "m", 8), make(8)) == '{"version":8}'
    assert made == [7, 8]
