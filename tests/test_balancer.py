"""Two match and two ranking processes behind HAProxy (Debian's package), one PostgreSQL.

The processes are those `ludo up --instances 2 --ranking-instances 2` runs
(ludo_cli/cluster.py), each a uvicorn process of its own, so kill -9 and SIGSTOP are real;
the clients are those of `ludo bench faults` (benchmarks/resilient.py), which retry a
command with its Idempotency-Key and reopen a socket from `last + 1`, as docs/api.md asks.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks.pairing_bench import PoolGuest
from benchmarks.resilient import Books, Follower, MatchPlay, check_matches, new_guest
from ludo_cli.cluster import Cluster, free_port
from services.ranking.ratings.consumer import leader_name
from services.shared.database import create_engine
from tests.databases import (  # noqa: F401 - the database fixtures, re-used by import
    anyio_backend,
    migrated_database,
)
from tests.databases import server_url as server_url  # noqa: PLC0414 - re-exported fixture
from tests.databases import template_name as template_name  # noqa: PLC0414 - re-exported fixture
from tests.services.match.test_arena_live import _guest, play_to_end
from tests.services.match.test_sockets import _socket
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TIMEOUT = 120.0  # s: generous for a loaded machine; nothing here asserts a duration
GUEST_LIMIT = 6  # guests an hour per address, all instances together (the arena test makes 5)


@pytest.fixture(scope="module")
def cluster_database(server_url: str, template_name: str) -> Iterator[str]:
    """One migrated database for the module's cluster (which takes ~10 s to start)."""
    with migrated_database(server_url, template_name) as url:
        yield url


