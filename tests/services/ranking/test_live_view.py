"""The operator's live view: `GET /api/ranking/live` on the ranking
service, which asks the match service's `GET /api/operator/now` through `LUDO_MATCH_URL`,
and reads the instances' own rows, the abandonment per hour and the database.

Both services run under uvicorn on loopback ports on the test's database; a player's
socket is a real WebSocket; the figures are waited for with `wait_until`, never a clock.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import sqlalchemy as sa
import websockets
from sqlalchemy.ext.asyncio import AsyncEngine

from ludo_cli.cluster import free_port
from services.ranking.app import create_app as create_ranking_app
from services.ranking.dashboard.service import patroni_manager
from services.shared.settings import Settings
from tests.services.match.test_live import Instance, Table
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio

TOKEN = "operator-secret"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


def service_settings(tmp_path: Path, url: str, **overrides: Any) -> Settings:
    """Either service's settings for these tests (no deadline worker unless `overrides`)."""
    options: dict[str, Any] = {
        "cpu_delay": 0,
        "scheduler": False,
        "operator_token": TOKEN,
        "ranking_poll": 0.05,
        "db_pool_size": 4,
        **overrides,
    }
    return Settings(data_dir=tmp_path, database_url=url, **options)


@contextlib.contextmanager
def both(database_url: str, tmp_path: Path, **ranking: Any) -> Iterator[tuple[Instance, Instance]]:
    """The match service, and the ranking service pointed at it (`ranking`: its settings)."""
    with Instance(service_settings(tmp_path, database_url)) as match:
        options = {"match_url": match.http, **ranking}
        settings = service_settings(tmp_path, database_url, **options)
        with Instance(settings, app=create_ranking_app(settings)) as ranking_service:
            yield match, ranking_service


@contextlib.asynccontextmanager
async def client(base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base, timeout=30) as http:
        yield http


async def live(http: httpx.AsyncClient) -> dict[str, Any]:
    answer = await http.get("/api/ranking/live", headers=OPERATOR)
    assert answer.status_code == 200, answer.text
    view: dict[str, Any] = answer.json()
    return view


async def test_both_routes_are_the_operators_only(database_url: str, tmp_path: Path) -> None:
    """Without the operator token, or with another, both routes answer 401 and show nothing."""
    with both(database_url, tmp_path) as (match, ranking):
        for base, path in ((match.http, "/api/operator/now"), (ranking.http, "/api/ranking/live")):
            async with client(base) as http:
                for headers in ({}, {"Authorization": "Bearer nope"}):
                    answer = await http.get(path, headers=headers)
                    assert answer.status_code == 401, (path, answer.text)
                    assert answer.json()["error"] == "unauthorized"


async def test_a_player_at_a_table_is_counted_while_their_socket_is_open(
    database_url: str, tmp_path: Path
) -> None:
    """A player's socket on a match makes it a match now with a player at its table; both
    services' instances report themselves; when the socket closes the player is no longer
    at a table, and the match, its seat's grace running (a stand-in follows), still runs."""
    with both(database_url, tmp_path) as (match, ranking):
        async with client(match.http) as http_match, client(ranking.http) as http:
            table = await Table(http_match).open()
            before = await live(http)
            # Nobody has opened it and no clock runs in it: nothing is happening in it.
            assert before["play"]["matches_now"] == 0
            hello = {"type": "hello", "token": table.players[0]["token"]}
            async with websockets.connect(match.ws(table.match_id)) as ws:
                await ws.send(msgspec.json.encode(hello).decode())

                async def counted() -> dict[str, Any] | None:
                    view = await live(http)
                    return view if view["play"]["matches_now"] == 1 else None

                view = await wait_until(counted, 15, what="the match counted as played now")
                assert view["play"]["players_at_tables"] == 1
                assert view["play"]["matches_cpu_only"] == 0

                async def both_reported() -> dict[str, Any] | None:
                    view = await live(http)
                    rows = {i["service"]: i for i in view["instances"]}
                    socket_seen = rows.get("match", {}).get("figures", {}).get("sockets", 0)
                    return rows if sorted(rows) == ["match", "ranking"] and socket_seen else None

                # The match instance's next beat (every 5 s) carries the socket.
                rows = await wait_until(both_reported, 20, what="both rows, the socket counted")
            assert rows["match"]["figures"]["pool"]["size"] == 4
            assert rows["match"]["figures"]["sockets"] == 1
            assert rows["ranking"]["figures"]["pool"]["size"] == 4

            async def gone() -> dict[str, Any] | None:
                view = await live(http)
                return view if view["play"]["players_at_tables"] == 0 else None

            view = await wait_until(gone, 15, what="no player at a table once the socket closed")
            assert view["play"]["matches_now"] == 1


