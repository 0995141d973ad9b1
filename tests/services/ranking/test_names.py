"""The names the ranking shows: its own (`ratings.name`), from the seat names of the
matches it rates (`MatchCreated`), never from the match service's `players` table."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.ratings.consumer import RankingConsumer, ratings_hash, recompute
from services.shared.database import alembic_config, migrate
from services.shared.eventstore import EventStore
from tests.services.ranking.finished_matches import CPU, write_match
from tests.services.ranking.test_public import client  # noqa: F401 - the public app, re-used by import

pytestmark = pytest.mark.anyio


async def names(engine: AsyncEngine) -> dict[tuple[str, str], str]:
    """(model, player) -> the name in its rating row."""
    async with engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT model, player_id, name FROM ratings"))
        return {(r.model, r.player_id): r.name for r in rows}


async def renamed_history(engine: AsyncEngine, store: EventStore) -> None:
    """ann plays as "Ann", then "Annie" (rated), then "Casual Ann" in a casual match;
    ben keeps his id as name; cat plays once as "Cat | the \\"quick\\"" (a hash line's
    separator and quotes in a name)."""
    await write_match(engine, store, ["ann", "ben"], [1, 2], names={"ann": "Ann"})
    await write_match(engine, store, ["ben", "ann", CPU], [2, 1, 3], names={"ann": "Annie"})
    await write_match(
        engine, store, ["ann", "ben"], [2, 1], names={"ann": "Casual Ann"}, ranked=False
    )
    await write_match(engine, store, ["cat", "ben"], [1, 2], names={"cat": 'Cat | the "quick"'})
    await RankingConsumer(engine, store, batch=2).catch_up()


WANT = {"ann": "Annie", "ben": "ben", "cat": 'Cat | the "quick"'}


async def test_the_latest_rated_match_names_the_player(
    engine: AsyncEngine,
    pg_store: EventStore,
    client: AsyncTestClient[Any],  # noqa: F811
) -> None:
    """Each player shows under their seat name in their latest rated match, in every model
    and in the public reads, with no `players` row at all; a casual match renames no one."""
    await renamed_history(engine, pg_store)
    got = await names(engine)
    assert got and {player: name for (_, player), name in got.items()} == WANT
    async with engine.connect() as conn:
        assert await conn.scalar(sa.text("SELECT count(*) FROM players")) == 0
    board = (await client.get("/api/ratings/leaderboard")).json()["entries"]
    assert {e["player_id"]: e["name"] for e in board} == WANT
    assert (await client.get("/api/ratings/players/ann")).json()["name"] == "Annie"


async def test_recompute_writes_the_same_names(engine: AsyncEngine, pg_store: EventStore) -> None:
    """A rebuild from the log gives the live names, and the ratings hash covers them."""
    await renamed_history(engine, pg_store)
    live = await ratings_hash(engine)
    before = await names(engine)
    async with engine.begin() as conn:
        await conn.execute(sa.text("UPDATE ratings SET name = 'wrong' WHERE player_id = 'ann'"))
    assert await ratings_hash(engine) != live
    assert await recompute(engine) == live[0]
    assert await names(engine) == before


async def test_migration_0007_backfills_the_names(
    engine: AsyncEngine, pg_store: EventStore, database_url: str
) -> None:
    """Upgrading a database whose ratings have no names gives each rating row the name
    the consumer would have written: same names, same ratings hash."""
    await renamed_history(engine, pg_store)
    live = await ratings_hash(engine)
    before = await names(engine)
    await engine.dispose()
    command.downgrade(alembic_config(database_url), "0006")
    async with engine.connect() as conn:
        columns = await conn.scalars(
            sa.text(
                "SELECT column_name FROM information_schema.columns WHERE table_name = 'ratings'"
            )
        )
        assert "name" not in columns.all()
    migrate(database_url)
    await engine.dispose()
    assert await names(engine) == before
    assert await ratings_hash(engine) == live
