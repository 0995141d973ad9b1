"""The per-address budgets counted in PostgreSQL (services/shared/rate_store.py): two apps
on one database are two instances, and a client gets one budget across them; with the
store away, each counts locally, without a 500 and without refusing everyone.

Two in-process apps (`AsyncTestClient`: the client address is "testclient") stand for two
instances; tests/test_balancer.py does the same through HAProxy with real processes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import structlog
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.app import create_app
from services.ranking.app import create_app as create_ranking_app
from services.shared import rate_store
from services.shared.database import create_engine
from services.shared.limits import Limits
from services.shared.rate_store import RateStore
from services.shared.settings import Settings
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio

DEAD_URL = "postgresql+psycopg://nobody:secret-password@127.0.0.1:18299/nothing"


@contextlib.asynccontextmanager
async def _instances(
    engine: AsyncEngine, tmp_path: Path, n: int = 2, **overrides: Any
) -> AsyncIterator[list[AsyncTestClient[Any]]]:
    """`n` match apps on `engine`, as `n` instances of one site."""
    options: dict[str, Any] = {"cpu_delay": 0, "scheduler": False, "pairing": False, **overrides}
    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                AsyncTestClient(create_app(Settings(data_dir=tmp_path, **options), engine=engine))
            )
            for _ in range(n)
        ]
        yield clients


def _is_429(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert response.json()["error"] == "too_many_requests"
    assert int(response.headers["retry-after"]) >= 1


async def test_two_instances_give_a_client_one_request_budget(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """LUDO_RATE_LIMIT requests a minute across two instances, alternating: the next one
    is refused by whichever instance gets it."""
    async with _instances(engine, tmp_path, rate_limit=6) as (one, two):
        for n in range(6):
            assert (await (one, two)[n % 2].get("/api/parties")).status_code == 200
        _is_429(await one.get("/api/parties"))
        _is_429(await two.get("/api/parties"))


async def test_concurrent_requests_on_two_instances_get_exactly_the_budget(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """60 requests at once from one address, half to each instance (batched checks, the
    same address several times in flight): exactly LUDO_RATE_LIMIT are served."""
    async with _instances(engine, tmp_path, rate_limit=20) as (one, two):
        answers = await asyncio.gather(*((one, two)[n % 2].get("/api/parties") for n in range(60)))
    statuses = [r.status_code for r in answers]
    assert statuses.count(200) == 20 and statuses.count(429) == 40, statuses


async def test_the_match_and_ranking_services_share_the_budget(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """The budget is the address's on the whole site: requests to the ranking service
    count against the match service's too."""
    settings = Settings(data_dir=tmp_path, rate_limit=4, cpu_delay=0, scheduler=False)
    ranking = create_ranking_app(settings, engine=engine, consume=False)
    async with (
        _instances(engine, tmp_path, n=1, rate_limit=4) as (match,),
        AsyncTestClient(ranking) as ranks,
    ):
        for _ in range(2):
            assert (await ranks.get("/api/ratings/leaderboard")).status_code < 429
            assert (await match.get("/api/parties")).status_code == 200
        _is_429(await match.get("/api/parties"))


async def test_two_instances_give_a_client_one_guest_budget(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """LUDO_GUEST_LIMIT new guests across two instances; the refused one creates no player."""
    async with _instances(engine, tmp_path, guest_limit=3) as (one, two):
        made = [await (one, two)[n % 2].post("/api/players", json={"name": "g"}) for n in range(3)]
        assert [r.status_code for r in made] == [201] * 3
        _is_429(await two.post("/api/players", json={"name": "g"}))
        async with engine.connect() as conn:
            assert await conn.scalar(sa.text("SELECT count(*) FROM players")) == 3


async def test_unknown_tokens_counted_on_one_instance_stop_lookups_on_the_other(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """LUDO_AUTH_FAIL_LIMIT unknown tokens sent to one instance: the other refuses the
    address's next token with 429 before looking it up."""
    async with _instances(engine, tmp_path, auth_fail_limit=3) as (one, two):
        for n in range(3):
            r = await one.get("/api/players/me", headers={"Authorization": f"Bearer bad{n}"})
            assert r.status_code == 401, r.text

        async def counted() -> bool:  # written in the background after each 401
            async with engine.connect() as conn:
                tat = await conn.scalar(sa.text("SELECT tat FROM rate_buckets WHERE budget='auth'"))
                now = await conn.scalar(sa.text("SELECT extract(epoch FROM now())"))
            return tat is not None and float(tat) - float(now) > 55

        await wait_until(counted, 30, what="the three failures in rate_buckets")
        _is_429(await two.get("/api/players/me", headers={"Authorization": "Bearer bad3"}))


async def test_with_the_store_away_each_instance_counts_locally(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store unreachable: requests are served (no 500), the budget is the process's
    own, one warning without the address or the URL says so, and once the store answers
    again an info line says that and the counts are shared again."""
    monkeypatch.setattr(rate_store, "RETRY", 0.0)  # try the store again at once
    dead = create_engine(DEAD_URL)
    try:
        async with _instances(engine, tmp_path, n=1, rate_limit=3) as (client,):
            limits: Limits = client.app.state.limits
            limits.store = RateStore(dead)
            with structlog.testing.capture_logs() as logs:
                statuses = [(await client.get("/api/parties")).status_code for _ in range(3)]
                _is_429(await client.get("/api/parties"))
            assert statuses == [200] * 3
            away = [e for e in logs if e["event"] == "limits_store_unavailable"]
            assert len(away) == 1 and away[0]["log_level"] == "warning", logs
            assert "testclient" not in repr(logs) and "secret-password" not in repr(logs)
            limits.store = RateStore(engine)
            limits.store.away = True  # as the failed store left it
            with structlog.testing.capture_logs() as logs:
                assert (await client.get("/api/parties")).status_code == 200
            assert [e["event"] for e in logs if e["event"].startswith("limits_")] == [
                "limits_store_back"
            ]
            async with engine.connect() as conn:
                rows = await conn.scalar(sa.text("SELECT count(*) FROM rate_buckets"))
            assert rows == 1
    finally:
        await dead.dispose()


async def test_full_buckets_are_swept(engine: AsyncEngine) -> None:
    """`sweep` deletes the rows whose time is past (full buckets) and keeps the others."""
    store = RateStore(engine)
    assert await store.take("requests", "10.0.0.1", 1, 60) is not None
    async with engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO rate_buckets VALUES ('requests', '10.0.0.2',"
                " extract(epoch FROM now()) - 5)"
            )
        )
    assert await store.sweep() == 1
    async with engine.connect() as conn:
        left = (await conn.execute(sa.text("SELECT client FROM rate_buckets"))).scalars().all()
    assert left == ["10.0.0.1"]


async def test_takes_of_one_address_in_flight_together_are_counted_one_by_one(
    engine: AsyncEngine,
) -> None:
    """30 takes of one address at once (batched n at a time, all or none, then one by
    one near the end), on a budget of 10: exactly 10 taken, the rest told to wait."""
    store = RateStore(engine)
    answers = await asyncio.gather(*(store.take("requests", "10.0.0.3", 10, 60) for _ in range(30)))
    waits = [a.wait for a in answers if a is not None]
    assert len(waits) == 30 and waits.count(0.0) == 10, waits
    assert all(w > 0 for w in waits if w), waits
