"""The ranking service's HTTP API and the `ludo ranking` command."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from migrations.grants import app_role_sql
from services.ranking.app import create_app
from services.ranking.ratings.consumer import RankingConsumer, ratings_hash
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests import paths
from tests.databases import admin
from tests.services.ranking.finished_matches import CPU, write_match
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio

ROOT = paths.ROOT


@pytest.fixture
async def client(database_url: str, tmp_path: Path) -> AsyncIterator[AsyncTestClient[Any]]:
    # The app opens its own engine (in its lifespan, on the test client's event loop): one
    # SQLAlchemy async pool must not be shared by two event loops in two threads.
    settings = Settings(
        data_dir=tmp_path,
        database_url=database_url,
        operator_token="op-secret",
        ranking_poll=0.05,
        db_pool_size=4,
    )
    async with AsyncTestClient(create_app(settings)) as c:
        c.headers["Authorization"] = "Bearer op-secret"  # every /api/ranking route: operator
        yield c


async def eventually(client: AsyncTestClient[Any], url: str, check: Any) -> Any:
    """The body of `url` once `check(body)` holds (the consumer rates in the background)."""

    async def body() -> Any:
        answer = (await client.get(url)).json()
        return answer if check(answer) else None

    return await wait_until(body, 10, what=f"{url} to show the ratings")


async def test_api_serves_what_the_consumer_in_the_lifespan_rated(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """The app's own consumer rates what is written; the leaderboard and player reads show it."""
    await write_match(engine, pg_store, ["ann", "ben", CPU], [1, 2, 3])
    await write_match(engine, pg_store, ["ann", "cat"], [1, 1])
    board = await eventually(client, "/api/ranking/leaderboard", lambda b: len(b["entries"]) == 3)
    assert board["model"] == "openskill"
    assert board["entries"][0]["player_id"] == "ann" and board["entries"][0]["rank"] == 1
    assert (await client.get("/api/ranking/leaderboard?min_matches=2")).json()["entries"][0][
        "player_id"
    ] == "ann"
    assert len((await client.get("/api/ranking/leaderboard?min_matches=2")).json()["entries"]) == 1
    elo = (await client.get("/api/ranking/leaderboard?model=elo&active_days=1")).json()
    assert len(elo["entries"]) == 3
    assert (await client.get("/api/ranking/leaderboard?model=nope")).status_code == 422

    player = (await client.get("/api/ranking/players/ann")).json()
    assert {r["model"] for r in player["ratings"]} == {"openskill", "elo", "glicko2"}
    assert [h["place"] for h in player["history"]] == [1, 1]
    assert player["history"][0]["library"].startswith("openskill")
    assert (await client.get("/api/ranking/players/nobody")).status_code == 404

    dist = (await client.get("/api/ranking/distribution?bucket=100")).json()
    assert sum(b["players"] for b in dist["buckets"]) == 3
    days = (await client.get("/api/ranking/matches-per-day")).json()
    assert sum(d["matches"] for d in days) == 2
    swings = (await client.get("/api/ranking/swings?limit=2")).json()
    assert len(swings) == 2 and abs(swings[0]["delta"]) >= abs(swings[1]["delta"])
    lag = await eventually(client, "/api/ranking/lag", lambda b: b["events_behind"] == 0)
    assert lag["consuming_here"] is True and lag["head_position"] > 0

    schema = (await client.get("/schema/openapi.json")).json()
    ops = {op["operationId"] for path in schema["paths"].values() for op in path.values()}
    assert {"getLeaderboard", "getPlayerRating", "recomputeRatings", "getConsumerLag"} <= ops


