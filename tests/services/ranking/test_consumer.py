"""The ranking consumer on real PostgreSQL: exactly-once effects, leaders, recompute."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain import arena
from domain import events as ev
from domain.chain import GENESIS
from domain.decider import fold
from domain.ratings import MODELS
from services.ranking.checkpoints import read_checkpoint
from services.ranking.ratings import consumer as consumer_module
from services.ranking.ratings.consumer import (
    CONSUMER_LOCK,
    RankingConsumer,
    match_leavers,
    match_outcome,
    ratings_hash,
    recompute,
)
from services.shared.eventstore import START, Cursor, EventStore
from tests.services.ranking.finished_matches import CPU, write_match
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


async def ratings(engine: AsyncEngine, model: str = "openskill") -> dict[str, Any]:
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                sa.text("SELECT * FROM ratings WHERE model = :m ORDER BY player_id"), {"m": model}
            )
        ).all()
    return {r.player_id: r for r in rows}


async def change_count(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int(await conn.scalar(sa.text("SELECT count(*) FROM rating_changes")) or 0)


async def some_matches(engine: AsyncEngine, store: EventStore, n: int = 12) -> list[str]:
    players = ["ann", "ben", "cat", "dan"]
    out = []
    for i in range(n):
        k = 2 + i % 3
        seats = [players[(i + j) % 4] for j in range(k)]
        places = [1 + ((i * 7 + j * 3) % k) for j in range(k)]
        out.append(await write_match(engine, store, seats, places))
    return out


async def test_draw_between_equals_changes_no_mu(engine: AsyncEngine, pg_store: EventStore) -> None:
    """A draw between two new players leaves them at 25 (OpenSkill) and 1500 (Elo)."""
    await write_match(engine, pg_store, ["a", "b"], [1, 1])
    await RankingConsumer(engine, pg_store).catch_up()
    r = await ratings(engine)
    assert r["a"].mu == r["b"].mu == 25.0
    assert r["a"].rating == r["b"].rating
    elo = await ratings(engine, "elo")
    assert elo["a"].rating == elo["b"].rating == 1500.0


async def test_win_draw_loss_against_same_opponent(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    # Three separate pairs of fresh players, so each outcome starts from the same ratings.
    """From equal ratings, a win rates above a draw above a loss, the draw halfway."""
    await write_match(engine, pg_store, ["w", "x"], [1, 2])
    await write_match(engine, pg_store, ["d", "y"], [1, 1])
    await write_match(engine, pg_store, ["l", "z"], [2, 1])
    await RankingConsumer(engine, pg_store).catch_up()
    for model in ("openskill", "elo"):
        r = await ratings(engine, model)
        assert r["w"].rating > r["d"].rating > r["l"].rating
        assert r["d"].rating == pytest.approx((r["w"].rating + r["l"].rating) / 2, abs=1e-9)


async def test_cpu_casual_and_leavers(engine: AsyncEngine, pg_store: EventStore) -> None:
    """CPU-only and casual matches are not rated; a player who left is placed last, at a
    place of the match (4th of its 4 seats, CPU included), the others moving up."""
    await write_match(engine, pg_store, ["a", CPU], [1, 2])  # one human: nothing to rate
    await write_match(engine, pg_store, ["a", "b"], [1, 2], ranked=False)  # casual
    await RankingConsumer(engine, pg_store).catch_up()
    assert await ratings(engine) == {}
    # b won, but left and never came back: placed last. c came back: keeps place 2.
    s = await write_match(
        engine,
        pg_store,
        ["a", "b", CPU, "c"],
        [3, 1, 4, 2],
        stood_in={1: "left", 3: "disconnected"},
        reclaimed=[3],
    )
    await RankingConsumer(engine, pg_store).catch_up()
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                sa.text(
                    "SELECT player_id, place, left_match, players, library, params "
                    "FROM rating_changes WHERE model = 'openskill' AND match_stream = :s"
                ),
                {"s": s},
            )
        ).all()
    got = {r.player_id: (r.place, r.left_match) for r in rows}
    # After everyone who stayed (the CPU's 3rd included): those move up, c to 1st; each
    # place out of the match's 4 seats (the CPU's counted), never "4 / 3".
    assert got == {"a": (2, False), "b": (4, True), "c": (1, False)}
    assert all(r.players == 4 and r.library.startswith("openskill") for r in rows)
    assert rows[0].params["model"] == "BradleyTerryFull"
    r = await ratings(engine)
    assert r["c"].mu > r["a"].mu > r["b"].mu


async def test_ranked_from_party_event_else_matches_table(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Ranked is read from the party's MatchOpened, else from the matches table."""
    await write_match(engine, pg_store, ["a", "b"], [1, 2], party_event=False)
    # The party's MatchOpened says casual: it wins over the table's column.
    await write_match(engine, pg_store, ["c", "d"], [1, 2], ranked=False, table_ranked=True)
    await RankingConsumer(engine, pg_store).catch_up()
    assert set(await ratings(engine)) == {"a", "b"}
    events = await pg_store.read_events((await some_matches(engine, pg_store, 1))[0])
    assert match_outcome(events) is not None


