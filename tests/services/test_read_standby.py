"""Reads from a standby (`LUDO_DATABASE_READ_URL`, docs/scaling.md: Reads from a standby).

On a real primary and a real streaming standby of it (tests/standby.py): the replay, the
leaderboard and the public rating reads are answered from the standby (its
`pg_stat_activity` shows the service's `application_name`; with its replay paused, the
answers lag, until the lag passes `LUDO_DATABASE_READ_MAX_LAG`); an answer a lagging copy
could cut (a match whose end has not reached it, a player it does not know yet) comes
from the primary; with the standby stopped the same reads answer 200 from the primary,
and they go back to it once it is up again. The route's own rules (one probe, no timeout
per read) are pinned on the primary and a standby address that does not answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import structlog
from litestar.testing import AsyncTestClient
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import events as ev
from services.match.app import create_app as create_match_app
from services.ranking.app import create_app as create_ranking_app
from services.ranking.ratings.consumer import RankingConsumer
from services.shared.database import (
    LAG_CHECK_SECONDS,
    STANDBY_POOL_SIZE,
    ReadRoute,
    create_engine,
    create_read_engine,
)
from services.shared.errors import database_unavailable
from services.shared.eventstore import EventStore
from services.shared.settings import Settings, SettingsError
from tests.services.ranking.finished_matches import CPU, write_match
from tests.standby import Pair, primary_and_standby
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio

APP = "ludo-standby-test"  # the application_name the services' sessions carry
MUTE_PORT = 18450  # this helper's port range


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    """One primary and its standby for the module (about 6 s to build)."""
    with primary_and_standby() as built:
        yield built


@pytest.fixture
async def primary(pair: Pair) -> AsyncIterator[AsyncEngine]:
    """The primary's engine, its sessions named `APP` as an instance's are."""
    url = make_url(pair.primary_url).update_query_dict({"application_name": APP})
    engine = create_engine(url.render_as_string(hide_password=False), pool_size=4)
    try:
        yield engine
    finally:
        await engine.dispose()


def _settings(pair: Pair, tmp_path: Path, max_lag: float) -> Settings:
    return Settings(
        data_dir=tmp_path,
        database_url=pair.primary_url,
        database_read_url=pair.standby_url,
        database_read_max_lag=max_lag,
        operator_token="op-secret",
        scheduler=False,
        pairing=False,
        rate_limit=0,
    )


@contextlib.asynccontextmanager
async def _ranking(
    pair: Pair, primary: AsyncEngine, tmp_path: Path, max_lag: float = 0.0
) -> AsyncIterator[Any]:
    """The ranking service reading from the standby (`max_lag` 0: however far behind)."""
    app = create_ranking_app(_settings(pair, tmp_path, max_lag), primary, consume=False)
    async with AsyncTestClient(app) as client:
        yield client


@contextlib.asynccontextmanager
async def _match(
    pair: Pair, primary: AsyncEngine, tmp_path: Path, max_lag: float = 0.0
) -> AsyncIterator[Any]:
    """The match service reading from the standby (`max_lag` 0: however far behind)."""
    app = create_match_app(_settings(pair, tmp_path, max_lag), primary)
    async with AsyncTestClient(app) as client:
        yield client


def _reads_on_standby(pair: Pair) -> int:
    """The service's sessions on the standby."""
    sql = f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{APP}'"
    return int(str(pair.on_standby(sql)[0][0]))


async def _rated_match(primary: AsyncEngine, player: str) -> str:
    """A finished ranked match of `player`, a rival and a CPU, rated on the primary."""
    store = EventStore(primary)
    stream = await write_match(primary, store, [player, f"{player}-rival", CPU], [1, 2, 3])
    await RankingConsumer(primary, store).catch_up()
    return stream


async def _board(client: Any) -> set[str]:
    answer = await client.get("/api/ratings/leaderboard?limit=500")
    assert answer.status_code == 200, answer.text
    return {e["player_id"] for e in answer.json()["entries"]}


