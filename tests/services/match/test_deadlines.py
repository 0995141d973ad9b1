"""Turn deadlines: timeouts, the CPU stand-in after three, reclaiming the seat; the CPUs'
pause at the table's CPU speed."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from services.match.app import create_app
from services.match.guests import Player
from tests.services.conftest import Api, _settings

pytestmark = pytest.mark.anyio


async def _types_since(api: Api, match_id: str, version: int) -> list[str]:
    r = await api.call("GET", f"/api/matches/{match_id}/events", params={"from": version})
    return [e["type"] for e in r.json()["events"]]


async def _play_turn(api: Api, match_id: str, players: list[dict[str, str]], seat: int) -> None:
    """Seat `seat` plays its whole turn by hand."""
    for _ in range(200):
        state = await api.match(match_id)
        if state["turn"] != seat or state["status"] != "playing":
            return
        await api.step(match_id, players)
    raise AssertionError("the turn did not end")


async def _time_out(api: Api, match_id: str) -> dict[str, Any]:
    state = await api.match(match_id)
    assert state["deadline"]["kind"] == "turn"
    await api.past_due(match_id)
    fired = await api.scheduler.run_due()
    assert fired >= 1
    return state


async def test_a_timed_out_turn_is_played_by_the_cpu(api: Api) -> None:
    """An expired 30 s turn appends TurnTimedOut and the CPU plays the rest of that turn."""
    match_id, _, _ = await api.duel(turn_limit=30)
    state = await api.match(match_id)
    assert state["turn_limit"] == 30 and state["deadline"]["kind"] == "turn"
    assert await api.scheduler.run_due() == 0  # not due yet: nothing fires
    before = state["version"]
    await _time_out(api, match_id)
    types = await _types_since(api, match_id, before)
    assert types[0] == "TurnTimedOut" and "DieRolled" in types and "TurnEnded" in types
    after = await api.match(match_id)
    assert after["turn"] == 1 and after["deadline"]["kind"] == "turn"
    assert after["seats"][0]["timeouts"] == 1 and after["seats"][0]["stood_in"] is None


async def test_three_timeouts_stand_in_then_reclaim(api: Api) -> None:
    """Three expired turns in a row bring the stand-in; the player's connection coming
    back keeps it (nothing appended); the same token reclaims the seat."""
    match_id, players, _ = await api.duel(turn_limit=30)
    for n in (1, 2, 3):
        state = await _time_out(api, match_id)
        types = await _types_since(api, match_id, state["version"])
        assert types[0] == "TurnTimedOut"
        if n < 3:
            assert "SeatStoodIn" not in types
            await _play_turn(api, match_id, players, 1)
        else:
            assert types[1] == "SeatStoodIn"
    state = await api.match(match_id)
    assert state["seats"][0]["stood_in"] == "timeouts"
    # While stood in, the CPU plays seat 0's turns as soon as they come.
    await _play_turn(api, match_id, players, 1)
    state = await api.match(match_id)
    if state["turn"] == 0:
        assert state["deadline"]["kind"] == "cpu"
        r = await api.call("POST", f"/api/matches/{match_id}/roll", headers=api.h(players[0]))
        assert r.status_code == 409 and r.json()["error"] == "stood_in"
        await api.scheduler.run_due()
    # A socket's hello (`Presence.connected`): a stand-in the player earned stays.
    version = await api.version(match_id)
    presence = api.client.app.state.parts.presence
    assert await presence.connected(match_id, Player(players[0]["id"], "alice")) == 0
    state = await api.match(match_id)
    assert (state["seats"][0]["stood_in"], state["version"]) == ("timeouts", version)
    other = await api.call("POST", f"/api/matches/{match_id}/reclaim", headers=api.h(players[1]))
    assert other.status_code == 409 and other.json()["error"] == "not_stood_in"
    r = await api.call("POST", f"/api/matches/{match_id}/reclaim", headers=api.h(players[0]))
    assert r.status_code == 200, r.text
    assert [e["type"] for e in r.json()["events"]] == ["SeatReclaimed"]
    state = await api.match(match_id)
    assert state["seats"][0]["stood_in"] is None and state["seats"][0]["timeouts"] == 0


@pytest.mark.parametrize(("speed", "seconds"), [("normal", 2.0), ("fast", 0.5)])
async def test_the_cpus_pause_follows_the_tables_cpu_speed(
    engine: AsyncEngine, tmp_path: Path, speed: str, seconds: float
) -> None:
    """With `LUDO_CPU_DELAY` 2 s, a CPU's deadline falls 2 s after the event that gave it
    the turn at a normal table, a quarter of that at a fast one (the party's `cpu_speed`,
    shown by the party)."""
    app = create_app(_settings(tmp_path, cpu_delay=2.0), engine=engine)
    async with AsyncTestClient(app) as client:
        api = Api(client, engine)
        human = await api.player("solo")
        party = await api.party(human, seats=2, cpu_speed=speed)
        assert party["cpu_speed"] == speed
        r = await api.call(
            "POST", f"/api/parties/{party['id']}/cpus", json={"level": "easy"}, headers=api.h(human)
        )
        assert r.status_code == 200, r.text
        match_id = await api.start(party["id"], human)
        await _play_turn(api, match_id, [human, human], 0)
        state = await api.match(match_id)
        assert state["turn"] == 1 and state["deadline"]["kind"] == "cpu"
        events = (await api.call("GET", f"/api/matches/{match_id}/events")).json()["events"]
        due = datetime.fromisoformat(state["deadline"]["due_at"])
        last = datetime.fromisoformat(events[-1]["recorded_at"])
        assert (due - last).total_seconds() == seconds


async def test_the_host_makes_the_cpus_fast_during_the_match(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    """POST /settings {"cpu_speed": "fast"} (the host, mid-match) is shown by the party and
    the next CPU deadline of the match in play is a quarter of LUDO_CPU_DELAY; another value
    is 422 naming the field, and a guest's 403."""
    app = create_app(_settings(tmp_path, cpu_delay=2.0), engine=engine)
    async with AsyncTestClient(app) as client:
        api = Api(client, engine)
        match_id, players, party_id = await api.duel()
        url = f"/api/parties/{party_id}/settings"
        r = await api.call("POST", url, json={"cpu_speed": "fast"}, headers=api.h(players[1]))
        assert (r.status_code, r.json()["error"]) == (403, "not_host"), r.text
        r = await api.call("POST", url, json={"cpu_speed": "slow"}, headers=api.h(players[0]))
        assert r.status_code == 422 and r.json()["field"] == "cpu_speed", r.text
        r = await api.call("POST", url, json={"cpu_speed": "fast"}, headers=api.h(players[0]))
        assert (r.status_code, r.json()["cpu_speed"]) == (200, "fast"), r.text
        # Seat 1 leaves: a CPU stands in, and plays at the table's new speed.
        r = await api.call("POST", f"/api/matches/{match_id}/leave", headers=api.h(players[1]))
        assert r.status_code == 200, r.text
        await _play_turn(api, match_id, players, 0)
        state = await api.match(match_id)
        assert state["turn"] == 1 and state["deadline"]["kind"] == "cpu"
        events = (await api.call("GET", f"/api/matches/{match_id}/events")).json()["events"]
        due = datetime.fromisoformat(state["deadline"]["due_at"])
        last = datetime.fromisoformat(events[-1]["recorded_at"])
        assert (due - last).total_seconds() == 0.5
