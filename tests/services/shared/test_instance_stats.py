"""What an instance says of itself for the operator's live view (services/shared/
instance_stats.py): its row of `instance_stats`, its pool and the checkouts that waited."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from services.shared.database import create_engine
from services.shared.instance_stats import InstanceBeat, pool_figures
from services.shared.metrics import Counters

pytestmark = pytest.mark.anyio


async def test_a_beat_writes_one_row_named_after_the_instance(database_url: str) -> None:
    """The row is keyed by the sessions' application_name; a second beat rewrites it."""
    engine = create_engine(
        f"{database_url}{'&' if '?' in database_url else '?'}application_name=match-7"
    )
    try:
        beat = InstanceBeat(engine, "match", Counters())
        assert beat.name == "match-7"
        await beat.beat()
        await beat.beat()
        await beat.close()
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT service, pid, figures FROM instance_stats WHERE name = 'match-7'"
                    )
                )
            ).all()
    finally:
        await engine.dispose()
    assert len(rows) == 1
    service, _pid, figures = rows[0]
    assert service == "match"
    assert {"size", "open", "in_use", "checkouts", "waits", "wait_seconds"} <= set(figures["pool"])
    assert figures["sockets"] == 0


async def test_a_checkout_that_waited_for_a_connection_is_a_pool_wait(database_url: str) -> None:
    """A checkout that waits for the pool's only connection (until its timeout) is counted
    among the instance's pool waits, with the time it waited; a wait on another engine of
    the same process is that engine's, not this instance's."""
    engine: AsyncEngine = create_engine(database_url, pool_size=1, max_overflow=0, pool_timeout=0.2)
    other: AsyncEngine = create_engine(database_url, pool_size=1, max_overflow=0, pool_timeout=0.2)
    beat = InstanceBeat(engine, "match", Counters())
    try:
        async with engine.connect() as held:
            await held.execute(sa.text("SELECT 1"))
            # From here on, the only checkout of this engine is the one that must wait.
            before = beat.figures()["pool"]
            with pytest.raises(sa.exc.TimeoutError):
                async with engine.connect() as waiting:
                    await waiting.execute(sa.text("SELECT 1"))
            async with other.connect() as taken:
                await taken.execute(sa.text("SELECT 1"))
                with pytest.raises(sa.exc.TimeoutError):
                    async with other.connect() as waiting_elsewhere:
                        await waiting_elsewhere.execute(sa.text("SELECT 1"))
            during = beat.figures()["pool"]
            elsewhere = pool_figures(other)
    finally:
        await engine.dispose()
        await other.dispose()
    assert during["in_use"] == 1
    assert during["size"] == 1
    assert during["checkouts"] == before["checkouts"] + 1
    assert during["waits"] == before["waits"] + 1
    # each figure is rounded to the millisecond: their difference may be 1 ms short
    assert during["wait_seconds"] - before["wait_seconds"] >= 0.2 - 0.001
    assert elsewhere["checkouts"] == 2
    assert elsewhere["waits"] >= 1


async def test_the_live_sockets_are_the_apps_own() -> None:
    """An instance counts the sockets open on its own app, not those of another app in the
    same process, and none once they closed."""
    engine = create_engine("postgresql+psycopg:///ludo")  # never connected
    mine, others = Counters(), Counters()
    beat = InstanceBeat(engine, "match", mine)
    lobby, table = mine.socket("/ws/lobby"), others.socket("/ws/matches/{match_id}")
    lobby.inc()
    table.inc()
    table.inc()
    try:
        assert beat.figures()["sockets"] == 1
        lobby.dec()
        assert beat.figures()["sockets"] == 0
        assert others.sockets() == 2
    finally:
        await engine.dispose()
