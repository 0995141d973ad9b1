"""The reputation fold on real PostgreSQL: the ranking consumer writes a row per human
player of every ended match exactly once, recompute rebuilds the same rows, and a player's
standing (services/shared/standing.py) reads completion, the abandon pause and an
operator's suspension from it."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import AppError
from services.ranking.ratings.consumer import RankingConsumer, recompute
from services.shared.eventstore import EventStore
from services.shared.reports import Reports
from services.shared.standing import standing
from tests.services.ranking.finished_matches import CPU, write_match

pytestmark = pytest.mark.anyio


async def fold_rows(engine: AsyncEngine) -> list[tuple[Any, ...]]:
    """Every row of the reputation fold, in key order."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT * FROM reputation_matches ORDER BY player_id, match_stream")
        )
        return [tuple(r) for r in rows]


async def events_in(engine: AsyncEngine, prefix: str) -> int:
    """The number of events of the streams whose id starts with `prefix`."""
    async with engine.connect() as conn:
        count = await conn.scalar(
            sa.text("SELECT count(*) FROM events WHERE stream_id LIKE :p"), {"p": prefix + "%"}
        )
    return int(count or 0)


async def test_every_ended_match_once_for_its_humans(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Casual and ranked matches, one human against CPUs too, each human once per match;
    a stand-in for timeouts is not a leave, leaving and disconnecting for good are, a
    reclaimed seat is not."""
    ranked = await write_match(engine, pg_store, ["ann", "ben", "cat"], [1, 2, 3])
    casual = await write_match(
        engine, pg_store, ["ann", CPU, "ben"], [2, 1, 3], ranked=False, stood_in={2: "left"}
    )
    solo = await write_match(engine, pg_store, ["cat", CPU], [1, 2], ranked=False)
    slow = await write_match(
        engine, pg_store, ["ann", "ben"], [1, 2], stood_in={0: "timeouts", 1: "disconnected"}
    )
    back = await write_match(
        engine, pg_store, ["ann", "ben"], [2, 1], stood_in={0: "left"}, reclaimed=[0]
    )
    consumer = RankingConsumer(engine, pg_store, batch=2)
    await consumer.catch_up()
    rows = await fold_rows(engine)
    got = {(r[0], r[1]): (r[4], r[5]) for r in rows}  # (ranked, left)
    assert got == {
        ("ann", ranked): (True, False),
        ("ben", ranked): (True, False),
        ("cat", ranked): (True, False),
        ("ann", casual): (False, False),
        ("ben", casual): (False, True),
        ("cat", solo): (False, False),
        ("ann", slow): (True, False),
        ("ben", slow): (True, True),
        ("ann", back): (True, False),
        ("ben", back): (True, False),
    }
    # Again from the start of the log: the primary key refuses a second row, and a
    # consumer that finds nothing new writes nothing.
    await RankingConsumer(engine, pg_store).catch_up()
    assert await fold_rows(engine) == rows
    ann = await standing(engine, "ann", dt.datetime.now(dt.UTC))
    ben = await standing(engine, "ben", dt.datetime.now(dt.UTC))
    assert ann.completion is not None and (ann.completion.finished, ann.completion.started) == (
        4,
        4,
    )
    assert ben.completion is not None and (ben.completion.finished, ben.completion.started) == (
        2,
        4,
    )
    assert (await standing(engine, "nobody", dt.datetime.now(dt.UTC))).completion is None


async def test_two_consumers_at_once_write_each_row_once(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Three consumers catching up together leave one row per player and match."""
    for i in range(8):
        await write_match(engine, pg_store, ["a", "b", CPU], [1 + i % 2, 2 - i % 2, 3])
    consumers = [RankingConsumer(engine, EventStore(engine), batch=3) for _ in range(3)]
    await asyncio.gather(*(c.catch_up() for c in consumers))
    assert len(await fold_rows(engine)) == 16


async def test_recompute_rebuilds_the_same_rows(engine: AsyncEngine, pg_store: EventStore) -> None:
    """`recompute` rebuilds the fold row for row (positions and times included), and the
    live consumer goes on from it."""
    for i in range(6):
        await write_match(
            engine,
            pg_store,
            ["a", "b", "c"][: 2 + i % 2],
            [1, 2, 3][: 2 + i % 2],
            ranked=i % 3 != 0,
            stood_in={1: "left"} if i % 2 else None,
        )
    await RankingConsumer(engine, pg_store).catch_up()
    live = await fold_rows(engine)
    assert len(live) == 15
    await recompute(engine)
    assert await fold_rows(engine) == live
    await recompute(engine, batch=2)
    assert await fold_rows(engine) == live
    await write_match(engine, pg_store, ["a", "b"], [1, 2])
    await RankingConsumer(engine, pg_store).catch_up()
    assert len(await fold_rows(engine)) == 17


async def test_three_ranked_abandons_block_ranked_pools(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Three ranked matches left within a day: `ranked_block` is `abandons`, an hour after
    the third; casual abandons and timeouts do not count."""
    for _ in range(2):
        await write_match(engine, pg_store, ["lea", "bob"], [1, 2], stood_in={0: "left"})
    await write_match(engine, pg_store, ["lea", "bob"], [1, 2], ranked=False, stood_in={0: "left"})
    await write_match(engine, pg_store, ["lea", "bob"], [1, 2], stood_in={0: "timeouts"})
    await RankingConsumer(engine, pg_store).catch_up()
    now = dt.datetime.now(dt.UTC)
    assert (await standing(engine, "lea", now)).ranked_block is None
    await write_match(engine, pg_store, ["lea", "bob"], [1, 2], stood_in={0: "disconnected"})
    await RankingConsumer(engine, pg_store).catch_up()
    now = dt.datetime.now(dt.UTC)
    lea = await standing(engine, "lea", now)
    assert lea.ranked_block is not None and lea.ranked_block.reason == "abandons"
    third = max(r[3] for r in await fold_rows(engine) if r[0] == "lea")
    assert lea.ranked_block.until == third + dt.timedelta(hours=1)
    assert lea.completion is not None and lea.completion.finished == 1
    later = await standing(engine, "lea", third + dt.timedelta(hours=1, seconds=1))
    assert later.ranked_block is None
    assert (await standing(engine, "bob", now)).ranked_block is None
    assert lea.rating < 1500 < (await standing(engine, "bob", now)).rating


async def test_a_suspension_blocks_until_it_ends(engine: AsyncEngine, pg_store: EventStore) -> None:
    """An operator's suspension is `ranked_block` `suspended` until its end; the later of
    a pause and a suspension wins; bad reports append nothing."""
    stream = await write_match(engine, pg_store, ["sue", "tom"], [1, 2])
    match_id = stream.removeprefix("match-")
    reports = Reports(engine, pg_store)
    now = dt.datetime.now(dt.UTC)
    seated = {"sue", "tom"}
    for bad in (
        {"reporter": "tom", "reported": "tom"},
        {"reporter": "zed", "reported": "sue"},
        {"reporter": "tom", "reported": "zed"},
        {"reporter": "tom", "reported": "sue", "reason": "rude"},
    ):
        args: dict[str, Any] = {"reason": "abusive_stamps", **bad}
        with pytest.raises(AppError):
            await reports.file(match_id=match_id, seated=seated, now=now, **args)
    assert await events_in(engine, "report-") == 0
    rid = await reports.file(
        reporter="tom",
        reported="sue",
        match_id=match_id,
        reason="collusion",
        seated=seated,
        now=now,
    )
    with pytest.raises(AppError, match="already reported"):
        await reports.file(
            reporter="tom",
            reported="sue",
            match_id=match_id,
            reason="other",
            seated=seated,
            now=now,
        )
    queue = await reports.queue()
    assert [(r.report_id, r.decision) for r in queue] == [(rid, None)]
    assert (await standing(engine, "sue", now)).ranked_block is None
    decided = await reports.decide(
        rid, operator="operator", decision="suspend", hours=48, note=None, now=now
    )
    assert decided.decision == "suspend" and decided.until is not None
    block = (await standing(engine, "sue", now)).ranked_block
    assert block is not None and block.reason == "suspended"
    assert abs((block.until - now).total_seconds() - 48 * 3600) < 1
    after = await standing(engine, "sue", now + dt.timedelta(hours=49))
    assert after.ranked_block is None
    with pytest.raises(AppError, match="already decided"):
        await reports.decide(
            rid, operator="operator", decision="warn", hours=None, note=None, now=now
        )
    assert await events_in(engine, "report-") == 2
