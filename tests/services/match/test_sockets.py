"""Commands and state frames over the match socket, and the party and lobby sockets.

Real uvicorn instances on the test's database (the `Instance` helper of test_live.py),
real `websockets` clients. Every wait is on frames, with a timeout; nothing sleeps.

The state frame's version, pinned here: a state frame follows every batch of event frames
(the catch-up first, even when it is empty), and its `version` is the version of the
last event frame before it plus one (the catch-up's `from` when nothing was sent), which
is also its `match.version`.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import sqlalchemy as sa
import websockets
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.guests import Player
from services.match.play.service import MatchCommands
from services.match.play.socket import (
    BATCH_EVENTS,
    _Session,
    _SessionParts,
    batch_frames,
    event_message,
    result_event,
)
from services.match.play.views import event_view
from services.ranking.analysis.consumer import AnalysisConsumer
from services.shared.eventstore import ConcurrencyError, EventStore, StoredEvent
from tests.pg_waits import backend_pid, wait_until_blocked
from tests.services.conftest import Api
from tests.services.match.test_commands import BLOCKED_PIECE_2, stage_a_block
from tests.services.match.test_live import (
    Instance,
    Table,
    _auth,
    _client,
    _settings,
    unbatched,
)
from tests.services.ranking.finished_matches import CPU, write_match
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio

_REPLIES = ("result", "error", "hello", "pong")


# The match socket's frames beside the match's own (stamps, who is connected, the analysis
# written): kept apart in `side`, so that the match's frames and messages are pinned as
# they always were.
_SIDE = ("stamp", "presence", "analysis")


class Socket:
    """A client socket and every frame it received, in order (a batch frame's event and
    state frames one by one; `messages`: what each message held; `side`: the stamp and
    presence frames)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws
        self.frames: list[dict[str, Any]] = []
        self.messages: list[list[dict[str, Any]]] = []
        self.side: list[dict[str, Any]] = []
        self._unread: list[dict[str, Any]] = []  # of the last message, not yet looked at

    async def until(self, done: Callable[[dict[str, Any]], bool], seconds: float = 15) -> Any:
        """Receive frames until one satisfies `done`; return it."""
        deadline = time.monotonic() + seconds
        while True:
            if not self._unread:
                left = deadline - time.monotonic()
                try:
                    assert left > 0
                    raw = await asyncio.wait_for(self.ws.recv(), left)
                except (AssertionError, TimeoutError):
                    last = self.frames[-3:]
                    raise AssertionError(f"no such frame within {seconds}s; last: {last}") from None
                self._unread = unbatched(raw)
                if self._unread[0]["type"] not in _SIDE:
                    self.messages.append(list(self._unread))
            frame = self._unread.pop(0)
            (self.side if frame["type"] in _SIDE else self.frames).append(frame)
            if done(frame):
                return frame

    async def send(self, message: Any) -> dict[str, Any]:
        """Send a message (an object as JSON, a str as is) and return the reply to it."""
        text = message if isinstance(message, str) else msgspec.json.encode(message).decode()
        await self.ws.send(text)
        reply: dict[str, Any] = await self.until(lambda f: f["type"] in _REPLIES)
        return reply

    async def state(self, version: int) -> dict[str, Any]:
        """The state frame at `version` (already received, or the next to come)."""
        seen = [f for f in self.of("state") if f["version"] == version]
        if seen:
            return seen[0]
        frame: dict[str, Any] = await self.until(
            lambda f: f["type"] == "state" and f["version"] >= version
        )
        assert frame["version"] == version
        return frame

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in (self.side if kind in _SIDE else self.frames) if f["type"] == kind]


