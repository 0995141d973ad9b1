"""The public rating reads, `/api/ratings/*`: no token, player ratings on mu."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.ratings import MODELS, Skill
from services.ranking.app import create_app
from services.ranking.ratings.consumer import RankingConsumer
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.services.ranking.finished_matches import CPU, write_match

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(database_url: str, tmp_path: Path) -> AsyncIterator[AsyncTestClient[Any]]:
    """The ranking app without its consumer (tests catch up themselves) and no token sent."""
    settings = Settings(
        data_dir=tmp_path, database_url=database_url, operator_token="op-secret", db_pool_size=4
    )
    async with AsyncTestClient(create_app(settings, consume=False)) as c:
        yield c


async def _mus(engine: AsyncEngine, model: str) -> dict[str, float]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            sa.text("SELECT player_id, mu FROM ratings WHERE model = :m"), {"m": model}
        )
        return {r.player_id: r.mu for r in rows}


async def test_leaderboard_player_and_match_use_the_player_rating(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """Leaderboard, player history and match changes: rounded player ratings from mu, no
    token; the leaver's history row says so and does not go up."""
    first = await write_match(engine, pg_store, ["ann", "ben", CPU], [1, 2, 3])
    await write_match(engine, pg_store, ["ann", "cat"], [1, 1])
    left = await write_match(
        engine, pg_store, ["ben", "cat", "dan"], [1, 2, 3], stood_in={0: "left"}
    )
    await RankingConsumer(engine, pg_store).catch_up()
    osk = MODELS["openskill"]
    mus = await _mus(engine, "openskill")

    board = await client.get("/api/ratings/leaderboard")
    assert board.status_code == 200, board.text
    body = board.json()
    assert body["model"] == "openskill"
    entries = body["entries"]
    assert [e["rank"] for e in entries] == [1, 2, 3, 4]
    assert entries[0]["player_id"] == "cat" and entries[0]["matches"] == 2  # drew, then won
    assert all(e["provisional"] for e in entries)  # sigma > 3 after so few matches
    for e in entries:
        assert e["rating"] == round(osk.player_rating(Skill(mu=mus[e["player_id"]], sigma=0)))
        assert isinstance(e["rating"], int)
    assert [e["rating"] for e in entries] == sorted((e["rating"] for e in entries), reverse=True)
    page = (await client.get("/api/ratings/leaderboard?limit=2&offset=2")).json()["entries"]
    assert [e["rank"] for e in page] == [3, 4] and page == entries[2:]

    ben = (await client.get("/api/ratings/players/ben")).json()
    assert ben["player_id"] == "ben" and ben["matches"] == 2 and ben["provisional"] is True
    hist = ben["history"]  # newest first
    assert [h["match_id"] for h in hist] == [left.removeprefix("match-"), first[6:]]
    # The leaver is placed after the two who stayed: 3rd of 3, never "4 / 3".
    assert hist[0]["left_match"] is True and hist[0]["place"] == 3 and hist[0]["players"] == 3
    assert hist[0]["delta"] == hist[0]["rating_after"] - hist[0]["rating_before"] < 0
    assert hist[0]["rating_before"] == hist[1]["rating_after"]
    assert ben["rating"] == hist[0]["rating_after"]
    assert set(hist[0]) == {
        "match_id", "at", "place", "players", "left_match", "rating_before", "rating_after",
        "delta",
    }  # fmt: skip
    one = (await client.get("/api/ratings/players/ben?limit=1&model=elo")).json()
    assert one["model"] == "elo" and len(one["history"]) == 1

    match = (await client.get(f"/api/ratings/matches/{left[6:]}")).json()
    assert match["match_id"] == left[6:] and match["rated"] is True
    changes = match["changes"]
    assert [(c["player_id"], c["place"]) for c in changes] == [("cat", 1), ("dan", 2), ("ben", 3)]
    assert changes[2]["delta"] < 0 < changes[0]["delta"]
    assert all(c["provisional"] for c in changes)
    assert changes[2]["rating_after"] == ben["rating"]
    assert set(changes[0]) == {
        "player_id", "name", "place", "rating_before", "rating_after", "delta", "provisional",
    }  # fmt: skip


