"""Group commit (eventstore/_group.py): the shared contract through batches, and what
batching must not change: each stream's own checks, a failure confined to its append,
hints after `on_commit`; a connection its server ended replaced before a batch, one lost
under a batch answered and replaced."""

from __future__ import annotations

import asyncio
import select
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.chain import GENESIS
from services.shared.errors import database_unavailable
from services.shared.eventstore import AppendResult, ConcurrencyError, EventStore
from tests.pg_waits import backend_pid, wait_until_blocked
from tests.services.shared.eventstore.contract import EventStoreContract, new_stream, turn
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


@pytest.fixture
async def grouped(engine: AsyncEngine) -> AsyncIterator[EventStore]:
    store = EventStore(engine, group_commit=True)
    try:
        yield store
    finally:
        await store.close()


class TestGroupCommitEventStore(EventStoreContract):
    """The contract, with every append made on its own going through batches."""

    @pytest.fixture
    def store(self, grouped: EventStore) -> EventStore:
        return grouped


async def _started(store: EventStore, streams: int) -> list[tuple[str, bytes]]:
    """`streams` new streams of one turn each: (stream, head hash)."""
    heads = []
    for _ in range(streams):
        sid = new_stream()
        result = await store.append(sid, 0, turn(0, 0), prev_hash=GENESIS)
        heads.append((sid, result.events[-1].hash))
    return heads


async def test_appends_made_together_share_a_transaction(grouped: EventStore) -> None:
    """Appends to many streams at once commit in fewer transactions than appends, each
    on its own head."""
    heads = await _started(grouped, 16)
    assert grouped.group is not None
    before = grouped.group.batches
    results = await asyncio.gather(
        *(grouped.append(sid, 3, turn(1, 1), prev_hash=head) for sid, head in heads)
    )
    assert grouped.group.batches - before < len(heads)
    assert len({r.events[0].tx for r in results}) < len(heads)
    for (sid, head), result in zip(heads, results, strict=True):
        assert result.events[0].prev_hash == head
        assert await grouped.verify_stream(sid) == 6


async def test_a_lost_race_fails_only_its_own_append(grouped: EventStore) -> None:
    """Two appends on one head in the same batch: one lands, the other is a
    `ConcurrencyError`; the batch's appends to other streams all land."""
    heads = await _started(grouped, 6)
    contested, head = heads[0]
    outcomes = await asyncio.gather(
        grouped.append(contested, 3, turn(1, 1, 2), prev_hash=head),
        grouped.append(contested, 3, turn(1, 1, 5), prev_hash=head),
        *(grouped.append(sid, 3, turn(1, 1), prev_hash=h) for sid, h in heads[1:]),
        return_exceptions=True,
    )
    first, second, *others = outcomes
    assert sorted([isinstance(first, ConcurrencyError), isinstance(second, ConcurrencyError)]) == [
        False,
        True,
    ]
    assert all(isinstance(o, AppendResult) for o in others)
    for sid, _ in heads:
        assert await grouped.verify_stream(sid) == 6


async def test_a_stale_head_writes_nothing_and_the_rest_commit(grouped: EventStore) -> None:
    """An append chained on a hash that is not its stream's head inserts nothing (a
    `ValueError`, as on its own) while the others of its batch commit."""
    heads = await _started(grouped, 4)
    wrong = (heads[0][0], bytes(32))
    outcomes = await asyncio.gather(
        *(grouped.append(sid, 3, turn(1, 1), prev_hash=h) for sid, h in [wrong, *heads[1:]]),
        return_exceptions=True,
    )
    assert isinstance(outcomes[0], ValueError)
    assert all(isinstance(o, AppendResult) for o in outcomes[1:])
    assert await grouped.stream_version(heads[0][0]) == 3