@contextlib.asynccontextmanager
async def _socket(url: str, token: str | None = None) -> AsyncIterator[Socket]:
    """A socket to `url`, said hello with `token` (when given)."""
    async with websockets.connect(url, max_size=None) as ws:
        socket = Socket(ws)
        if token is not None:
            hello = await socket.send({"type": "hello", "token": token})
            assert hello["type"] == "hello", hello
        yield socket


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Iterator[Instance]:
    """One instance of the match service, no scheduler. The tests play at machine speed,
    faster than the per-socket message budget that guards against floods allows (their
    own tests: test_limits.py), so it is off."""
    with Instance(_settings(tmp_path, database_url, ws_message_rate=0)) as instance:
        yield instance


def _check_state_frames(socket: Socket, first: int = 0) -> None:
    """Events once each and in order from `first`; each state frame's version is the last
    event's + 1 (or `first` before any) and its match's version."""
    versions = [f["version"] for f in socket.of("event")]
    assert versions == list(range(first, first + len(versions)))
    last = first - 1
    for frame in socket.frames:
        if frame["type"] == "event":
            last = frame["version"]
        elif frame["type"] == "state":
            assert frame["version"] == last + 1 == frame["match"]["version"]


async def _act(socket: Socket, state: dict[str, Any], key: str) -> dict[str, Any]:
    """The seat to act (on `socket`) rolls, or plays the first legal move of `state`."""
    if state["match"]["phase"] == "roll":
        return await socket.send({"type": "roll", "id": key})
    return await socket.send({"type": "move", "piece": state["moves"][0]["piece"], "id": key})


async def _play(
    sockets: dict[int, Socket], watchers: list[Socket], version: int, commands: int
) -> int:
    """Play `commands` commands (or to the end) over the seats' sockets from the state at
    `version`; every socket in `watchers` sees each result's state frame. The new version."""
    for n in range(commands):
        state = await watchers[0].state(version)
        if state["match"]["phase"] == "over":
            break
        turn = state["match"]["turn"]
        result = await _act(sockets[turn], state, f"k{version}-{n}")
        assert result["type"] == "result", result
        assert result["duplicate"] is False
        assert result["command"] == ("roll" if state["match"]["phase"] == "roll" else "move")
        events = result["events"]
        assert [e["version"] for e in events] == list(range(version, result["version"]))
        version = result["version"]
        for watcher in watchers:
            await watcher.state(version)
    return version


@pytest.mark.slow
async def test_a_whole_match_is_played_over_two_sockets(server: Instance) -> None:
    """Two guests play a bga match to the end over their sockets, choosing from the state
    frames' moves: every result names its events, events arrive once and in order, and
    each state frame is the version after the last event sent and equals GET."""
    async with _client(server.http) as http:
        table = await Table(http).open()
        async with (
            _socket(server.ws(table.match_id), table.players[0]["token"]) as alice,
            _socket(server.ws(table.match_id), table.players[1]["token"]) as bob,
        ):
            version = await table.version()
            version = await _play({0: alice, 1: bob}, [alice, bob], version, 5000)
            final = await alice.state(version)
            await bob.state(version)
        assert final["match"]["phase"] == "over" and final["moves"] == []
        assert final["match"] == (await http.get(f"/api/matches/{table.match_id}")).json()
        stored = await table.stream()
    for socket in (alice, bob):
        _check_state_frames(socket)
        frames = socket.of("event")
        assert [(f["version"], f["event_type"], f["data"], f["hash"]) for f in frames] == [
            (e["version"], e["type"], e["data"], e["hash"]) for e in stored
        ]
    results = [e for f in alice.of("result") + bob.of("result") for e in f["events"]]
    assert sorted(results, key=lambda e: e["version"]) == stored[2:]


