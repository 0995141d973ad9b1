"""The event store's values (eventstore/_records.py)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from services.shared.eventstore import COMMAND_NAMESPACE, event_ids_for


@given(st.text(min_size=1, max_size=200), st.integers(min_value=0, max_value=12))
def test_event_ids_are_the_uuid5_of_the_command_id_and_the_place(
    command_id: str, count: int
) -> None:
    """Each event id is `uuid5(COMMAND_NAMESPACE, "<command id>:<i>")`, as stored ids
    always were, though computed without `uuid.uuid5`."""
    expected = [uuid.uuid5(COMMAND_NAMESPACE, f"{command_id}:{i}") for i in range(count)]
    assert event_ids_for(command_id, count) == expected
    assert all(
        e.version == 5 and e.variant == uuid.RFC_4122 for e in event_ids_for(command_id, count)
    )