async def test_established_players_come_before_provisional_ones(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """elo: after 10 matches eve is established and listed before the provisional ann,
    though ann's rating is higher."""
    for _ in range(10):
        await write_match(engine, pg_store, ["fay", "eve"], [1, 2])
    await write_match(engine, pg_store, ["ann", "ben"], [1, 2])
    await RankingConsumer(engine, pg_store).catch_up()
    entries = (await client.get("/api/ratings/leaderboard?model=elo")).json()["entries"]
    assert [(e["player_id"], e["provisional"]) for e in entries] == [
        ("fay", False),
        ("eve", False),
        ("ann", True),
        ("ben", True),
    ]
    assert entries[2]["rating"] > entries[1]["rating"]


async def test_unrated_and_unknown_matches(
    client: AsyncTestClient[Any], engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A casual (or not yet rated) match: rated false, no changes; an unknown one: 404."""
    casual = await write_match(engine, pg_store, ["ann", "ben"], [1, 2], ranked=False)
    ranked = await write_match(engine, pg_store, ["ann", "ben"], [1, 2])
    pending = (await client.get(f"/api/ratings/matches/{ranked[6:]}")).json()
    assert pending == {"match_id": ranked[6:], "model": "openskill", "rated": False, "changes": []}
    await RankingConsumer(engine, pg_store).catch_up()
    got = (await client.get(f"/api/ratings/matches/{casual[6:]}?model=glicko2")).json()
    assert got["rated"] is False and got["changes"] == []
    assert (await client.get(f"/api/ratings/matches/{ranked[6:]}")).json()["rated"] is True
    unknown = await client.get(f"/api/ratings/matches/{uuid.uuid4()}")
    assert unknown.status_code == 404 and unknown.json()["error"] == "not_found"
    nobody = await client.get("/api/ratings/players/nobody")
    assert nobody.status_code == 404 and nobody.json()["error"] == "not_found"


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("/api/ratings/matches/not-a-uuid", "match_id"),
        ("/api/ratings/matches/match-0b7e1e7e-5d1c-4a39-9c43-9b1a6f0a6e11", "match_id"),
        ("/api/ratings/leaderboard?limit=100000", "limit"),
        ("/api/ratings/leaderboard?limit=0", "limit"),
        ("/api/ratings/leaderboard?limit=ten", "limit"),
        ("/api/ratings/leaderboard?offset=-1", "offset"),
        ("/api/ratings/leaderboard?offset=99999999999999999999", "offset"),
        ("/api/ratings/leaderboard?model=nope", "model"),
        ("/api/ratings/players/ann?model=nope", "model"),
        ("/api/ratings/players/ann?limit=100000", "limit"),
        # A fixed id: parallel workers must collect the same test names.
        ("/api/ratings/matches/3f2c9a4e-8b1d-4e7a-9c55-0d6b2a1f7e83?model=trueskill", "model"),
    ],
)
async def test_bad_input_is_a_422_json_error(
    client: AsyncTestClient[Any], path: str, field: str
) -> None:
    """Malformed ids, out-of-range limits and unknown models: 422 {error, detail, field}."""
    got = await client.get(path)
    assert got.status_code == 422, got.text
    body = got.json()
    assert body["error"] == "invalid" and body["field"] == field and body["detail"]


async def test_nul_and_odd_player_ids_are_404_not_500(client: AsyncTestClient[Any]) -> None:
    """Ids no player can have answer 404 JSON."""
    for pid in ("%00", "a" * 300, "%E2%9C%93"):
        got = await client.get(f"/api/ratings/players/{pid}")
        assert got.status_code == 404 and got.json()["error"] == "not_found"


async def test_openapi_declares_the_public_routes(client: AsyncTestClient[Any]) -> None:
    """Operation ids, the `ratings` tag and the 404/422 responses are in the schema."""
    schema = (await client.get("/schema/openapi.json")).json()
    paths = schema["paths"]
    ops = {
        "/api/ratings/leaderboard": ("getPublicLeaderboard", {"200", "422"}),
        "/api/ratings/players/{player_id}": ("getPublicPlayerRating", {"200", "404", "422"}),
        "/api/ratings/matches/{match_id}": ("getPublicMatchRatings", {"200", "404", "422"}),
        "/api/ratings/analysis/{match_id}": ("getMatchAnalysis", {"200", "404", "422"}),
    }
    for path, (op_id, codes) in ops.items():
        op = paths[path]["get"]
        assert op["operationId"] == op_id and op["tags"] == ["ratings"]
        assert codes <= set(op["responses"])
        assert "security" not in op