@pytest.mark.slow
async def test_every_refused_command_is_an_error_frame_that_appends_nothing(
    server: Instance,
) -> None:
    """Before hello, a spectator, out of turn, roll before a move and move before a roll, a
    concession with a person still playing, an illegal piece, wrong types, unknown fields
    and types, a bad id, non-JSON and oversized messages: each gets its error frame (the
    HTTP status and code), nothing is appended, and the socket goes on."""
    async with _client(server.http) as http:
        table = await Table(http).open()
        url = server.ws(table.match_id)
        r = await http.post("/api/players", json={"name": "carol"})
        carol = r.json()["token"]
        state = (await http.get(f"/api/matches/{table.match_id}")).json()
        mover, waiter = state["turn"], 1 - state["turn"]
        tokens = [p["token"] for p in table.players]
        async with (
            _socket(url) as anonymous,
            _socket(url, carol) as spectator,
            _socket(url, tokens[mover]) as me,
            _socket(url, tokens[waiter]) as other,
        ):
            assert spectator.of("hello")[-1]["seat"] is None
            version = await table.version()
            cases: list[tuple[Socket, Any, tuple[Any, ...]]] = [
                (anonymous, {"type": "roll", "id": "a"}, ("a", 401, "unauthorized", None)),
                (spectator, {"type": "roll"}, (None, 403, "not_your_seat", None)),
                (other, {"type": "roll", "id": "b"}, ("b", 409, "not_your_turn", None)),
                (me, {"type": "move", "piece": 0}, (None, 409, "roll_first", None)),
                (me, {"type": "concede", "id": "d"}, ("d", 409, "not_against_cpus", None)),
                (me, {"type": "move", "piece": "0"}, (None, 422, "invalid", "piece")),
                (me, {"type": "move", "piece": 9}, (None, 422, "invalid", "piece")),
                (me, {"type": "move", "piece": True}, (None, 422, "invalid", "piece")),
                (me, {"type": "move", "id": "c"}, ("c", 422, "invalid", "piece")),
                (me, {"type": "roll", "die": 6}, (None, 422, "invalid", "die")),
                (me, {"type": "roll", "id": "has space"}, ("has space", 422, "invalid", "id")),
                (me, {"type": "roll", "id": 7}, (None, 422, "invalid", "id")),
                (me, {"type": "roll", "id": ""}, ("", 422, "invalid", "id")),
                (me, {"type": "dance"}, (None, 422, "invalid", "type")),
                (me, {"piece": 0}, (None, 422, "invalid", "type")),
                (me, "[1, 2]", (None, 422, "invalid", "type")),
                (me, "{not json", (None, 400, "malformed_json", None)),
                (me, {"type": "roll", "id": "x" * 5000}, (None, 413, "too_large", None)),
                (anonymous, {"type": "hello", "token": 3}, (None, 422, "invalid", "token")),
                (
                    anonymous,
                    {"type": "hello", "token": "nope"},
                    (None, 401, "unauthorized", "token"),
                ),
            ]
            for socket, message, expected in cases:
                reply = await socket.send(message)
                got = (reply.get("id"), reply.get("status"), reply.get("error"), reply.get("field"))
                assert reply["type"] == "error" and got == expected, (message, reply)
                assert reply["detail"]
            assert (await anonymous.send({"type": "roll"}))["error"] == "unauthorized"
            # 16 MiB: refused by the handler, or by the server before it (close 1009).
            async with _socket(url, tokens[mover]) as big:
                try:
                    huge = await big.send('{"type": "roll", "id": "' + "x" * (16 << 20) + '"}')
                    assert huge["error"] == "too_large"
                except websockets.ConnectionClosed as closed:
                    assert closed.rcvd is not None and closed.rcvd.code == 1009
            assert await table.version() == version

            # In the move phase: a roll, and a piece that cannot move.
            assert (await other.send({"type": "ping"})) == {"type": "pong"}
            while True:
                current = await other.state(version)
                moves = current["moves"]
                if current["match"]["phase"] == "move" and len(moves) < 4:
                    break
                actor = me if current["match"]["turn"] == mover else other
                version = (await _act(actor, current, f"p{version}"))["version"]
            actor = me if current["match"]["turn"] == mover else other
            assert (await actor.send({"type": "roll"}))["error"] == "move_first"
            stuck = next(p for p in range(4) if p not in {m["piece"] for m in moves})
            reply = await actor.send({"type": "move", "piece": stuck, "id": "q"})
            assert (reply["status"], reply["error"], reply["field"], reply["id"]) == (
                422,
                "illegal_move",
                "piece",
                "q",
            )
            # Left: a CPU stands in, and the seat's own roll is refused until reclaimed.
            left = await actor.send({"type": "leave"})
            assert left["type"] == "result" and left["command"] == "leave"
            version = left["version"]
            reply = await actor.send({"type": "move", "piece": moves[0]["piece"]})
            assert (reply["status"], reply["error"]) == (409, "stood_in")
            assert await table.version() == version
            back = await actor.send({"type": "reclaim"})
            assert back["type"] == "result" and back["command"] == "reclaim"
            for socket in (anonymous, spectator, me, other):
                _check_state_frames(socket)


