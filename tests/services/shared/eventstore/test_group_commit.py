"""Group commit (eventstore/_group.py): the shared contract through batches, and what
batching must not change: each stream's own checks, a failure confined to its append,
hints after `on_commit`, a broken connection answered and replaced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest
import sqlalchemy as sa
import structlog
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.chain import GENESIS
from services.shared.errors import database_unavailable
from services.shared.eventstore import AppendResult, ConcurrencyError, EventStore
from tests.services.shared.eventstore.contract import EventStoreContract, new_stream, turn

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


async def test_a_broken_connection_is_unavailable_then_replaced(
    grouped: EventStore, engine: AsyncEngine
) -> None:
    """When the server drops the batch connection, that batch fails as database
    unavailable (503 at the edge) and writes nothing; the next append reconnects."""
    heads = await _started(grouped, 2)
    assert grouped.group is not None and grouped.group._conn is not None
    pid = grouped.group._conn.info.backend_pid
    async with engine.connect() as conn:
        # With a timeout it returns once the backend is gone, not when it is signalled.
        gone = sa.text("SELECT pg_terminate_backend(:pid, 10000)")
        assert (await conn.execute(gone, {"pid": pid})).scalar_one()
        await conn.commit()
    sid, head = heads[0]
    with pytest.raises(psycopg.Error) as failed:
        await grouped.append(sid, 3, turn(1, 1), prev_hash=head)
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