@pytest.fixture(scope="module")
def running(cluster_database: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    logs = tmp_path_factory.mktemp("cluster")
    env = {
        "LUDO_CPU_DELAY": "0",
        "LUDO_LOG_FORMAT": "json",
        "LUDO_DATA_DIR": str(logs),
        "LUDO_GUEST_LIMIT": str(GUEST_LIMIT),
        "LUDO_OPERATOR_TOKEN": "operator-token-for-the-balancer-tests",
    }
    with Cluster(
        cluster_database,
        port=free_port(),
        ranking_port=free_port(),
        match_instances=2,
        ranking_instances=2,
        env=env,
        logs=logs,
    ) as started:
        yield started


@pytest.fixture
def cluster(running: Cluster) -> Iterator[Cluster]:
    """The module's cluster, every instance running again after the test (a test may kill
    or freeze one: it is started again, as `ludo up` and compose.yaml restart it)."""
    yield running
    for instance in running.instances():
        instance.signal(signal.SIGCONT)
        if not instance.alive():
            instance.start()
            assert instance.ready(), f"{instance.name} did not start again"


@pytest.fixture
async def engine(cluster_database: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(cluster_database)
    try:
        yield engine
    finally:
        await engine.dispose()


def _client(cluster: Cluster, source: str) -> httpx.AsyncClient:
    """A client from its own loopback address: each test has its own guest budget."""
    transport = httpx.AsyncHTTPTransport(local_address=source)
    return httpx.AsyncClient(base_url=cluster.url, timeout=30, transport=transport)


def _ws(cluster: Cluster) -> str:
    return cluster.url.replace("http://", "ws://")


async def wait_for(what: str, check: Callable[[], Awaitable[Any]]) -> Any:
    return await wait_until(check, TIMEOUT, what=what)


async def test_commands_alternate_between_instances_and_the_socket_sees_each_event_once(
    cluster: Cluster,
) -> None:
    """A match of two people and a CPU whose commands go to both instances by turns, and
    whose socket (through the balancer) receives every event once, in order, with the
    stored hashes; every command acknowledged is stored once, and the audit holds."""
    books = Books()
    async with _client(cluster, "127.0.0.11") as http:
        play = await MatchPlay(http, books, guests=2, cpus=1, rules={"preset": "bga"}).open()
        follower = Follower(_ws(cluster), play.match_id).start()
        await asyncio.wait_for(play.play(), TIMEOUT)
        await asyncio.wait_for(follower.over.wait(), TIMEOUT)
        await follower.stop()
        report = await check_matches(http, books, [follower])
        stored = (await http.get(f"/api/matches/{play.match_id}/events")).json()["events"]
    assert report["problems"] == []
    assert follower.versions == [e["version"] for e in stored]
    assert follower.hashes == {e["version"]: e["hash"] for e in stored}
    assert play.commands >= 20 and report["acknowledged"] >= play.commands
    # Round robin, request by request: each instance took a fair share of the commands.
    assert set(books.served_by) == {"match-1", "match-2"}
    assert min(books.served_by.values()) >= sum(books.served_by.values()) / 4, books.served_by


async def test_two_guests_entering_through_both_instances_are_seated_together(
    cluster: Cluster,
) -> None:
    """Quick play behind the balancer: two guests' entries land on the two instances (round
    robin) and both lobbies are told the same table, a party seating exactly them."""
    async with _client(cluster, "127.0.0.16") as http:
        guests = [PoolGuest(cluster.url, name) for name in ("ann", "bob")]
        try:
            for guest in guests:
                await guest.connect(http)
            for guest in guests:
                await guest.enter(http, "2-casual", cpu_after=None)
            seated = [await guest.until_seated(TIMEOUT) for guest in guests]
        finally:
            for guest in guests:
                await guest.close()
        party = (await http.get(f"/api/parties/{seated[0]['party_id']}")).json()
    assert {g.served_by["entry"] for g in guests} == {"match-1", "match-2"}
    assert seated[0] == seated[1]
    assert sorted(s["player_id"] for s in party["seats"]) == sorted(g.player_id for g in guests)


async def test_the_budgets_key_on_the_client_behind_the_balancer(cluster: Cluster) -> None:
    """The guest budget (GUEST_LIMIT an hour) counts the address the balancer saw,
    not the balancer's own: one client exhausts its budget, another still gets a guest, and
    an X-Forwarded-For of the client's own making changes nothing."""
    books = Books()
    async with _client(cluster, "127.0.0.2") as first, _client(cluster, "127.0.0.3") as second:
        answers = [(await first.post("/api/players", json={"name": "a"})).status_code]
        while answers[-1] == 201 and len(answers) < 4 * GUEST_LIMIT:
            answers.append((await first.post("/api/players", json={"name": "a"})).status_code)
        assert answers[-1] == 429 and answers.count(201) == GUEST_LIMIT, answers
        spoofed = {"X-Forwarded-For": "127.0.0.9"}
        r = await first.post("/api/players", json={"name": "a"}, headers=spoofed)
        assert r.status_code == 429, r.text
        assert (await new_guest(second, books, "b"))["player_id"]


async def test_a_match_instance_killed_mid_match_loses_and_repeats_nothing(
    cluster: Cluster,
) -> None:
    """kill -9 of the instance that serves the match's socket, while commands are in
    flight: the clients carry on through the other instance (commands retried with their
    keys, the socket reopened from last + 1) and no event is lost, doubled or reordered."""
    books = Books()
    async with _client(cluster, "127.0.0.12") as http:
        play = await MatchPlay(http, books, guests=2, rules={"preset": "bga"}).open()
        follower = Follower(_ws(cluster), play.match_id).start()
        await wait_for("the socket is open", lambda: _true(follower.served_by))
        playing = asyncio.create_task(play.play())
        await wait_for("a few commands", lambda: _true(play.commands >= 10))
        victim = next(m for m in cluster.match if m.name == follower.served_by[0])
        survivor = next(m for m in cluster.match if m is not victim)
        before = play.commands
        os.kill(victim.pid, signal.SIGKILL)
        await asyncio.wait_for(playing, TIMEOUT)
        await asyncio.wait_for(follower.over.wait(), TIMEOUT)
        await follower.stop()
        report = await check_matches(http, books, [follower])
    assert not victim.alive()
    assert report["problems"] == []
    assert play.commands > before
    assert follower.reconnects >= 1 and follower.served_by[-1] == survivor.name
    print("after kill -9:", report)


@pytest.mark.parametrize("fault", [signal.SIGKILL, signal.SIGSTOP], ids=["kill", "freeze"])
async def test_one_ranking_instance_consumes_and_the_other_takes_over(
    cluster: Cluster, engine: AsyncEngine, fault: signal.Signals
) -> None:
    """One ranking instance holds the consumer's lock; once it is killed (or frozen) the
    other takes over, and every finished ranked match is rated exactly once."""
    books = Books()
    async with _client(cluster, f"127.0.0.{13 + (fault == signal.SIGSTOP)}") as http:
        leading = await wait_for("a ranking instance leads", lambda: leader_name(engine))
        first = await MatchPlay(http, books, ranked=True, rules={"preset": "bga"}).open()
        await asyncio.wait_for(first.play(), TIMEOUT)
        await wait_for("the first match is rated", lambda: _rated(engine, first.match_id))
        old = next(r for r in cluster.ranking if r.name == leading)
        os.kill(old.pid, fault)
        second = await MatchPlay(http, books, ranked=True, rules={"preset": "bga"}).open()
        await asyncio.wait_for(second.play(), TIMEOUT)
        await wait_for("the second match is rated", lambda: _rated(engine, second.match_id))
        assert await leader_name(engine) not in (None, leading)
        if fault == signal.SIGSTOP:
            # Running again, the old leader rates nothing twice and stands by.
            os.kill(old.pid, signal.SIGCONT)
        report = await check_matches(http, books)
    assert report["problems"] == []
    assert await _rated_once(engine, [first.match_id, second.match_id])


async def _true(value: Any) -> Any:
    return value


async def _rated(engine: AsyncEngine, match_id: str) -> bool:
    async with engine.connect() as conn:
        n = await conn.scalar(
            text("SELECT count(*) FROM rating_changes WHERE match_stream = :s"),
            {"s": f"match-{match_id}"},
        )
    return bool(n)


async def _rated_once(engine: AsyncEngine, match_ids: list[str]) -> bool:
    """Each match has one rating change per player per model, and each rating counts
    exactly the changes it was made of."""
    async with engine.connect() as conn:
        per_match = (
            await conn.execute(
                text(
                    "SELECT match_stream, model, count(*) FROM rating_changes"
                    " GROUP BY match_stream, model"
                )
            )
        ).all()
        mismatched = await conn.scalar(
            text(
                "SELECT count(*) FROM ratings r WHERE r.matches <> (SELECT count(*)"
                " FROM rating_changes c WHERE c.model = r.model AND c.player_id = r.player_id)"
            )
        )
    streams = {f"match-{m}" for m in match_ids}
    ours = [row for row in per_match if row[0] in streams]
    assert {row[0] for row in ours} == streams
    assert all(row[2] == 2 for row in ours), ours
    assert mismatched == 0
    return True


class _Spread:
    """`get` and `post` of several clients by turns (each from its own address)."""

    def __init__(self, clients: list[httpx.AsyncClient]) -> None:
        self.clients = clients
        self.turn = 0

    def _next(self) -> httpx.AsyncClient:
        self.turn += 1
        return self.clients[self.turn % len(self.clients)]

    async def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self._next().get(path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return await self._next().post(path, **kwargs)

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()


def _answer(http: httpx.AsyncClient, path: str) -> Callable[[], Awaitable[Any]]:
    """A read of `path` that counts as not yet answered while the balancer still sends it
    to a killed instance (no answer, or a 5xx)."""

    async def read() -> Any:
        try:
            r = await http.get(path)
        except httpx.TransportError:
            return None
        return r.json() if r.status_code == 200 else None

    return read


def _paired_other_than(match_id: str) -> Callable[[dict[str, Any]], bool]:
    """A `paired` frame for another match than `match_id`: the next pairing."""
    return lambda f: f["type"] == "paired" and f["match_id"] != match_id


def _paired_by(cluster: Cluster, arena_id: str) -> list[str]:
    """The match instances whose log says they paired tables of `arena_id`, once per pass
    (instance by instance: not in time order)."""
    names = []
    for instance in cluster.match:
        assert instance.log is not None
        for line in instance.log.read_text(errors="replace").splitlines():
            if '"arena_paired"' in line and arena_id in line:
                names.append(instance.name)
    return names


async def test_the_instance_pairing_an_arena_killed_the_other_pairs_it(
    cluster: Cluster,
) -> None:
    """kill -9 of the instance that paired an arena's tables: its matches are played out
    through the other, which scores them and pairs everyone again; nobody is seated twice
    and the arena's stream decides again as stored."""
    async with _client(cluster, "127.0.0.17") as http:
        host = await _guest(http, "host")
        auth = {"Authorization": f"Bearer {host['token']}"}
        created = await http.post(
            "/api/tournaments", json={"name": "Kill", "starts_in": 0}, headers=auth
        )
        assert created.status_code == 201, created.text
        arena_id = created.json()["tournament_id"]
        guests = [await _guest(http, f"k{i}") for i in range(4)]
        ports = {m.name: m.port for m in cluster.match}

        def url(name: str) -> str:
            return f"ws://127.0.0.1:{ports[name]}/ws/tournament/{arena_id}"

        guests_of = {g["id"]: g for g in guests}
        names = [m.name for m in cluster.match]
        async with contextlib.AsyncExitStack() as stack:
            sockets = [
                await stack.enter_async_context(_socket(url(names[i % 2]), g["token"]))
                for i, g in enumerate(guests)
            ]
            for g in guests:
                r = await http.post(
                    f"/api/tournaments/{arena_id}/join",
                    json={},
                    headers={"Authorization": f"Bearer {g['token']}"},
                )
                assert r.status_code == 200, r.text
            first = [await s.until(lambda f: f["type"] == "paired", TIMEOUT) for s in sockets]
            pairers = await wait_for(
                "an arena_paired line", lambda: _true(_paired_by(cluster, arena_id))
            )
            pairer = pairers[0]  # one that paired (maybe both did)
            victim = next(m for m in cluster.match if m.name == pairer)
            survivor = next(m for m in cluster.match if m is not victim)
            before = _paired_by(cluster, arena_id).count(survivor.name)
            os.kill(victim.pid, signal.SIGKILL)
            # The victim's sockets are gone: their guests open the arena on the survivor.
            live = [
                s
                if names[i % 2] == survivor.name
                else await stack.enter_async_context(
                    _socket(url(survivor.name), guests[i]["token"])
                )
                for i, s in enumerate(sockets)
            ]
            # Played at machine speed, from several addresses: the per-address budget
            # (1,200 requests a minute) is a person's, not a test's.
            spread = _Spread([_client(cluster, f"127.0.0.{n}") for n in range(40, 50)])
            for match_id in {f["match_id"] for f in first}:
                match = await wait_for("the match read", _answer(http, f"/api/matches/{match_id}"))
                seated = [guests_of[s["player_id"]] for s in match["seats"]]
                await play_to_end(spread, match_id, seated)  # type: ignore[arg-type]
            await spread.close()
            again = [
                await s.until(_paired_other_than(f0["match_id"]), TIMEOUT)
                for s, f0 in zip(live, first, strict=True)
            ]
        assert not victim.alive()

        async def survivor_paired() -> bool:
            # The log line follows the commit the sockets heard of: wait for it.
            return _paired_by(cluster, arena_id).count(survivor.name) > before

        await wait_for("the survivor's arena_paired line", survivor_paired)
        view = (await http.get(f"/api/tournaments/{arena_id}")).json()
    assert len(view["matches"]) == 2 and len(view["running"]) == 2
    assert {f["match_id"] for f in again} == {r["match_id"] for r in view["running"]}
    assert sorted(line["score"] for line in view["standings"]) == [0, 0, 2, 2]
