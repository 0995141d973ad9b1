"""Live updates over real WebSockets, across two service instances on one database.

Each instance is the real app under uvicorn on a loopback port (in a thread of this test
process), so events written through one instance reach a socket on the other only through
PostgreSQL LISTEN/NOTIFY (or the socket's catch-up poll), never through shared memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import uvicorn
import websockets
from litestar import Litestar

from services.match.app import create_app
from services.shared.serving import uvicorn_options
from services.shared.settings import Settings
from tests.waiting import wait_until, wait_until_sync

pytestmark = pytest.mark.anyio


class Instance:
    """One match-service process stand-in: the app under uvicorn on 127.0.0.1:<port>.

    `app` serves another app instead (the ranking tests serve the ranking service)."""

    def __init__(self, settings: Settings, app: Litestar | None = None, **server: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        app = create_app(settings) if app is None else app
        self.app = app  # the app served: a test may reach its parts (a clock, say)
        # Served as every service process is (--ws-max-size, the header timeout, ...);
        # `server`: other uvicorn.Config options.
        options = {**uvicorn_options(), **server}
        config = uvicorn.Config(app, log_level="warning", lifespan="on", **options)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> Instance:
        self.thread.start()

        def started() -> bool:
            if not self.thread.is_alive():
                raise RuntimeError("the service instance stopped before it started")
            return bool(self.server.started)

        wait_until_sync(started, 30, what="the service instance to start")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def ws(self, match_id: str, since: int = 0) -> str:
        return f"ws://127.0.0.1:{self.port}/ws/matches/{match_id}?from={since}"


def _settings(tmp_path: Path, url: str, **overrides: Any) -> Settings:
    options: dict[str, Any] = {"cpu_delay": 0, "scheduler": False, **overrides}
    return Settings(data_dir=tmp_path, database_url=url, **options)


@pytest.fixture
def two_instances(database_url: str, tmp_path: Path) -> Iterator[tuple[Instance, Instance]]:
    """Instances A and B of the match service on the test's database, no scheduler."""
    with (
        Instance(_settings(tmp_path, database_url)) as a,
        Instance(_settings(tmp_path, database_url)) as b,
    ):
        yield a, b


