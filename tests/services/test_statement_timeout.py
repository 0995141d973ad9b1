"""The services' statement timeout (`LUDO_STATEMENT_TIMEOUT`) on real PostgreSQL.

The match service runs as a service does (`create_app` opening its own database from its
`Settings`, not a test's engine) with a one-second timeout and a pool of two connections.
The test's own session holds a lock that every append waits for (`LOCK TABLE events IN
SHARE MODE`: reads go on, inserts queue), so a command's statement runs into the timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import sqlalchemy as sa
import structlog
import websockets
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from ludo_cli.main import main
from services.match.app import create_app
from services.match.parts import MatchParts
from services.ranking.app import create_app as create_ranking_app
from services.shared.database import libpq_url, session_url, untimed
from services.shared.settings import Settings
from tests.pg_waits import wait_until_blocked
from tests.services.conftest import Api
from tests.services.match.test_live import Instance, Table
from tests.services.test_outage import Reader
from tests.waiting import wait_until, wait_until_sync

pytestmark = pytest.mark.anyio

TIMEOUT = 1.0
BUSY = {
    "error": "database_busy",
    "detail": "the database did not answer in time; try again shortly",
}


def timed_settings(tmp_path: Path, database_url: str, **more: Any) -> Settings:
    """A match service's settings on the test's database with the 1 s statement timeout,
    nothing running on its own (no timers, no pairing) and no request budgets."""
    return Settings(
        data_dir=tmp_path,
        database_url=database_url,
        statement_timeout=TIMEOUT,
        cpu_delay=0,
        scheduler=False,
        pairing=False,
        rate_limit=0,
        **more,
    )


@pytest.fixture
async def timed(database_url: str, engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Api]:
    """The match service on the test's database with a 1 s statement timeout, a pool of two
    and no overflow (`Api.engine` is the test's own engine, without the timeout)."""
    settings = timed_settings(tmp_path, database_url, db_pool_size=2, db_max_overflow=0)
    async with AsyncTestClient(create_app(settings)) as client:
        yield Api(client, engine)


def service_engine(api: Api) -> AsyncEngine:
    service: MatchParts = api.client.app.state.parts
    return service.engine


@contextlib.contextmanager
def appends_blocked(database_url: str) -> Iterator[None]:
    """The test's own session holds a lock on `events` that every insert waits for, until
    the block ends (its transaction rolled back)."""
    with psycopg.connect(libpq_url(database_url)) as conn:
        conn.execute("LOCK TABLE events IN SHARE MODE")
        try:
            yield
        finally:
            conn.rollback()


async def setting(url: str, name: str) -> str:
    async with await psycopg.AsyncConnection.connect(url) as conn:
        row = await (await conn.execute(f"SHOW {name}")).fetchone()
        assert row is not None
        return str(row[0])


async def test_every_service_session_has_the_timeout_and_the_rebuild_none(timed: Api) -> None:
    """The pool's sessions, and those opened from the engine's URL (the group commit's and
    the LISTEN connection), have the statement and idle-transaction timeout; the ratings'
    rebuild (`untimed`) and the test's plain engine have none."""
    own = service_engine(timed)
    async with own.connect() as conn:
        assert await conn.scalar(sa.text("SHOW statement_timeout")) == "1s"
        assert await conn.scalar(sa.text("SHOW idle_in_transaction_session_timeout")) == "1s"
    assert await setting(libpq_url(own.url), "statement_timeout") == "1s"
    assert await setting(libpq_url(own.url), "idle_in_transaction_session_timeout") == "1s"
    async with untimed(own) as rebuilding, rebuilding.connect() as conn:
        assert rebuilding is not own
        assert await conn.scalar(sa.text("SHOW statement_timeout")) == "0"
        assert await conn.scalar(sa.text("SHOW idle_in_transaction_session_timeout")) == "0"
    async with timed.engine.connect() as conn:
        assert await conn.scalar(sa.text("SHOW statement_timeout")) == "0"


async def test_a_command_held_past_the_timeout_answers_503_and_its_retry_succeeds(
    timed: Api, database_url: str
) -> None:
    """A roll whose append waits on another session's lock past the timeout answers 503
    `database_busy` with Retry-After and appends nothing (logged at warning, without the
    statement's parameters); once the lock is released the same request with its
    Idempotency-Key succeeds, and the pool has every connection back."""
    match_id, players, _ = await timed.duel()
    stream = f"match-{match_id}"
    before = await timed.stream_length(stream)
    request: dict[str, Any] = {
        "headers": timed.h(players[0], **{"Idempotency-Key": "roll-past-the-timeout"})
    }
    with structlog.testing.capture_logs() as logs, appends_blocked(database_url):
        refused = await timed.call("POST", f"/api/matches/{match_id}/roll", **request)
        assert refused.status_code == 503, refused.text
        assert refused.json() == BUSY
        assert refused.headers["Retry-After"] == "2"
        assert await timed.stream_length(stream) == before
    busy = [line for line in logs if line["event"] == "database_busy"]
    assert busy and busy[0]["log_level"] == "warning"
    assert busy[0]["sqlstate"] == "57014"
    assert stream not in str(busy), "a bound parameter reached the log"
    assert not [line for line in logs if line["event"] == "request_failed"]  # not a fault

    rolled = await timed.call("POST", f"/api/matches/{match_id}/roll", **request)
    assert rolled.status_code == 200, rolled.text
    assert await timed.stream_length(stream) > before
    again = await timed.call("POST", f"/api/matches/{match_id}/roll", **request)
    assert again.json() == {**rolled.json(), "duplicate": True}  # not a second roll

    pool = service_engine(timed).pool
    assert pool.checkedout() == 0  # type: ignore[attr-defined]
    # More requests than the pool has connections, one after another: none waits for one.
    for _ in range(6):
        await timed.step(match_id, players)
    assert pool.checkedout() == 0  # type: ignore[attr-defined]


async def test_reads_go_on_while_appends_are_held(timed: Api, database_url: str) -> None:
    """The timeout ends only statements that wait: a read beside the lock that holds the
    appends answers 200, so a 503 `database_busy` names a stuck statement."""
    match_id, _players, _ = await timed.duel()
    with appends_blocked(database_url):
        state = await timed.call("GET", f"/api/matches/{match_id}")
        assert state.status_code == 200, state.text


async def test_the_timeouts_follow_the_urls_own_options(database_url: str) -> None:
    """`session_url` appends the timeouts to the options a DATABASE_URL already has (both
    hold, through libpq's own URL parsing too), and adds none for 0."""
    url = session_url(f"{database_url}&options=-c%20application_name%3Dmine", 2.5)
    assert await setting(libpq_url(url), "application_name") == "mine"
    assert await setting(libpq_url(url), "statement_timeout") == "2500ms"
    assert await setting(libpq_url(session_url(database_url, 0)), "statement_timeout") == "0"


MIGRATION_LOCK = 0x6C75646F_6D696772  # migrations/env.py's `_LOCK_KEY`
_WAITED = (
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
    " AND wait_event_type = 'Lock' AND now() - query_start > interval '1 second'"
)


async def test_ludo_db_upgrade_keeps_no_timeout(
    database_url: str, engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ludo db upgrade` under LUDO_STATEMENT_TIMEOUT=0.2 waits for the migration lock
    another session holds for longer than that, and migrates once it is released."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("LUDO_STATEMENT_TIMEOUT", "0.2")
    with psycopg.connect(libpq_url(database_url), autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK,))
        upgrade = asyncio.create_task(asyncio.to_thread(main, ["db", "upgrade"]))
        await wait_until_blocked(engine, by=holder.info.backend_pid)

        async def waited_past_the_timeout() -> bool:
            async with engine.connect() as conn:
                return bool(await conn.scalar(sa.text(_WAITED)))

        await wait_until(waited_past_the_timeout, 30.0)
        assert not upgrade.done()
        holder.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK,))
    assert await upgrade == 0


def hold_ratings(url: str, holding: threading.Event, outcome: list[BaseException | None]) -> None:
    """In a thread (the test client's request blocks the test's event loop): read `ratings`
    in a transaction, whose lock the rebuild's swap waits for, until a session has waited
    for it for over a second; then roll back. `outcome` gets None or the failure."""
    try:
        with psycopg.connect(url) as holder, psycopg.connect(url, autocommit=True) as watch:
            holder.execute("SELECT count(*) FROM ratings")
            holding.set()
            wait_until_sync(lambda: watch.execute(_WAITED).fetchone()[0], 60.0)  # type: ignore[index]
            holder.rollback()
        outcome.append(None)
    except BaseException as exc:
        outcome.append(exc)
        raise
    finally:
        holding.set()


async def test_the_ratings_rebuild_outlasts_the_timeout(database_url: str, tmp_path: Path) -> None:
    """POST /api/ranking/recompute under a 0.2 s statement timeout waits for another
    session's lock on `ratings` longer than that (its swap), and succeeds once it is gone."""
    settings = Settings(
        data_dir=tmp_path,
        database_url=database_url,
        operator_token="op",
        statement_timeout=0.2,
        db_pool_size=2,
    )
    holding, outcome = threading.Event(), list[BaseException | None]()
    holder = threading.Thread(target=hold_ratings, args=(libpq_url(database_url), holding, outcome))
    async with AsyncTestClient(create_ranking_app(settings, consume=False)) as client:
        holder.start()
        await asyncio.to_thread(holding.wait)
        answer = await client.post("/api/ranking/recompute", headers={"Authorization": "Bearer op"})
        await asyncio.to_thread(holder.join)
    assert outcome == [None]  # the request waited on the lock past the timeout
    assert answer.status_code == 200, answer.text


async def test_a_socket_whose_reads_run_past_the_timeout_is_told_and_closed(
    database_url: str, tmp_path: Path
) -> None:
    """With every read of `events` held by another session's lock, a live match socket's
    feed and a socket opening on the match both get a 503 `database_busy` frame and close
    with 1011 (the page reconnects from its last version), logged at warning, not as a
    fault; once the lock is gone a new socket catches up."""
    settings = timed_settings(tmp_path, database_url)
    busy_frame = {"type": "error", "status": 503, **BUSY}
    with Instance(settings) as instance, structlog.testing.capture_logs() as logs:
        async with httpx.AsyncClient(base_url=instance.http, timeout=30) as http:
            table = await Table(http).open()
            version = await table.version()
            live = Reader(await websockets.connect(instance.ws(table.match_id)))
            assert await live.until(lambda fs: any(f["type"] == "state" for f in fs))
            with psycopg.connect(libpq_url(database_url)) as lock:
                lock.execute("LOCK TABLE events IN ACCESS EXCLUSIVE MODE")
                late = Reader(await websockets.connect(instance.ws(table.match_id)))
                for reader in (late, live):
                    assert not await reader.until(lambda fs: False), "left open"
                    assert reader.frames[-1] == busy_frame
                    assert reader.code == 1011
                lock.rollback()
            again = Reader(await websockets.connect(instance.ws(table.match_id)))
            assert await again.until(
                lambda fs: version - 1 in [f.get("version") for f in fs if f["type"] == "event"]
            )
            await again.close()
    told = [line for line in logs if line["event"] == "socket_feed_busy"]
    assert told and all(line["log_level"] == "warning" for line in told)
    assert not [line for line in logs if line["event"] == "socket_pump_failed"]
