"""The stack's floor (`benchmarks/stack_floor.py`): a bare Litestar app under the
service's uvicorn options that checks a bearer token kept in memory and INSERTs one event
row per command, over HTTP and over a socket. Figures are not checked (the machine decides
them), only what the floor does for each command and that the bench's rounds add up."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import psycopg
import pytest
from websockets.asyncio.client import connect

from benchmarks.http1 import Http1
from benchmarks.service_process import serve
from benchmarks.stack_floor import FACTORY, multiples
from services.shared.database import libpq_url


def _rows(database_url: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(libpq_url(database_url)) as conn:
        return conn.execute(
            "SELECT stream_id, stream_version, type FROM floor_events ORDER BY global_position"
        ).fetchall()


@pytest.mark.slow
def test_the_floor_writes_one_row_per_authenticated_command(database_url: str) -> None:
    """A command with a token the floor gave is answered with one new event row (HTTP and
    socket alike); one with an unknown token is refused and writes nothing."""
    with serve(database_url, factory=FACTORY, ready="/ready") as (base, _pid):

        async def play() -> tuple[int, list[int], list[bytes]]:
            async with Http1(base) as client:
                status, body = await client.request("POST", "/floor/players")
                assert status == 201
                token = msgspec.json.decode(body)["token"]
                refused, _ = await client.request(
                    "POST",
                    "/floor/commands",
                    json={"piece": 0},
                    headers={"Authorization": "Bearer nope"},
                )
                answered = []
                for _ in range(2):
                    status, body = await client.request(
                        "POST",
                        "/floor/commands",
                        json={"piece": 0},
                        headers={"Authorization": f"Bearer {token}"},
                    )
                    assert status == 200
                    answered.append(msgspec.json.decode(body)["version"])
            async with connect("ws" + base.removeprefix("http") + "/ws/floor") as ws:
                await ws.send(msgspec.json.encode({"type": "hello", "token": token}).decode())
                frames = [await ws.recv(decode=False)]
                await ws.send('{"type":"roll","id":"b1"}')
                frames.append(await ws.recv(decode=False))
            return refused, answered, frames

        refused, answered, frames = asyncio.run(play())
    assert refused == 401
    assert answered == [0, 1]
    assert frames == [b'{"type":"hello"}', b'{"type":"result","id":"b1","version":2}']
    assert _rows(database_url) == [("match-floor-0", n, "DieRolled") for n in range(3)]


def test_the_multiple_is_the_service_cpu_over_the_floors() -> None:
    """Per round the service's CPU per command over the floor's; the figure is their
    median (and the medians' own ratio beside it), held against the transport's target."""
    rows: list[dict[str, Any]] = [
        {"round": n, "service": {"cpu_ms_per_command": s}, "floor": {"cpu_ms_per_command": f}}
        for n, (s, f) in enumerate([(0.6, 0.4), (0.9, 0.5), (0.5, 0.4)], start=1)
    ]
    http = multiples(rows, "http")
    assert http["multiple_paired"] == 1.5  # of 1.5, 1.8 and 1.25
    assert http["multiple"] == 1.5  # 0.6 / 0.4
    assert http["met"] is True and http["target"] == "<= 1.5"
    rows[0]["service"]["cpu_ms_per_command"] = 0.8
    assert multiples(rows, "http")["met"] is False
    assert multiples(rows, "socket")["met"] is True