def test_timeout_stand_in_is_not_leaving() -> None:
    """A stand-in for timeouts keeps the place; one for leaving is placed last, after
    the player who stayed (who moves up: `domain.outcome`)."""
    seats = (ev.SeatSpec(name="a", player_id="a"), ev.SeatSpec(name="b", player_id="b"))
    base = [ev.MatchCreated(ruleset={}, seats=seats, seed_hash="")]
    end = [ev.MatchFinished(placements=(2, 1))]
    timeouts = match_outcome([*base, ev.SeatStoodIn(seat=1, reason="timeouts"), *end])
    assert timeouts is not None and [p.place for p in timeouts] == [2, 1]
    left = match_outcome([*base, ev.SeatStoodIn(seat=1, reason="left"), *end])
    assert left is not None and [(p.place, p.left) for p in left] == [(1, False), (2, True)]
    assert match_outcome(base) is None  # not finished


def test_a_concession_is_no_leave_and_a_match_against_cpus_is_not_rated() -> None:
    """A conceded match (the player's act, not a stand-in's) is read as finished by its
    player, not left, for the reputation; one guest against CPUs rates nobody."""
    seats = (ev.SeatSpec(name="a", player_id="a"), ev.SeatSpec(name="c", cpu="easy"))
    events: list[ev.Event] = [
        ev.MatchCreated(ruleset={}, seats=seats, seed_hash=""),
        ev.MatchConceded(seat=0),
        ev.MatchFinished(placements=(2, 1)),
    ]
    assert match_leavers(events) == {"a": False}
    assert match_outcome(events) is None


_STAND_INS: st.SearchStrategy[ev.StandInReason] = st.sampled_from(
    ["left", "disconnected", "timeouts"]
)


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_ratings_read_a_match_as_an_arena_scores_it(data: st.DataObject) -> None:
    """For any finished match of guests (stand-ins of every kind, seats reclaimed), each
    player's place and whether they left are, for the ratings, exactly what an arena
    scores the match with (`domain.arena.match_outcome`, its current scoring revision):
    both read it with `domain.outcome`."""
    seats = data.draw(st.integers(min_value=2, max_value=4))
    specs = tuple(ev.SeatSpec(name=f"s{i}", player_id=f"p{i}") for i in range(seats))
    events: list[ev.Event] = [ev.MatchCreated(ruleset={}, seats=specs, seed_hash="")]
    for seat in data.draw(st.lists(st.integers(min_value=0, max_value=seats - 1), max_size=6)):
        if data.draw(st.booleans()):
            events.append(ev.SeatStoodIn(seat=seat, reason=data.draw(_STAND_INS)))
        else:
            events.append(ev.SeatReclaimed(seat=seat))
    keys = data.draw(st.lists(st.integers(0, 3), min_size=seats, max_size=seats))
    placements = tuple(1 + sum(1 for k in keys if k > key) for key in keys)
    events.append(ev.MatchFinished(placements=placements))
    rated = match_outcome(events)
    assert rated is not None
    end = fold(events)
    scored = arena.match_outcome("m", placements, end.stood_in, scoring=arena.SCORING)
    assert [(p.place, p.left) for p in rated] == list(zip(scored.places, scored.left, strict=True))


