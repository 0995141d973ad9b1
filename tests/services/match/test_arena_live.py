"""Arenas live, through two instances of the match service that both run the arena runner
(docs/arenas.md): the arena socket's frames, pairing on whichever instance takes the
arena's lock, each player seated once at a time, and pairing again after each match."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
import sqlalchemy as sa

from domain import arena as ar
from services.shared.database import create_engine
from tests.services.match.test_live import Instance, _client, _settings
from tests.services.match.test_sockets import Socket, _socket

pytestmark = pytest.mark.anyio


@pytest.fixture
def runners(database_url: str, tmp_path: Path) -> Iterator[tuple[Instance, Instance]]:
    """Instances A and B, both running the arena runner (no scheduled arenas)."""
    settings = _settings(
        tmp_path, database_url, pairing=True, rate_limit=0, ws_message_rate=0, arena_schedule="[]"
    )
    with Instance(settings) as a, Instance(settings) as b:
        yield a, b


async def _guest(http: httpx.AsyncClient, name: str) -> dict[str, str]:
    body = (await http.post("/api/players", json={"name": name})).json()
    return {"id": body["id"], "token": body["token"], "name": name}


def _auth(guest: dict[str, str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {guest['token']}"}


async def play_to_end(http: httpx.AsyncClient, match_id: str, seated: list[dict[str, str]]) -> None:
    """Each seat to act rolls, or plays its first legal move, until the match ends. Each
    turn reads the match again, so a command lost with an instance killed under it (no
    answer, or a 5xx from the balancer) is simply decided again from what was stored."""
    for _ in range(5000):
        try:
            match = (await http.get(f"/api/matches/{match_id}")).json()
            if match["status"] == "finished":
                return
            who = _auth(seated[match["turn"]])
            if match["phase"] == "roll":
                r = await http.post(f"/api/matches/{match_id}/roll", headers=who)
            else:
                moves = (await http.get(f"/api/matches/{match_id}/moves")).json()["moves"]
                piece = {"piece": moves[0]["piece"]}
                r = await http.post(f"/api/matches/{match_id}/move", json=piece, headers=who)
        except (httpx.TransportError, KeyError, ValueError):
            continue  # the instance went away mid-request: read again
        # 409: a CPU stand-in acted meanwhile; 5xx: the balancer lost the instance.
        assert r.status_code in (200, 409) or r.status_code >= 500, r.text
    raise AssertionError("the match did not end")


@contextlib.asynccontextmanager
async def _sockets(urls: list[str], guests: list[dict[str, str]]) -> AsyncIterator[list[Socket]]:
    async with contextlib.AsyncExitStack() as stack:
        yield [
            await stack.enter_async_context(_socket(url, g["token"]))
            for url, g in zip(urls, guests, strict=True)
        ]


async def _arena_events(database_url: str, arena_id: str) -> list[ar.ArenaEvent]:
    engine = create_engine(database_url)
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                sa.text(
                    "SELECT type, schema_version, data FROM events WHERE stream_id = :s"
                    " ORDER BY stream_version"
                ),
                {"s": f"tournament-{arena_id}"},
            )
            return [
                ar.decode_arena_event(
                    msgspec.json.encode(row.data),
                    type_name=row.type,
                    schema_version=row.schema_version,
                )
                for row in rows
            ]
    finally:
        await engine.dispose()


async def test_four_players_over_two_instances_are_paired_once_each_and_again(
    runners: tuple[Instance, Instance], database_url: str
) -> None:
    """Four guests, sockets spread over A and B: each is told `paired` at one of two
    tables; after the matches end, each is paired again; nobody ever sits twice."""
    a, b = runners
    async with _client(a.http) as ha, _client(b.http) as hb:
        host = await _guest(ha, "host")
        created = await ha.post(
            "/api/tournaments", json={"name": "Live", "starts_in": 0}, headers=_auth(host)
        )
        assert created.status_code == 201, created.text
        arena_id = created.json()["tournament_id"]
        guests = [await _guest(ha, f"g{i}") for i in range(4)]
        ports = [a.port, b.port]
        urls = [f"ws://127.0.0.1:{ports[i % 2]}/ws/tournament/{arena_id}" for i in range(4)]
        async with _sockets(urls, guests) as sockets:
            for i, guest in enumerate(guests):
                http = (ha, hb)[(i + 1) % 2]
                r = await http.post(
                    f"/api/tournaments/{arena_id}/join", json={}, headers=_auth(guest)
                )
                assert r.status_code == 200, r.text
            first = [await s.until(lambda f: f["type"] == "paired", 30) for s in sockets]
            tables = Counter(f["match_id"] for f in first)
            assert sorted(tables.values()) == [2, 2]
            # The tables may form in more than one pass: the view shows both in time.
            frame = await sockets[0].until(
                lambda f: f["type"] == "arena" and len(f["arena"]["running"]) == 2
            )
            assert frame["arena"]["you"]["state"] == "playing"

            by_id = {g["id"]: g for g in guests}

            async def play(i: int, match_id: str) -> None:
                match = (await ha.get(f"/api/matches/{match_id}")).json()
                seated = [by_id[s["player_id"]] for s in match["seats"]]
                await play_to_end((ha, hb)[i % 2], match_id, seated)  # both instances

            await asyncio.gather(*(play(i, m) for i, m in enumerate(tables)))

            def next_pairing(before: str) -> Callable[[dict[str, Any]], bool]:
                return lambda f: f["type"] == "paired" and f["match_id"] != before

            again = [
                await s.until(next_pairing(f["match_id"]), 30)
                for s, f in zip(sockets, first, strict=True)
            ]
            assert len({f["match_id"] for f in again} & set(tables)) == 0
            scored = await sockets[0].until(
                lambda f: f["type"] == "arena" and len(f["arena"]["matches"]) == 2
            )
            lines = scored["arena"]["standings"]
            assert sorted(line["score"] for line in lines) == [0, 0, 2, 2]
    events = await _arena_events(database_url, arena_id)
    state = ar.ArenaState()
    for event in events:
        if isinstance(event, ar.TablesPaired):
            for table in event.tables:
                for player in table.players:
                    # Waiting before this pass: never seated while still at a table.
                    assert state.entrants[player].state == "waiting", player
        ar.apply(state, event)
    paired = [e for e in events if isinstance(e, ar.TablesPaired)]
    assert sum(len(e.tables) for e in paired) == 4