async def test_on_commit_runs_before_the_hint_is_heard(grouped: EventStore) -> None:
    """Every committed append's `on_commit` has run by the time its hint is heard;
    a refused one calls nothing."""
    heads = await _started(grouped, 8)
    told: list[str] = []
    async with grouped.listen() as listener:
        outcomes = await asyncio.gather(
            *(
                grouped.append(
                    sid, 3, turn(1, 1), prev_hash=h if i else bytes(32), on_commit=_tell(told)
                )
                for i, (sid, h) in enumerate(heads)
            ),
            return_exceptions=True,
        )
        heard: set[str] = set()
        while len(heard) < len(heads) - 1:
            notes = await listener.wait(5)
            assert notes, "no hint within 5 s"
            for note in notes:
                assert note.stream_id in told
                heard.add(note.stream_id)
    assert isinstance(outcomes[0], ValueError)
    assert sorted(told) == sorted(sid for sid, _ in heads[1:])


def _tell(told: list[str]) -> Callable[[AppendResult], None]:
    return lambda result: told.append(result.stream_id)


def _peer_closed(fd: int) -> bool:
    """Whether the server's end of socket `fd` is closed (nothing is read from it)."""
    poller = select.poll()
    poller.register(fd, select.POLLRDHUP)
    return any(events & (select.POLLRDHUP | select.POLLHUP) for _fd, events in poller.poll(0))


async def _terminate(engine: AsyncEngine, pid: int) -> None:
    async with engine.connect() as conn:
        # With a timeout it returns once the backend is gone, not when it is signalled.
        gone = sa.text("SELECT pg_terminate_backend(:pid, 10000)")
        assert (await conn.execute(gone, {"pid": pid})).scalar_one()
        await conn.commit()


async def test_a_connection_ended_between_batches_is_replaced_before_the_next(
    grouped: EventStore, engine: AsyncEngine
) -> None:
    """When the server ended the batch connection while it was idle (a restart, a
    crashed primary), the next batch is sent on a new one: no append fails."""
    heads = await _started(grouped, 2)
    assert grouped.group is not None and grouped.group._conn is not None
    ended = grouped.group._conn
    await _terminate(engine, ended.info.backend_pid)
    await wait_until(lambda: _peer_closed(ended.pgconn.socket), 30, what="its socket closed")
    sid, head = heads[0]
    again = await grouped.append(sid, 3, turn(1, 1), prev_hash=head)
    assert again.last_version == 5
    assert grouped.group._conn is not ended


async def test_a_connection_lost_under_a_batch_fails_it_as_unavailable_then_is_replaced(
    grouped: EventStore, engine: AsyncEngine
) -> None:
    """When the server drops the batch connection while the batch is on it, that batch
    fails as database unavailable (503 at the edge: it may not be sent again here) and
    writes nothing; the next append reconnects."""
    heads = await _started(grouped, 2)
    assert grouped.group is not None and grouped.group._conn is not None
    pid = grouped.group._conn.info.backend_pid
    sid, head = heads[0]
    async with engine.connect() as locker:
        await locker.execute(sa.text("LOCK TABLE events IN EXCLUSIVE MODE"))
        held = asyncio.create_task(grouped.append(sid, 3, turn(1, 1), prev_hash=head))
        await wait_until_blocked(engine, by=await backend_pid(locker))
        await _terminate(engine, pid)
        with pytest.raises(psycopg.Error) as failed:
            await held
        await locker.rollback()
    assert database_unavailable(failed.value)
    assert await grouped.stream_version(sid) == 3
    again = await grouped.append(sid, 3, turn(1, 1), prev_hash=head)
    assert again.last_version == 5


async def test_the_batches_do_not_carry_a_requests_log_context(grouped: EventStore) -> None:
    """The task that runs the batches serves every request: it does not run (nor log) in
    the context of the request whose append started it."""
    seen: list[dict[str, object]] = []
    structlog.contextvars.bind_contextvars(request_id="first-request")
    try:
        await grouped.append(
            new_stream(),
            0,
            turn(0, 0),
            prev_hash=GENESIS,
            on_commit=lambda _result: seen.append(structlog.contextvars.get_contextvars()),
        )
    finally:
        structlog.contextvars.unbind_contextvars("request_id")
    assert seen == [{}]