async def test_a_repeated_id_returns_the_first_outcome_and_appends_nothing(
    server: Instance,
) -> None:
    """The same id twice: the second reply is `duplicate` with the first events; a key used
    over HTTP then over the socket likewise; an id reused for another command is
    `idempotency_key_reused`; nothing is appended by any of the repeats."""
    async with _client(server.http) as http:
        table = await Table(http).open()
        state = (await http.get(f"/api/matches/{table.match_id}")).json()
        player = table.players[state["turn"]]
        async with _socket(server.ws(table.match_id), player["token"]) as me:
            first = await me.send({"type": "roll", "id": "k1"})
            assert first["type"] == "result" and first["duplicate"] is False
            again = await me.send({"type": "roll", "id": "k1"})
            assert again == {**first, "duplicate": True}
            assert await table.version() == first["version"]

            state = (await http.get(f"/api/matches/{table.match_id}")).json()
            if state["turn"] != table.players.index(player):  # the roll passed the turn
                player = table.players[state["turn"]]
                async with _socket(server.ws(table.match_id), player["token"]) as other:
                    await _http_then_socket(http, table, other, state)
            else:
                await _http_then_socket(http, table, me, state)

            version = await table.version()
            reused = await me.send({"type": "leave", "id": "k1"})
            assert (reused["status"], reused["error"], reused["field"], reused["id"]) == (
                422,
                "idempotency_key_reused",
                "id",
                "k1",
            )
            assert await table.version() == version


async def _http_then_socket(
    http: httpx.AsyncClient, table: Table, socket: Socket, state: dict[str, Any]
) -> None:
    """The seat to act's command with key k2 over HTTP, then the same over its socket."""
    who = {**_auth(table.players[state["turn"]]), "Idempotency-Key": "k2"}
    url = f"/api/matches/{table.match_id}"
    if state["phase"] == "roll":
        r = await http.post(f"{url}/roll", headers=who)
        message: dict[str, Any] = {"type": "roll", "id": "k2"}
    else:
        piece = (await http.get(f"{url}/moves")).json()["moves"][0]["piece"]
        r = await http.post(f"{url}/move", headers=who, json={"piece": piece})
        message = {"type": "move", "piece": piece, "id": "k2"}
    assert r.status_code == 200, r.text
    version = await table.version()
    reply = await socket.send(message)
    assert reply["duplicate"] is True
    assert (reply["events"], reply["version"]) == (r.json()["events"], r.json()["version"])
    assert await table.version() == version


