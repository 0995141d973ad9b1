"""`backlog(after, of_type)` on both stores: the events of one type among those after a
cursor (the consumers' match ends behind, for the metrics), the same in memory and in
PostgreSQL."""

from __future__ import annotations

import pytest

from services.shared.eventstore import START, EventLog, EventStore, InMemoryEventStore
from tests.services.shared.eventstore.contract import new_stream, turn

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "postgres"])
def store(request: pytest.FixtureRequest, pg_store: EventStore) -> EventLog:
    """Each store of the contract."""
    return InMemoryEventStore() if request.param == "memory" else pg_store


async def test_the_backlog_counts_the_events_of_the_asked_type(store: EventLog) -> None:
    """Two turns after the start are six events, two of them `DieRolled`; after the first
    turn, one; unasked, none is counted; caught up, none at all."""
    sid = new_stream()
    first = await store.append(sid, 0, turn(0, 0))
    await store.append(sid, 3, turn(1, 1))
    head = await store.head()
    await store.settle(head)
    everything = await store.backlog(START, of_type="DieRolled")
    assert (everything.events, everything.of_type) == (6, 2)
    after_first = await store.backlog(first.events[-1].cursor, of_type="DieRolled")
    assert (after_first.events, after_first.of_type) == (3, 1)
    assert (await store.backlog(START)).of_type == 0
    assert (await store.backlog(head, of_type="DieRolled")).of_type == 0
