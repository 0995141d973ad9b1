"""Two real `ludo ranking consume` processes: one consumes, the other takes over when the
leader is killed (kill -9) or frozen (SIGSTOP), idle or in the middle of a batch, and a
frozen leader that runs again rates nothing twice and stands by."""

from __future__ import annotations

import asyncio
import functools
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import events as ev
from services.ranking.ratings.consumer import CHECKPOINT, head_cursor
from services.ranking.ratings.consumer import leader_name as leader
from services.shared.eventstore import EventStore
from tests import paths
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ROOT = paths.ROOT
PLAYERS = [f"p{i}" for i in range(24)]
TIMEOUT = 90.0  # s: generous; the times measured are printed, not asserted


class Consumer:
    """One `ludo ranking consume` process, its sessions named by `application_name`."""

    def __init__(self, name: str, database_url: str, logs: Path) -> None:
        self.name = name
        self.log = logs / f"{name}.log"
        url = make_url(database_url).update_query_dict({"application_name": name})
        env = {
            **os.environ,
            "DATABASE_URL": url.render_as_string(hide_password=False),
            "PYTHONPATH": str(ROOT),
            "LUDO_LOG_FORMAT": "json",
        }
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ludo_cli.main", "ranking", "consume"],
                env=env,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)

    def logged(self, event: str) -> int:
        return self.log.read_text(errors="replace").count(f'"{event}"')

    def stop(self) -> None:
        if self.proc.poll() is None:
            with_cont = [signal.SIGCONT, signal.SIGKILL]
            for sig in with_cont:
                try:
                    os.kill(self.proc.pid, sig)
                except ProcessLookupError:
                    break
        self.proc.wait(timeout=30)


@pytest.fixture
async def consumers(database_url: str, tmp_path: Path) -> AsyncIterator[Callable[[str], Consumer]]:
    started: list[Consumer] = []

    def start(name: str) -> Consumer:
        c = Consumer(name, database_url, tmp_path)
        started.append(c)
        return c

    try:
        yield start
    finally:
        for c in started:
            c.stop()


async def wait_for(
    what: str,
    check: Callable[[], Awaitable[Any]],
    engine: AsyncEngine | None = None,
    timeout: float = TIMEOUT,
) -> Any:
    """Polls `check` until it returns something true; returns it (fails after `timeout`,
    with the consumers' sessions as `pg_stat_activity` shows them when `engine` is given)."""
    try:
        return await wait_until(check, timeout, what=what, pause=0.05)
    except AssertionError as failed:
        sessions = await _sessions(engine) if engine is not None else ""
        raise AssertionError(f"{failed}{sessions}") from None


async def _sessions(engine: AsyncEngine) -> str:
    async with engine.connect() as conn:
        rows = (
            await conn.execute(
                text(
                    "SELECT application_name, pid, state, wait_event_type, wait_event,"
                    " xact_start IS NOT NULL AS in_tx, left(query, 60) AS query"
                    " FROM pg_stat_activity WHERE application_name LIKE 'ranking-%'"
                    " ORDER BY application_name, pid"
                )
            )
        ).all()
    return "".join(f"\n  {tuple(r)}" for r in rows)


async def in_transaction(engine: AsyncEngine, name: str) -> bool:
    """Whether a session of `name` is inside a transaction (a batch, its row locks held)."""
    async with engine.connect() as conn:
        return bool(
            await conn.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE application_name = :n"
                    " AND xact_start IS NOT NULL"
                ),
                {"n": name},
            )
        )


async def checkpoint(engine: AsyncEngine) -> tuple[int, int]:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text("SELECT tx, position FROM consumer_checkpoints WHERE name = :n"),
                {"n": CHECKPOINT},
            )
        ).first()
    return (0, 0) if row is None else (int(row.tx), int(row.position))


async def rated_matches(engine: AsyncEngine) -> int:
    async with engine.connect() as conn:
        return int(
            await conn.scalar(text("SELECT count(DISTINCT match_stream) FROM rating_changes"))
        )


