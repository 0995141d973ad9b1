"""The in-memory event store: the shared contract, and nothing it cannot keep."""

from __future__ import annotations

import pytest

from services.shared.eventstore import InMemoryEventStore
from tests.services.shared.eventstore.contract import EventStoreContract

pytestmark = pytest.mark.anyio


class TestInMemoryEventStore(EventStoreContract):
    """The contract, run against a fresh in-memory store."""

    @pytest.fixture
    def store(self) -> InMemoryEventStore:
        return InMemoryEventStore()
