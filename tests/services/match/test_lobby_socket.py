"""The lobby socket `/ws/lobby` (services/match/lobby/socket.py) over a real loopback
connection: the online count it shows counts its own reader once, before and after the
reader says hello, and the live matches come and go as they start and end."""

from __future__ import annotations

from typing import Any

import pytest

from tests.services.match.test_live import Instance, Table, _client
from tests.services.match.test_sockets import _socket, server

pytestmark = pytest.mark.anyio

__all__ = ["server"]  # the fixture, used by name


def online(frame: dict[str, Any]) -> bool:
    return bool(frame["type"] == "pools")


async def test_the_reader_is_counted_online_once_before_and_after_hello(
    server: Instance,
) -> None:
    """Alone on the site, a lobby opened without a guest says 1 online (its reader, not
    0); once it says hello with its guest's token it still says 1 (counted once, not 2);
    a second reader's lobby makes it 2 on both."""
    async with _client(server.http) as http:
        first = (await http.post("/api/players", json={"name": "first"})).json()
        second = (await http.post("/api/players", json={"name": "second"})).json()
        assert (await http.get("/api/pools")).json()["online"] == 0
        async with _socket(f"ws://127.0.0.1:{server.port}/ws/lobby") as a:
            assert (await a.until(online))["online"] == 1
            hello = await a.send({"type": "hello", "token": first["token"]})
            assert hello == {"type": "hello", "player_id": first["id"]}
            # The server counts the guest now (GET /api/pools, for anyone), and the
            # lobby still shows 1: the reader is the one counted.
            assert (await http.get("/api/pools")).json()["online"] == 1
            async with _socket(f"ws://127.0.0.1:{server.port}/ws/lobby", second["token"]) as b:
                assert (await b.until(lambda f: online(f) and f["online"] == 2))["online"] == 2
                await a.until(lambda f: online(f) and f["online"] == 2)
            for frame in a.frames:
                if online(frame):
                    assert frame["online"] in (1, 2), a.frames


async def test_the_live_matches_come_and_go_on_the_lobby_socket(server: Instance) -> None:
    """A lobby is sent the live matches on connect (none), then a duel once it starts,
    with its players and its page, as `listLiveMatches` answers, and an empty list again
    once the duel is over."""
    async with (
        _client(server.http) as http,
        _socket(f"ws://127.0.0.1:{server.port}/ws/lobby") as lobby,
    ):
        first = await lobby.until(lambda f: f["type"] == "matches")
        assert first["matches"] == []
        table = await Table(http).open()
        shown = await lobby.until(lambda f: f["type"] == "matches" and f["matches"])
        (match,) = shown["matches"]
        assert match["match_id"] == table.match_id
        assert match["href"] == f"/match/{table.match_id}"
        assert [s["name"] for s in match["seats"]] == ["alice", "bob"]
        while (await http.get(f"/api/matches/{table.match_id}")).json()["status"] != ("finished"):
            await table.step()
        await lobby.until(lambda f: f["type"] == "matches" and not f["matches"])
        assert (await http.get("/api/matches/live")).json()["matches"] == []