async def test_ratings_come_from_the_standby_and_lag_with_it(
    pair: Pair, primary: AsyncEngine, tmp_path: Path
) -> None:
    """The leaderboard, the operator's charts and a known player's rating are read on the
    standby (its sessions carry the service's name; with replay paused they miss a newer
    match); a player or a rated match the standby lacks yet is answered from the primary."""
    old = f"old-{uuid.uuid4().hex[:6]}"
    await _rated_match(primary, old)
    pair.caught_up()
    async with _ranking(pair, primary, tmp_path) as client:
        assert old in await _board(client)
        assert _reads_on_standby(pair) >= 1
        pair.pause_replay()
        try:
            new = f"new-{uuid.uuid4().hex[:6]}"
            stream = await _rated_match(primary, new)
            board = await _board(client)
            assert old in board and new not in board  # the standby's, seconds behind
            route: ReadRoute = client.app.state.ranking.reads
            before = route.fallbacks
            player = await client.get(f"/api/ratings/players/{new}")
            assert player.status_code == 200, player.text  # the primary's
            match_id = stream.removeprefix("match-")
            rated = await client.get(f"/api/ratings/matches/{match_id}")
            assert rated.status_code == 200 and rated.json()["rated"] is True, rated.text
            assert route.fallbacks == before + 2
            operator = {"Authorization": "Bearer op-secret"}
            charts = await client.get("/api/ranking/distribution", headers=operator)
            assert charts.status_code == 200, charts.text
            assert route.fallbacks == before + 2  # the dashboard's chart: the standby's
        finally:
            pair.resume_replay()
    pair.caught_up()


async def _append_match(store: EventStore, stream: str, *, end: bool) -> None:
    """A two-seat match's first events (`end=False`) or its end (`end=True`)."""
    if not end:
        seats = (ev.SeatSpec(name="a", player_id="a"), ev.SeatSpec(name="b", player_id="b"))
        opening: list[ev.Event] = [
            ev.MatchCreated(ruleset={}, seats=seats, seed_hash="0" * 64),
            ev.MatchStarted(client_seeds=("", ""), client_seed=""),
        ]
        await store.append(stream, 0, opening)
    else:
        ending: list[ev.Event] = [
            ev.MatchFinished(placements=(1, 2)),
            ev.SeedRevealed(server_seed="00"),
        ]
        await store.append(stream, 2, ending)


async def test_a_replay_is_never_cut_by_the_standby_lag(
    pair: Pair, primary: AsyncEngine, tmp_path: Path
) -> None:
    """A finished match's replay, audit and viewer steps are read on the standby; a match
    whose end the paused standby has not replayed is read whole from the primary."""
    store = EventStore(primary)
    ended, cut = (f"match-{uuid.uuid4()}" for _ in range(2))
    await _append_match(store, ended, end=False)
    await _append_match(store, ended, end=True)
    await _append_match(store, cut, end=False)
    pair.caught_up()
    pair.pause_replay()
    try:
        await _append_match(store, cut, end=True)
        async with _match(pair, primary, tmp_path) as client:
            route: ReadRoute = client.app.state.parts.reads
            for path in ("replay", "audit", "steps"):
                answer = await client.get(f"/api/matches/{ended[6:]}/{path}")
                assert answer.status_code == 200, answer.text
            assert route.fallbacks == 0 and _reads_on_standby(pair) >= 1
            replay = await client.get(f"/api/matches/{cut[6:]}/replay")
            assert replay.status_code == 200, replay.text
            body = replay.json()
            assert len(body["events"]) == 4 and body["server_seed"] == "00"
            assert route.fallbacks == 1
            steps = await client.get(f"/api/matches/{cut[6:]}/steps")
            assert steps.status_code == 200 and route.fallbacks == 2, steps.text
    finally:
        pair.resume_replay()
    pair.caught_up()


