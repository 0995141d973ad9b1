"""The analysis consumer on real PostgreSQL: every finished match analysed once, stored as
the very bytes `ludo replay analyse` prints, and served by `GET /api/ratings/analysis/…`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import events as ev
from replays.format import ReplayFile, load_replay
from services.match.replays.service import ReplayStore
from services.ranking.analysis import worker
from services.ranking.analysis.consumer import AnalysisConsumer
from services.ranking.analysis.worker import NICE, analyse_match
from services.ranking.app import create_app
from services.shared.analysis_hints import analysed, analysis_hint_stream
from services.shared.eventstore import EventData, EventStore, Notification
from services.shared.settings import Settings
from tests.golden.analyses.write import golden_pairs
from tests.services.ranking.finished_matches import CPU, write_match
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


SMALL = "v1-standard-2p-standins"  # the quickest golden match to analyse


async def import_goldens(store: EventStore, only: str | None = SMALL) -> dict[str, bytes]:
    """Stores the golden replays (`only` the one so named; None: all); match id -> its
    golden analysis bytes."""
    out = {}
    for replay_path, golden in golden_pairs():
        if only is not None and not replay_path.name.startswith(only):
            continue
        replay = load_replay(replay_path.read_bytes())
        await ReplayStore(store).import_replay(replay)
        out[replay.match_id] = golden.read_bytes()
    return out


async def stored(engine: AsyncEngine) -> dict[str, bytes]:
    async with engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT match_id, body FROM match_analyses"))
        return {r.match_id: bytes(r.body) for r in rows}


async def test_the_service_stores_the_golden_bytes_of_each_replay(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Each imported golden replay's stored analysis is byte for byte its golden file, the
    one `ludo replay analyse` prints (tests/ludo_cli/test_analyse_cmd.py)."""
    goldens = await import_goldens(pg_store, only=None)
    consumer = AnalysisConsumer(engine, pg_store, worker=False)
    await consumer.catch_up()
    assert await stored(engine) == goldens


async def test_each_seat_row_counts_the_faces_it_rolled(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """`analysis_seats.faces` are the seat's DieRolled values, and its luck the analysis's."""
    goldens = await import_goldens(pg_store)
    await AnalysisConsumer(engine, pg_store, worker=False).catch_up()
    for match_id in goldens:
        events = [e.event for e in await pg_store.read_stream(f"match-{match_id}")]
        expected = analyse_match(events)
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    sa.text(
                        "SELECT seat, faces, luck, player_id FROM analysis_seats"
                        " WHERE match_id = :m ORDER BY seat"
                    ),
                    {"m": match_id},
                )
            ).all()
        rolled = [[0] * 6 for _ in rows]
        for e in events:
            if isinstance(e, ev.DieRolled):
                rolled[e.seat][e.value - 1] += 1
        assert [list(r.faces) for r in rows] == rolled
        assert [r.luck for r in rows] == [s[0] for s in expected.seats]


