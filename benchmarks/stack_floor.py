"""The stack's floor: the least a command can cost on this stack, measured beside the
match service in the same `ludo bench service` run, so that what the game costs above
the stack is a ratio of one run, whatever the machine's speed that hour.

The floor app (`app`, a uvicorn factory served with the service's own `UVICORN_ARGS`)
is Litestar with nothing of the game: `POST /floor/players` hands out a bearer token kept
in memory; `POST /floor/commands` authenticates it and INSERTs one event row with psycopg
(autocommit: its own transaction) into `floor_events`, a table made `LIKE public.events
INCLUDING ALL` (the same columns, defaults, checks and indexes, no append-only trigger);
`/ws/floor` does the same per message after a `hello` with the token, answering each with
a small `result` frame. So a floor command is what any command of this service must do at
least: parse a request, check who sends it, write one row, answer.

The load is the service's in shape: K clients from two processes, each one request (or
message) at a time on its own kept-alive connection (or socket). The service and the floor
are loaded in turn, `rounds` times, the order swapped each round, each on a fresh scratch
database after a CHECKPOINT; the figure is the service's server CPU per command as a
multiple of the floor's, both as the ratio of the medians and as the median of each round's
own ratio (which cancels a drift of the machine's speed between rounds).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import secrets
import statistics
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, Final, Literal

import msgspec
from litestar import Litestar, Request, WebSocket, get, post, websocket
from litestar.exceptions import NotAuthorizedException

from benchmarks.closed_loop import closed_loop, print_rounds
from benchmarks.common import BenchError, checkpoint, scratch_db
from benchmarks.harness import Say
from benchmarks.http1 import Http1
from benchmarks.service_process import serve

__all__ = [
    "FACTORY",
    "TARGET_MULTIPLE",
    "app",
    "compare",
    "floor_run",
    "multiples",
    "print_multiples",
]

# The target: the rules, the hash chain, idempotency and fan-out together cost at most half
# as much again as the bare insert over HTTP, and as much again over the socket.
TARGET_MULTIPLE: Final = {"http": 1.5, "socket": 2.0}

FACTORY: Final = f"{__name__}:app"
_TABLE: Final = "CREATE TABLE IF NOT EXISTS floor_events (LIKE public.events INCLUDING ALL)"
_INSERT: Final = (
    "INSERT INTO floor_events (stream_id, stream_version, event_id, type, schema_version,"
    " data, metadata, prev_hash, hash) VALUES (%s, %s, %s, 'DieRolled', 1, %s, %s, %s, %s)"
)
# A die roll's data and metadata, as the service writes them (a few dozen bytes each).
_DATA: Final = '{"seat":0,"n":0,"value":6}'
_PREV: Final = hashlib.sha256(b"prev").digest()
_POOL: Final = 10  # connections: enough that K = 32 clients rarely wait for one


class _Command(msgspec.Struct):
    piece: int | None = None


class _Player:
    __slots__ = ("stream", "version")

    def __init__(self, number: int) -> None:
        self.stream = f"match-floor-{number}"
        self.version = 0


class _Floor:
    """The app's state: the tokens, and a pool of psycopg connections."""

    def __init__(self) -> None:
        self.players: dict[str, _Player] = {}
        self.pool: asyncio.Queue[Any] = asyncio.Queue()

    async def open(self, conninfo: str) -> None:
        import psycopg

        for _ in range(_POOL):
            conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
            self.pool.put_nowait(conn)
        conn = await self.pool.get()
        await conn.execute(_TABLE)
        self.pool.put_nowait(conn)

    async def close(self) -> None:
        while not self.pool.empty():
            await self.pool.get_nowait().close()

    def player(self, token: str | None) -> _Player:
        player = self.players.get(token or "")
        if player is None:
            raise NotAuthorizedException("unknown token")
        return player

    async def insert(self, player: _Player) -> int:
        """One event row for `player`'s stream, in its own transaction; its version."""
        version, player.version = player.version, player.version + 1
        conn = await self.pool.get()
        try:
            await conn.execute(
                _INSERT,
                (
                    player.stream,
                    version,
                    uuid.uuid4(),
                    _DATA,
                    '{"actor":"' + player.stream + '"}',
                    _PREV,
                    hashlib.sha256(_PREV + _DATA.encode()).digest(),
                ),
            )
        finally:
            self.pool.put_nowait(conn)
        return version