class Table:
    """Two guests with a started bga match, driven over HTTP on one instance."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.players: list[dict[str, str]] = []
        self.match_id = ""

    async def open(self, **party: Any) -> Table:
        """Create both guests, their party (`party`: more settings) and start the match."""
        for name in ("alice", "bob"):
            r = await self.http.post("/api/players", json={"name": name})
            assert r.status_code == 201, r.text
            self.players.append(
                {"Authorization": f"Bearer {r.json()['token']}", "token": r.json()["token"]}
            )
        host, guest = self.players
        r = await self.http.post(
            "/api/parties",
            json={"seats": 2, "rules": {"preset": "bga"}, "client_seed": "a", **party},
            headers=_auth(host),
        )
        party = r.json()["id"]
        r = await self.http.post(
            f"/api/parties/{party}/join", json={"client_seed": "b"}, headers=_auth(guest)
        )
        assert r.status_code == 200, r.text
        r = await self.http.post(f"/api/parties/{party}/start", headers=_auth(host))
        assert r.status_code == 201, r.text
        self.match_id = r.json()["match_id"]
        return self

    async def step(self) -> None:
        """The seat to act rolls, or plays its first legal move."""
        state = (await self.http.get(f"/api/matches/{self.match_id}")).json()
        who = _auth(self.players[state["turn"]])
        if state["phase"] == "roll":
            r = await self.http.post(f"/api/matches/{self.match_id}/roll", headers=who)
        else:
            moves = (await self.http.get(f"/api/matches/{self.match_id}/moves")).json()
            r = await self.http.post(
                f"/api/matches/{self.match_id}/move",
                headers=who,
                json={"piece": moves["moves"][0]["piece"]},
            )
        assert r.status_code == 200, r.text

    async def version(self) -> int:
        return int((await self.http.get(f"/api/matches/{self.match_id}")).json()["version"])

    async def stream(self) -> list[dict[str, Any]]:
        r = await self.http.get(f"/api/matches/{self.match_id}/events")
        events: list[dict[str, Any]] = r.json()["events"]
        return events


def _auth(player: dict[str, str]) -> dict[str, str]:
    return {"Authorization": player["Authorization"]}


@contextlib.asynccontextmanager
async def _client(base: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        yield client


def unbatched(raw: str | bytes) -> list[dict[str, Any]]:
    """The frames of one socket message: a batch frame's event and state frames, in order,
    or the message itself."""
    frame: dict[str, Any] = msgspec.json.decode(raw)
    if frame["type"] == "batch":
        frames: list[dict[str, Any]] = frame["frames"]
        return frames
    return [frame]


async def _receive_until(ws: Any, version: int, seconds: float = 15) -> list[dict[str, Any]]:
    """Event frames until one with `version` arrives."""
    frames: list[dict[str, Any]] = []
    deadline = time.monotonic() + seconds
    while not frames or frames[-1]["version"] < version:
        left = deadline - time.monotonic()
        assert left > 0, f"no event {version} within {seconds}s; got {len(frames)} frames"
        for frame in unbatched(await asyncio.wait_for(ws.recv(), left)):
            if frame["type"] == "event":
                frames.append(frame)
    return frames


async def test_events_written_on_one_instance_reach_a_socket_on_the_other(
    two_instances: tuple[Instance, Instance],
) -> None:
    """A socket on A gets the catch-up then every event appended through B, once, in order."""
    a, b = two_instances
    async with _client(b.http) as http:
        table = await Table(http).open()
        async with websockets.connect(a.ws(table.match_id)) as ws:
            start = await table.version()
            frames = await _receive_until(ws, start - 1)
            for _ in range(40):
                await table.step()
            frames += await _receive_until(ws, await table.version() - 1)
        stored = await table.stream()
    assert [f["version"] for f in frames] == list(range(len(stored)))
    assert [f["data"] for f in frames] == [e["data"] for e in stored]


async def test_a_reconnecting_client_that_names_its_version_loses_nothing(
    two_instances: tuple[Instance, Instance],
) -> None:
    """Disconnect, let play go on, reconnect `?from=` the next version: no gap, no repeat."""
    a, b = two_instances
    async with _client(b.http) as http:
        table = await Table(http).open()
        async with websockets.connect(a.ws(table.match_id)) as ws:
            for _ in range(10):
                await table.step()
            first = await _receive_until(ws, await table.version() - 1)
        for _ in range(15):  # played while the client is away
            await table.step()
        async with websockets.connect(b.ws(table.match_id, first[-1]["version"] + 1)) as ws:
            second = await _receive_until(ws, await table.version() - 1)
        stored = await table.stream()
    assert [f["version"] for f in first + second] == list(range(len(stored)))


async def test_an_unknown_match_gets_an_error_frame_and_a_close(
    two_instances: tuple[Instance, Instance],
) -> None:
    """A socket for a match that does not exist is told so and closed with 4404."""
    a, _ = two_instances
    async with websockets.connect(a.ws("00000000-0000-0000-0000-000000000000")) as ws:
        frame = msgspec.json.decode(await asyncio.wait_for(ws.recv(), 10))
        assert frame["error"] == "not_found"
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404


async def test_a_socket_declines_compression_a_browser_offers(
    two_instances: tuple[Instance, Instance],
) -> None:
    """A client offering permessage-deflate (every browser does) gets plain frames: the
    frames a match's sockets share are sent as made, not compressed once per socket."""
    a, _ = two_instances
    async with websockets.connect(
        a.ws("00000000-0000-0000-0000-000000000000"), compression="deflate"
    ) as ws:
        assert ws.request is not None and ws.response is not None
        assert "permessage-deflate" in (ws.request.headers.get("Sec-WebSocket-Extensions") or "")
        assert ws.response.headers.get("Sec-WebSocket-Extensions") is None
        frame = msgspec.json.decode(await asyncio.wait_for(ws.recv(), 10))
    assert frame["error"] == "not_found"