async def test_a_client_reconnecting_from_its_next_version_gets_exactly_what_it_missed(
    server: Instance,
) -> None:
    """Close a socket mid-match, play on over other sockets, reconnect with `?from=<last
    seen + 1>`: exactly the missed events, then a state frame; nothing twice. Reconnecting
    with nothing missed gets the state frame alone."""
    async with _client(server.http) as http:
        table = await Table(http).open()
        tokens = [p["token"] for p in table.players]
        version = await table.version()
        async with _socket(server.ws(table.match_id), tokens[1]) as bob:
            async with _socket(server.ws(table.match_id), tokens[0]) as alice:
                version = await _play({0: alice, 1: bob}, [alice, bob], version, 10)
            seen = alice.of("event")[-1]["version"]
            async with _socket(server.ws(table.match_id, version), tokens[0]) as again:
                version = await _play({0: again, 1: bob}, [again, bob], version, 10)
            assert version > seen + 1
            async with _socket(server.ws(table.match_id, seen + 1)) as back:
                await back.state(version)
                assert [f["type"] for f in back.frames] == ["event"] * (version - seen - 1) + [
                    "state"
                ]
                assert back.messages == [back.frames]  # one batch frame
                _check_state_frames(back, seen + 1)
            async with _socket(server.ws(table.match_id, version)) as current:
                frame = await current.state(version)
                assert current.frames == [frame]
                assert current.messages == [[frame]]
                assert frame["match"] == (await http.get(f"/api/matches/{table.match_id}")).json()
        stored = await table.stream()
    assert [f["data"] for f in alice.of("event") + back.of("event")] == [
        e["data"] for e in stored[:version]
    ]


async def test_the_state_frame_deadline_is_the_deadline_row(server: Instance) -> None:
    """With a 30 s turn limit, the state frame after a command carries the same deadline as
    `GET /api/matches/{id}` (the turn_deadlines row), derived without a query."""
    async with _client(server.http) as http:
        table = await Table(http).open(turn_limit=30)
        state = (await http.get(f"/api/matches/{table.match_id}")).json()
        token = table.players[state["turn"]]["token"]
        async with _socket(server.ws(table.match_id), token) as me:
            first = await me.state(state["version"])
            assert first["match"] == state
            result = await me.send({"type": "roll"})
            frame = await me.state(result["version"])
        read = (await http.get(f"/api/matches/{table.match_id}")).json()
    assert frame["match"]["deadline"]["kind"] == "turn"
    assert frame["match"]["deadline"] == read["deadline"]
    assert frame["match"] == read
    assert frame["match"]["board"] == (await _steps_board(server, table.match_id))


async def _steps_board(server: Instance, match_id: str) -> Any:
    async with _client(server.http) as http:
        return (await http.get(f"/api/matches/{match_id}/steps")).json()["board"]


async def test_a_timed_out_turn_refuses_the_players_command_as_cpu_playing(
    database_url: str, engine: AsyncEngine, tmp_path: Path
) -> None:
    """After the turn timed out (its deadline row made due), the seat's roll over the socket
    is 409 `cpu_playing` and appends nothing."""
    settings = _settings(tmp_path, database_url, scheduler=True, scheduler_poll=0.02, cpu_delay=60)
    with Instance(settings) as server:
        async with _client(server.http) as http:
            table = await Table(http).open(turn_limit=30)
            state = (await http.get(f"/api/matches/{table.match_id}")).json()
            token = table.players[state["turn"]]["token"]
            async with _socket(server.ws(table.match_id), token) as me:
                await me.state(state["version"])
                async with engine.begin() as conn:  # the 30 s are over
                    await conn.execute(sa.text("UPDATE turn_deadlines SET due_at = now()"))
                await me.until(lambda f: f.get("event_type") == "TurnTimedOut")
                frame = await me.until(lambda f: f["type"] == "state")
                assert frame["match"]["deadline"]["kind"] == "cpu"
                reply = await me.send({"type": "roll"})
                assert (reply["status"], reply["error"]) == (409, "cpu_playing")
                assert await table.version() == frame["version"]


