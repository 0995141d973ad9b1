"""`/metrics` on both services moves when play happens (services/shared/metrics.py).

Real services under uvicorn (the `Instance` helper of test_live.py) on the test's
PostgreSQL; commands over HTTP and over the match socket; the metrics scraped before and
after, and the counters, histograms and gauges compared with what was done. The ranking
service's lag is compared with the events written and a consumer's catch-up."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.app import create_app as ranking_app
from services.ranking.ratings.consumer import RankingConsumer
from services.shared.database import create_engine
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.services.match.test_live import Instance, Table, _auth, _client, _settings
from tests.services.match.test_sockets import _act, _socket
from tests.services.ranking.finished_matches import write_match
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOKEN = "metrics-operator-token"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(http: httpx.AsyncClient) -> Samples:
    """Every sample of `/metrics`, by name and labels."""
    r = await http.get("/metrics", headers=OPERATOR)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain; version=0.0.4")
    samples: Samples = {}
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            samples[sample.name, frozenset(sample.labels.items())] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def moved(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Iterator[Instance]:
    """The match service with an operator token; no per-socket message budget (the test
    plays at machine speed)."""
    settings = _settings(tmp_path, database_url, operator_token=TOKEN, ws_message_rate=0)
    with Instance(settings) as instance:
        yield instance


async def test_metrics_need_the_operator_token(server: Instance) -> None:
    """`/metrics` without the operator's bearer token is a 401 JSON error, and it is not in
    the OpenAPI document."""
    async with _client(server.http) as http:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            r = await http.get("/metrics", headers=headers)
            assert r.status_code == 401
            assert r.json()["error"] == "unauthorized"
        document = (await http.get("/schema/openapi.json")).json()
        assert "/metrics" not in document["paths"]


async def test_match_metrics_move_with_play_over_http_and_the_socket(server: Instance) -> None:
    """HTTP commands move the commands, appends, events and group-commit counters and
    their routes' histograms by exactly what was sent; a match socket shows in the live
    gauges while open and leaves them at 0 when closed."""
    async with _client(server.http) as http:
        table = await Table(http).open()
        before = await scrape(http)
        version_before = await table.version()
        posts = {"roll": 0, "move": 0}
        for _ in range(6):
            state = (await http.get(f"/api/matches/{table.match_id}")).json()
            posts["roll" if state["phase"] == "roll" else "move"] += 1
            await table.step()
        after = await scrape(http)
        sent = sum(posts.values())
        events = await table.version() - version_before

        commands = {"source": "player", "outcome": "appended"}
        assert moved(before, after, "ludo_match_commands_total", **commands) == sent
        assert moved(before, after, "ludo_appends_total", stream="match") == sent
        appended = sum(
            after[key] - before.get(key, 0.0)
            for key in after
            if key[0] == "ludo_events_appended_total"
        )
        assert appended == events
        assert moved(before, after, "ludo_group_commit_batch_size_count") == sent
        assert moved(before, after, "ludo_group_commit_batch_size_sum") == sent
        for command, count in posts.items():
            route = {"route": f"/api/matches/{{match_id}}/{command}", "method": "POST"}
            histogram = "ludo_http_request_duration_seconds_count"
            assert moved(before, after, histogram, status="2xx", **route) == count
        # Route templates only: no series carries a match id.
        assert not [key for key in after if table.match_id in str(key[1])]
        assert moved(before, after, "ludo_db_pool_checkout_seconds_count") > 0
        assert value(after, "ludo_db_pool_connections", state="size") > 0

        seat = (await http.get(f"/api/matches/{table.match_id}")).json()["turn"]
        async with _socket(server.ws(table.match_id), table.players[seat]["token"]) as socket:
            live = await scrape(http)
            assert value(live, "ludo_live_sockets", kind="matches") == 1
            assert value(live, "ludo_live_streams", kind="match") == 1
            version = await table.version()
            state = await socket.state(version)
            over_socket = 0
            while state["match"]["turn"] == seat and state["match"]["phase"] != "over":
                result = await _act(socket, state, f"s{over_socket}")
                assert result["type"] == "result", result
                over_socket += 1
                state = await socket.state(result["version"])
            assert over_socket > 0
            played = await scrape(http)
            assert moved(live, played, "ludo_match_commands_total", **commands) == over_socket

        async def closed() -> bool:
            now = await scrape(http)
            sockets = value(now, "ludo_live_sockets", kind="matches")
            return sockets == 0 and value(now, "ludo_live_streams", kind="match") == 0

        await wait_until(closed, 15, what="the live gauges back at 0")

        # A refused command counts as refused, and its route's 4xx.
        state = (await http.get(f"/api/matches/{table.match_id}")).json()
        out_of_turn = _auth(table.players[1 - state["turn"]])
        r = await http.post(f"/api/matches/{table.match_id}/roll", headers=out_of_turn)
        assert r.status_code == 409, r.text
        last = await scrape(http)
        rejected = {"source": "player", "outcome": "rejected"}
        assert moved(played, last, "ludo_match_commands_total", **rejected) == 1
        route = {"route": "/api/matches/{match_id}/roll", "method": "POST", "status": "4xx"}
        assert moved(played, last, "ludo_http_request_duration_seconds_count", **route) == 1


@pytest.fixture
def ranking_server(database_url: str, tmp_path: Path) -> Iterator[Instance]:
    """The ranking service with its consumers off, so that the test moves the checkpoint."""
    settings = Settings(data_dir=tmp_path, database_url=database_url, operator_token=TOKEN)
    with Instance(settings, ranking_app(settings, consume=False)) as instance:
        yield instance


async def test_ranking_lag_follows_the_log_and_the_consumer(
    ranking_server: Instance, engine: AsyncEngine, tmp_path: Path
) -> None:
    """The consumers' lag gauges read the events (and match ends) after each checkpoint:
    those written, then 0 for the ranking consumer once it caught up (the analysis consumer's
    still behind), and no instance leads while the consumers are off."""
    store = EventStore(engine)
    async with _client(ranking_server.http) as http:
        empty = await scrape(http)
        for consumer in ("ranking", "analysis"):
            assert value(empty, "ludo_consumer_events_behind", consumer=consumer) == 0
            assert value(empty, "ludo_consumer_matches_behind", consumer=consumer) == 0
            assert value(empty, "ludo_consumer_seconds_behind", consumer=consumer) == 0
            assert value(empty, "ludo_consumer_leader", consumer=consumer) == 0
        for _ in range(2):
            await write_match(engine, store, ["p1", "p2"], [0, 1])
        async with engine.connect() as conn:
            written = await conn.scalar(sa.text("SELECT count(*) FROM events"))
        behind = await scrape(http)
        for consumer in ("ranking", "analysis"):
            assert value(behind, "ludo_consumer_events_behind", consumer=consumer) == written
            assert value(behind, "ludo_consumer_matches_behind", consumer=consumer) == 2
            assert value(behind, "ludo_consumer_seconds_behind", consumer=consumer) >= 0
        await RankingConsumer(engine, store).catch_up()
        caught_up = await scrape(http)
        assert value(caught_up, "ludo_consumer_events_behind", consumer="ranking") == 0
        assert value(caught_up, "ludo_consumer_seconds_behind", consumer="ranking") == 0
        assert value(caught_up, "ludo_consumer_events_behind", consumer="analysis") == written
        assert value(caught_up, "ludo_consumer_matches_behind", consumer="ranking") == 0
        assert value(caught_up, "ludo_consumer_matches_behind", consumer="analysis") == 2
        pool = value(caught_up, "ludo_db_pool_connections", state="size")
        assert pool == Settings(data_dir=tmp_path).db_pool_size


async def test_a_scrape_answers_with_the_database_away(tmp_path: Path) -> None:
    """With the database unreachable, the ranking service's `/metrics` still answers 200:
    the lag gauges are NaN, and the failed read counts one `unavailable` database error."""
    nowhere = create_engine(f"postgresql+psycopg:///ludo?host={tmp_path}&port=1")
    settings = Settings(data_dir=tmp_path, operator_token=TOKEN)
    try:
        async with AsyncTestClient(ranking_app(settings, nowhere, consume=False)) as client:
            errors = "ludo_db_errors_total", frozenset({("kind", "unavailable")})
            first = await scrape(client)
            second = await scrape(client)
    finally:
        await nowhere.dispose()
    for gauge in ("events_behind", "matches_behind", "seconds_behind"):
        for consumer in ("ranking", "analysis"):
            assert math.isnan(value(second, f"ludo_consumer_{gauge}", consumer=consumer))
    assert second[errors] == first[errors] + 1
