"""The per-address budgets through HAProxy: two match instances (and one ranking instance,
which `ludo up --instances 2` starts beside them) count one client's requests and new
guests in PostgreSQL (services/shared/rate_store.py), so the client gets the documented
budget from both together, not one each, and the count outlives an instance killed.

A module of its own: its small budgets (`LUDO_RATE_LIMIT=30`, `LUDO_GUEST_LIMIT=3`) would
starve tests/test_balancer.py's matches."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from collections.abc import Iterator

import httpx
import pytest

from ludo_cli.cluster import Cluster, free_port
from tests.databases import (  # noqa: F401 - the database fixtures, re-used by import
    anyio_backend,
    migrated_database,
)
from tests.databases import server_url as server_url  # noqa: PLC0414 - re-exported fixture
from tests.databases import template_name as template_name  # noqa: PLC0414 - re-exported fixture

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

RATE_LIMIT = 30  # requests a minute per address: a token every 2 s
GUEST_LIMIT = 3  # new guests an hour per address


@pytest.fixture(scope="module")
def cluster(
    server_url: str, template_name: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    logs = tmp_path_factory.mktemp("cluster")
    env = {
        "LUDO_CPU_DELAY": "0",
        "LUDO_LOG_FORMAT": "json",
        "LUDO_DATA_DIR": str(logs),
        "LUDO_RATE_LIMIT": str(RATE_LIMIT),
        "LUDO_GUEST_LIMIT": str(GUEST_LIMIT),
    }
    with (
        migrated_database(server_url, template_name) as url,
        Cluster(
            url,
            port=free_port(),
            ranking_port=free_port(),
            match_instances=2,
            ranking_instances=1,
            env=env,
            logs=logs,
        ) as started,
    ):
        yield started


def _client(cluster: Cluster, source: str) -> httpx.AsyncClient:
    transport = httpx.AsyncHTTPTransport(local_address=source)
    return httpx.AsyncClient(base_url=cluster.url, timeout=30, transport=transport)


class _Spent:
    """One address's answers: how many each status, and which instances served them."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.statuses: Counter[int] = Counter()
        self.served_by: Counter[str] = Counter()
        self.lost = 0  # answers the balancer did not give (an instance killed)

    async def send(self, method: str, path: str, **kwargs: object) -> int:
        """One answer; sent again while the balancer has none for it (its connection to a
        killed instance broke: the request never reached an instance alive), as the
        site's clients do (docs/api.md)."""
        for _ in range(10):
            try:
                r = await self.http.request(method, path, **kwargs)  # type: ignore[arg-type]
            except httpx.TransportError:
                self.lost += 1
                continue
            if r.status_code not in (502, 503):
                break
            self.lost += 1
        self.statuses[r.status_code] += 1
        self.served_by[r.headers.get("x-served-by", "?")] += 1
        if r.status_code == 429:
            assert r.json()["error"] == "too_many_requests", r.text
            assert int(r.headers["retry-after"]) >= 1
        return r.status_code

    async def until_refused(self, method: str, path: str, at_most: int, **kwargs: object) -> int:
        """Send until a 429 (at most `at_most` times); how many were served."""
        served = 0
        for _ in range(at_most):
            if await self.send(method, path, **kwargs) == 429:
                return served
            served += 1
        return served


async def test_one_address_gets_one_budget_across_instances_even_when_one_is_killed(
    cluster: Cluster,
) -> None:
    """Through the balancer (round robin, request by request) one address creates exactly
    LUDO_GUEST_LIMIT guests and is served exactly LUDO_RATE_LIMIT requests (plus what
    refilled while they were sent), half before and half after one match instance is
    killed; a second address still gets its own budgets."""
    began = time.monotonic()
    async with _client(cluster, "127.0.0.31") as first, _client(cluster, "127.0.0.32") as second:
        one = _Spent(first)
        guests = await one.until_refused(
            "POST", "/api/players", 4 * GUEST_LIMIT, json={"name": "a"}
        )
        half = RATE_LIMIT // 2 - guests - 1  # the refused guest spent a request too
        for _ in range(half):
            assert await one.send("GET", "/api/parties") == 200
        assert set(one.served_by) == {"match-1", "match-2"}, one.served_by
        victim = cluster.match[0]
        os.kill(victim.pid, signal.SIGKILL)
        rest = await one.until_refused("GET", "/api/parties", 4 * RATE_LIMIT)
        refilled = int((time.monotonic() - began) * RATE_LIMIT / 60)
        served = guests + 1 + half + rest

        other = _Spent(second)
        assert await other.send("POST", "/api/players", json={"name": "b"}) == 201
        assert await other.send("GET", "/api/parties") == 200
    assert not victim.alive()
    assert guests == GUEST_LIMIT
    assert RATE_LIMIT <= served <= RATE_LIMIT + refilled, (served, refilled)
    assert set(one.statuses) <= {200, 201, 429}, one.statuses
