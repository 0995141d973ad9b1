"""Reports and moderation over HTTP, both services on one database: a player reports
another of a match they played (`POST /api/reports`), the operator sees the queue and
decides (`/api/operator/reports`), the player's standing says so
(`GET /api/players/me/standing`); completion reads (`/api/ratings/reputation`,
`/api/ratings/players/{id}`); every bad request a 4xx JSON error that appends nothing."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from services.ranking.app import create_app
from services.ranking.ratings.consumer import RankingConsumer
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.services.conftest import Api
from tests.services.ranking.finished_matches import CPU, write_match

pytestmark = pytest.mark.anyio

OP = {"Authorization": "Bearer op-secret"}


@pytest.fixture
async def ranking(database_url: str, tmp_path: Path) -> AsyncIterator[AsyncTestClient[Any]]:
    """The ranking app (operator token `op-secret`) without its consumer."""
    settings = Settings(
        data_dir=tmp_path, database_url=database_url, operator_token="op-secret", db_pool_size=4
    )
    async with AsyncTestClient(create_app(settings, consume=False)) as c:
        yield c


async def log_size(engine: AsyncEngine) -> int:
    """Events in the whole log."""
    async with engine.connect() as conn:
        return int(await conn.scalar(sa.text("SELECT count(*) FROM events")) or 0)


async def test_report_queue_decision_and_standing(api: Api, ranking: AsyncTestClient[Any]) -> None:
    """A player of the match reports the other; the queue shows it open with its dispute
    report; the operator suspends; the reported player's standing says suspended until
    then; the reporter's says nothing."""
    match_id, (a, b), _ = await api.duel(ranked=True)
    r = await api.call(
        "POST",
        "/api/reports",
        json={"match_id": match_id, "player_id": b["id"], "reason": "abusive_stamps"},
        headers=api.h(a),
    )
    assert r.status_code == 201, r.text
    report_id = r.json()["report_id"]
    assert r.json() == {
        "report_id": report_id,
        "match_id": match_id,
        "player_id": b["id"],
        "reason": "abusive_stamps",
    }
    assert await api.stream_length(f"report-{report_id}") == 1

    assert (await ranking.get("/api/operator/reports")).status_code == 401
    queue = (await ranking.get("/api/operator/reports", headers=OP)).json()
    assert queue["open"] == 1
    (item,) = queue["reports"]
    assert item["report_id"] == report_id and item["decision"] is None
    assert item["reporter_id"] == a["id"] and item["reported_id"] == b["id"]
    assert item["dispute_report"] == f"/report/{match_id}"

    before = dt.datetime.now(dt.UTC)
    d = await ranking.post(
        f"/api/operator/reports/{report_id}/decision",
        json={"decision": "suspend", "hours": 24, "note": "rude"},
        headers=OP,
    )
    assert d.status_code == 200, d.text
    assert d.json()["decision"] == "suspend" and d.json()["hours"] == 24
    assert await api.stream_length(f"report-{report_id}") == 2

    mine = (await api.call("GET", "/api/players/me/standing", headers=api.h(b))).json()
    assert mine["ranked_block"]["reason"] == "suspended"
    until = dt.datetime.fromisoformat(mine["ranked_block"]["until"])
    assert before + dt.timedelta(hours=24) <= until <= before + dt.timedelta(hours=24, minutes=1)
    assert mine["rating"] == 1500 and mine["completion"] is None and mine["warnings"] == []
    theirs = (await api.call("GET", "/api/players/me/standing", headers=api.h(a))).json()
    assert theirs["ranked_block"] is None
    queue = (await ranking.get("/api/operator/reports", headers=OP)).json()
    assert queue["open"] == 0 and queue["reports"][0]["decision"] == "suspend"