async def test_reads_fall_back_while_the_standby_is_down_and_return(
    pair: Pair, primary: AsyncEngine, tmp_path: Path
) -> None:
    """With the standby stopped, the leaderboard, a player's rating and a replay answer 200
    from the primary (one warning, not one per read); once it is up again the reads
    return to it (`standby_back`)."""
    player = f"p-{uuid.uuid4().hex[:6]}"
    stream = await _rated_match(primary, player)
    pair.caught_up()
    async with (
        _ranking(pair, primary, tmp_path, max_lag=10) as ranking,
        _match(pair, primary, tmp_path, max_lag=10) as match,
    ):
        assert player in await _board(ranking)
        route: ReadRoute = ranking.app.state.ranking.reads
        pair.stop_standby()
        try:
            with structlog.testing.capture_logs() as logs:
                fresh = f"f-{uuid.uuid4().hex[:6]}"
                await _rated_match(primary, fresh)
                assert fresh in await _board(ranking)  # the primary's, the standby being down
                assert route.standby_down
                answer = await ranking.get(f"/api/ratings/players/{fresh}")
                assert answer.status_code == 200, answer.text
                replay = await match.get(f"/api/matches/{stream[6:]}/replay")
                assert replay.status_code == 200, replay.text
                assert await _board(ranking) >= {player, fresh}
            warned = [e for e in logs if e["event"] == "standby_unavailable"]
            assert len(warned) == 2, logs  # once per service, not once per read
            assert all(e["log_level"] == "warning" for e in warned)
        finally:
            pair.start_standby()
        pair.caught_up()
        with structlog.testing.capture_logs() as logs:

            async def back() -> bool:
                await _board(ranking)
                return not route.standby_down

            await wait_until(back, 30, what="the leaderboard to read the standby again")
        assert [e["log_level"] for e in logs if e["event"] == "standby_back"] == ["info"]
        assert _reads_on_standby(pair) >= 1


async def test_a_standby_further_behind_than_its_max_lag_hands_its_reads_over(
    pair: Pair, primary: AsyncEngine, tmp_path: Path
) -> None:
    """`LUDO_DATABASE_READ_MAX_LAG` at 1 s: once the paused standby is over 1 s behind, the
    leaderboard comes from the primary (`standby_lagging`); resumed and caught up, from
    the standby again (`standby_caught_up`)."""
    player = f"l-{uuid.uuid4().hex[:6]}"
    await _rated_match(primary, player)
    pair.caught_up()
    async with _ranking(pair, primary, tmp_path, max_lag=1.0) as client:
        route: ReadRoute = client.app.state.ranking.reads
        assert player in await _board(client) and not route.lagging
        pair.pause_replay()
        try:
            with structlog.testing.capture_logs() as logs:
                fresh = f"l-{uuid.uuid4().hex[:6]}"
                await _rated_match(primary, fresh)

                async def from_primary() -> bool:
                    return fresh in await _board(client)

                await wait_until(from_primary, 30, what="the primary to take the reads over")
            assert route.lagging
            lagging = [e for e in logs if e["event"] == "standby_lagging"]
            assert [e["log_level"] for e in lagging] == ["warning"]
            assert lagging[0]["lag_seconds"] > 1.0
        finally:
            pair.resume_replay()
        pair.caught_up()
        with structlog.testing.capture_logs() as logs:

            async def caught_up() -> bool:
                await _board(client)
                return not route.lagging

            await wait_until(caught_up, 30, what="the standby to take its reads back")
        assert [e["log_level"] for e in logs if e["event"] == "standby_caught_up"] == ["info"]


async def test_wal_received_but_not_replayed_yet_is_lag_only_once_a_check_has_passed(
    pair: Pair, primary: AsyncEngine
) -> None:
    """WAL the standby has received and not replayed is not lag at the check that finds
    it, only at the next check if it is still not replayed.

    That WAL may have just arrived after a quiet spell, the last replayed commit as old
    as the spell. Replay is paused to hold that moment open; the route's clock is the
    test's, and `max_lag` so small that any real age passes it."""
    standby = create_read_engine(pair.standby_url, primary)
    now = [0.0]
    route = ReadRoute(
        primary, standby, unavailable=database_unavailable, max_lag=0.001, clock=lambda: now[0]
    )

    async def where(engine: AsyncEngine) -> str:
        return "standby" if engine is standby else "primary"

    store = EventStore(primary)
    await _append_match(store, f"match-{uuid.uuid4()}", end=False)
    pair.caught_up()
    try:
        assert await route.read(where) == "standby" and not route.lagging
        pair.pause_replay()
        await _append_match(store, f"match-{uuid.uuid4()}", end=False)
        pair.received()
        now[0] += LAG_CHECK_SECONDS
        with structlog.testing.capture_logs() as logs:
            assert await route.read(where) == "standby" and not route.lagging
            now[0] += LAG_CHECK_SECONDS
            assert await route.read(where) == "primary" and route.lagging
        lagging = [e for e in logs if e["event"] == "standby_lagging"]
        assert len(lagging) == 1 and lagging[0]["lag_seconds"] > 0, logs
    finally:
        pair.resume_replay()
        await standby.dispose()
    pair.caught_up()