def app() -> Litestar:
    """The floor app (a uvicorn factory; `DATABASE_URL` names its database)."""
    from services.shared.database import libpq_url

    floor = _Floor()

    @contextlib.asynccontextmanager
    async def lifespan(_app: Litestar) -> AsyncIterator[None]:
        await floor.open(libpq_url(os.environ["DATABASE_URL"]))
        try:
            yield
        finally:
            await floor.close()

    @post("/floor/players", status_code=201)
    async def new_player() -> dict[str, str]:
        token = secrets.token_urlsafe(16)
        floor.players[token] = _Player(len(floor.players))
        return {"token": token}

    @post("/floor/commands", status_code=200)
    async def command(request: Request[Any, Any, Any], data: _Command | None) -> dict[str, int]:
        auth = request.headers.get("authorization", "")
        player = floor.player(auth.removeprefix("Bearer "))
        return {"version": await floor.insert(player)}

    @websocket("/ws/floor")
    async def floor_socket(socket: WebSocket[Any, Any, Any]) -> None:
        await socket.accept()
        try:
            hello = msgspec.json.decode(await socket.receive_text())
            player = floor.player(hello.get("token"))
        except (msgspec.DecodeError, NotAuthorizedException, AttributeError):
            await socket.close(code=4401)
            return
        await socket.send_text('{"type":"hello"}')
        with contextlib.suppress(Exception):  # the client went away (the ASGI disconnect)
            while True:
                message = msgspec.json.decode(await socket.receive_text())
                version = await floor.insert(player)
                await socket.send_text(
                    f'{{"type":"result","id":{msgspec.json.encode(message.get("id")).decode()},'
                    f'"version":{version}}}'
                )

    @get("/ready", sync_to_thread=False)
    def ready() -> str:
        return "ok"

    return Litestar([new_player, command, floor_socket, ready], lifespan=[lifespan])


# ---------------------------------------------------------------------------- the load


async def _http_client(base: str, until: float, window: tuple[float, float]) -> int:
    async with Http1(base) as client:
        status, body = await client.request("POST", "/floor/players")
        if status != 201:
            raise BenchError(f"the floor refused a player: {status} {body[:200]!r}")
        headers = {"Authorization": f"Bearer {msgspec.json.decode(body)['token']}"}
        count = 0
        piece = {"piece": 0}
        while time.time() < until:
            status, body = await client.request(
                "POST", "/floor/commands", json=piece, headers=headers
            )
            if status != 200:
                raise BenchError(f"the floor refused a command: {status} {body[:200]!r}")
            if window[0] <= time.time() < window[1]:
                count += 1
        return count


async def _socket_client(base: str, until: float, window: tuple[float, float]) -> int:
    from websockets.asyncio.client import connect

    async with Http1(base) as client:
        status, body = await client.request("POST", "/floor/players")
    if status != 201:
        raise BenchError(f"the floor refused a player: {status} {body[:200]!r}")
    token = msgspec.json.decode(body)["token"]
    url = "ws" + base.removeprefix("http") + "/ws/floor"
    # The service bench's client offers permessage-deflate as browsers do; the service
    # and the floor both refuse it (UVICORN_ARGS), so neither compresses.
    async with connect(url, compression="deflate", ping_interval=None, max_size=None) as ws:
        await ws.send(msgspec.json.encode({"type": "hello", "token": token}).decode())
        await ws.recv(decode=False)
        count = 0
        n = 0
        while time.time() < until:
            n += 1
            await ws.send(f'{{"type":"roll","id":"b{n}"}}')
            await ws.recv(decode=False)
            if window[0] <= time.time() < window[1]:
                count += 1
        return count


def _generator(
    base: str, clients: range, ready: Any, start: Any, results: Any, over: str = "http"
) -> None:
    """One load process: `clients` clients of the floor from the agreed instant to the
    window's end; puts how many commands were answered in the window."""
    ready.put(os.getpid())
    begin, window_from, window_until = start.get(timeout=300)
    client = _socket_client if over == "socket" else _http_client

    async def run() -> int:
        await asyncio.sleep(max(0.0, begin - time.time()))
        counts = await asyncio.gather(
            *(client(base, window_until, (window_from, window_until)) for _ in clients)
        )
        return sum(counts)

    results.put(asyncio.run(run()))


