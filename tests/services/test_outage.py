"""A short PostgreSQL outage, on a private embedded server the tests stop and start.

The server here is the test module's own (never the shared test server other tests use):
it is stopped with `pg_ctl stop`, left down for a few seconds (the fault itself), and
started again on the same data directory and socket. The match and ranking services run
on it under uvicorn (`Instance`), so the sockets, pools and LISTEN connection are real.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import websockets

from services.ranking.app import create_app as create_ranking_app
from services.shared.database import EmbeddedPostgres, libpq_url, migrate
from services.shared.settings import Settings
from tests.services.match.test_live import Instance, Table
from tests.waiting import wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

OUTAGE_SECONDS = 5.0
OPERATOR = "operator-token-for-the-outage-tests"
UNAVAILABLE = {
    "error": "database_unavailable",
    "detail": "the database is unreachable; try again shortly",
}
UNAVAILABLE_FRAME = {"type": "error", "status": 503, **UNAVAILABLE}


class PrivatePostgres:
    """An embedded PostgreSQL of this module's own, that the tests may stop and start."""

    def __init__(self, pg: EmbeddedPostgres) -> None:
        self.pg = pg
        self.url = self.pg.url
        migrate(self.url)

    def stop(self, mode: str = "fast") -> None:
        self.pg.halt(mode)

    def start(self) -> None:
        self.pg.resume()

    @contextlib.asynccontextmanager
    async def down(
        self, seconds: float = OUTAGE_SECONDS, mode: str = "fast"
    ) -> AsyncIterator[None]:
        """The server stopped for the block (at least `seconds`), then started again;
        `stopped_at` and `restarted_at` say when (monotonic)."""
        await asyncio.to_thread(self.stop, mode)
        self.stopped_at = time.monotonic()
        try:
            yield
        finally:
            await asyncio.sleep(max(0.0, self.stopped_at + seconds - time.monotonic()))
            await asyncio.to_thread(self.start)
            self.restarted_at = time.monotonic()

    def scalar(self, sql: str) -> Any:
        with psycopg.connect(libpq_url(self.url), autocommit=True) as conn:
            row = conn.execute(sql).fetchone()
            return None if row is None else row[0]


@pytest.fixture(scope="module")
def private_pg() -> Iterator[PrivatePostgres]:
    with EmbeddedPostgres.scratch("ludo-outage-") as pg:
        yield PrivatePostgres(pg)


@pytest.fixture
def instances(private_pg: PrivatePostgres, tmp_path: Path) -> Iterator[tuple[Instance, Instance]]:
    """The match service and the ranking service (consumer off) on the private server,
    answering at once while it is down (no connect patience: what a longer outage
    than the patience looks like)."""
    options: dict[str, Any] = {"cpu_delay": 0, "scheduler": False, "operator_token": OPERATOR}
    settings = Settings(
        data_dir=tmp_path, database_url=private_pg.url, db_connect_patience=0, **options
    )
    with (
        Instance(settings) as match,
        Instance(settings, create_ranking_app(settings, consume=False)) as ranking,
    ):
        yield match, ranking


@contextlib.asynccontextmanager
async def _client(instance: Instance) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=instance.http, timeout=30) as http:
        yield http


async def _retry(call: Any, seconds: float = 30.0) -> httpx.Response:
    """`call()` until it answers below 500 (the first statements after a restart may
    meet connections the server dropped: 503, and the client retries)."""

    async def answered() -> httpx.Response | None:
        r: httpx.Response = await call()
        return r if r.status_code < 500 else None

    return await wait_until(answered, seconds, what="an answer below 500", pause=0.2)


async def _step(http: httpx.AsyncClient, table: Table, key: str) -> None:
    """The seat to act rolls or plays its first legal move (retried with one key)."""
    state = (await _retry(lambda: http.get(f"/api/matches/{table.match_id}"))).json()
    who = {"Authorization": table.players[state["turn"]]["Authorization"], "Idempotency-Key": key}
    url = f"/api/matches/{table.match_id}"
    if state["phase"] == "roll":
        r = await _retry(lambda: http.post(f"{url}/roll", headers=who))
    else:
        moves = (await _retry(lambda: http.get(f"{url}/moves"))).json()
        body = {"piece": moves["moves"][0]["piece"]}
        r = await _retry(lambda: http.post(f"{url}/move", headers=who, json=body))
    assert r.status_code == 200, r.text


class Reader:
    """The frames of one socket, read in the background until it closes (a batch frame's
    event and state frames one by one)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self.code: int | None = None
        self.closed_at: float | None = None
        self._changed = asyncio.Event()
        self._task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        try:
            async for raw in self.ws:
                frame = json.loads(raw)
                self.frames += frame["frames"] if frame["type"] == "batch" else [frame]
                self._changed.set()
        except websockets.ConnectionClosed:
            pass
        self.code = self.ws.close_code
        self.closed_at = time.monotonic()
        self._changed.set()

    async def until(self, condition: Any, seconds: float = 30.0) -> bool:
        """Wait until `condition(frames)` holds (True) or the socket closed (False)."""
        async with asyncio.timeout(seconds):
            while True:
                if condition(self.frames):
                    return True
                if self.closed_at is not None:
                    return False
                self._changed.clear()
                await self._changed.wait()

    async def close(self) -> None:
        await self.ws.close()
        with contextlib.suppress(Exception):
            await self._task


def _versions(frames: list[dict[str, Any]]) -> list[int]:
    return [f["version"] for f in frames if f["type"] == "event"]


def _feed(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A match socket's frames without its side frames (stamps, who is connected)."""
    return [f for f in frames if f["type"] not in ("presence", "stamp")]