async def leave(http: httpx.AsyncClient, table: Table, seat: int) -> None:
    """The player of `seat` leaves the match: a CPU stands in for them."""
    r = await http.post(
        f"/api/matches/{table.match_id}/leave",
        headers={"Authorization": table.players[seat]["Authorization"]},
    )
    assert r.status_code == 200, r.text


async def test_a_match_the_stand_ins_play_is_counted_and_said_cpu_only(
    database_url: str, tmp_path: Path
) -> None:
    """Both players of a match left: CPUs play it out with no one at the table, and it is
    a match now, one only CPUs play; a match one player left while the other plays is
    counted too, not as CPU-only."""
    with both(database_url, tmp_path) as (match, ranking):
        async with client(match.http) as http_match, client(ranking.http) as http:
            abandoned = await Table(http_match).open()
            for seat in (0, 1):
                await leave(http_match, abandoned, seat)
            half = await Table(http_match).open()
            await leave(http_match, half, 1)
            hello = {"type": "hello", "token": half.players[0]["token"]}
            async with websockets.connect(match.ws(half.match_id)) as ws:
                await ws.send(msgspec.json.encode(hello).decode())

                async def at_the_table() -> dict[str, Any] | None:
                    view = await live(http)
                    return view if view["play"]["players_at_tables"] == 1 else None

                view = await wait_until(at_the_table, 15, what="the player at their table")
            play = view["play"]
            assert (play["matches_now"], play["matches_cpu_only"]) == (2, 1)


async def test_a_finished_match_is_not_counted_though_its_page_is_open(
    database_url: str, tmp_path: Path
) -> None:
    """A match played to its end while a player's page is open on it: counted while it
    runs; once it is over it is no match now, though the player is still at its table
    (its result on the page)."""
    with both(database_url, tmp_path) as (match, ranking):
        async with client(match.http) as http_match, client(ranking.http) as http:
            table = await Table(http_match).open()
            hello = {"type": "hello", "token": table.players[0]["token"]}
            async with websockets.connect(match.ws(table.match_id)) as ws:
                await ws.send(msgspec.json.encode(hello).decode())

                async def counted() -> bool:
                    view = await live(http)
                    return bool(view["play"]["matches_now"] == 1)

                await wait_until(counted, 15, what="the match counted while it is played")
                while (await http_match.get(f"/api/matches/{table.match_id}")).json()[
                    "status"
                ] != "finished":
                    await table.step()
                view = await live(http)
                assert view["play"]["players_at_tables"] == 1
                assert view["play"]["matches_now"] == 0


async def test_abandonment_is_counted_per_hour_of_the_last_day(
    database_url: str, tmp_path: Path, engine: AsyncEngine
) -> None:
    """Human seats of ended matches are counted in the hour their match ended, with those
    that left; 24 hours, empty ones too, the last being this hour."""
    rows = [
        ("p1", "match-a", False, "now()"),
        ("p2", "match-a", True, "now()"),
        ("p3", "match-b", False, "now()"),
        ("p4", "match-c", True, "now() - interval '3 hours'"),
        ("p5", "match-d", True, "now() - interval '30 hours'"),  # outside the day
    ]
    async with engine.begin() as conn:
        for position, (player, stream, left, ended) in enumerate(rows, start=1):
            await conn.execute(
                sa.text(
                    "INSERT INTO reputation_matches (player_id, match_stream, position, "
                    f"ended_at, ranked, left_match) VALUES (:p, :s, :n, {ended}, true, :left)"
                ),
                {"p": player, "s": stream, "n": position, "left": left},
            )
    with both(database_url, tmp_path) as (_match, ranking):
        async with client(ranking.http) as http:
            hours = (await live(http))["abandonment"]
    assert len(hours) == 24
    assert (hours[-1]["seats"], hours[-1]["left"], hours[-1]["rate"]) == (3, 1, 0.3333)
    three_ago = hours[-4]
    assert (three_ago["seats"], three_ago["left"], three_ago["rate"]) == (1, 1, 1.0)
    assert sum(h["seats"] for h in hours) == 4


