"""Limits against abusive and slow clients (services/shared/limits.py; docs/api.md: Limits).

The request budgets are checked in-process (`AsyncTestClient`, whose client address is
"testclient"); the slow clients and the WebSocket limits against a real uvicorn
(`Instance` of tests/services/match/test_live.py, served with `uvicorn_options()` as every
service process is).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NamedTuple, cast

import httpx
import msgspec
import pytest
import sqlalchemy as sa
import websockets
from litestar import Litestar
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.app import create_app
from services.ranking.app import create_app as create_ranking_app
from services.shared.limits import GuardedH11Protocol, GuardedHttpToolsProtocol
from services.shared.rate_store import RateStore
from services.shared.serving import UVICORN_ARGS, WS_MAX_SIZE
from services.shared.settings import Settings
from tests import paths
from tests.services.match.test_live import Instance, Table, _settings

pytestmark = pytest.mark.anyio

ROOT = paths.ROOT


def _app_settings(tmp_path: Path, **overrides: Any) -> Settings:
    options: dict[str, Any] = {"cpu_delay": 0, "scheduler": False, "pairing": False, **overrides}
    return Settings(data_dir=tmp_path, **options)


@contextlib.asynccontextmanager
async def _client(
    engine: AsyncEngine, tmp_path: Path, ranking: bool = False, **settings: Any
) -> AsyncIterator[AsyncTestClient[Any]]:
    make = create_ranking_app if ranking else create_app
    app = make(_app_settings(tmp_path, **settings), engine=engine)
    async with AsyncTestClient(app) as client:
        yield client


@contextlib.contextmanager
def _token_queries(engine: AsyncEngine) -> Iterator[list[str]]:
    """The statements that look a token up, while in the block."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if "token_hash" in statement:
            seen.append(statement)

    sa.event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        sa.event.remove(engine.sync_engine, "before_cursor_execute", record)