async def test_two_consumers_at_once_analyse_each_match_once(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Two consumers stepping at the same time (as two leaders in a takeover would) write
    each match once: the second finds the checkpoint moved and writes nothing."""
    goldens = await import_goldens(pg_store)
    for _ in range(3):
        await write_match(engine, pg_store, ["ann", CPU, "ben"], [1, 3, 2])
    a = AnalysisConsumer(engine, pg_store, worker=False, batch=3)
    b = AnalysisConsumer(engine, pg_store, worker=False, batch=3)

    async def drain(c: AnalysisConsumer) -> None:
        for _ in range(20):
            await c.step()

    await asyncio.gather(drain(a), drain(b))
    await a.catch_up()
    async with engine.connect() as conn:
        count = await conn.scalar(sa.text("SELECT count(*) FROM match_analyses"))
        seats = await conn.scalar(sa.text("SELECT count(*) FROM analysis_seats"))
    assert count == len(goldens) + 3
    assert seats == sum(head(b).players for b in goldens.values()) + 9


class _Head(msgspec.Struct):
    """The analysis fields the tests read without decoding the rest."""

    players: int
    evaluator: str


def head(body: bytes) -> _Head:
    return msgspec.json.decode(body, type=_Head)


async def test_the_worker_process_runs_at_a_lower_priority(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """The default consumer analyses in a separate process niced below the service, and
    stores the same bytes as in-process analysis."""
    goldens = await import_goldens(pg_store)
    consumer = AnalysisConsumer(engine, pg_store)
    try:
        await consumer.catch_up(timeout=120)
        assert consumer._pool is not None
        niceness = await asyncio.get_running_loop().run_in_executor(consumer._pool, os.nice, 0)
    finally:
        consumer.close()
    assert niceness >= os.nice(0) + NICE or niceness == 19
    assert await stored(engine) == goldens


def golden(name: str = SMALL) -> tuple[ReplayFile, bytes]:
    """A golden replay and its golden analysis bytes."""
    for replay_path, analysis_path in golden_pairs():
        if replay_path.name.startswith(name):
            return load_replay(replay_path.read_bytes()), analysis_path.read_bytes()
    raise LookupError(name)


async def append_events(store: EventStore, replay: ReplayFile, start: int, end: int) -> None:
    """The replay's events `start`..`end` - 1 appended to its stream, as play appends them."""
    data = [EventData(e.type, e.schema_version, e.data.encode()) for e in replay.events]
    await store.append(replay.stream_id, start, data[start:end])


def first_finish(replay: ReplayFile) -> int:
    return next(e.version for e in replay.events if e.type == "MatchFinished")


async def test_a_match_followed_while_played_is_stored_as_if_analysed_whole(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """The leader folds the events of a match being played as the log's hints name it
    (in the worker process, a budget of events a round); at the end the worker carries
    that fold on with the last turns only, and the stored bytes are the golden ones, as
    a whole analysis gives them."""
    replay, body = golden()
    end = first_finish(replay)
    consumer = AnalysisConsumer(engine, pg_store, progress_every=0.0, progress_events=100)
    try:
        await append_events(pg_store, replay, 0, end - 40)
        consumer.heard([Notification(replay.stream_id, end - 41)])
        rounds = 0
        while await consumer.between():  # a round of 100 events, then the rest
            rounds += 1
        assert rounds >= 1
        assert consumer._folded[replay.stream_id] == end - 40
        assert await consumer.catch_up(timeout=120) == 0  # no end yet: nothing stored
        await append_events(pg_store, replay, end - 40, len(replay.events))
        consumer.heard([Notification(replay.stream_id, len(replay.events) - 1)])
        assert not await consumer.between()  # the end is the consumer's, not a round's
        await consumer.catch_up(timeout=120)
    finally:
        consumer.close()
    assert await stored(engine) == {replay.match_id: body}


async def test_the_worker_carries_a_fold_on_to_the_whole_analysis(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """In one process: the match's `Analyser`, fed most of the match, is the one the end
    carries on (and then dropped), and the bytes are still the golden ones."""
    replay, body = golden()
    end = first_finish(replay)
    consumer = AnalysisConsumer(engine, pg_store, worker=False, progress_every=0.0)
    await append_events(pg_store, replay, 0, end - 10)
    consumer.heard([Notification(replay.stream_id, end - 11)])
    while await consumer.between():
        pass
    fold = worker._ANALYSERS[replay.stream_id]
    assert fold.fed == end - 10
    await append_events(pg_store, replay, end - 10, len(replay.events))
    await consumer.catch_up()
    assert fold.fed == len(replay.events)  # carried on to the end, not started again
    assert replay.stream_id not in worker._ANALYSERS
    assert await stored(engine) == {replay.match_id: body}


async def test_each_analysis_written_is_hinted_after_its_commit(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Once a page of analyses is committed, a hint names each match's `analysis-<id>`
    pseudo-stream, and `analysed` is true for it (what the match socket re-reads)."""
    goldens = await import_goldens(pg_store)
    match_id = next(iter(goldens))
    assert not await analysed(engine, match_id)
    async with pg_store.listen() as listener:
        await AnalysisConsumer(engine, pg_store, worker=False).catch_up()
        notes = await listener.wait(10)
        while Notification(analysis_hint_stream(match_id), 0) not in notes:
            notes += await listener.wait(10)
    assert await analysed(engine, match_id)


async def test_the_leader_starts_its_worker_before_the_first_end(
    engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A consumer that becomes the leader starts its worker process at once, so the first
    match end does not wait for the worker's start-up."""
    consumer = AnalysisConsumer(engine, pg_store, poll=0.05)
    task = asyncio.create_task(consumer.run())
    try:
        pid = await wait_until(lambda: consumer.worker_pid, 60, what="the worker's start")
        assert pid != os.getpid()
        assert await stored(engine) == {}  # before any end
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        consumer.close()


@pytest.fixture
async def client(database_url: str, tmp_path: Path) -> AsyncIterator[AsyncTestClient[Any]]:
    """The ranking app without its consumers (the tests catch up themselves)."""
    settings = Settings(data_dir=tmp_path, database_url=database_url, db_pool_size=4)
    async with AsyncTestClient(create_app(settings, consume=False)) as c:
        yield c


async def test_the_endpoint_serves_the_stored_bytes(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """`GET /api/ratings/analysis/{id}` answers the stored bytes with the evaluator in a
    header; before the consumer reached the match, 404 `not_analysed`."""
    goldens = await import_goldens(pg_store)
    match_id, body = next(iter(goldens.items()))
    early = await client.get(f"/api/ratings/analysis/{match_id}")
    assert early.status_code == 404
    assert early.json()["error"] == "not_analysed"
    await AnalysisConsumer(engine, pg_store, worker=False).catch_up()
    answer = await client.get(f"/api/ratings/analysis/{match_id}")
    assert answer.status_code == 200
    assert answer.content == body
    assert answer.headers["x-ludo-evaluator"] == head(body).evaluator


@pytest.mark.parametrize(
    ("match_id", "status", "code"),
    [
        ("7d3c7f0e-2b0a-4a53-9d51-1f2f1c0b9a77", 404, "not_found"),
        ("not-a-uuid", 422, "invalid"),
    ],
)
async def test_unknown_and_malformed_match_ids(
    client: AsyncTestClient[Any], match_id: str, status: int, code: str
) -> None:
    """An unknown match is 404 `not_found`, a malformed id 422 naming `match_id`."""
    answer = await client.get(f"/api/ratings/analysis/{match_id}")
    assert answer.status_code == status
    assert answer.json()["error"] == code