async def test_a_part_that_cannot_be_read_says_why_and_the_rest_is_answered(
    database_url: str, tmp_path: Path
) -> None:
    """With the match service unreachable and no Patroni node answering, the view still
    answers: the play part and the manager say why, the database and lags are there."""
    closed = f"http://127.0.0.1:{free_port()}"
    with both(database_url, tmp_path, match_url=closed, patroni_url=closed) as (_m, ranking):
        async with client(ranking.http) as http:
            view = await live(http)
    assert view["play"] == {"unavailable": "the match service does not answer"}
    database = view["database"]
    assert database["in_recovery"] is False
    assert database["timeline"] >= 1
    assert database["manager"]["unavailable"] == "no Patroni node answers (LUDO_PATRONI_URL)"
    assert view["lag"]["ranking"]["events_behind"] >= 0


def test_patronis_cluster_and_history_become_the_members_and_the_last_failover() -> None:
    """Patroni's `/cluster` members and the last entry of its `/history` (the timeline that
    ended, why, when, the new leader) are what the view shows."""
    cluster = {
        "members": [
            {"name": "pg2", "role": "leader", "state": "running", "timeline": 3},
            {"name": "pg1", "role": "sync_standby", "state": "streaming", "timeline": 3, "lag": 0},
            {"name": "pg3", "role": "replica", "state": "streaming", "timeline": 3, "lag": 4096},
        ]
    }
    history = [
        [1, 50331808, "no recovery target specified", "2026-12-04T06:00:01+00:00", "pg2"],
        [2, 67109024, "no recovery target specified", "2026-12-04T06:10:00+00:00", "pg2"],
    ]
    manager = patroni_manager(cluster, history)
    assert [(m.name, m.role, m.lag_bytes) for m in manager.members] == [
        ("pg2", "leader", None),
        ("pg1", "sync_standby", 0),
        ("pg3", "replica", 4096),
    ]
    assert manager.last_failover is not None
    assert (manager.last_failover.timeline, manager.last_failover.new_leader) == (2, "pg2")
    assert manager.last_failover.at == "2026-12-04T06:10:00+00:00"
    assert patroni_manager({"members": []}, []).last_failover is None


def test_the_last_failover_names_the_timeline_that_ended_and_the_leaders() -> None:
    """The last failover says both timelines: the one that ended (its `/history` entry)
    and the one its new leader is on (the leader's in `/cluster`, even past a skipped
    one); none when no leader reports a later timeline."""
    history = [[2, 67109024, "no recovery target specified", "2026-12-04T06:10:00+00:00", "pg2"]]

    def leader(role: str, timeline: int | None) -> dict[str, Any]:
        return {
            "members": [{"name": "pg2", "role": role, "state": "running", "timeline": timeline}]
        }

    for role, timeline, new in (
        ("leader", 3, 3),
        ("primary", 5, 5),  # a promotion that did not last took timeline 3 and 4
        ("standby_leader", 3, 3),
        ("leader", 2, None),  # not on a later one (yet): only the ended one is known
        ("leader", None, None),
        ("replica", 3, None),  # no leader in the cluster
    ):
        last = patroni_manager(leader(role, timeline), history).last_failover
        assert last is not None
        assert (last.timeline, last.new_timeline) == (2, new), (role, timeline)