async def test_a_conflict_and_an_unexpected_failure_are_error_frames(
    server: Instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command that loses a race is 409 `conflict`; an unexpected exception is 500
    `internal` without detail; either way the socket goes on."""
    failures: list[Exception] = [ConcurrencyError("match-x", 3, 4), RuntimeError("boom")]

    async def failing(*args: Any, **kwargs: Any) -> Any:
        raise failures.pop(0)

    async with _client(server.http) as http:
        table = await Table(http).open()
        state = (await http.get(f"/api/matches/{table.match_id}")).json()
        token = table.players[state["turn"]]["token"]
        async with _socket(server.ws(table.match_id), token) as me:
            monkeypatch.setattr(MatchCommands, "roll", failing)
            conflict = await me.send({"type": "roll", "id": "z"})
            internal = await me.send({"type": "roll"})
            monkeypatch.undo()
            assert (conflict["id"], conflict["status"], conflict["error"]) == ("z", 409, "conflict")
            assert (internal["status"], internal["error"]) == (500, "internal")
            assert "boom" not in internal["detail"]
            assert (await me.send({"type": "roll"}))["type"] == "result"


class TestWhyAPieceCannotMove:
    """The match socket's error frame for an illegal move carries the rule as facts
    (`why`), as the HTTP error does."""

    async def test_an_illegal_moves_error_frame_gives_its_rule_as_facts(
        self, server: Instance, engine: AsyncEngine
    ) -> None:
        """The frame answering `move` piece 2 behind a pair: 422 illegal_move with `why`
        {rule block, square 6, seat 1}; nothing is appended."""
        async with _client(server.http) as http:
            table = await Table(http).open(rules={"preset": "standard"})
            version = await stage_a_block(EventStore(engine), table.match_id)
            async with _socket(server.ws(table.match_id), table.players[0]["token"]) as me:
                reply = await me.send({"type": "move", "piece": 2, "id": "m-1"})
            assert reply == {"type": "error", "id": "m-1", "status": 422, **BLOCKED_PIECE_2}
            assert await table.version() == version


class TestReturningAfterLeaving:
    """A returning connection gives the seat back only from a stand-in for a
    disconnection: a player who left stays stood in until they reclaim the seat."""

    async def test_a_new_hello_after_leaving_keeps_the_stand_in_until_reclaimed(
        self, server: Instance
    ) -> None:
        """Leave, then a new socket's hello (a reload): still stood in (`left`), no
        SeatReclaimed; the explicit reclaim then gives the seat back."""
        async with _client(server.http) as http:
            table = await Table(http).open()
            url, token = server.ws(table.match_id), table.players[0]["token"]
            async with _socket(url, token) as first:
                left = await first.send({"type": "leave", "id": "l-1"})
                assert left["type"] == "result", left
            # The hello is answered once its presence is written and its reclaim decided.
            async with _socket(url, token) as again:
                state = (await http.get(f"/api/matches/{table.match_id}")).json()
                assert state["seats"][0]["stood_in"] == "left"
                assert state["version"] == left["version"]
                assert "SeatReclaimed" not in [e["type"] for e in await table.stream()]
                back = await again.send({"type": "reclaim", "id": "r-1"})
                assert back["type"] == "result", back
                assert [e["type"] for e in back["events"]] == ["SeatReclaimed"]
            state = (await http.get(f"/api/matches/{table.match_id}")).json()
            assert state["seats"][0]["stood_in"] is None


# ---------------------------------------------------------------------- party and lobby


def _party_url(server: Instance, party_id: str) -> str:
    return f"ws://127.0.0.1:{server.port}/ws/parties/{party_id}"


async def test_the_party_socket_sends_the_party_after_each_change(server: Instance) -> None:
    """Connect: the party as GET shows it; a join, a CPU seated and the start each arrive
    as a party frame equal to GET; ping is answered; an unknown party is closed 4404."""
    async with _client(server.http) as http:
        host = (await http.post("/api/players", json={"name": "host"})).json()
        guest = (await http.post("/api/players", json={"name": "guest"})).json()
        h = {"Authorization": f"Bearer {host['token']}"}
        g = {"Authorization": f"Bearer {guest['token']}"}
        party = (await http.post("/api/parties", json={"seats": 3}, headers=h)).json()
        url = f"/api/parties/{party['id']}"
        async with _socket(_party_url(server, party["id"])) as socket:

            async def frame_after(version: int) -> dict[str, Any]:
                got: dict[str, Any] = await socket.until(
                    lambda f: f["type"] == "party" and f["party"]["version"] >= version
                )
                assert got["party"] == (await http.get(url)).json()
                return got

            assert (await frame_after(party["version"]))["party"] == party
            joined = (await http.post(f"{url}/join", headers=g)).json()
            assert (await frame_after(joined["version"]))["party"]["seats"][1]["name"] == "guest"
            cpu = (await http.post(f"{url}/cpus", json={}, headers=h)).json()
            assert (await frame_after(cpu["version"]))["party"]["seats"][2]["cpu"] == "normal"
            assert (await socket.send({"type": "ping"})) == {"type": "pong"}
            reply = await socket.send({"type": "roll"})
            assert (reply["status"], reply["error"], reply["field"]) == (422, "invalid", "type")
            started = (await http.post(f"{url}/start", headers=h)).json()
            last = await frame_after(started["party"]["version"])
            assert last["party"]["match_id"] == started["match_id"]
            assert [f["party"]["version"] for f in socket.of("party")] == sorted(
                {f["party"]["version"] for f in socket.of("party")}
            )
    for bad in ("00000000-0000-0000-0000-000000000000", "nope"):
        async with websockets.connect(_party_url(server, bad)) as ws:
            frame = msgspec.json.decode(await asyncio.wait_for(ws.recv(), 10))
            assert (frame["error"], frame["status"]) == ("not_found", 404)
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await asyncio.wait_for(ws.recv(), 10)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4404


async def test_the_lobby_socket_shows_new_parties_and_drops_started_ones(
    server: Instance,
) -> None:
    """Connect: the open parties as GET lists them; a new party appears in a later frame;
    once started it is gone from the next; ping is answered."""
    async with _client(server.http) as http:
        host = (await http.post("/api/players", json={"name": "host"})).json()
        h = {"Authorization": f"Bearer {host['token']}"}
        async with _socket(f"ws://127.0.0.1:{server.port}/ws/lobby") as lobby:
            first = await lobby.until(lambda f: f["type"] == "parties")
            assert first["parties"] == (await http.get("/api/parties")).json()["parties"]
            party = (await http.post("/api/parties", json={"seats": 2}, headers=h)).json()

            def listed(f: dict[str, Any]) -> bool:
                return f["type"] == "parties" and party["id"] in {p["id"] for p in f["parties"]}

            await lobby.until(listed)
            assert (await lobby.send({"type": "ping"})) == {"type": "pong"}
            url = f"/api/parties/{party['id']}"
            assert (await http.post(f"{url}/cpus", json={}, headers=h)).status_code == 200
            assert (await http.post(f"{url}/start", headers=h)).status_code == 201
            gone = await lobby.until(lambda f: f["type"] == "parties" and not listed(f))
            assert gone["parties"] == (await http.get("/api/parties")).json()["parties"]


async def test_a_finished_matchs_socket_says_when_its_analysis_is_written(
    server: Instance, engine: AsyncEngine, pg_store: EventStore
) -> None:
    """A socket of a finished match gets `{"type": "analysis", "ready": true}` once the
    analysis consumer has written the match's analysis (on its hint, without a reconnect),
    once; a socket opened afterwards gets it at once."""
    stream = await write_match(engine, pg_store, ["ann", CPU], [1, 2])
    match_id = stream.removeprefix("match-")
    async with _socket(server.ws(match_id)) as early:
        await early.until(lambda f: f["type"] == "state" and f["match"]["status"] == "finished")
        await AnalysisConsumer(engine, pg_store, worker=False).catch_up()
        frame = await early.until(lambda f: f["type"] == "analysis")
        assert frame == {"type": "analysis", "ready": True}
        async with _socket(server.ws(match_id)) as late:
            assert await late.until(lambda f: f["type"] == "analysis") == frame
        assert (await early.send({"type": "ping"})) == {"type": "pong"}  # it goes on
    assert early.of("analysis") == [frame]


def _stored(version: int, data: bytes = b'{"seat":1}') -> StoredEvent:
    return StoredEvent(
        global_position=7 + version,
        tx=12,
        stream_id="match-x",
        version=version,
        event_id=uuid.uuid4(),
        type="DieRolled",
        schema_version=1,
        data=data,
        metadata={},
        recorded_at=datetime.datetime(2026, 12, 2, 1, 2, 3, 456789, tzinfo=datetime.UTC),
        prev_hash=bytes(32),
        hash=bytes(range(32)),
    )


def test_a_result_frames_event_is_the_json_of_http_events() -> None:
    """A result frame embeds each event's stored data as is: the bytes of its event are
    those `GET /api/matches/{id}/events` gives for it (`EventOut`)."""
    stored = _stored(3, msgspec.json.encode({"seat": 1, "die": 6, "note": "späť", "p": [0, 57]}))
    assert msgspec.json.encode(result_event(stored)) == msgspec.json.encode(event_view(stored))


def test_a_long_batch_goes_out_in_frames_of_at_most_batch_events() -> None:
    """A batch of events is one batch frame holding their event frames and the state frame
    after them; a longer one than `BATCH_EVENTS` (a long catch-up) is split, the state in
    the last frame only, and the events keep their order; an empty batch carries the state
    alone."""
    state = b'{"type":"state","version":0}'
    assert [msgspec.json.decode(f) for f in batch_frames([], state)] == [
        {"type": "batch", "frames": [{"type": "state", "version": 0}]}
    ]
    events = [_stored(v) for v in range(2 * BATCH_EVENTS + 3)]
    frames = [msgspec.json.decode(f) for f in batch_frames(events, state)]
    assert [len(f["frames"]) for f in frames] == [BATCH_EVENTS, BATCH_EVENTS, 4]
    inner = [x for f in frames for x in f["frames"]]
    assert {f["type"] for f in frames} == {"batch"}
    assert [x["version"] for x in inner] == [*range(len(events)), 0]
    assert [x["type"] for x in inner] == ["event"] * len(events) + ["state"]
    assert inner[5] == msgspec.json.decode(event_message(events[5]))
    exact = batch_frames(events[:BATCH_EVENTS], state)
    assert len(exact) == 1 and exact[0].endswith(state.decode() + "]}")


async def test_a_socket_cancelled_as_it_records_its_close_still_records_it(api: Api) -> None:
    """A seat's socket whose task is cancelled (the server stopping) while it writes its
    close finishes the write: the seat counts no connection and its grace period starts."""
    match_id, players, _ = await api.duel()
    service = api.client.app.state.parts
    parts = _SessionParts(service.guests, service.commands, service.presence, service.stamps)
    session = _Session(parts, match_id, api.client.app.state.limits, "test", service.counters)
    session.player = Player(players[0]["id"], "alice")
    session.seat = await service.presence.connected(match_id, session.player)
    assert session.seat == 0
    where = {"stream_id": f"match-{match_id}", "seat": 0}
    async with api.engine.connect() as holder:
        await holder.execute(
            sa.text(
                "SELECT 1 FROM seat_presence WHERE stream_id = :stream_id AND seat = :seat"
                " FOR UPDATE"
            ),
            where,
        )
        closing = asyncio.create_task(session.close())
        await wait_until_blocked(api.engine, by=await backend_pid(holder))
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        await holder.rollback()  # the row is free: the shielded write goes on
    presence = sa.text(
        "SELECT connections, grace_due IS NOT NULL FROM seat_presence"
        " WHERE stream_id = :stream_id AND seat = :seat"
    )
    async with api.engine.connect() as conn:
        auto = await conn.execution_options(isolation_level="AUTOCOMMIT")

        async def recorded() -> bool:
            return tuple((await auto.execute(presence, where)).one()) == (0, True)

        await wait_until(recorded, 15, what="the close recorded in seat_presence")