async def test_the_queue_names_the_players_as_they_sat_in_the_match(
    api: Api, ranking: AsyncTestClient[Any]
) -> None:
    """Each queued report names the reported player and the reporter by the names they sat
    under in its match (its `MatchCreated`), beside their ids; the decision's answer too."""
    match_id, (a, b), _ = await api.duel()
    filed = await api.call(
        "POST",
        "/api/reports",
        json={"match_id": match_id, "player_id": b["id"], "reason": "other"},
        headers=api.h(a),
    )
    assert filed.status_code == 201, filed.text
    (item,) = (await ranking.get("/api/operator/reports", headers=OP)).json()["reports"]
    assert (item["reported_id"], item["reported_name"]) == (b["id"], "bob")
    assert (item["reporter_id"], item["reporter_name"]) == (a["id"], "alice")
    d = await ranking.post(
        f"/api/operator/reports/{item['report_id']}/decision",
        json={"decision": "dismiss"},
        headers=OP,
    )
    assert d.status_code == 200, d.text
    assert (d.json()["reported_name"], d.json()["reporter_name"]) == ("bob", "alice")


async def test_a_warning_shows_on_the_standing(api: Api, ranking: AsyncTestClient[Any]) -> None:
    """A warned player sees the warning (match and reason) on their standing, no block."""
    match_id, (a, b), _ = await api.duel()
    r = await api.call(
        "POST",
        "/api/reports",
        json={"match_id": match_id, "player_id": a["id"], "reason": "left_on_purpose"},
        headers=api.h(b),
    )
    rid = r.json()["report_id"]
    d = await ranking.post(
        f"/api/operator/reports/{rid}/decision", json={"decision": "warn"}, headers=OP
    )
    assert d.status_code == 200, d.text
    mine = (await api.call("GET", "/api/players/me/standing", headers=api.h(a))).json()
    assert mine["ranked_block"] is None
    assert [(w["match_id"], w["reason"]) for w in mine["warnings"]] == [
        (match_id, "left_on_purpose")
    ]


async def test_bad_reports_are_4xx_and_append_nothing(api: Api) -> None:
    """Oneself, a stranger, a reporter who did not play, a bad reason, an unknown match, a
    missing token and a repeat: each a 4xx JSON error, no event appended."""
    match_id, (a, b), _ = await api.duel()
    outsider = await api.player("olga")
    ok = {"match_id": match_id, "player_id": b["id"], "reason": "other"}
    cases: list[tuple[dict[str, Any], dict[str, str], int, str]] = [
        ({**ok, "player_id": a["id"]}, api.h(a), 422, "self_report"),
        ({**ok, "player_id": outsider["id"]}, api.h(a), 422, "stranger"),
        (ok, api.h(outsider), 403, "not_in_match"),
        ({**ok, "reason": "rude"}, api.h(a), 422, "invalid"),
        ({**ok, "match_id": "9b2f0a8e-5d1c-4f63-8a3e-1c2d3e4f5a6b"}, api.h(a), 404, "not_found"),
        ({**ok, "match_id": "nope"}, api.h(a), 404, "not_found"),
        ({**ok, "extra": 1}, api.h(a), 422, "invalid"),
        ({"match_id": match_id}, api.h(a), 422, "invalid"),
        (ok, {}, 401, "unauthorized"),
    ]
    before = await log_size(api.engine)
    for body, headers, status, code in cases:
        r = await api.call("POST", "/api/reports", json=body, headers=headers)
        assert r.status_code == status, (body, r.text)
        assert r.json()["error"] == code and r.json()["detail"], r.text
    assert await log_size(api.engine) == before
    assert (await api.call("POST", "/api/reports", json=ok, headers=api.h(a))).status_code == 201
    again = await api.call("POST", "/api/reports", json=ok, headers=api.h(a))
    assert again.status_code == 409 and again.json()["error"] == "already_reported"
    assert await log_size(api.engine) == before + 1
    assert (await api.call("GET", "/api/players/me/standing")).status_code == 401


