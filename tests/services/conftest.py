"""Fixtures for every service test: the databases, a match-service app, an API helper.

The database fixtures are imported from tests/databases.py (a fresh migrated database per
test); nothing is copied. `api` drives the app in-process with `AsyncTestClient`; the
deadline worker is off unless a test asks for `scheduled_api`, and tests may fire
deadlines themselves with `api.scheduler.run_due()`. Every error answer is held to its
operation's listing in the OpenAPI document for the whole session (`errors_listed`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.app import create_app
from services.match.play.scheduler import Scheduler
from services.shared.settings import Settings
from tests.databases import (  # noqa: F401 - the database fixtures, re-used by import
    anyio_backend,
    blank_database_url,
    database_url,
    pg_store,
    server_home,
    server_url,
    template_name,
)
from tests.databases import engine as engine  # noqa: PLC0414 - re-exported fixture
from tests.services.answered_errors import watch

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session", autouse=True)
def errors_listed() -> Iterator[None]:
    """Every error answer of every service test is listed for its operation in its
    service's OpenAPI document (tests/services/answered_errors.py): the session fails
    with those that are not."""
    with watch() as unlisted:
        yield
    assert unlisted == [], "answered, not listed in the OpenAPI document:\n" + "\n".join(
        sorted(set(unlisted))
    )


class Api:
    """The app under test plus helpers that speak its HTTP API."""

    def __init__(self, client: AsyncTestClient[Any], db: AsyncEngine) -> None:
        self.client = client
        self.engine = db
        self.seen: list[str] = []  # every response body, for the seed-secrecy checks

    @property
    def scheduler(self) -> Scheduler:
        scheduler: Scheduler = self.client.app.state.parts.scheduler
        return scheduler

    async def call(self, method: str, url: str, **kwargs: Any) -> Any:
        response = await self.client.request(method, url, **kwargs)
        self.seen.append(response.text)
        return response

    async def player(self, name: str) -> dict[str, str]:
        r = await self.call("POST", "/api/players", json={"name": name})
        assert r.status_code == 201, r.text
        body = r.json()
        return {"id": body["id"], "name": name, "auth": f"Bearer {body['token']}"}

    @staticmethod
    def h(player: dict[str, str], **extra: str) -> dict[str, str]:
        return {"Authorization": player["auth"], **extra}

    async def party(self, host: dict[str, str], **body: Any) -> dict[str, Any]:
        r = await self.call("POST", "/api/parties", json=body, headers=self.h(host))
        assert r.status_code == 201, r.text
        party: dict[str, Any] = r.json()
        return party

    async def start(self, party_id: str, host: dict[str, str]) -> str:
        r = await self.call("POST", f"/api/parties/{party_id}/start", headers=self.h(host))
        assert r.status_code == 201, r.text
        match_id: str = r.json()["match_id"]
        return match_id

    async def duel(self, rules: dict[str, Any] | None = None, **party: Any) -> Any:
        """Two guests at one table, match started: (match_id, [seat0, seat1], party_id)."""
        a = await self.player("alice")
        b = await self.player("bob")
        p = await self.party(
            a, seats=2, rules=rules or {"preset": "bga"}, client_seed="a-seed", **party
        )
        r = await self.call(
            "POST",
            f"/api/parties/{p['id']}/join",
            json={"client_seed": "b-seed"},
            headers=self.h(b),
        )
        assert r.status_code == 200, r.text
        return await self.start(p["id"], a), [a, b], p["id"]

    async def match(self, match_id: str) -> dict[str, Any]:
        r = await self.call("GET", f"/api/matches/{match_id}")
        assert r.status_code == 200, r.text
        state: dict[str, Any] = r.json()
        return state

    async def version(self, match_id: str) -> int:
        return int((await self.match(match_id))["version"])

    async def stream_length(self, stream_id: str) -> int:
        async with self.engine.connect() as conn:
            n = await conn.scalar(
                sa.text("SELECT count(*) FROM events WHERE stream_id = :s"), {"s": stream_id}
            )
        return int(n or 0)

    async def step(self, match_id: str, players: list[dict[str, str]]) -> dict[str, Any]:
        """One action by the seat to act: roll, or its first legal move."""
        state = await self.match(match_id)
        seat = state["turn"]
        who = self.h(players[seat])
        if state["phase"] == "roll":
            r = await self.call("POST", f"/api/matches/{match_id}/roll", headers=who)
        else:
            moves = (await self.call("GET", f"/api/matches/{match_id}/moves")).json()["moves"]
            r = await self.call(
                "POST",
                f"/api/matches/{match_id}/move",
                json={"piece": moves[0]["piece"]},
                headers=who,
            )
        assert r.status_code == 200, r.text
        return state

    async def play_to_end(self, match_id: str, players: list[dict[str, str]]) -> dict[str, Any]:
        for _ in range(5000):
            state = await self.match(match_id)
            if state["status"] == "finished":
                return state
            await self.step(match_id, players)
        raise AssertionError("the match did not end")

    async def past_due(self, match_id: str) -> None:
        """Make the match's deadline due now (instead of waiting for it)."""
        async with self.engine.begin() as conn:
            await conn.execute(
                sa.text(
                    "UPDATE turn_deadlines SET due_at = now() - interval '1 second' "
                    "WHERE stream_id = :s"
                ),
                {"s": f"match-{match_id}"},
            )


def _settings(tmp_path: Path, **overrides: Any) -> Settings:
    # The request budget per address is off: these tests play whole matches at machine
    # speed, past the 1,200 requests a minute a person never reaches (the budgets have
    # their own tests, tests/services/shared/test_limits.py).
    options: dict[str, Any] = {
        "cpu_delay": 0,
        "scheduler": False,
        "pairing": False,
        "rate_limit": 0,
        **overrides,
    }
    return Settings(data_dir=tmp_path, **options)


@pytest.fixture
async def api(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Api]:
    """The app on the test's database, deadline worker and pairing passes off."""
    app = create_app(_settings(tmp_path), engine=engine)
    async with AsyncTestClient(app) as client:
        yield Api(client, engine)


@pytest.fixture
async def scheduled_api(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Api]:
    """The app with its deadline worker running (CPU delay 0, 10 ms poll)."""
    app = create_app(_settings(tmp_path, scheduler=True, scheduler_poll=0.01), engine=engine)
    async with AsyncTestClient(app) as client:
        yield Api(client, engine)
