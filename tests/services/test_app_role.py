"""The whole match service, and the ranking service's reads, as the app role.

The test server's role owns the schema (it migrated the database); a fresh login role is
made the app role with `ludo db upgrade` and `LUDO_DB_APP_ROLE`, and the services then
connect as that role only: no migration at start, and none of the log's immutability to
switch off.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from litestar.testing import AsyncTestClient
from psycopg import errors
from sqlalchemy.engine import make_url

from ludo_cli.main import main
from services.ranking.app import create_app as ranking_app
from services.shared.database import create_engine, libpq_url
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.databases import admin
from tests.services.match.test_live import Instance, Table

pytestmark = pytest.mark.anyio


@pytest.fixture
def app_url(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The test's database as a new login role made the app role by `ludo db upgrade`."""
    role = f"ludo_app_{uuid.uuid4().hex[:10]}"
    admin(database_url, f"CREATE ROLE {role} LOGIN PASSWORD 'app'")
    try:
        monkeypatch.setenv("DATABASE_URL", database_url)
        monkeypatch.setenv("LUDO_DB_APP_ROLE", role)
        assert main(["db", "upgrade"]) == 0
        url = make_url(database_url).set(username=role, password="app")
        yield url.render_as_string(hide_password=False)
    finally:
        admin(database_url, f"DROP OWNED BY {role}", f"DROP ROLE {role}")


async def test_the_match_service_plays_as_the_app_role_which_cannot_rewrite_the_log(
    app_url: str, tmp_path: Path
) -> None:
    """Under uvicorn as the app role, two guests play a few turns; as that role, UPDATE,
    DELETE, TRUNCATE and disabling the triggers are all refused."""
    settings = Settings(data_dir=tmp_path, database_url=app_url, cpu_delay=0)
    with Instance(settings) as instance:
        async with httpx.AsyncClient(base_url=instance.http) as http:
            table = await Table(http).open()
            start = await table.version()
            for _ in range(8):
                await table.step()
            assert await table.version() >= start + 8
            events = await table.stream()
            assert [e["version"] for e in events] == list(range(len(events)))
    engine = create_engine(app_url, pool_size=1)
    try:
        assert await EventStore(engine).verify_stream(f"match-{table.match_id}") == len(events)
    finally:
        await engine.dispose()
    with psycopg.connect(libpq_url(app_url), autocommit=True) as conn:
        for statement in (
            "UPDATE events SET type = 'x'",
            "DELETE FROM commands",
            "TRUNCATE seat_connections",
            "ALTER TABLE events DISABLE TRIGGER ALL",
            "UPDATE match_seeds SET server_seed = server_seed",
        ):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(statement)
        assert conn.execute("SELECT count(*) FROM events").fetchone() != (0,)


async def test_the_ranking_service_reads_as_the_app_role(app_url: str, tmp_path: Path) -> None:
    """The ranking service starts as the app role (its consumer included) and answers its
    reads: health, lag, leaderboard and a public rating."""
    settings = Settings(data_dir=tmp_path, database_url=app_url, operator_token="op")
    op = {"Authorization": "Bearer op"}
    async with AsyncTestClient(ranking_app(settings)) as client:
        assert (await client.get("/healthz")).status_code == 200
        for url in ("/api/ranking/lag", "/api/ranking/leaderboard"):
            r = await client.get(url, headers=op)
            assert r.status_code == 200, r.text