async def write_matches(engine: AsyncEngine, store: EventStore, n: int) -> None:
    """`n` finished ranked duels between random players, in ONE transaction (a backlog
    the leader needs many batches for)."""
    rng = random.Random()
    async with engine.begin() as conn:
        rows = []
        for _ in range(n):
            a, b = rng.sample(PLAYERS, 2)
            stream = f"match-{uuid.uuid4()}"
            rows.append({"s": stream, "p": str(uuid.uuid4())})
            seats = tuple(ev.SeatSpec(name=p, player_id=p, cpu=None) for p in (a, b))
            events: list[ev.Event] = [
                ev.MatchCreated(ruleset={}, seats=seats, seed_hash="0" * 64),
                ev.MatchStarted(client_seeds=("", ""), client_seed=""),
                ev.MatchFinished(placements=rng.choice(((1, 2), (2, 1), (1, 1)))),
                ev.SeedRevealed(server_seed="00"),
            ]
            await store.append(stream, 0, events, conn=conn)
        await conn.execute(
            text(
                "INSERT INTO matches (stream_id, party_id, turn_limit, ranked)"
                " VALUES (:s, :p, NULL, true)"
            ),
            rows,
        )


async def all_rated(engine: AsyncEngine, matches: int) -> bool:
    head = await head_cursor(engine)
    return await rated_matches(engine) == matches and await checkpoint(engine) >= (
        head.tx,
        head.position,
    )


async def assert_rated_once(engine: AsyncEngine, matches: int) -> None:
    """Every match rated once in every model, for each of its players; each player's
    `ratings.matches` equals their rows of history."""
    async with engine.connect() as conn:
        assert await rated_matches(engine) == matches
        repeated = await conn.scalar(
            text(
                "SELECT count(*) FROM (SELECT 1 FROM rating_changes"
                " GROUP BY model, match_stream, player_id HAVING count(*) > 1) d"
            )
        )
        assert repeated == 0
        per_model = (
            await conn.execute(
                text("SELECT model, count(*) FROM rating_changes GROUP BY model ORDER BY model")
            )
        ).all()
        assert {n for _, n in per_model} == {2 * matches}, per_model
        off = await conn.scalar(
            text(
                "SELECT count(*) FROM ratings r WHERE r.matches <> (SELECT count(*)"
                " FROM rating_changes c WHERE c.model = r.model AND c.player_id = r.player_id)"
            )
        )
        assert off == 0