async def _ping(reader: Reader) -> None:
    """A ping answered: the socket is alive (not closed) at this point."""
    count = len(reader.frames)
    await reader.ws.send('{"type": "ping"}')
    assert await reader.until(lambda fs: any(f["type"] == "pong" for f in fs[count:]), 10)


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_live_sockets_resume_or_close_after_an_outage(
    private_pg: PrivatePostgres, instances: tuple[Instance, Instance], mode: str
) -> None:
    """After a 5 s PostgreSQL outage every match, party and lobby socket either receives
    the new events (each once, in order) or was closed with 1011 after a 503 error frame,
    never left open and silent; a match or arena socket opened during the outage gets the
    same."""
    match, _ = instances
    async with _client(match) as http:
        table = await Table(http).open()
        host = table.players[0]
        r = await http.post(
            "/api/parties",
            json={"seats": 2, "rules": {"preset": "bga"}, "client_seed": "c"},
            headers={"Authorization": host["Authorization"]},
        )
        assert r.status_code == 201, r.text
        party_id = r.json()["id"]
        before = await table.version()

        port = match.port
        sockets = {
            "match": Reader(await websockets.connect(match.ws(table.match_id))),
            "party": Reader(
                await websockets.connect(f"ws://127.0.0.1:{port}/ws/parties/{party_id}")
            ),
            "lobby": Reader(await websockets.connect(f"ws://127.0.0.1:{port}/ws/lobby")),
        }
        # The catch-up ends with a state frame (a presence frame may come on either side).
        assert await sockets["match"].until(
            lambda fs: _feed(fs) and _feed(fs)[-1]["type"] == "state"
        )
        assert _versions(sockets["match"].frames) == list(range(before))
        assert await sockets["party"].until(lambda fs: any(f["type"] == "party" for f in fs))
        assert await sockets["lobby"].until(lambda fs: any(f["type"] == "parties" for f in fs))
        party_v = next(f for f in sockets["party"].frames if f["type"] == "party")["party"]
        party_v = party_v["version"]
        for reader in sockets.values():
            await _ping(reader)

        async with private_pg.down(mode=mode):
            # Idle sockets: nothing is sent while the server is down. A socket opened now
            # cannot load its match: it must close with a code the page reconnects on.
            late = Reader(await websockets.connect(match.ws(table.match_id)))
            assert not await late.until(lambda fs: False)
            assert late.frames == [UNAVAILABLE_FRAME]
            assert late.code == 1011
            # An arena's socket opens the same way (an arena no process has read yet).
            arena = Reader(
                await websockets.connect(f"ws://127.0.0.1:{port}/ws/tournament/{uuid.uuid4()}")
            )
            assert not await arena.until(lambda fs: False)
            assert arena.frames == [UNAVAILABLE_FRAME]
            assert arena.code == 1011

        # New events on every followed stream, through HTTP, once the server is back.
        for n in range(3):
            await _step(http, table, f"after-outage-{n}")
        guest = table.players[1]
        r = await _retry(
            lambda: http.post(
                f"/api/parties/{party_id}/join",
                json={"client_seed": "d"},
                headers={"Authorization": guest["Authorization"]},
            )
        )
        assert r.status_code == 200, r.text
        after = await table.version()
        assert after >= before + 3

        results: dict[str, str] = {}
        got = await sockets["match"].until(lambda fs: after - 1 in _versions(fs))
        seen = _versions(sockets["match"].frames)
        assert seen == sorted(set(seen)), "an event was sent twice or out of order"
        assert seen == list(range(len(seen))), "an event was skipped"
        results["match"] = "resumed" if got else f"closed {sockets['match'].code}"

        got = await sockets["party"].until(
            lambda fs: any(f["type"] == "party" and f["party"]["version"] > party_v for f in fs)
        )
        results["party"] = "resumed" if got else f"closed {sockets['party'].code}"

        got = await sockets["lobby"].until(
            lambda fs: any(
                f["type"] == "parties"
                and any(p["id"] == party_id and p["version"] > party_v for p in f["parties"])
                for f in fs
            )
        )
        results["lobby"] = "resumed" if got else f"closed {sockets['lobby'].code}"

        for name, reader in sockets.items():
            if results[name] != "resumed":
                assert reader.code == 1011, (name, reader.code)
                assert reader.frames[-1] == UNAVAILABLE_FRAME, name  # says why, then closes
                took = reader.closed_at - private_pg.stopped_at if reader.closed_at else None
                print(f"{name}: closed {reader.code} {took:.1f} s after the server stopped")
            else:
                await _ping(reader)
                print(f"{name}: resumed")
            await reader.close()