async def test_bad_decisions_are_4xx_and_append_nothing(
    api: Api, ranking: AsyncTestClient[Any]
) -> None:
    """A suspension without hours, hours on a warning, an unknown decision or report, a
    second decision, no token: each a 4xx JSON error, nothing appended."""
    match_id, (a, b), _ = await api.duel()
    r = await api.call(
        "POST",
        "/api/reports",
        json={"match_id": match_id, "player_id": b["id"], "reason": "collusion"},
        headers=api.h(a),
    )
    rid = r.json()["report_id"]
    url = f"/api/operator/reports/{rid}/decision"
    before = await log_size(api.engine)
    for body, path, headers, status in [
        ({"decision": "suspend"}, url, OP, 422),
        ({"decision": "suspend", "hours": 0}, url, OP, 422),
        ({"decision": "warn", "hours": 3}, url, OP, 422),
        ({"decision": "ban"}, url, OP, 422),
        ({"decision": "warn"}, "/api/operator/reports/nope/decision", OP, 404),
        ({"decision": "warn"}, url, {}, 401),
        ({"decision": "warn"}, url, {"Authorization": "Bearer wrong"}, 401),
    ]:
        d = await ranking.post(path, json=body, headers=headers)
        assert d.status_code == status, (body, d.text)
        assert set(d.json()) >= {"error", "detail"}
    assert await log_size(api.engine) == before
    assert (await ranking.post(url, json={"decision": "dismiss"}, headers=OP)).status_code == 200
    again = await ranking.post(url, json={"decision": "warn"}, headers=OP)
    assert again.status_code == 409 and again.json()["error"] == "already_decided"
    assert await log_size(api.engine) == before + 1


async def test_completion_reads(
    ranking: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """The batch read gives each asked player's completion (null without ended matches)
    and rating (the public player read's; 1500 never rated), the public player read has
    the completion too; bad `ids` are 422."""
    await write_match(engine, pg_store, ["ann", "ben"], [1, 2], stood_in={1: "left"})
    await write_match(engine, pg_store, ["ann", CPU], [2, 1], ranked=False)
    await write_match(engine, pg_store, ["ann", "ben"], [2, 1], stood_in={0: "timeouts"})
    await RankingConsumer(engine, pg_store).catch_up()
    r = await ranking.get("/api/ratings/reputation?ids=ben,ann,zed,ann")
    assert r.status_code == 200, r.text
    ben = (await ranking.get("/api/ratings/players/ben")).json()
    ann = (await ranking.get("/api/ratings/players/ann")).json()
    assert r.json() == {
        "players": [
            {
                "player_id": "ben",
                "completion": {"finished": 1, "started": 2, "rate": 0.5},
                "rating": ben["rating"],
            },
            {
                "player_id": "ann",
                "completion": {"finished": 3, "started": 3, "rate": 1.0},
                "rating": ann["rating"],
            },
            {"player_id": "zed", "completion": None, "rating": 1500},  # never rated
        ]
    }
    assert ben["completion"] == {"finished": 1, "started": 2, "rate": 0.5}
    for bad in ("", ",", ",".join(f"p{i}" for i in range(101)), "a%00b"):
        e = await ranking.get(f"/api/ratings/reputation?ids={bad}")
        assert e.status_code == 422, (bad, e.text)
        assert set(e.json()) >= {"error", "detail"}
    assert (await ranking.get("/api/ratings/reputation")).status_code in (400, 422)


async def test_the_match_service_answers_completion_itself(api: Api, pg_store: EventStore) -> None:
    """`GET /api/players/reputation` on the match service reads the same fold and the
    ratings, with no ranking service running; bad `ids` are 422."""
    await write_match(api.engine, pg_store, ["ann", "ben"], [1, 2], stood_in={1: "left"})
    await RankingConsumer(api.engine, pg_store).catch_up()
    r = await api.call("GET", "/api/players/reputation?ids=ann,ben,zed")
    assert r.status_code == 200, r.text
    players = r.json()["players"]
    ratings = [p.pop("rating") for p in players]
    assert players == [
        {"player_id": "ann", "completion": {"finished": 1, "started": 1, "rate": 1.0}},
        {"player_id": "ben", "completion": {"finished": 0, "started": 1, "rate": 0.0}},
        {"player_id": "zed", "completion": None},
    ]
    # ann won the rated match, ben left it; zed was never rated
    assert ratings[0] > 1500 > ratings[1] and ratings[2] == 1500
    for bad in ("", ",,", ",".join(f"p{i}" for i in range(101))):
        e = await api.call("GET", f"/api/players/reputation?ids={bad}")
        assert e.status_code == 422 and e.json()["error"], (bad, e.text)