async def test_restart_midway_counts_every_match_once(
    engine: AsyncEngine, pg_store: EventStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Crashes between a batch's writes and its checkpoint rate every match once."""
    streams = await some_matches(engine, pg_store, 12)
    reference = RankingConsumer(engine, pg_store, batch=1000)
    await reference.catch_up()
    want = await ratings_hash(engine)
    assert want[1] > 0
    # Start again from nothing, and "crash" in the middle of batches, several times: after
    # a batch's ratings and rating changes are written, before its checkpoint moves.
    await recompute_from_scratch(engine)
    crashes = 0
    original = consumer_module._apply_batch

    async def flaky(store: Any, conn: Any, finishes: Any, tables: Any) -> int:
        nonlocal crashes
        rated = await original(store, conn, finishes, tables)
        hit = {f.stream_id for f in finishes}
        if crashes < 3 and streams[4 * crashes + 2] in hit:
            crashes += 1
            raise ConnectionError("simulated crash mid-transaction")
        return rated

    monkeypatch.setattr(consumer_module, "_apply_batch", flaky)
    for _ in range(10):
        try:
            await RankingConsumer(engine, pg_store, batch=7).catch_up()
            break
        except ConnectionError:
            continue
    assert crashes == 3
    assert await ratings_hash(engine) == want
    assert await change_count(engine) == sum_players(12) * 3


def sum_players(n: int) -> int:
    return sum(2 + i % 3 for i in range(n))


async def recompute_from_scratch(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        await conn.execute(sa.text("DELETE FROM ratings"))
        await conn.execute(sa.text("DELETE FROM rating_changes"))
        await conn.execute(sa.text("DELETE FROM reputation_matches"))
        await conn.execute(sa.text("UPDATE consumer_checkpoints SET tx = 0, position = 0"))


async def test_two_consumers_at_once_equal_one(engine: AsyncEngine, pg_store: EventStore) -> None:
    """Three consumers catching up at once rate as one would."""
    await some_matches(engine, pg_store, 15)
    await RankingConsumer(engine, pg_store).catch_up()
    want = await ratings_hash(engine)
    await recompute_from_scratch(engine)
    consumers = [RankingConsumer(engine, EventStore(engine), batch=3) for _ in range(3)]
    await asyncio.gather(*(c.catch_up() for c in consumers))
    assert await ratings_hash(engine) == want
    assert await change_count(engine) == sum_players(15) * 3


async def test_run_leader_and_standby_take_over(engine: AsyncEngine, pg_store: EventStore) -> None:
    """One consumer leads, the other stands by and takes over when the leader stops."""
    first = RankingConsumer(engine, pg_store, poll=0.05, standby_poll=0.05)
    second = RankingConsumer(engine, EventStore(engine), poll=0.05, standby_poll=0.05)
    t1 = asyncio.create_task(first.run())
    await wait_until(lambda: first.active, 5, what="the first consumer to lead")
    refusals = count_refusals(second)
    t2 = asyncio.create_task(second.run())
    await wait_until(lambda: refusals[0] >= 3, 5, what="three polls for the lock, each refused")
    assert first.active and not second.active
    await write_match(engine, pg_store, ["a", "b"], [1, 2])
    await wait_for_ratings(engine, 2)
    t1.cancel()
    with pytest.raises(asyncio.CancelledError):
        await t1
    await wait_until(lambda: second.active, 5, what="the second consumer to take over")
    await write_match(engine, pg_store, ["c", "d"], [2, 1])
    await wait_for_ratings(engine, 4)
    t2.cancel()
    with pytest.raises(asyncio.CancelledError):
        await t2
    assert await change_count(engine) == 4 * 3
    async with engine.connect() as conn:
        held = await conn.scalar(
            # pg_locks is the whole server's: count this test database's locks only.
            sa.text(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = :k "
                "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            ),
            {"k": CONSUMER_LOCK & 0xFFFFFFFF},
        )
    assert held == 0


def count_refusals(consumer: RankingConsumer) -> list[int]:
    """Counts, in the returned one-item list, the times `consumer` asks for the advisory
    lock and is refused (it then stands by for a poll)."""
    refusals = [0]
    leadership = consumer._leadership

    @contextlib.asynccontextmanager
    async def counted() -> AsyncIterator[AsyncConnection | None]:
        async with leadership() as lock_conn:
            refusals[0] += lock_conn is None
            yield lock_conn

    consumer._leadership = counted  # type: ignore[method-assign]
    return refusals


async def wait_for_ratings(engine: AsyncEngine, n: int) -> None:
    """Returns once `n` players have a rating (the consumer runs in the background)."""

    async def rated() -> bool:
        return len(await ratings(engine)) >= n

    await wait_until(rated, 10, what=f"{n} ratings")


async def test_recompute_hash_equals_live_and_itself(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A recompute from the events gives the live ratings' hash, page size aside."""
    await some_matches(engine, pg_store, 10)
    await RankingConsumer(engine, pg_store).catch_up()
    live, _ = await ratings_hash(engine)
    shapes = await index_shapes(engine)
    live_changes = await all_changes(engine)
    first = await recompute(engine)
    second = await recompute(engine, batch=3)  # many pages, overlapped
    assert first == second == live
    # Row for row the same history (params included), and the same indexes.
    assert await all_changes(engine) == live_changes
    assert await index_shapes(engine) == shapes
    assert {r[0]: r[-3] for r in live_changes} == {m: MODELS[m].params for m in MODELS}
    # The live consumer goes on from the swapped-in tables: nothing doubled, nothing lost.
    await some_matches(engine, pg_store, 3)
    await RankingConsumer(engine, pg_store).catch_up()
    after_live, _ = await ratings_hash(engine)
    assert await recompute(engine) == after_live
    assert await change_count(engine) == (sum_players(10) + sum_players(3)) * 3


async def all_changes(engine: AsyncEngine) -> list[tuple[Any, ...]]:
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                sa.text("SELECT * FROM rating_changes ORDER BY model, match_stream, player_id")
            )
        ).all()
    return [tuple(r) for r in rows]


async def index_shapes(engine: AsyncEngine) -> list[tuple[str, str, bool]]:
    """Every index of the rating tables, its name left out; and whether it is the primary
    key."""
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                sa.text(
                    "SELECT t.relname, pg_get_indexdef(i.indexrelid), i.indisprimary"
                    " FROM pg_index i JOIN pg_class t ON t.oid = i.indrelid"
                    " WHERE t.relname IN ('ratings', 'rating_changes')"
                )
            )
        ).all()
    return sorted((t, re.sub(r"INDEX \S+ ON", "INDEX ON", d), p) for t, d, p in rows)