async def test_bad_query_and_bad_messages_get_error_frames(
    two_instances: tuple[Instance, Instance],
) -> None:
    """`?from=abc` is an error frame and close 4422 (not a bare refused upgrade); a
    message that is not JSON, an unknown type and an unknown token are each answered with
    an error frame while the socket keeps streaming."""
    a, _ = two_instances
    async with _client(a.http) as http:
        table = await Table(http).open()
    bad = a.ws(table.match_id).replace("from=0", "from=abc")
    async with websockets.connect(bad) as ws:
        frame = msgspec.json.decode(await asyncio.wait_for(ws.recv(), 10))
        assert (frame["error"], frame["field"]) == ("invalid", "from")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(ws.recv(), 10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4422

    async with websockets.connect(a.ws(table.match_id)) as ws:
        await _receive_until(ws, 0)
        replies = []
        for message in ("{not json", '{"type": "dance"}', '{"type": "hello", "token": "nope"}'):
            await ws.send(message)
            while True:
                frame = msgspec.json.decode(await asyncio.wait_for(ws.recv(), 10))
                if frame["type"] not in ("batch", "presence"):  # not who is connected
                    replies.append(frame)
                    break
        assert [(f["type"], f["error"]) for f in replies] == [
            ("error", "malformed_json"),
            ("error", "invalid"),
            ("error", "unauthorized"),
        ]
        await ws.send('{"type": "ping"}')  # still open and answering
        while (frame := msgspec.json.decode(await asyncio.wait_for(ws.recv(), 10)))["type"] in (
            "batch",
            "presence",
        ):
            pass
        assert frame == {"type": "pong"}


async def test_a_player_gone_past_the_grace_period_gets_a_stand_in_until_they_return(
    database_url: str, tmp_path: Path
) -> None:
    """Closing the last socket starts the grace period; after it a CPU stands in
    (reason `disconnected`); reconnecting with the same token reclaims the seat."""
    settings = _settings(
        tmp_path,
        database_url,
        scheduler=True,
        scheduler_poll=0.02,
        reconnect_grace=0.3,
        cpu_delay=0.05,
    )
    with Instance(settings) as server:
        async with _client(server.http) as http:
            table = await Table(http).open()
            hello = {"type": "hello", "token": table.players[0]["token"]}
            async with websockets.connect(server.ws(table.match_id)) as ws:
                await ws.send(msgspec.json.encode(hello).decode())
                frame: dict[str, Any] = {}
                while frame.get("type") != "hello":  # after the catch-up and its state frame
                    frame = msgspec.json.decode(await asyncio.wait_for(ws.recv(), 10))
                assert frame == {"type": "hello", "seat": 0}
            # The socket is closed: within the grace period nothing happens yet ...
            state = (await http.get(f"/api/matches/{table.match_id}")).json()
            assert state["seats"][0]["stood_in"] is None

            async def stood_in() -> str | None:
                match = (await http.get(f"/api/matches/{table.match_id}")).json()
                return match["seats"][0]["stood_in"]  # type: ignore[no-any-return]

            reason = await wait_until(stood_in, 15, what="a stand-in after the grace period")
            assert reason == "disconnected"
            async with websockets.connect(server.ws(table.match_id)) as ws:
                await ws.send(msgspec.json.encode(hello).decode())

                async def reclaimed() -> bool:
                    return await stood_in() is None

                await wait_until(reclaimed, 15, what="the seat reclaimed by the hello")
            types = [e["type"] for e in await table.stream()]
    assert types.index("SeatStoodIn") < types.index("SeatReclaimed")
