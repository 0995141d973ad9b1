"""The shared metrics' parts (services/shared/metrics.py, the error kinds of
services/shared/errors.py): bounded labels, database errors classified from real
PostgreSQL failures, the pool's checkout timing, and a 503 counted at the edge."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.app import create_app
from services.shared.database import create_engine
from services.shared.errors import database_error_kind, database_unavailable
from services.shared.metrics import Counters, TimedPool, app_metrics, socket_kind, stream_kind
from services.shared.settings import Settings

pytestmark = pytest.mark.anyio


def _sample(counters: Counters, name: str, **labels: str) -> float:
    value = counters.registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


def _checkouts(engine: AsyncEngine) -> float:
    """`ludo_db_pool_checkout_seconds_count` of the engine's own pool."""
    pool = engine.sync_engine.pool
    assert isinstance(pool, TimedPool)
    return sum(
        sample.value
        for family in pool.checkouts.collect()
        for sample in family.samples
        if sample.name == "ludo_db_pool_checkout_seconds_count"
    )


def test_stream_and_socket_kinds_are_a_bounded_set() -> None:
    """A stream is labelled by its kind and a socket by its route, never by an id;
    anything unknown is `other`."""
    assert stream_kind("match-3f2a") == "match"
    assert stream_kind("party-1") == "party"
    assert stream_kind("stamps-1") == "stamps"
    assert stream_kind("x-anything") == "other"
    assert stream_kind("nohyphen") == "other"
    assert socket_kind("/ws/matches/{match_id}") == "matches"
    assert socket_kind("/ws/lobby") == "lobby"
    assert socket_kind("/ws/tournament/{arena_id}") == "tournament"
    assert socket_kind("/api/matches/{match_id}") == "other"
    assert socket_kind("") == "other"


async def _error_of(engine: AsyncEngine, *statements: str) -> BaseException:
    try:
        async with engine.begin() as conn:
            for statement in statements:
                await conn.execute(sa.text(statement))
    except Exception as exc:
        return exc
    raise AssertionError("no error")


async def test_database_errors_are_classified_by_kind(engine: AsyncEngine) -> None:
    """PostgreSQL's own failures map to their kinds: a statement timeout, a unique
    violation (`other`), and an application error is no database error at all."""
    timeout = await _error_of(engine, "SET LOCAL statement_timeout = 1", "SELECT pg_sleep(1)")
    assert database_error_kind(timeout) == "timeout"
    duplicate = await _error_of(
        engine,
        "CREATE TEMP TABLE t (id int PRIMARY KEY)",
        "INSERT INTO t VALUES (1), (1)",
    )
    assert database_error_kind(duplicate) == "other"
    assert database_error_kind(ValueError("not the database")) is None


async def test_a_write_refused_as_read_only_is_an_unavailable_database(
    engine: AsyncEngine,
) -> None:
    """A write that reaches a read-only server (a primary a failover just demoted) is the
    database unavailable, answered 503 and retried, not a fault."""
    refused = await _error_of(
        engine,
        "SET TRANSACTION READ ONLY",
        "CREATE TABLE read_only_refused (id int)",
    )
    assert database_unavailable(refused)
    assert database_error_kind(refused) == "unavailable"


async def test_an_unreachable_server_is_unavailable(tmp_path: Path) -> None:
    """A server that cannot be reached is `unavailable`; a pool with no connection to
    give in time is `pool_timeout`."""
    nowhere = create_engine(f"postgresql+psycopg:///ludo?host={tmp_path}&port=1")
    try:
        assert database_error_kind(await _error_of(nowhere, "SELECT 1")) == "unavailable"
    finally:
        await nowhere.dispose()


async def test_pool_timeouts_are_their_own_kind(database_url: str) -> None:
    """A checkout that waits past the pool's timeout is `pool_timeout`, and every
    checkout, the waiting ones too, is timed into the engine's own
    `ludo_db_pool_checkout_seconds` (another engine's checkouts meanwhile are not)."""
    engine = create_engine(database_url, pool_size=1, max_overflow=0, pool_timeout=0.2)
    other = create_engine(database_url)
    try:
        async with engine.connect() as held:
            await held.execute(sa.text("SELECT 1"))
            error = await _error_of(engine, "SELECT 1")
            async with other.connect() as elsewhere:
                await elsewhere.execute(sa.text("SELECT 1"))
        assert database_error_kind(error) == "pool_timeout"
        assert _checkouts(engine) == 2
        assert _checkouts(other) == 1
        # The pool a dispose puts in its place keeps the engine's figures.
        await engine.dispose()
        async with engine.connect() as again:
            await again.execute(sa.text("SELECT 1"))
        assert _checkouts(engine) == 3
    finally:
        await engine.dispose()
        await other.dispose()


@pytest.fixture
async def unreachable_app(tmp_path: Path) -> AsyncIterator[AsyncTestClient[Litestar]]:
    """The match service on an engine whose server does not exist."""
    nowhere = create_engine(f"postgresql+psycopg:///ludo?host={tmp_path}&port=1")
    settings = Settings(data_dir=tmp_path, scheduler=False, pairing=False)
    try:
        async with AsyncTestClient(create_app(settings, engine=nowhere)) as client:
            yield client
    finally:
        await nowhere.dispose()


async def test_a_503_at_the_edge_counts_an_unavailable_database(
    unreachable_app: AsyncTestClient[Litestar], tmp_path: Path
) -> None:
    """A request that finds the database away answers 503 and counts one `unavailable`
    database error and one 5xx on its route, in its own app's figures: another app of the
    same process counts nothing of it."""
    counters = app_metrics(unreachable_app.app).counters
    other = create_app(Settings(data_dir=tmp_path, scheduler=False, pairing=False))
    route = {"route": "/api/players", "method": "POST", "status": "5xx"}
    r = await unreachable_app.post("/api/players", json={"name": "ann"})
    assert r.status_code == 503
    assert r.json()["error"] == "database_unavailable"
    assert _sample(counters, "ludo_db_errors_total", kind="unavailable") == 1
    assert _sample(counters, "ludo_http_request_duration_seconds_count", **route) == 1
    others = app_metrics(other).counters
    assert _sample(others, "ludo_db_errors_total", kind="unavailable") == 0
    assert _sample(others, "ludo_http_request_duration_seconds_count", **route) == 0