async def test_global_order_sorts_xids_as_numbers(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Pages follow (tx, position) with tx compared as a number: 99 < 100 < 1000, though
    "1000" < "99" as text. The events get those tx values explicitly (the column only
    defaults to the transaction's xid); their streams have no `matches` row: casual."""
    async with engine.begin() as conn:
        for tx in (1000, 99, 100):
            await conn.execute(
                sa.text(
                    "INSERT INTO events (tx, stream_id, stream_version, event_id, type,"
                    " schema_version, data, prev_hash, hash) VALUES (CAST(:tx AS xid8), :s, 0,"
                    " gen_random_uuid(), 'MatchFinished', 1,"
                    ' \'{"type": "MatchFinished", "placements": [1, 2]}\', :h, :h)'
                ),
                {"tx": str(tx), "s": f"match-x{tx}", "h": GENESIS},
            )
    want = ["match-x99", "match-x100", "match-x1000"]
    assert await pg_store.head() == Cursor(1000, 1)
    live = await consumer_module.finish_page(pg_store, START, 10)
    assert [f.stream_id for f in live.finishes] == want
    assert live.last == Cursor(1000, 1) and live.events == 3
    upto = await consumer_module.finish_page(pg_store, START, 10, until=Cursor(100, 3))
    assert [f.stream_id for f in upto.finishes] == want[:2] and upto.last == Cursor(100, 3)
    after = await consumer_module.finish_page(pg_store, Cursor(99, 2), 10)
    assert [f.stream_id for f in after.finishes] == want[1:]
    # A consumer goes through them (nothing to rate) and stops at the last one.
    consumer = RankingConsumer(engine, batch=2)
    assert await consumer.step() == 2
    assert await consumer.step() == 1
    async with engine.connect() as conn:
        assert await read_checkpoint(conn, "ranking") == Cursor(1000, 1)


async def test_array_literals_read_back_exactly(engine: AsyncEngine) -> None:
    """`_literal` (the upsert's and lookups' arrays) against the server: strings with
    quotes, backslashes, commas, braces, spaces and non-ASCII; doubles to the last bit;
    timestamps to the microsecond."""
    texts = ['a"b', "c\\d", "x,y", "{z}", " sp ", "", "NULL", "ünï ✓"]
    floats = [0.1 + 0.2, 5e-324, 1e300, -0.0, 1500.0 + 30.0 * (25.0 - 3.0 * 25.0 / 3.0)]
    times = [datetime(2026, 11, 30, 1, 2, 3, 456789, tzinfo=UTC)]
    async with engine.connect() as conn:
        driver = await consumer_module._driver(conn)
        async with driver.cursor() as cur:
            await cur.execute(
                "SELECT %s::text[], %s::float8[], %s::timestamptz[], %s::bool[], %s::int[]",
                [
                    consumer_module._literal(texts),
                    consumer_module._literal(floats),
                    consumer_module._literal(times),
                    consumer_module._literal([True, False]),
                    consumer_module._literal([0, -7, 2**31 - 1]),
                ],
            )
            row = await cur.fetchone()
    assert row is not None
    assert row[0] == texts
    assert [f.hex() for f in row[1]] == [f.hex() for f in floats]
    assert row[2] == times
    assert row[3] == [True, False] and row[4] == [0, -7, 2**31 - 1]


async def test_held_back_events_are_looked_at_again_soon(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A match finished while an older transaction runs is not in the global order yet
    (xid8 rule) and its hint has come and gone: the running consumer looks again within
    tens of milliseconds, not at the next poll (here 30 s)."""
    consumer = RankingConsumer(engine, pg_store, poll=30.0, standby_poll=0.05)
    task = asyncio.create_task(consumer.run())
    try:
        await wait_until(lambda: consumer.active, 5, what="the consumer to lead")
        async with engine.connect() as blocker:
            await blocker.scalar(sa.text("SELECT pg_current_xact_id()"))  # an older xid
            await write_match(engine, pg_store, ["a", "b"], [1, 2])
            # A batch saw the match and held it back.
            await wait_until(lambda: consumer.held_back, 5, what="a batch to hold the match back")
            assert await change_count(engine) == 0
            await blocker.rollback()
        started = asyncio.get_running_loop().time()
        await wait_for_ratings(engine, 2)
        assert asyncio.get_running_loop().time() - started < 3.0
        assert not consumer.held_back or await change_count(engine) == 6
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