class Monotonic:
    """Samples the checkpoint in the background; `check()` fails if it ever went back."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self.seen: list[tuple[int, int]] = []
        self.task = asyncio.create_task(self._sample())

    async def _sample(self) -> None:
        while True:
            self.seen.append(await checkpoint(self.engine))
            await asyncio.sleep(0.02)

    async def check(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        assert self.seen == sorted(self.seen), "the checkpoint went backwards"


async def take_over(
    engine: AsyncEngine, old: Consumer, new: Consumer, how: str, since: float
) -> None:
    """Waits for `new` to hold the lock; prints how long it took since `since` (the
    signal to `old`)."""
    await wait_for(f"{new.name} takes the lock from {old.name}", _is_leader(engine, new))
    print(f"{how}: {new.name} took over in {time.monotonic() - since:.1f} s", flush=True)


def _is_leader(engine: AsyncEngine, c: Consumer) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return await leader(engine) == c.name

    return check


async def test_a_frozen_idle_leader_is_replaced_and_rates_nothing_twice_when_it_wakes(
    engine: AsyncEngine, pg_store: EventStore, consumers: Callable[[str], Consumer]
) -> None:
    """SIGSTOP an idle leader: the standby takes over and rates what follows; SIGCONT: the
    old leader finds its sessions ended, stands by and rates nothing twice. kill -9 of the
    new leader: the old one takes over again."""
    monotonic = Monotonic(engine)
    a = consumers("ranking-a")
    await wait_for("a leads", _is_leader(engine, a))
    b = consumers("ranking-b")
    await write_matches(engine, pg_store, 50)
    await wait_for("a rates the first 50", lambda: all_rated(engine, 50))
    await wait_for("b stands by", lambda: _has_session(engine, b.name))

    a.signal(signal.SIGSTOP)
    since = time.monotonic()
    await write_matches(engine, pg_store, 50)
    await take_over(engine, a, b, "idle freeze (SIGSTOP)", since)
    await wait_for("b rates the next 50", lambda: all_rated(engine, 100))

    a.signal(signal.SIGCONT)
    await wait_for("a stands by", lambda: _async(a.logged("ranking_consumer_standing_by")))
    await write_matches(engine, pg_store, 50)
    await wait_for("all 150 rated", lambda: all_rated(engine, 150))
    assert await leader(engine) == b.name

    b.signal(signal.SIGKILL)
    since = time.monotonic()
    await write_matches(engine, pg_store, 50)
    await take_over(engine, b, a, "kill -9", since)
    await wait_for("a rates the last 50", lambda: all_rated(engine, 200))

    await monotonic.check()
    await assert_rated_once(engine, 200)


async def test_a_leader_frozen_in_the_middle_of_a_batch_is_replaced(
    engine: AsyncEngine, pg_store: EventStore, consumers: Callable[[str], Consumer]
) -> None:
    """SIGSTOP the leader at random moments while it works through a large backlog (inside
    a batch transaction, its checkpoint row locked): the standby takes over every time and
    rates everything; woken, the old leader rolls back, stands by and rates nothing twice."""
    monotonic = Monotonic(engine)
    pair = [consumers("ranking-a")]
    await wait_for("a leads", _is_leader(engine, pair[0]))
    pair.append(consumers("ranking-b"))
    await wait_for("b stands by", lambda: _has_session(engine, pair[1].name))
    total, mid_batch, rounds = 0, 0, 0
    while mid_batch < 3:
        rounds += 1
        assert rounds <= 10, f"only {mid_batch} of {rounds - 1} freezes fell inside a batch"
        old, new = pair
        before = await checkpoint(engine)
        # About 0.5 - 1.5 s of work for the leader: 30 batches of 500 events.
        await write_matches(engine, pg_store, 3000)
        total += 3000
        working = functools.partial(_moved, engine, before)
        await wait_for(f"{old.name} works on the backlog", working)
        # Frozen the moment it is seen inside a batch's transaction (it may commit before
        # the signal lands: `inside`, read after the freeze, says which it was).
        await wait_for(
            f"{old.name} in a batch", functools.partial(in_transaction, engine, old.name)
        )
        old.signal(signal.SIGSTOP)
        since = time.monotonic()
        inside = await in_transaction(engine, old.name)
        mid_batch += inside
        how = "mid-batch freeze" if inside else "freeze outside a batch"
        await take_over(engine, old, new, how, since)
        await wait_for(
            f"{new.name} rates all {total}",
            functools.partial(all_rated, engine, total),
            engine,
        )
        standing_by = old.logged("ranking_consumer_standing_by")
        old.signal(signal.SIGCONT)
        await wait_for(
            f"{old.name} stands by",
            functools.partial(_logged_more, old, "ranking_consumer_standing_by", standing_by),
        )
        pair = [new, old]
    await write_matches(engine, pg_store, 20)
    total += 20
    await wait_for("the last 20 rated", lambda: all_rated(engine, total))
    await monotonic.check()
    await assert_rated_once(engine, total)


async def _has_session(engine: AsyncEngine, name: str) -> bool:
    async with engine.connect() as conn:
        return bool(
            await conn.scalar(
                text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :n"),
                {"n": name},
            )
        )


async def _moved(engine: AsyncEngine, before: tuple[int, int]) -> bool:
    return await checkpoint(engine) > before


async def _async(value: Any) -> Any:
    return value


async def _logged_more(c: Consumer, event: str, than: int) -> bool:
    return c.logged(event) > than