# --------------------------------------------------------------------------- the rounds

Run = Callable[[str], dict[str, Any]]  # one load on a database: its figures


def compare(
    config: Any, say: Say, *, runs: dict[str, Run], database_url: str | None = None
) -> list[dict[str, Any]]:
    """`config.floor_rounds` rounds of every run of `runs` (label: the load of one app on
    a database: `floor_run`, and the service bench's own run of the service), in turn, the
    order reversed each round; each run on a fresh scratch database of the server (of
    `DATABASE_URL` or the embedded one), or on `database_url` when given. The rows of
    figures, one per round."""
    from services.shared.database import database_url as server_url
    from services.shared.settings import Settings, SettingsError

    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        raise BenchError(str(exc)) from exc
    labels = list(runs)
    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        server = database_url or stack.enter_context(server_url(settings))
        for number in range(1, config.floor_rounds + 1):
            row: dict[str, Any] = {"round": number}
            for label in labels if number % 2 else labels[::-1]:
                say(f"round {number} of {config.floor_rounds}: {label}")
                with _database(server, database_url) as db_url:
                    row[label] = runs[label](db_url)
            rows.append(row)
    return rows


@contextlib.contextmanager
def _database(server: str, given: str | None) -> Iterator[str]:
    if given is not None:
        yield given
    else:
        with scratch_db(server, "ludo_bench_floor") as db_url:
            yield db_url


def floor_run(config: Any) -> Run:
    """The floor app's load under `config` (the service bench's: K, over, seconds)."""

    def run(db_url: str) -> dict[str, Any]:
        with serve(db_url, factory=FACTORY, ready="/ready", log_level=config.log_level) as (
            base,
            pid,
        ):
            checkpoint(db_url)
            load = functools.partial(_generator, over=config.over)
            return closed_loop(base, pid, config.matches, config.seconds, config.warmup, load)

    return run


def multiples(rows: list[dict[str, Any]], over: Literal["http", "socket"]) -> dict[str, Any]:
    """The service's CPU per command over the floor's: of the medians, and the median of
    the rounds' own; beside the target."""

    def cpu(label: str) -> list[float]:
        return [r[label]["cpu_ms_per_command"] for r in rows if r[label]["cpu_ms_per_command"]]

    service, floor = cpu("service"), cpu("floor")
    own = [
        r["service"]["cpu_ms_per_command"] / r["floor"]["cpu_ms_per_command"]
        for r in rows
        if r["service"]["cpu_ms_per_command"] and r["floor"]["cpu_ms_per_command"]
    ]
    of_medians = (
        round(statistics.median(service) / statistics.median(floor), 2)
        if service and floor
        else None
    )
    paired = round(statistics.median(own), 2) if own else None
    target = TARGET_MULTIPLE[over]
    return {
        "rounds": rows,
        "service_cpu_ms": round(statistics.median(service), 3) if service else None,
        "floor_cpu_ms": round(statistics.median(floor), 3) if floor else None,
        "multiple": of_medians,
        "multiple_paired": paired,
        "target": f"<= {target:g}",
        "met": None if paired is None else paired <= target,
    }


def print_multiples(figures: dict[str, Any], over: str) -> None:
    """The rounds, one line per run, then the multiple beside its target."""
    print(
        f"the stack's floor over {over} (Litestar under the same uvicorn options: a bearer "
        "token from memory, one INSERT per command), loaded in turn with the service:"
    )
    print_rounds(figures["rounds"], ("service", "floor"))
    met = figures["met"]
    print(
        f"service CPU per command ÷ the floor's: {figures['multiple_paired']}x (the median of "
        f"the rounds' own; of the medians {figures['multiple']}x: {figures['service_cpu_ms']} "
        f"÷ {figures['floor_cpu_ms']} ms)  target {figures['target']}  "
        + ("-" if met is None else "met" if met else "NOT MET")
    )
