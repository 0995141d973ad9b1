"""Identical concurrent requests under one Idempotency-Key all get the first outcome.

`_copies` sends the copies at once and, so that every round meets the race that used to
answer 409, holds each later copy until the first copy has committed: at its append (the
later copies decided on the state before the first one's events, and lose the race at
the append) or, for match commands, at its read (the later copies decide on the state the
first one already changed, and are refused there). Either way each must find the first
outcome, which is what real traffic's interleavings need. The app
runs under uvicorn (the live tests' `Instance`), so the copies really run side by side.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from domain import party as pd
from services.match.app import create_app
from services.match.play.reads import MatchReads
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.pg_waits import backend_pid, wait_until_blocked
from tests.services.conftest import Api
from tests.services.match.test_live import Instance

pytestmark = pytest.mark.anyio

COPIES = 10
ROUNDS = 8


class Served(Api):
    """`Api` over real HTTP to the app under uvicorn, with the app's event store and the
    service's match reads."""

    store: EventStore
    reads: MatchReads


@pytest.fixture
async def served(database_url: str, engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Served]:
    """The match service under uvicorn on the test's database, deadline worker off."""
    settings = Settings(data_dir=tmp_path, database_url=database_url, cpu_delay=0, scheduler=False)
    app = create_app(settings)
    with Instance(settings, app=app) as instance:
        async with httpx.AsyncClient(base_url=instance.http, timeout=30) as client:
            api = Served(client, engine)  # type: ignore[arg-type]
            api.store = app.state.parts.store
            api.reads = app.state.parts.matches
            yield api


async def _copies(
    api: Served, method: str, url: str, *, gate: str = "append", **kwargs: Any
) -> list[Any]:
    """`COPIES` identical requests sent at once; their responses (see `_at_once`)."""
    return await _at_once(api, [(method, url, kwargs)] * COPIES, gate=gate)


async def _at_once(
    api: Served, calls: list[tuple[str, str, dict[str, Any]]], *, gate: str = "append"
) -> list[Any]:
    """The requests sent at once; their responses. Every request reaches the gate before
    the first to get there goes on, and the others pass it only once that one has
    committed. At `gate="append"` each has decided on the state before the winner's events
    (and loses at its append); at `gate="read"` (match commands: where the state to decide
    on is taken, read or trusted) each later one gets the state the winner changed (and its
    command is refused there)."""
    count = len(calls)
    store = api.store
    append, notify = store.append, store.notify
    reads = api.reads
    read = reads.for_command
    committed, all_arrived = anyio.Event(), anyio.Event()
    arrived = 0

    async def at_gate() -> None:
        nonlocal arrived
        arrived += 1
        if arrived == count:
            all_arrived.set()
        with anyio.fail_after(10):
            # The first copy goes on once every copy has arrived; the others once it is in.
            await (all_arrived if arrived == 1 else committed).wait()

    async def gated_read(*args: Any, **kw: Any) -> Any:
        await at_gate()
        return await read(*args, **kw)

    async def gated_append(*args: Any, **kw: Any) -> Any:
        # A start appends twice: the party's events, then the new match's first ones in
        # the same transaction; only the first is the race.
        new_match = args[0].startswith("match-") and args[1] == 0
        if gate == "append" and not new_match:
            await at_gate()
        result = await append(*args, **kw)
        if kw.get("conn") is None:  # committed when it returns (else: at `notify`)
            committed.set()
        return result

    async def notify_then_open(*args: Any, **kw: Any) -> Any:
        await notify(*args, **kw)  # called after the commit
        committed.set()

    store.append, store.notify = gated_append, notify_then_open  # type: ignore[method-assign]
    if gate == "read":
        reads.for_command = gated_read  # type: ignore[method-assign]
    responses: list[Any] = []

    async def one(method: str, url: str, kwargs: dict[str, Any]) -> None:
        responses.append(await api.call(method, url, **kwargs))

    try:
        async with anyio.create_task_group() as tg:
            for method, url, kwargs in calls:
                tg.start_soon(one, method, url, kwargs)
    finally:
        store.append, store.notify = append, notify  # type: ignore[method-assign]
        reads.for_command = read  # type: ignore[method-assign]
    return responses


@pytest.mark.parametrize("gate", ["append", "read"])
async def test_concurrent_identical_match_commands_get_the_first_outcome(
    served: Served, gate: str
) -> None:
    """Ten identical rolls or moves sent at once under one key, the later ones losing at
    the append or deciding on the winner's state: all 200, one original, the others
    `duplicate: true` with the same events, and the events appended once."""

    match_id, players, _ = await served.duel()
    stream = f"match-{match_id}"
    for n in range(ROUNDS):
        state = await served.match(match_id)
        if state["status"] == "finished":
            break
        headers = served.h(players[state["turn"]], **{"Idempotency-Key": f"race-{n}"})
        if state["phase"] == "roll":
            url, body = f"/api/matches/{match_id}/roll", None
        else:
            moves = (await served.call("GET", f"/api/matches/{match_id}/moves")).json()["moves"]
            url, body = f"/api/matches/{match_id}/move", {"piece": moves[0]["piece"]}
        before = await served.stream_length(stream)
        responses = await _copies(served, "POST", url, json=body, headers=headers, gate=gate)
        assert [r.status_code for r in responses] == [200] * COPIES, [r.text for r in responses]
        bodies = [r.json() for r in responses]
        assert sorted(b["duplicate"] for b in bodies) == [False] + [True] * (COPIES - 1)
        first = next(b for b in bodies if not b["duplicate"])
        for b in bodies:
            assert b["events"] == first["events"] and b["version"] == first["version"]
        assert await served.stream_length(stream) == before + len(first["events"])