async def test_recompute_endpoint_needs_the_operator_token(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Operators only, no body; the hash it returns is the live hash."""
    await write_match(engine, pg_store, ["a", "b"], [2, 1])
    await eventually(client, "/api/ranking/leaderboard", lambda b: len(b["entries"]) == 2)
    del client.headers["Authorization"]
    assert (await client.post("/api/ranking/recompute")).status_code == 401
    bad = {"Authorization": "Bearer wrong"}
    assert (await client.post("/api/ranking/recompute", headers=bad)).status_code == 401
    operator = {"Authorization": "Bearer op-secret"}
    body = await client.post("/api/ranking/recompute", headers=operator, json={"models": ["x"]})
    assert body.status_code == 422 and body.json()["field"] == "body"  # takes no body
    ok = await client.post("/api/ranking/recompute", headers=operator)
    assert ok.status_code == 200, ok.text
    assert ok.json()["hash"] == (await ratings_hash(engine))[0]
    assert ok.json()["ratings"] == 6


@pytest.mark.parametrize(
    "path",
    [
        "/api/ranking/leaderboard",
        "/api/ranking/players/ann",
        "/api/ranking/distribution",
        "/api/ranking/matches-per-day",
        "/api/ranking/swings",
        "/api/ranking/lag",
    ],
)
async def test_read_endpoints_are_the_operators(client: AsyncTestClient[Any], path: str) -> None:
    """The operator's reads need the operator token: 401 without or with a wrong one."""
    del client.headers["Authorization"]
    refused = await client.get(path)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    bad = await client.get(path, headers={"Authorization": "Bearer op-secret-not"})
    assert bad.status_code == 401
    ok = await client.get(path, headers={"Authorization": "Bearer op-secret"})
    assert ok.status_code in (200, 404)  # 404: ann has no rating here
    assert (await client.get("/healthz")).status_code == 200


async def test_dashboard_page_is_self_contained(client: AsyncTestClient[Any]) -> None:
    """The dashboard is a shell under its own strict CSP, its module served by this service
    from this origin; `/` leads to it."""
    del client.headers["Authorization"]
    root = await client.get("/", follow_redirects=False)
    assert root.status_code in (301, 302, 307, 308) and root.headers["location"] == "/dashboard"
    page = await client.get("/dashboard")  # the page is public; its data calls are not
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    csp = page.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
    assert "script-src 'nonce-" in csp and "style-src 'self'" in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    assert '<script nonce="' in page.text and "<script>" not in page.text
    module = await client.get("/static/js/dashboard.js")
    assert module.status_code == 200
    assert module.headers["content-type"].startswith("text/javascript")
    assert "Authorization" in module.text or "operatorJson" in module.text
    assert "sessionStorage" in module.text
    for text in (page.text, module.text):
        assert "http://" not in text.replace("http://www.w3.org/2000/svg", "")
        assert "https://" not in text


@pytest.mark.slow
async def test_cli_recompute_prints_the_live_hash(
    engine: AsyncEngine, pg_store: EventStore, database_url: str
) -> None:
    """`ludo ranking recompute` prints the hash of the live ratings."""
    for i in range(5):
        await write_match(engine, pg_store, ["a", "b", "c"][: 2 + i % 2], [1, 2, 2][: 2 + i % 2])
    await RankingConsumer(engine, pg_store).catch_up()
    live, _ = await ratings_hash(engine)
    env = {**os.environ, "DATABASE_URL": database_url, "PYTHONPATH": str(ROOT)}
    outs = []
    for _ in range(2):
        done = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "ludo_cli.main", "ranking", "recompute"],
            env=env,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert done.returncode == 0, done.stderr
        outs.append(done.stdout.split()[0])
    assert outs == [live, live]


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/ranking/leaderboard?active_days=10000000", "active_days"),
        ("/api/ranking/leaderboard?offset=9223372036854775808", "offset"),
        ("/api/ranking/swings?days=10000000", "days"),
        ("/api/ranking/matches-per-day?days=0", "days"),
    ],
)
async def test_values_beyond_what_sql_can_hold_are_422(
    client: AsyncTestClient[Any], path: str, field: str
) -> None:
    """Huge query values are refused by name; they used to overflow PostgreSQL (500)."""
    r = await client.get(path)
    assert r.status_code == 422 and r.json()["field"] == field, r.text


async def test_a_nul_in_a_player_id_is_an_unknown_player(client: AsyncTestClient[Any]) -> None:
    """PostgreSQL text cannot hold NUL: such an id is a 404, as any unknown id."""
    r = await client.get("/api/ranking/players/abc%00")
    assert r.status_code == 404 and r.json()["error"] == "not_found", r.text


