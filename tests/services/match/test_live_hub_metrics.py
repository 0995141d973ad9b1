"""The live hub's metrics (services/match/live_hub.py): a LISTEN connection that cannot
be opened counts in its app's `ludo_live_listener_reconnects_total` (its store's
counters), once per try."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.match.live_hub import LiveHub
from services.shared.database import create_engine
from services.shared.eventstore import EventStore
from services.shared.metrics import Counters
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


def _reconnects(counters: Counters) -> float:
    return counters.registry.get_sample_value("ludo_live_listener_reconnects_total") or 0.0


async def test_a_listener_that_cannot_connect_counts_its_reconnects(tmp_path: Path) -> None:
    """With no server to LISTEN on, the hub retries every second and each failed try
    moves the counter, while nothing is followed."""
    nowhere = create_engine(f"postgresql+psycopg:///ludo?host={tmp_path}&port=1")
    counters = Counters()
    hub = LiveHub(EventStore(nowhere, counters=counters))
    await hub.start()
    try:
        await wait_until(lambda: _reconnects(counters) >= 2, 15, what="two failed tries")
        assert not hub.listening.is_set()
        assert hub.followed() == {}
    finally:
        await hub.stop()
        await nowhere.dispose()