async def test_concurrent_identical_party_commands_get_the_first_outcome(
    served: Served,
) -> None:
    """Ten identical joins, CPU seatings and starts sent at once under one key: all succeed
    with the same party, and each appends once."""
    host = await served.player("host")
    guest = await served.player("guest")
    for n in range(ROUNDS // 2):
        party = await served.party(host, seats=4, rules={"preset": "bga"})
        pid, stream = party["id"], f"party-{party['id']}"

        join = await _copies(
            served,
            "POST",
            f"/api/parties/{pid}/join",
            json={"seat": None},
            headers=served.h(guest, **{"Idempotency-Key": f"join-{n}"}),
        )
        assert [r.status_code for r in join] == [200] * COPIES, [r.text for r in join]
        assert {r.json()["seats"][1]["player_id"] for r in join} == {guest["id"]}

        before = await served.stream_length(stream)
        cpu = await _copies(
            served,
            "POST",
            f"/api/parties/{pid}/cpus",
            json={"level": "easy", "seat": None},
            headers=served.h(host, **{"Idempotency-Key": f"cpu-{n}"}),
        )
        assert [r.status_code for r in cpu] == [200] * COPIES, [r.text for r in cpu]
        assert await served.stream_length(stream) == before + 1
        seated = await served.call("GET", f"/api/parties/{pid}")
        assert [s["cpu"] is not None for s in seated.json()["seats"]] == [
            False,
            False,
            True,
            False,
        ]

        await served.call(
            "POST", f"/api/parties/{pid}/cpus", json={"level": "easy"}, headers=served.h(host)
        )
        start = await _copies(
            served,
            "POST",
            f"/api/parties/{pid}/start",
            headers=served.h(host, **{"Idempotency-Key": f"start-{n}"}),
        )
        assert [r.status_code for r in start] == [201] * COPIES, [r.text for r in start]
        assert len({r.json()["match_id"] for r in start}) == 1


async def test_concurrent_different_party_commands_all_succeed(served: Served) -> None:
    """Three CPUs seated at once in three seats (three keys), each request deciding on the
    state before the others committed: all succeed, each decided again on the state it
    lost to, and the party has the three CPUs (it used to answer 409 to two of them)."""
    host = await served.player("host")
    party = await served.party(host, seats=4, rules={"preset": "bga"})
    pid, stream = party["id"], f"party-{party['id']}"
    before = await served.stream_length(stream)
    calls = [
        (
            "POST",
            f"/api/parties/{pid}/cpus",
            {
                "json": {"level": "easy", "seat": seat},
                "headers": served.h(host, **{"Idempotency-Key": f"cpu-seat-{seat}"}),
            },
        )
        for seat in (1, 2, 3)
    ]
    answers = await _at_once(served, calls)
    assert [r.status_code for r in answers] == [200] * 3, [r.text for r in answers]
    assert await served.stream_length(stream) == before + 3
    seats = (await served.call("GET", f"/api/parties/{pid}")).json()["seats"]
    assert [s["cpu"] for s in seats] == [None, "easy", "easy", "easy"]


async def test_a_party_command_waits_for_a_writer_holding_the_party_then_loses_cleanly(
    served: Served, engine: AsyncEngine
) -> None:
    """Every writer of a party takes its lobby row before its events (a start in its
    transaction, a command in its append): a join arriving while another writer holds the
    party waits for it, and once that writer's events are in, loses the race without a
    deadlock, is decided again on the new state and succeeds after them."""
    host = await served.player("host")
    guest = await served.player("guest")
    party = await served.party(host, seats=4, rules={"preset": "bga"})
    pid, stream = party["id"], f"party-{party['id']}"
    stored = await served.store.read_stream(stream)
    state = pd.fold([pd.decode_party_event(e.data) for e in stored])
    cpu = pd.decide(pd.AddCpu(player_id=host["id"], level="easy"), state)
    assert isinstance(cpu, list)
    async with engine.connect() as conn:
        async with conn.begin():
            holder = await backend_pid(conn)
            # What a start does first, in its party append: the listing row, then events.
            await conn.exec_driver_sql(
                "SELECT 1 FROM parties WHERE party_id = %(p)s FOR UPDATE", {"p": pid}
            )
            join = asyncio.create_task(
                served.call(
                    "POST", f"/api/parties/{pid}/join", json={"seat": None}, headers=served.h(guest)
                )
            )
            await wait_until_blocked(engine, by=holder)
            await served.store.append(
                stream, len(stored), cpu, prev_hash=stored[-1].hash, conn=conn
            )
        response = await asyncio.wait_for(join, 30)
    assert response.status_code == 200, response.text
    seats = response.json()["seats"]
    assert seats[1]["cpu"] == "easy" and seats[2]["player_id"] == guest["id"]
    events = await served.store.read_stream(stream)
    assert [e.type for e in events[len(stored) :]] == ["CpuSeated", "SeatTaken"]
