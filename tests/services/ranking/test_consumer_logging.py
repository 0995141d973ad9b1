"""The ranking consumer's fault lines: what failed and where, never the values the
database echoed in the error's text (services/shared/logging.py, `describe_exception`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.ratings.consumer import RankingConsumer
from services.shared.eventstore import EventStore
from tests.services.ranking.finished_matches import write_match
from tests.services.shared.test_logging import _logs
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio

# A player id that, if it reached a log line, would show that the line carries the
# statement's values (what a real failure could echo: an event's data, a seed).
SECRET_PLAYER = "player-0f3a9c2e-secret-7d41"

_REFUSE_RATING = [
    """
    CREATE FUNCTION refuse_rating() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        -- Echoes the row's values, as psycopg's DETAIL: Key (...)=(...) lines do.
        RAISE EXCEPTION 'refused rating of %', NEW.player_id
            USING DETAIL = format('Key (player_id)=(%s)', NEW.player_id);
    END $$
    """,
    "CREATE TRIGGER refuse_rating BEFORE INSERT OR UPDATE ON ratings"
    " FOR EACH ROW EXECUTE FUNCTION refuse_rating()",
]


async def test_a_failing_batch_is_logged_without_the_values_it_echoes(
    engine: AsyncEngine, pg_store: EventStore, tmp_path: Path
) -> None:
    """A batch that the database refuses with a message quoting the row (a trigger here)
    is logged with its type, SQLSTATE and place, and without the player id it echoed."""
    async with engine.begin() as conn:
        for statement in _REFUSE_RATING:
            await conn.execute(sa.text(statement))
    await write_match(engine, pg_store, [SECRET_PLAYER, "rival"], [1, 2])
    consumer = RankingConsumer(engine, pg_store, poll=0.05, standby_poll=0.05)
    with _logs(tmp_path, "info") as buffer:
        task = asyncio.create_task(consumer.run())
        try:
            lines = await _fault_lines(buffer)
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    out = buffer.getvalue()
    assert SECRET_PLAYER not in out
    fault = lines[0]
    assert fault["level"] == "warning"
    assert fault["sqlstate"] == "P0001"  # raise_exception: what failed, without values
    assert "refused rating of" in fault["error"]
    assert fault["error_type"] and "where" in fault


async def _fault_lines(buffer: Any) -> list[dict[str, Any]]:
    """The consumer's fault lines, once there is one (it retries every standby poll)."""
    events = ("ranking_consumer_error", "ranking_consumer_standing_by")

    def faults() -> list[dict[str, Any]]:
        lines = [
            json.loads(line) for line in buffer.getvalue().splitlines() if line.startswith("{")
        ]
        return [line for line in lines if line.get("event") in events]

    return await wait_until(faults, 10, what="a fault line of the consumer")