async def test_every_route_answers_503_while_the_database_is_down(
    private_pg: PrivatePostgres, instances: tuple[Instance, Instance]
) -> None:
    """With PostgreSQL stopped, GET and POST routes of both services and socket commands
    answer 503 database_unavailable with Retry-After, and nothing is appended."""
    match, ranking = instances
    operator = {"Authorization": f"Bearer {OPERATOR}"}
    async with _client(match) as http, _client(ranking) as rank:
        table = await Table(http).open()
        alice = {"Authorization": table.players[0]["Authorization"]}
        me = (await http.get("/api/players/me", headers=alice)).json()
        url = f"/api/matches/{table.match_id}"
        ws = Reader(await websockets.connect(match.ws(table.match_id)))
        await ws.ws.send(json.dumps({"type": "hello", "token": table.players[0]["token"]}))
        assert await ws.until(lambda fs: any(f["type"] == "hello" for f in fs))
        events_before = private_pg.scalar("SELECT count(*) FROM events")

        async with private_pg.down():
            calls: list[tuple[str, str, str, dict[str, Any]]] = [
                ("match", "GET", url, {}),
                ("match", "GET", f"{url}/events", {}),
                ("match", "GET", "/api/parties", {}),
                ("match", "POST", f"{url}/roll", {"headers": alice}),
                ("match", "POST", "/api/players", {"json": {"name": "carol"}}),
                ("match", "POST", "/api/parties", {"json": {"seats": 2}, "headers": alice}),
                ("ranking", "GET", "/api/ratings/leaderboard", {}),
                ("ranking", "GET", f"/api/ratings/players/{me['id']}", {}),
                ("ranking", "GET", "/api/ranking/leaderboard", {"headers": operator}),
                ("ranking", "POST", "/api/ranking/recompute", {"headers": operator}),
                ("ranking", "GET", f"/api/ratings/analysis/{table.match_id}", {}),
                ("ranking", "GET", f"/api/ratings/players/{me['id']}/analysis", {}),
                ("ranking", "GET", "/api/ranking/dice", {"headers": operator}),
                ("ranking", "GET", "/api/ranking/luck-gaps", {"headers": operator}),
            ]
            for service, method, path, options in calls:
                client = http if service == "match" else rank
                r = await client.request(method, path, **options)
                assert r.status_code == 503, (method, path, r.status_code, r.text)
                assert r.headers["retry-after"] == "1", path
                assert r.headers["content-type"].startswith("application/json"), path
                assert r.json() == UNAVAILABLE, path
            # A command on a socket: a 503 error frame. The socket's own feed fails too
            # and closes it (503 frame without id, then 1011), possibly before the command.
            with contextlib.suppress(websockets.ConnectionClosed):
                await ws.ws.send(json.dumps({"type": "roll", "id": "roll-in-the-outage"}))
            reply = {"id": "roll-in-the-outage", **UNAVAILABLE_FRAME}
            answered = await ws.until(lambda fs: reply in fs)
            assert answered or (ws.code == 1011 and ws.frames[-1] == UNAVAILABLE_FRAME)
            assert all(f.get("status") in (None, 503) for f in ws.frames)

        await ws.close()
        assert private_pg.scalar("SELECT count(*) FROM events") == events_before
        assert (await _retry(lambda: http.get(url))).status_code == 200


@pytest.fixture
def patient_match(private_pg: PrivatePostgres, tmp_path: Path) -> Iterator[Instance]:
    """The match service on the private server, its new connections tried again for a
    minute (`LUDO_DB_CONNECT_PATIENCE`: longer than any restart here)."""
    settings = Settings(
        data_dir=tmp_path,
        database_url=private_pg.url,
        cpu_delay=0,
        scheduler=False,
        db_connect_patience=60,
    )
    with Instance(settings) as match:
        yield match


@pytest.mark.parametrize("mode", ["fast", "immediate"])
async def test_a_command_sent_while_postgresql_restarts_is_answered_once_it_is_back(
    private_pg: PrivatePostgres, patient_match: Instance, mode: str
) -> None:
    """A command sent while PostgreSQL is down, every pooled connection ended with it,
    waits for the server instead of answering 503, and is acknowledged once the server
    is back; it was applied once."""
    async with _client(patient_match) as http:
        table = await Table(http).open()
        url = f"/api/matches/{table.match_id}"
        state = (await http.get(url)).json()
        assert state["phase"] == "roll"
        who = {**table.players[state["turn"]], "Idempotency-Key": f"roll-in-a-{mode}-restart"}
        who.pop("token")
        async with private_pg.down(seconds=2, mode=mode):
            roll = asyncio.create_task(http.post(f"{url}/roll", headers=who))
        r = await roll
        assert r.status_code == 200, r.text
        assert r.json()["duplicate"] is False
        events = (await http.get(f"{url}/events")).json()["events"]
        assert [e["type"] for e in events].count("DieRolled") == 1
