"""Side writes of `EventStore.append` (PostgreSQL only): data-modifying fragments in the
append's one statement that land only with the events, on their own or inside the
caller's transaction, and a lock order that loses races cleanly instead of deadlocking.
The append itself (with and without the head's hash) is the contract's (contract.py)."""

from __future__ import annotations

import asyncio

import pytest
import sqlalchemy as sa

from domain.chain import GENESIS
from services.shared.eventstore import ConcurrencyError, EventStore, SideWrite
from tests.pg_waits import wait_until_blocked
from tests.services.shared.eventstore.contract import new_stream, turn

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
        version = await conn.scalar(
            sa.text("SELECT expected_version FROM turn_deadlines WHERE stream_id = :s"),
            {"s": stream},
        )
    return None if version is None else int(version)


async def test_side_write_lands_only_with_the_events(pg_store: EventStore) -> None:
    """The side upsert runs in the same statement, and not at all on a conflict."""
    sid = new_stream()
    first = await pg_store.append(sid, 0, turn(0, 0), prev_hash=GENESIS, side=[side(sid, 3)])
    assert await deadline_version(pg_store, sid) == 3
    await pg_store.append(sid, 3, turn(1, 1))
    with pytest.raises(ConcurrencyError):
        await pg_store.append(
            sid, 3, turn(2, 2), prev_hash=first.events[-1].hash, side=[side(sid, 99)]
        )
    assert await deadline_version(pg_store, sid) == 3


async def test_stale_head_hash_writes_no_side_row(pg_store: EventStore) -> None:
    """A wrong head hash refuses the events and their side write alike."""
    sid = new_stream()
    await pg_store.append(sid, 0, turn(0, 0))
    with pytest.raises(ValueError, match="prev_hash is not the hash"):
        await pg_store.append(sid, 3, turn(1, 1), prev_hash=bytes(32), side=[side(sid, 6)])
    assert await deadline_version(pg_store, sid) is None


async def test_side_write_without_the_head_hash(pg_store: EventStore) -> None:
    """Without `prev_hash` the store reads the head first; the side write still goes
    in with the events, and a stale version still writes neither."""
    sid = new_stream()
    await pg_store.append(sid, 0, turn(0, 0), side=[side(sid, 3)])
    with pytest.raises(ConcurrencyError):
        await pg_store.append(sid, 0, turn(1, 1), side=[side(sid, 7)])
    assert await deadline_version(pg_store, sid) == 3


async def test_side_write_in_the_callers_transaction(pg_store: EventStore) -> None:
    """Inside the caller's transaction the events and the side row commit with it, and
    a lost race (in its savepoint) leaves that transaction usable and its row unwritten."""
    sid = new_stream()
    await pg_store.append(sid, 0, turn(0, 0))
    async with pg_store.engine.connect() as conn:
        async with conn.begin():
            with pytest.raises(ConcurrencyError):
                await pg_store.append(sid, 2, turn(1, 1), side=[side(sid, 99)], conn=conn)
            result = await pg_store.append(sid, 3, turn(1, 1), side=[side(sid, 6)], conn=conn)
            async with pg_store.engine.connect() as other:
                seen = await other.scalar(
                    sa.text("SELECT count(*) FROM turn_deadlines WHERE stream_id = :s"),
                    {"s": sid},
                )
            assert seen == 0  # not before the caller commits
        await pg_store.notify(result, conn)
    assert await deadline_version(pg_store, sid) == 6
    assert await pg_store.verify_stream(sid) == 6


async def test_waits_for_a_transaction_holding_the_side_row(pg_store: EventStore) -> None:
    """A transaction that locked the side row and then appends (as the deadline
    scheduler does) makes the statement wait and then lose with a conflict: the side
    row is locked before the events go in, so the two cannot deadlock."""
    sid = new_stream()
    head = await pg_store.append(sid, 0, turn(0, 0), prev_hash=GENESIS, side=[side(sid, 3)])
    async with pg_store.engine.connect() as conn:
        tx = await conn.begin()
        await conn.execute(
            sa.text("SELECT 1 FROM turn_deadlines WHERE stream_id = :s FOR UPDATE"), {"s": sid}
        )
        racer = asyncio.create_task(
            pg_store.append(sid, 3, turn(2, 2), prev_hash=head.events[-1].hash, side=[side(sid, 9)])
        )
        await wait_until_blocked(pg_store.engine)
        assert not racer.done()
        await pg_store.append(sid, 3, turn(1, 1), conn=conn)
        await tx.commit()
    with pytest.raises(ConcurrencyError):
        await racer
    assert await deadline_version(pg_store, sid) == 3
    assert await pg_store.verify_stream(sid) == 6
