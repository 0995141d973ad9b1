"""`EventStore.append_statement`: the one-statement append the match service uses. The
same guarantees as `append` (chain, conflicts, idempotency, NOTIFY), plus side writes that
land only with the events, and a lock order that loses races cleanly instead of
deadlocking."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa
from pg_waits import backend_pid, wait_until_blocked

from domain.chain import GENESIS
from services.shared.eventstore import ConcurrencyError, EventStore, SideWrite

from .contract import new_stream, turn

pytestmark = pytest.mark.anyio

_SIDE = SideWrite(
    "INSERT INTO turn_deadlines (stream_id, due_at, expected_version, kind)"
    " SELECT %(dl_stream)s, now(), %(dl_version)s, 'cpu' FROM appended"
    " ON CONFLICT (stream_id) DO UPDATE SET expected_version = EXCLUDED.expected_version",
    {},
    "SELECT 1 FROM turn_deadlines WHERE stream_id = %(dl_stream)s FOR UPDATE",
)


def side(stream: str, version: int) -> SideWrite:
    return SideWrite(_SIDE.sql, {"dl_stream": stream, "dl_version": version}, _SIDE.lock)


async def deadline_version(store: EventStore, stream: str) -> int | None:
    async with store.engine.connect() as conn:
        version: int | None = await conn.scalar(
            sa.text("SELECT expected_version FROM turn_deadlines WHERE stream_id = :s"),
            {"s": stream},
        )
    return version


async def test_appends_extend_the_chain_like_append(pg_store: EventStore) -> None:
    """Two statements in a row: versions, hashes and stored bytes are what `append`
    would have written, and the stream verifies."""
    sid = new_stream()
    first = await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0))
    second = await pg_store.append_statement(sid, 3, first.events[-1].hash, turn(1, 1))
    assert (second.first_version, second.last_version) == (3, 5)
    assert await pg_store.read_stream(sid) == [*first.events, *second.events]
    assert await pg_store.verify_stream(sid) == 6


async def test_stale_head_hash_writes_nothing(pg_store: EventStore) -> None:
    """A caller whose idea of the last hash is wrong cannot fork the chain."""
    sid = new_stream()
    await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0))
    with pytest.raises(ValueError, match="prev_hash is not the hash"):
        await pg_store.append_statement(sid, 3, bytes(32), turn(1, 1), side=[side(sid, 6)])
    assert len(await pg_store.read_stream(sid)) == 3
    assert await deadline_version(pg_store, sid) is None


async def test_version_taken_is_a_conflict(pg_store: EventStore) -> None:
    """Another writer got there first: ConcurrencyError with the actual version."""
    sid = new_stream()
    first = await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0))
    await pg_store.append(sid, 3, turn(1, 1))
    with pytest.raises(ConcurrencyError) as caught:
        await pg_store.append_statement(sid, 3, first.events[-1].hash, turn(2, 2))
    assert (caught.value.expected, caught.value.actual) == (3, 6)


async def test_new_stream_taken_is_a_conflict(pg_store: EventStore) -> None:
    """Version 0 of a stream that exists already conflicts, whatever the hash says."""
    sid = new_stream()
    await pg_store.append(sid, 0, turn(0, 0))
    with pytest.raises(ConcurrencyError):
        await pg_store.append_statement(sid, 0, GENESIS, turn(1, 1))


async def test_retried_command_returns_its_first_outcome(pg_store: EventStore) -> None:
    """The same command id twice: one set of events, the second call a duplicate."""
    sid = new_stream()
    first = await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0), command_id="c-1")
    again = await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0), command_id="c-1")
    assert again.duplicate and again.events == first.events
    assert len(await pg_store.read_stream(sid)) == 3


async def test_side_write_lands_only_with_the_events(pg_store: EventStore) -> None:
    """The side upsert runs in the same statement, and not at all on a conflict."""
    sid = new_stream()
    first = await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0), side=[side(sid, 3)])
    assert await deadline_version(pg_store, sid) == 3
    await pg_store.append(sid, 3, turn(1, 1))
    with pytest.raises(ConcurrencyError):
        await pg_store.append_statement(
            sid, 3, first.events[-1].hash, turn(2, 2), side=[side(sid, 99)]
        )
    assert await deadline_version(pg_store, sid) == 3


async def test_notifies_after_commit(pg_store: EventStore) -> None:
    """A listener gets the hint with the stream and its last version."""
    sid = new_stream()
    async with pg_store.listen() as listener:
        await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0))
        hints = await listener.wait(5.0)
    assert any(h.stream_id == sid and h.version == 2 for h in hints)


async def test_racing_statements_one_wins(pg_store: EventStore) -> None:
    """Eight statements at the same version at once: exactly one appends."""
    sid = new_stream()
    head = (await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0))).events[-1].hash
    results = await asyncio.gather(
        *(pg_store.append_statement(sid, 3, head, turn(1, 1)) for _ in range(8)),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert all(isinstance(r, ConcurrencyError) for r in results if isinstance(r, BaseException))
    assert await pg_store.verify_stream(sid) == 6


async def test_waits_for_a_transaction_holding_the_side_row(pg_store: EventStore) -> None:
    """A transaction that locked the side row and then appends (as the deadline
    scheduler does) makes the statement wait and then lose with a conflict: the side
    row is locked before the events go in, so the two cannot deadlock."""
    sid = new_stream()
    head = await pg_store.append_statement(sid, 0, GENESIS, turn(0, 0), side=[side(sid, 3)])
    async with pg_store.engine.connect() as conn:
        tx = await conn.begin()
        await conn.execute(
            sa.text("SELECT 1 FROM turn_deadlines WHERE stream_id = :s FOR UPDATE"), {"s": sid}
        )
        racer = asyncio.create_task(
            pg_store.append_statement(sid, 3, head.events[-1].hash, turn(2, 2), side=[side(sid, 9)])
        )
        await wait_until_blocked(pg_store.engine, by=await backend_pid(conn))
        assert not racer.done()
        await pg_store.append_in(conn, sid, 3, turn(1, 1))
        await tx.commit()
    with pytest.raises(ConcurrencyError):
        await racer
    assert await deadline_version(pg_store, sid) == 3
    assert await pg_store.verify_stream(sid) == 6
