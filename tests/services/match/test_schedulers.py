"""Deadlines fire exactly once when several service instances run the scheduler at once."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.decider import fold
from services.match.parts import MatchParts
from services.shared.eventstore import EventStore
from services.shared.settings import Settings
from tests.services.conftest import Api
from tests.waiting import wait_until

pytestmark = pytest.mark.anyio


async def _cpu_only_match(api: Api) -> str:
    """A started 2-seat bga match whose human host has left (a CPU plays every seat)."""
    host = await api.player("host")
    party = await api.party(host, seats=2, rules={"preset": "bga"})
    for level in ("easy",):
        r = await api.call(
            "POST", f"/api/parties/{party['id']}/cpus", json={"level": level}, headers=api.h(host)
        )
        assert r.status_code == 200, r.text
    match_id = await api.start(party["id"], host)
    r = await api.call("POST", f"/api/matches/{match_id}/leave", headers=api.h(host))
    assert r.status_code == 200, r.text
    assert r.json()["events"][-1]["data"] == {"type": "SeatStoodIn", "seat": 0, "reason": "left"}
    return match_id


@pytest.mark.slow
async def test_three_scheduler_instances_play_cpu_matches_once_each(
    api: Api, engine: AsyncEngine, tmp_path: Path
) -> None:
    """Three schedulers (each with its own service and state cache, as separate instances
    have) race over the same deadlines; every match ends with a valid, unbroken stream."""
    matches = [await _cpu_only_match(api) for _ in range(3)]
    settings = Settings(data_dir=tmp_path, cpu_delay=0, scheduler=False, scheduler_poll=0.001)
    store = EventStore(engine)
    schedulers = [MatchParts(engine, store, settings).scheduler for _ in range(3)]
    async with anyio.create_task_group() as group:
        for scheduler in schedulers:
            group.start_soon(scheduler.run)

        async def all_finished() -> bool:
            states = [await api.match(m) for m in matches]
            return all(s["status"] == "finished" for s in states)

        await wait_until(all_finished, 240, what="every match to finish", pause=0.05)
        group.cancel_scope.cancel()
    for match_id in matches:
        stream = f"match-{match_id}"
        stored = await store.read_stream(stream)
        assert await store.verify_stream(stream) == len(stored)
        state = fold(e.event for e in stored)
        assert state.status == "finished" and state.server_seed is not None
        actors = {e.metadata.get("actor") for e in stored[3:]}
        assert actors <= {"scheduler:cpu"}, actors  # after the leave, only CPU turns
    async with engine.connect() as conn:
        assert await conn.scalar(sa.text("SELECT count(*) FROM turn_deadlines")) == 0