def _is_429(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    assert response.json()["error"] == "too_many_requests"
    assert response.json()["detail"]
    assert int(response.headers["retry-after"]) >= 1
    assert response.headers["cache-control"] == "no-store"


# ------------------------------------------------------------------------ request budgets


async def test_requests_over_the_per_client_budget_get_429(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """Past LUDO_RATE_LIMIT requests a minute, a client gets 429 with Retry-After."""
    async with _client(engine, tmp_path, rate_limit=5) as client:
        for _ in range(5):
            assert (await client.get("/api/parties")).status_code == 200
        _is_429(await client.get("/api/parties"))


async def test_the_ranking_service_has_the_request_budget_too(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """The ranking service answers 429 past its per-client budget as well."""
    async with _client(engine, tmp_path, ranking=True, rate_limit=3) as client:
        for _ in range(3):
            assert (await client.get("/api/ratings/leaderboard")).status_code < 429
        _is_429(await client.get("/api/ratings/leaderboard"))


async def test_a_refused_request_touches_no_database(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests over the budget run no handler's statement: the first refusal costs the
    shared budget's check (which writes nothing), the next ones not even that."""
    statements: list[str] = []
    checks: list[str] = []
    take_many = RateStore._take_many

    async def counted(store: RateStore, budget: str, *args: Any) -> Any:
        checks.append(budget)
        return await take_many(store, budget, *args)

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    async with _client(engine, tmp_path, rate_limit=1) as client:
        await client.get("/api/parties")
        before = await _buckets(engine)
        monkeypatch.setattr(RateStore, "_take_many", counted)
        sa.event.listen(engine.sync_engine, "before_cursor_execute", record)
        try:
            for _ in range(50):
                _is_429(await client.get("/api/parties"))
        finally:
            sa.event.remove(engine.sync_engine, "before_cursor_execute", record)
    assert statements == [] and checks == ["requests"], (statements, checks)
    assert await _buckets(engine) == before


async def _buckets(engine: AsyncEngine) -> list[Any]:
    async with engine.connect() as conn:
        rows = await conn.execute(sa.text("SELECT * FROM rate_buckets ORDER BY budget, client"))
        return list(rows.all())


async def test_guest_creation_is_limited_per_address(engine: AsyncEngine, tmp_path: Path) -> None:
    """Past LUDO_GUEST_LIMIT (default 20 an hour) new guests, POST /api/players gets 429."""
    async with _client(engine, tmp_path) as client:
        made = [await client.post("/api/players", json={"name": f"g{n}"}) for n in range(20)]
        assert [r.status_code for r in made] == [201] * 20
        _is_429(await client.post("/api/players", json={"name": "one more"}))
        # Other routes are still served.
        assert (await client.get("/api/parties")).status_code == 200
        async with engine.connect() as conn:
            assert await conn.scalar(sa.text("SELECT count(*) FROM players")) == 20


async def test_unknown_tokens_stop_costing_queries(engine: AsyncEngine, tmp_path: Path) -> None:
    """2,000 bad tokens in a row cost at most LUDO_AUTH_FAIL_LIMIT lookups (plus the
    budget's refill, one every 3 s, while they are sent); the rest get 429."""
    async with _client(engine, tmp_path) as client:
        with _token_queries(engine) as queries:
            statuses = []
            began = time.monotonic()
            for n in range(2000):
                r = await client.get("/api/players/me", headers={"Authorization": f"Bearer x{n}"})
                statuses.append(r.status_code)
            refilled = int((time.monotonic() - began) * 20 / 60) + 1
        assert statuses[:20] == [401] * 20
        assert set(statuses[20:]) <= {401, 429} and statuses[-1] == 429
        assert statuses[20:].count(401) <= refilled
        assert len(queries) <= 20 + refilled
        _is_429(await client.get("/api/players/me", headers={"Authorization": "Bearer y"}))


async def test_unknown_tokens_in_hello_are_limited_too(database_url: str, tmp_path: Path) -> None:
    """A match socket's hello with unknown tokens gets 429 past the budget, unlooked-up."""
    settings = _settings(tmp_path, database_url, auth_fail_limit=3)
    with Instance(settings) as server:
        async with httpx.AsyncClient(base_url=server.http, timeout=30) as http:
            table = await Table(http).open()
        engine = cast(Litestar, server.server.config.app).state.parts.engine
        with _token_queries(engine) as queries:
            async with websockets.connect(server.ws(table.match_id), max_size=None) as ws:
                errors = []
                for n in range(10):
                    await ws.send(msgspec.json.encode({"type": "hello", "token": f"bad{n}"}))
                    while (frame := msgspec.json.decode(await ws.recv()))["type"] != "error":
                        pass
                    errors.append(frame["status"])
    assert errors == [401] * 3 + [429] * 7
    assert len(queries) == 3


def test_the_limits_are_read_from_the_environment(tmp_path: Path) -> None:
    """LUDO_RATE_LIMIT and the others are settings; 0 switches a budget off."""
    env = {
        "LUDO_DATA_DIR": str(tmp_path),
        "LUDO_RATE_LIMIT": "0",
        "LUDO_GUEST_LIMIT": "5",
        "LUDO_AUTH_FAIL_LIMIT": "7",
        "LUDO_REQUEST_TIMEOUT": "3.5",
        "LUDO_WS_MESSAGE_RATE": "4",
    }
    settings = Settings.from_env(env)
    assert (settings.rate_limit, settings.guest_limit, settings.auth_fail_limit) == (0, 5, 7)
    assert (settings.request_timeout, settings.ws_message_rate) == (3.5, 4.0)
    defaults = Settings.from_env({"LUDO_DATA_DIR": str(tmp_path)})
    assert defaults.rate_limit >= 1200 and defaults.guest_limit == 20


def test_every_way_of_serving_uses_the_same_uvicorn_limits() -> None:
    """ludo up, the bench, the Dockerfile and compose.yaml pass UVICORN_ARGS."""
    flags = " ".join(f'"{a}"' for a in UVICORN_ARGS).replace('" "', '", "')
    assert flags in (ROOT / "Dockerfile").read_text()
    compose = (ROOT / "compose.yaml").read_text()
    assert compose.count("services.shared.limits:GuardedHttpToolsProtocol") == 2  # match, ranking
    assert flags in compose
    for module in ("ludo_cli/cluster.py", "benchmarks/service_process.py"):
        assert "*UVICORN_ARGS" in (ROOT / module).read_text(), module
    assert str(WS_MAX_SIZE) in UVICORN_ARGS


# ---------------------------------------------------------------------------- slow clients


class _FastHeaders(GuardedHttpToolsProtocol):
    HEADER_TIMEOUT = 2.0


class _FastHeadersH11(GuardedH11Protocol):
    HEADER_TIMEOUT = 2.0


def _open(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=1)
    conn.settimeout(1)
    return conn


class _Dripped(NamedTuple):
    answer: bytes  # what the server sent
    sent: int  # bytes of the request the client got to send
    closed: bool  # the server closed the connection (False: still open at the bound)


def _drip(conn: socket.socket, data: bytes, bound: float) -> _Dripped:
    """Send `data` one byte a second (the slow client: each byte after a 1 s wait for an
    answer) until the server closes the connection, or give up after `bound` seconds."""
    started = time.monotonic()
    answer, sent = b"", 0
    for byte in data:
        if time.monotonic() - started > bound:
            break
        try:
            conn.sendall(bytes([byte]))
        except OSError:  # closed by the server
            return _Dripped(answer, sent, True)
        sent += 1
        try:
            chunk = conn.recv(65536)
            answer += chunk
            if not chunk:
                return _Dripped(answer, sent, True)
        except TimeoutError:  # nothing yet: the pause of a slow client
            continue
        except OSError:
            return _Dripped(answer, sent, True)
    while time.monotonic() - started <= bound:  # all sent: wait for the server's close
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except OSError:
            return _Dripped(answer, sent, True)
        if not chunk:
            return _Dripped(answer, sent, True)
        answer += chunk
    return _Dripped(answer, sent, False)


@pytest.fixture(params=[_FastHeaders, _FastHeadersH11], ids=["httptools", "h11"])
def slow_server(
    request: pytest.FixtureRequest, database_url: str, tmp_path: Path
) -> Iterator[Instance]:
    """The service under uvicorn (either HTTP protocol): 2 s header timeout, 2 s to send
    a body."""
    settings = _settings(tmp_path, database_url, request_timeout=2.0)
    with Instance(settings, http=request.param) as instance:
        yield instance


async def test_slow_headers_are_cut_off_and_others_served(slow_server: Instance) -> None:
    """Headers sent one byte a second: closed within the bound; a normal client is served."""
    request = b"GET /api/parties HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100 + b"\r\n\r\n"
    conn = _open(slow_server.port)
    with conn:
        drip = asyncio.create_task(asyncio.to_thread(_drip, conn, request, 20))
        async with httpx.AsyncClient(base_url=slow_server.http, timeout=10) as http:
            assert (await http.get("/healthz")).status_code == 200
        dripped = await drip
    # Closed by the server while the client was still sending its headers.
    assert dripped.closed and dripped.sent < len(request), "the slow headers were waited for"
    assert b"200 OK" not in dripped.answer


async def test_an_idle_connection_is_cut_off(slow_server: Instance) -> None:
    """A connection that never sends a byte is closed within the bound."""
    with _open(slow_server.port) as conn:
        dripped = await asyncio.to_thread(_drip, conn, b"", 20)
    assert dripped.closed and dripped.answer == b""


async def test_a_slow_body_is_cut_off_with_408(slow_server: Instance) -> None:
    """A 16 KiB body sent one byte a second: 408 request_timeout, closed within the bound."""
    head = (
        b"POST /api/players HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 16384\r\n\r\n"
    )
    with _open(slow_server.port) as conn:
        conn.sendall(head)
        drip = asyncio.create_task(asyncio.to_thread(_drip, conn, b"{" + b" " * 16383, 20))
        async with httpx.AsyncClient(base_url=slow_server.http, timeout=10) as http:
            assert (await http.get("/api/parties")).status_code == 200
        dripped = await drip
    # Answered and closed while the client was still sending its body.
    assert dripped.closed and dripped.sent < 16384, "the slow body was waited for"
    assert dripped.answer.startswith(b"HTTP/1.1 408"), dripped.answer[:200]
    assert b'"error":"request_timeout"' in dripped.answer


async def test_keep_alive_requests_are_still_served(slow_server: Instance) -> None:
    """The header timeout does not cut a busy keep-alive connection's later requests."""
    async with httpx.AsyncClient(base_url=slow_server.http, timeout=10) as http:
        for _ in range(5):
            assert (await http.get("/api/parties")).status_code == 200


# ------------------------------------------------------------------------ WebSocket limits


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Iterator[Instance]:
    """One instance served as in production (uvicorn_options), no scheduler."""
    with Instance(_settings(tmp_path, database_url)) as instance:
        yield instance


async def test_a_16_mib_message_is_refused_before_it_is_buffered(server: Instance) -> None:
    """uvicorn's ws_max_size (64 KiB) closes the socket with 1009 at a 16 MiB message."""
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as http:
        table = await Table(http).open()
    async with websockets.connect(server.ws(table.match_id), max_size=None) as ws:
        with contextlib.suppress(websockets.ConnectionClosed):
            await ws.send("x" * (16 * 1024 * 1024))
        with contextlib.suppress(websockets.ConnectionClosed):
            while True:
                frame = msgspec.json.decode(await asyncio.wait_for(ws.recv(), 30))
                assert frame.get("error") != "too_large", "the 16 MiB message was read"
    assert ws.close_code == 1009


async def test_a_flooding_socket_does_not_starve_another_client(server: Instance) -> None:
    """One socket flooding messages gets too_many_requests then 1008; a player's roll on
    another socket is answered while it floods."""
    async with httpx.AsyncClient(base_url=server.http, timeout=30) as http:
        table = await Table(http).open()
        state = (await http.get(f"/api/matches/{table.match_id}")).json()
    turn = state["turn"]
    seen_429 = asyncio.Event()
    flood_frames: list[dict[str, Any]] = []

    async with (
        websockets.connect(server.ws(table.match_id), max_size=None) as flooder,
        websockets.connect(server.ws(table.match_id), max_size=None) as player,
    ):

        async def flood() -> None:
            with contextlib.suppress(websockets.ConnectionClosed):
                while True:
                    await flooder.send('{"type":"ping"}')
                    await asyncio.sleep(0)  # let the reader run (no pause: a tight flood)

        async def read_flood() -> None:
            with contextlib.suppress(websockets.ConnectionClosed):
                while True:
                    frame = msgspec.json.decode(await flooder.recv())
                    flood_frames.append(frame)
                    if frame.get("error") == "too_many_requests":
                        seen_429.set()

        sending = asyncio.create_task(flood())
        reading = asyncio.create_task(read_flood())
        await asyncio.wait_for(seen_429.wait(), 30)  # the flood is on, and refused
        await player.send(
            msgspec.json.encode({"type": "hello", "token": table.players[turn]["token"]})
        )
        await player.send('{"type":"roll","id":"r1"}')
        result = None
        while result is None:
            frame = msgspec.json.decode(await asyncio.wait_for(player.recv(), 30))
            if frame["type"] in ("result", "error") and frame.get("id") == "r1":
                result = frame
        assert result["type"] == "result", result
        await asyncio.wait_for(reading, 30)
        sending.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sending
    assert flooder.close_code == 1008
    refused = [f for f in flood_frames if f.get("error") == "too_many_requests"]
    assert refused and all(f["status"] == 429 for f in refused)
