"""The match service's `/api/ratings/*` proxy, with the ranking service running (served by
uvicorn on a real socket) and without it. The two services with the proxy between them
(`both`) are started once for the module, on a database of its own: its tests only read,
and one writes the match the others never look at."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.app import create_app as match_app
from services.match.ratings.routes import upstream_path
from services.ranking.app import create_app as ranking_app
from services.ranking.ratings.consumer import RankingConsumer
from services.shared.database import create_engine
from services.shared.eventstore import EventStore
from services.shared.settings import Settings, SettingsError
from tests.databases import migrated_database
from tests.services.ranking.finished_matches import write_match

pytestmark = pytest.mark.anyio


@contextlib.contextmanager
def _ranking_server(database_url: str, tmp_path: Path) -> Iterator[str]:
    """The ranking service under uvicorn in its own thread and event loop (the match
    app's test client blocks the test's loop while it serves a request), on a socket bound
    and listening before it starts: requests wait in the backlog until it serves them, so
    no readiness polling is needed."""
    settings = Settings(
        data_dir=tmp_path, database_url=database_url, operator_token="op-secret", db_pool_size=2
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    config = uvicorn.Config(ranking_app(settings, consume=False), lifespan="on", log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


@contextlib.asynccontextmanager
async def _match_client(
    engine: AsyncEngine, tmp_path: Path, ranking_url: str | None
) -> AsyncIterator[AsyncTestClient[Any]]:
    settings = Settings(data_dir=tmp_path, scheduler=False, pairing=False, ranking_url=ranking_url)
    async with AsyncTestClient(match_app(settings, engine=engine)) as client:
        yield client


@pytest.fixture(scope="module")
def shared_url(server_url: str, template_name: str) -> Iterator[str]:
    """The module's database, migrated, dropped after its last test."""
    with migrated_database(server_url, template_name) as url:
        yield url


@pytest.fixture(scope="module")
async def shared_engine(shared_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(shared_url, pool_size=4, max_overflow=4)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture(scope="module")
async def both(
    shared_url: str, shared_engine: AsyncEngine, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[AsyncTestClient[Any]]:
    """The ranking service under uvicorn and the match app proxying to it, once for the
    module (a start of both costs more than most of its tests)."""
    tmp_path = tmp_path_factory.mktemp("ratings-proxy")
    with _ranking_server(shared_url, tmp_path) as url:
        async with _match_client(shared_engine, tmp_path, url) as client:
            yield client


async def test_reads_pass_through_with_status_and_body(
    both: AsyncTestClient[Any], shared_engine: AsyncEngine
) -> None:
    """Leaderboard, player and match answers (and their 404/422 errors) arrive unchanged."""
    store = EventStore(shared_engine)
    stream = await write_match(shared_engine, store, ["ann", "ben"], [1, 2])
    await RankingConsumer(shared_engine, store).catch_up()
    board = await both.get("/api/ratings/leaderboard?model=elo&limit=1")
    assert board.status_code == 200 and board.headers["content-type"].startswith("application/json")
    assert board.json()["model"] == "elo"
    assert [e["player_id"] for e in board.json()["entries"]] == ["ann"]
    ann = (await both.get("/api/ratings/players/ann")).json()
    assert ann["player_id"] == "ann" and len(ann["history"]) == 1
    match = (await both.get(f"/api/ratings/matches/{stream[6:]}")).json()
    assert match["rated"] is True and len(match["changes"]) == 2
    missing = await both.get("/api/ratings/players/nobody")
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"
    bad = await both.get("/api/ratings/leaderboard?limit=100000")
    assert bad.status_code == 422 and bad.json()["field"] == "limit"
    for query in ("limit=%ZZ", "model=%00", "offset=1e999"):
        odd = await both.get(f"/api/ratings/leaderboard?{query}")
        assert odd.status_code == 422 and odd.json()["error"] == "invalid", query
    assert (await both.post("/api/ratings/leaderboard")).status_code == 405


@pytest.mark.parametrize(
    "path",
    [
        "/api/ratings/../ranking/lag",
        "/api/ratings/..%2Franking%2Flag",
        "/api/ratings/%2E%2E/ranking/lag",
        "/api/ratings/..%2F..%2Fapi%2Franking%2Flag",
        "/api/ratings/players/..%2F..%2Franking%2Flag",
        "/api/ratings/players/%2e%2e%2f%2e%2e%2franking%2fleaderboard",
        "/api/ratings/leaderboard%3F/../../ranking/lag",
        "/api/ratings//ranking/lag",
        "/api/ratings/players/a%5C..%5Cranking",
    ],
)
async def test_no_path_reaches_the_operator_routes(both: AsyncTestClient[Any], path: str) -> None:
    """Dot segments and encoded slashes are refused (404 JSON); none reach /api/ranking/*."""
    got = await both.get(path, headers={"Authorization": "Bearer op-secret"})
    assert got.status_code == 404, got.text
    assert got.json()["error"] == "not_found"
    assert "checkpoint_tx" not in got.text and "entries" not in got.text


def test_upstream_path_keeps_to_plain_segments() -> None:
    """Only letters, digits, '-' and '_' segments map to an upstream path."""
    assert upstream_path("/leaderboard") == "/api/ratings/leaderboard"
    assert upstream_path("players/3f2b-x_1") == "/api/ratings/players/3f2b-x_1"
    for bad in ("/../ranking/lag", "/./leaderboard", "/a//b", "/", "/a%2Fb", "/a b", "/a\\b"):
        assert upstream_path(bad) is None


async def test_ranking_unset_is_503(engine: AsyncEngine, tmp_path: Path) -> None:
    """No LUDO_RANKING_URL: 503 ranking_unavailable with Retry-After."""
    async with _match_client(engine, tmp_path, None) as client:
        got = await client.get("/api/ratings/leaderboard")
    assert got.status_code == 503 and got.headers["retry-after"]
    assert got.json()["error"] == "ranking_unavailable" and got.json()["detail"]


async def test_ranking_unreachable_is_503(engine: AsyncEngine, tmp_path: Path) -> None:
    """A URL where nothing listens: 503 ranking_unavailable, not a 500."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    try:
        async with _match_client(engine, tmp_path, url) as client:
            got = await client.get("/api/ratings/players/ann?limit=5")
    finally:
        sock.close()
    assert got.status_code == 503 and got.headers["retry-after"]
    assert got.json()["error"] == "ranking_unavailable"


def test_ranking_url_setting() -> None:
    """LUDO_RANKING_URL is read from the environment and must be http(s)."""
    env = {"LUDO_DATA_DIR": "/tmp/x", "LUDO_RANKING_URL": "http://127.0.0.1:8001"}
    assert Settings.from_env(env).ranking_url == "http://127.0.0.1:8001"
    assert Settings.from_env({"LUDO_DATA_DIR": "/tmp/x"}).ranking_url is None
    with pytest.raises(SettingsError, match="LUDO_RANKING_URL"):
        Settings.from_env({**env, "LUDO_RANKING_URL": "file:///etc/passwd"})


async def test_openapi_declares_the_proxy(engine: AsyncEngine, tmp_path: Path) -> None:
    """The match service's schema has the proxy: GET only, its 404, 422 and 503 answers."""
    async with _match_client(engine, tmp_path, None) as client:
        schema = (await client.get("/schema/openapi.json")).json()
    route = schema["paths"]["/api/ratings/{path}"]
    assert set(route) == {"get"}
    assert route["get"]["operationId"] == "proxyRatings" and route["get"]["tags"] == ["ratings"]
    assert {"200", "404", "422", "503"} <= set(route["get"]["responses"])
