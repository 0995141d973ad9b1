"""The arena socket (`services/match/arenas/socket.py`, docs/arenas.md) of a live arena: one
instance of the match service running the arena runner, four guests who join, say hello
at once, are paired, play their matches out and are paired again. Every arena frame any
of them received tells one moment of the arena (its `you` agrees with its standings and
its running matches), and no socket got two arena frames within `ARENA_INTERVAL`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import websockets

from services.match.arenas.socket import ARENA_INTERVAL, ARENA_RESEND
from tests import paths
from tests.services.match.test_arena_live import _auth, _guest, play_to_end
from tests.services.match.test_live import Instance, _client, _settings

pytestmark = pytest.mark.anyio


@pytest.fixture
def runner(database_url: str, tmp_path: Path) -> Iterator[Instance]:
    """One instance running the arena runner (no recurring arena)."""
    settings = _settings(
        tmp_path, database_url, pairing=True, rate_limit=0, ws_message_rate=0, arena_schedule="[]"
    )
    with Instance(settings) as instance:
        yield instance


class ArenaSocket:
    """An arena socket and every frame it received, each with when it was received
    (`time.monotonic()`), and when the connection was begun (`opened`)."""

    def __init__(self, ws: Any, opened: float) -> None:
        self.ws = ws
        self.opened = opened
        self.frames: list[tuple[float, dict[str, Any]]] = []
        self._read = 0

    async def until(self, done: Callable[[dict[str, Any]], bool], seconds: float = 30) -> Any:
        """Receive (or look on from the last one looked at) until a frame satisfies `done`."""
        deadline = time.monotonic() + seconds
        while True:
            while self._read < len(self.frames):
                frame = self.frames[self._read][1]
                self._read += 1
                if done(frame):
                    return frame
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no such frame within {seconds}s: {self.frames[-2:]}")
            with contextlib.suppress(TimeoutError):
                raw = await asyncio.wait_for(self.ws.recv(), left)
                self.frames.append((time.monotonic(), msgspec.json.decode(raw)))

    def arena_frames(self) -> list[tuple[float, dict[str, Any]]]:
        """The arena frames, each with when it was received."""
        return [(at, f) for at, f in self.frames if f["type"] == "arena"]


@contextlib.asynccontextmanager
async def _arena_socket(url: str) -> AsyncIterator[ArenaSocket]:
    opened = time.monotonic()
    async with websockets.connect(url, max_size=None) as ws:
        yield ArenaSocket(ws, opened)


def _disagreements(frame: dict[str, Any], player_id: str | None) -> list[str]:
    """What in an arena frame's `you` the rest of the frame contradicts."""
    arena = frame["arena"]
    you = arena["you"]
    if player_id is None:
        return [] if you is None else [f"you before hello: {you}"]
    line = next((x for x in arena["standings"] if x["player_id"] == player_id), None)
    running = {m["match_id"]: {p["player_id"] for p in m["players"]} for m in arena["running"]}
    problems = []
    if line is None:
        if you["state"] != "out":
            problems.append(f"you {you['state']}, not in the standings")
        return problems
    for key in ("state", "score", "rank"):
        if you[key] != line[key]:
            problems.append(f"you {key} {you[key]!r}, the line {line[key]!r}")
    if you["match_id"] is not None and player_id not in running.get(you["match_id"], set()):
        problems.append(f"you play {you['match_id']}, not among the running tables")
    if line["state"] == "playing" and you["match_id"] is None:
        problems.append("the line plays, you have no match")
    return problems


async def test_every_frame_tells_one_moment_and_frames_keep_their_interval(
    runner: Instance,
) -> None:
    """Every arena frame's `you` agrees with the frame's own standings and running
    matches, and a socket's k-th arena frame comes k × ARENA_INTERVAL after it opened.

    Four guests each open the arena's socket, join and say hello at once (while the
    socket's view still shows the arena before their join), are paired, play their
    matches out and are paired again. The bound on the k-th frame holds however late the
    client reads its frames."""
    async with _client(runner.http) as http:
        host = await _guest(http, "host")
        created = await http.post(
            "/api/tournaments", json={"name": "Frames", "starts_in": 0}, headers=_auth(host)
        )
        assert created.status_code == 201, created.text
        arena_id = created.json()["tournament_id"]
        guests = [await _guest(http, f"g{i}") for i in range(4)]
        url = f"ws://127.0.0.1:{runner.port}/ws/tournament/{arena_id}"
        async with contextlib.AsyncExitStack() as stack:
            sockets = [await stack.enter_async_context(_arena_socket(url)) for _ in guests]
            for socket, guest in zip(sockets, guests, strict=True):
                await socket.until(lambda f: f["type"] == "arena")
                r = await http.post(
                    f"/api/tournaments/{arena_id}/join", json={}, headers=_auth(guest)
                )
                assert r.status_code == 200, r.text
                await socket.ws.send(
                    msgspec.json.encode({"type": "hello", "token": guest["token"]})
                )
                await socket.until(lambda f: f["type"] == "hello")
            first = [await s.until(lambda f: f["type"] == "paired") for s in sockets]
            tables = {f["match_id"] for f in first}
            assert len(tables) == 2
            by_id = {g["id"]: g for g in guests}

            async def play(match_id: str) -> None:
                match = (await http.get(f"/api/matches/{match_id}")).json()
                await play_to_end(http, match_id, [by_id[s["player_id"]] for s in match["seats"]])

            await asyncio.gather(*(play(m) for m in tables))

            def paired_again(before: str) -> Callable[[dict[str, Any]], bool]:
                return lambda f: f["type"] == "paired" and f["match_id"] != before

            for socket, before in zip(sockets, first, strict=True):
                await socket.until(paired_again(before["match_id"]))
            for socket in sockets:
                await socket.until(
                    lambda f: f["type"] == "arena" and len(f["arena"]["matches"]) == 2
                )
    for socket, guest in zip(sockets, guests, strict=True):
        helloed = next(i for i, (_, f) in enumerate(socket.frames) if f["type"] == "hello")
        checked = 0
        for i, (_, frame) in enumerate(socket.frames):
            if frame["type"] == "arena":
                who = guest["id"] if i > helloed else None
                assert _disagreements(frame, who) == [], frame
                checked += 1
        assert checked >= 4
        for k, (at, _) in enumerate(socket.arena_frames()):
            assert k * ARENA_INTERVAL <= at - socket.opened, (k, at - socket.opened)


@pytest.mark.parametrize("doc", ["arenas.md", "api.md"])
def test_the_documents_give_the_sockets_own_frame_rate(doc: str) -> None:
    """docs/arenas.md and docs/api.md say what the socket does: never two arena frames
    within `ARENA_INTERVAL` on one socket, an unchanged view again every `ARENA_RESEND` s."""
    text = " ".join((paths.ROOT / "docs" / doc).read_text(encoding="utf-8").split())
    assert f"within {ARENA_INTERVAL:g} s" in text
    assert f"every {ARENA_RESEND:g} s" in text
    assert "once a second while the clock matters" not in text
