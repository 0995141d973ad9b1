"""PostgreSQL under Patroni (ludo_cli/ha.py): a primary's crash under a match in play.

etcd, three Patroni nodes with synchronous replication and HAProxy in front, as `ludo up
--ha` runs them; one match instance on the read-write port; the clients of `ludo bench
faults` (benchmarks/resilient.py), which send a command again with its Idempotency-Key
after a 503, as docs/api.md asks.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.async_api import expect

from benchmarks.chromium import CHROMIUM
from benchmarks.resilient import Books, MatchPlay, check_matches
from ludo_cli.cluster import Cluster, free_port, haproxy_path
from ludo_cli.ha import NODES, HaCluster
from services.shared.database import migrate
from tests.browser import launched, person
from tests.databases import anyio_backend  # noqa: F401 - the fixture, re-used by import
from tests.waiting import wait_until

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("etcd") is None
        or haproxy_path() is None
        or importlib.util.find_spec("patroni") is None,
        reason="needs etcd (etcd-server), HAProxy and Patroni (the `ha` extra)",
    ),
    pytest.mark.skipif(bool(os.environ.get("DATABASE_URL")), reason="runs its own PostgreSQL"),
]

TIMEOUT = 120.0  # s: generous for a loaded machine; nothing here asserts a duration
TOKEN = "ha-operator"


@pytest.fixture(scope="module")
def ha(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HaCluster]:
    """The cluster, started from a working folder only root may enter, as a checkout in a
    `mktemp -d` folder is: the nodes, run as PostgreSQL's OS user, must not depend on it."""
    private = tmp_path_factory.mktemp("private-cwd")
    private.chmod(0o700)
    started_in = Path.cwd()
    os.chdir(private)
    try:
        with HaCluster.scratch("ludo-test-ha-", say=print) as cluster:
            os.chdir(started_in)
            migrate(cluster.url)
            yield cluster
    finally:
        os.chdir(started_in)


@pytest.fixture(scope="module")
def service(ha: HaCluster) -> Iterator[Cluster]:
    env = {
        "LUDO_LOG_FORMAT": "json",
        "LUDO_DATA_DIR": str(ha.home),
        "LUDO_DATABASE_READ_URL": ha.read_url,
        "LUDO_OPERATOR_TOKEN": TOKEN,
        "LUDO_PATRONI_URL": ",".join(ha.rest(node) for node in NODES),
    }
    with Cluster(
        ha.url,
        port=free_port(),
        ranking_port=free_port(),
        env=env,
        logs=ha.home / "logs",
    ) as cluster:
        yield cluster


def _sessions_open_to(port: int) -> int:
    """The TCP connections of this machine to 127.0.0.1:`port` that the other end has not
    closed (ESTABLISHED in /proc/net/tcp; one it closed is in CLOSE_WAIT until ours is)."""
    lines = Path("/proc/net/tcp").read_text().splitlines()[1:]
    return sum(
        1
        for fields in (line.split() for line in lines)
        if fields[3] == "01" and fields[2] == f"0100007F:{port:04X}"
    )


async def test_a_crashed_primary_is_replaced_and_no_acknowledged_command_is_lost(
    ha: HaCluster, service: Cluster
) -> None:
    """kill -9 of the primary's postmaster mid-match: the synchronous standby is promoted;
    a command sent once the services' sessions on it are closed waits for the new primary
    and is acknowledged without a 503; every acknowledged event is stored once; the old
    primary streams again as a standby (rewind check)."""
    old = ha.primary()
    assert old is not None
    books = Books()
    async with httpx.AsyncClient(base_url=service.url, timeout=30) as http:
        play = await MatchPlay(http, books).open()
        while play.commands < 4:
            assert await play.step()
        acked = len(books.acks)
        assert _sessions_open_to(ha.ports["rw"]) > 0
        ha.kill_postmaster(old)
        # Its backends ended with it, and HAProxy closed the services' side of each.
        await wait_until(
            lambda: _sessions_open_to(ha.ports["rw"]) == 0,
            TIMEOUT,
            what="every session through the read-write port closed",
        )
        while len(books.acks) == acked:
            assert await play.step(), "the match ended before a command after the crash"
        promoted = ha.primary()
        assert promoted not in (None, old), ha.members()
        report = await check_matches(http, books)
    assert report["problems"] == []
    assert books.retries == {}, books.retries

    # The old primary rejoins on the new timeline, its data kept, not cloned afresh:
    # Patroni compared its timeline and WAL position with the new primary's (pg_rewind
    # runs when the old primary wrote past the fork, i.e. what no standby acknowledged).
    def rejoined() -> bool:
        # Patroni refreshes a member's timeline in its next loop after the member
        # streams again: the two are waited for together.
        members = {m["name"]: m for m in ha.members()}
        return (
            ha.ready(3)
            and members[old]["state"] == "streaming"
            and members[old]["timeline"] == members[promoted]["timeline"]
        )

    await wait_until(rejoined, TIMEOUT, what="the old primary streaming on the new timeline")
    log = (ha.home / "logs" / f"{old}.log").read_text()
    assert "Local timeline=" in log and "bootstrap from leader" not in log, log[-3000:]


async def test_the_live_view_shows_patronis_members_and_the_last_switchover(
    ha: HaCluster, service: Cluster
) -> None:
    """After a switchover the operator's live view (the ranking service's `getLiveView`)
    lists the three nodes with the new primary as leader, and names it in the last
    failover or switchover, from Patroni's own REST API."""
    await wait_until(lambda: ha.ready(3), TIMEOUT, what="three nodes streaming")
    promoted = ha.switchover()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=service.ranking_url, timeout=30) as http:

        async def told() -> dict[str, object] | None:
            view = (await http.get("/api/ranking/live", headers=headers)).json()
            manager = view["database"]["manager"]
            last = manager["last_failover"]
            if last is None or last["new_leader"] != promoted:
                return None
            return view if last["new_timeline"] is not None else None

        # Patroni writes its history at its next loop after the promotion, and the new
        # leader's member shows its new timeline in `/cluster` only at its own next loop: the
        # two may be a loop apart (seen under load), and until then the view rightly names
        # no new timeline.
        view = await wait_until(told, TIMEOUT, what="the switchover in the live view")
    database = view["database"]
    assert isinstance(database, dict)
    manager = database["manager"]
    roles = {m["name"]: m["role"] for m in manager["members"]}
    assert sorted(roles) == sorted(NODES)
    assert roles[promoted] in ("leader", "primary")
    assert manager["unavailable"] is None
    last = manager["last_failover"]
    assert last["at"]
    assert database["in_recovery"] is False
    # Both timelines: the one that ended, and the one the new leader is on.
    on = {m["name"]: m["timeline"] for m in manager["members"]}[promoted]
    assert last["new_timeline"] == on > last["timeline"]
    if os.path.exists(CHROMIUM):  # the dashboard says both, in each language
        await dashboard_says(
            service.ranking_url,
            {
                "en-GB": f"(timeline {last['timeline']} → {on}",
                "ja-JP": f"（タイムライン{last['timeline']} → {on}",
            },
        )


async def dashboard_says(url: str, texts: dict[str, str]) -> None:
    """The dashboard's database line, signed in, holds `texts[locale]` in each locale."""
    async with launched() as browser:
        for locale, text in texts.items():
            async with person(browser, locale=locale, width=375, height=812) as (page, errors):
                await page.goto(f"{url}/dashboard")
                await page.fill("#token", TOKEN)
                await page.click("#login button[type=submit]")
                await expect(page.locator("#live-database")).to_contain_text(text)
                assert errors == []