@pytest.fixture
def mute_port() -> Iterator[int]:
    """A TCP port that takes connections and never answers them (a hung standby)."""
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", MUTE_PORT))
        mute.listen(16)
        yield MUTE_PORT


@pytest.mark.parametrize("silence", ["refused", "mute"])
async def test_a_standby_that_does_not_answer_is_left_alone_for_a_while(
    primary: AsyncEngine, silence: str, request: pytest.FixtureRequest
) -> None:
    """A standby where nothing listens (refused) or that never answers (its connect
    timeout): the read answers from the primary, the next reads skip the standby until
    the retry time, then one read probes it again."""
    if silence == "refused":
        nowhere = make_url(str(primary.url)).update_query_dict({"port": "18499"})
    else:
        port = request.getfixturevalue("mute_port")
        nowhere = make_url(f"postgresql+psycopg://postgres@127.0.0.1:{port}/ludo")
    standby = create_read_engine(nowhere.render_as_string(hide_password=False), primary)
    now = [0.0]
    route = ReadRoute(primary, standby, unavailable=database_unavailable, clock=lambda: now[0])
    asked: list[str] = []

    async def where(engine: AsyncEngine) -> str:
        asked.append("standby" if engine is standby else "primary")
        async with engine.connect() as conn:
            return str(await conn.scalar(sa.text("SELECT 'ok'")))

    async def read() -> str:
        # Bounded: without its connect timeout the mute standby would hold the read forever.
        return await asyncio.wait_for(route.read(where), 30)

    try:
        assert await read() == "ok"
        assert asked == ["standby", "primary"] and route.standby_down
        assert await read() == "ok"
        assert asked[2:] == ["primary"]  # no second attempt within the retry time
        now[0] += route.retry_seconds
        assert await read() == "ok"
        assert asked[3:] == ["standby", "primary"]  # one probe, still down
        assert route.fallbacks == 3
    finally:
        await standby.dispose()


def test_the_read_url_is_a_postgresql_url_or_unset() -> None:
    """`LUDO_DATABASE_READ_URL` must be a PostgreSQL URL (named in the refusal); unset or
    empty, there is no standby."""
    with pytest.raises(SettingsError, match="LUDO_DATABASE_READ_URL"):
        Settings.from_env({"LUDO_DATABASE_READ_URL": "mysql://db/ludo"})
    assert Settings.from_env({"LUDO_DATABASE_READ_URL": " "}).database_read_url is None
    url = "postgresql://ludo@standby:5432/ludo"
    assert Settings.from_env({"LUDO_DATABASE_READ_URL": url}).database_read_url == url


async def test_the_read_engine_carries_the_services_options(primary: AsyncEngine) -> None:
    """The standby's engine hides bound parameters from error texts, keeps a small pool
    (its connect timeout: the mute standby above), and takes the primary's
    `application_name` unless the read URL names its own."""
    standby_url = "postgresql://ludo@standby:5432/ludo"
    inherited = create_read_engine(standby_url, primary)
    own = create_read_engine(f"{standby_url}?application_name=reader", primary)
    try:
        assert inherited.url.query["application_name"] == APP
        assert own.url.query["application_name"] == "reader"
        for engine in (inherited, own):
            assert engine.sync_engine.hide_parameters
            assert engine.pool.size() == STANDBY_POOL_SIZE  # type: ignore[attr-defined]
    finally:
        await inherited.dispose()
        await own.dispose()