async def test_history_limit_keeps_the_newest_matches(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """`limit=N` returns the player's N most recent rated matches, oldest first."""
    for placements in ([1, 2], [2, 1], [1, 2]):
        await write_match(engine, pg_store, ["ann", "bob"], placements)
    body = await eventually(
        client, "/api/ranking/players/ann", lambda b: len(b.get("history", [])) == 3
    )
    every = [h["match_id"] for h in body["history"]]
    newest = (await client.get("/api/ranking/players/ann?limit=2")).json()["history"]
    assert [h["match_id"] for h in newest] == every[1:]


@pytest.mark.parametrize("bucket", ["5e-324", "1e-300", "0.001", "1e308", "inf", "nan", "-5", "0"])
async def test_an_absurd_distribution_bucket_is_422(
    client: AsyncTestClient[Any], bucket: str
) -> None:
    """A tiny, huge, infinite, NaN or negative bucket is refused by name (a tiny one was a
    500: `rating / bucket` overflowed in PostgreSQL)."""
    r = await client.get(f"/api/ranking/distribution?bucket={bucket}")
    assert r.status_code == 422 and r.json()["field"] == "bucket", r.text


async def test_the_smallest_distribution_bucket_still_answers(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """bucket=0.01, the smallest allowed, gives buckets whose bounds hold the ratings."""
    await write_match(engine, pg_store, ["ann", "ben"], [1, 2])
    body = await eventually(
        client, "/api/ranking/distribution?bucket=0.01", lambda b: len(b["buckets"]) == 2
    )
    assert body["bucket"] == 0.01 and all(b["players"] == 1 for b in body["buckets"])


@pytest.fixture
def restricted_url(database_url: str) -> Iterator[str]:
    """`database_url` as a fresh role with the app role's privileges (migrations/grants.py)
    and no more: it may not create tables in `public` nor rename the rating tables."""
    role = f"ludo_restricted_{uuid.uuid4().hex[:10]}"
    admin(database_url, f"CREATE ROLE {role} LOGIN PASSWORD 'restricted'")
    try:
        admin(
            database_url,
            *app_role_sql(role),
            f"GRANT SELECT ON alembic_version TO {role}",  # for the start-up migration check
        )
        url = make_url(database_url).set(username=role, password="restricted")
        yield url.render_as_string(hide_password=False)
    finally:
        admin(database_url, f"DROP OWNED BY {role}", f"DROP ROLE {role}")


async def test_recompute_as_a_role_that_may_not_create_tables_says_so(
    restricted_url: str, tmp_path: Path, engine: AsyncEngine, pg_store: EventStore
) -> None:
    """POST /api/ranking/recompute as a role without CREATE is a JSON 503
    `recompute_not_permitted` that says what to do, not a bare 500."""
    await write_match(engine, pg_store, ["ann", "ben"], [1, 2])
    settings = Settings(
        data_dir=tmp_path, database_url=restricted_url, operator_token="op", db_pool_size=2
    )
    async with AsyncTestClient(create_app(settings, consume=False)) as c:
        r = await c.post("/api/ranking/recompute", headers={"Authorization": "Bearer op"})
        assert r.status_code == 503, r.text
        body = r.json()
        assert body["error"] == "recompute_not_permitted"
        assert "ludo ranking recompute" in body["detail"] and "owner" in body["detail"]
        assert "permission denied" in body["detail"]
        # The live tables were left alone: the rest of the service still answers.
        lag = await c.get("/api/ranking/lag", headers={"Authorization": "Bearer op"})
        assert lag.status_code == 200, lag.text


async def test_cli_recompute_as_a_role_that_may_not_create_tables_is_one_line(
    restricted_url: str,
) -> None:
    """`ludo ranking recompute` as such a role prints one line saying what to do and exits 1,
    no traceback."""
    env = {**os.environ, "DATABASE_URL": restricted_url, "PYTHONPATH": str(ROOT)}
    env.pop("LUDO_DB_APP_ROLE", None)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "ludo_cli.main", "ranking", "recompute"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("ludo ranking:")]
    assert len(lines) == 1, done.stderr
    assert "migration owner" in lines[0] and "permission denied" in lines[0]
