"""Replays over HTTP: the replay file, the audit, the viewer's steps and the operator's
dispute report (with the connection log of migration 0005), on a real PostgreSQL."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import sqlalchemy as sa
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.dice import die_for_roll
from domain.events import decode_event
from replays.format import load_replay
from replays.verify import verify_replay
from services.match.app import create_app
from services.match.guests import Player
from services.match.parts import MatchParts
from services.shared.settings import Settings
from tests.services.conftest import Api

pytestmark = pytest.mark.anyio

TOKEN = "operator-secret"
OPERATOR = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
async def op_api(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[Api]:
    """The app with an operator token set (deadline worker off, CPU delay 0)."""
    settings = Settings(
        data_dir=tmp_path, cpu_delay=0, scheduler=False, pairing=False, operator_token=TOKEN
    )
    async with AsyncTestClient(create_app(settings, engine=engine)) as client:
        yield Api(client, engine)


def service_of(api: Api) -> MatchParts:
    service: MatchParts = api.client.app.state.parts
    return service


async def advance(api: Api, match_id: str, players: list[dict[str, str]]) -> dict[str, Any]:
    """One step of the match: the human to act plays, or the due CPU deadline fires."""
    state = await api.match(match_id)
    if state["status"] == "finished":
        return state
    seat = state["turn"]
    info = state["seats"][seat]
    if info["cpu"] is not None or info["stood_in"] is not None:
        assert await api.scheduler.run_due() >= 1
    else:
        await api.step(match_id, players)
    return state


async def finish(api: Api, match_id: str, players: list[dict[str, str]]) -> None:
    for _ in range(5000):
        if (await advance(api, match_id, players))["status"] == "finished":
            return
    raise AssertionError("the match did not end")


async def test_replay_file_round_trips_and_verifies(api: Api) -> None:
    """A match's replay file downloads live (no seed) and after the end, and verifies as written."""
    match_id, players, _ = await api.duel()
    live = await api.call("GET", f"/api/matches/{match_id}/replay")
    assert live.status_code == 200
    assert load_replay(live.content).server_seed is None  # not revealed yet
    await api.play_to_end(match_id, players)

    r = await api.call("GET", f"/api/matches/{match_id}/replay")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("application/json")
    assert r.headers["content-disposition"] == (
        f'attachment; filename="match-{match_id}.ludo-replay.json"'
    )
    replay = load_replay(r.content)
    assert replay.match_id == match_id and replay.stream_id == f"match-{match_id}"
    assert len(replay.events) == await api.stream_length(f"match-{match_id}")
    assert replay.server_seed is not None and replay.placements is not None
    verdict = verify_replay(replay)
    assert verdict.ok, verdict.failure
    assert verdict.finished and verdict.rolls > 0


async def test_audit_passes_then_names_the_altered_event(api: Api) -> None:
    """The audit of a played match holds, and names the roll a superuser altered in the table."""
    match_id, players, _ = await api.duel()
    await api.play_to_end(match_id, players)
    r = await api.call("GET", f"/api/matches/{match_id}/audit")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["ok"] is True and body["failure"] is None and body["finished"] is True
    assert body["stream_id"] == f"match-{match_id}" and body["rolls"] > 0

    # Tamper with one roll as the superuser would have to: with the triggers disabled.
    stream = f"match-{match_id}"
    async with api.engine.begin() as conn:
        row = (
            await conn.execute(
                sa.text(
                    "SELECT stream_version, data::text AS data FROM events WHERE stream_id = :s"
                    " AND type = 'DieRolled' ORDER BY stream_version LIMIT 1 OFFSET 2"
                ),
                {"s": stream},
            )
        ).one()
        data = msgspec.json.decode(row.data)
        data["value"] = data["value"] % 6 + 1
        await conn.execute(sa.text("ALTER TABLE events DISABLE TRIGGER USER"))
        await conn.execute(
            sa.text(
                "UPDATE events SET data = CAST(:d AS json) "
                "WHERE stream_id = :s AND stream_version = :v"
            ),
            {"d": msgspec.json.encode(data).decode(), "s": stream, "v": row.stream_version},
        )
        await conn.execute(sa.text("ALTER TABLE events ENABLE TRIGGER USER"))

    r = await api.call("GET", f"/api/matches/{match_id}/audit")
    assert r.status_code == 200
    body = r.json()
    assert body["ok"] is False
    failure = body["failure"]
    assert failure["version"] == row.stream_version
    assert failure["event_type"] == "DieRolled"
    assert failure["check"] == "hash_chain" and failure["message"]


@pytest.mark.slow
async def test_steps_give_the_board_options_and_fairness(api: Api) -> None:
    """The viewer's model of a duel: board, seats, dice, choices and each event's fields."""
    match_id, players, _ = await api.duel(rules={"preset": "standard"})
    live = (await api.call("GET", f"/api/matches/{match_id}/steps")).json()
    assert live["status"] == "playing" and live["fairness"]["server_seed"] is None
    await api.play_to_end(match_id, players)
    r = await api.call("GET", f"/api/matches/{match_id}/steps")
    assert r.status_code == 200, r.text
    model = r.json()
    board = model["board"]
    # Two players on the cross board sit opposite: yellow and red, starts 0 and 26.
    assert board["kind"] == "cross" and board["length"] == 52 and board["arms"] == 4
    assert board["colours"] == ["yellow", "red"] and board["starts"] == [0, 26]
    assert (board["last_track"], board["home"], board["goal"]) == (50, 51, 56)
    assert board["safe"] == [0, 8, 13, 21, 26, 34, 39, 47]
    assert [s["name"] for s in model["seats"]] == ["alice", "bob"]

    steps = model["steps"]
    assert len(steps) == await api.stream_length(f"match-{match_id}")
    assert [s["version"] for s in steps] == list(range(len(steps)))
    assert steps[0]["type"] == "MatchCreated" and steps[-1]["type"] == "SeedRevealed"
    assert all(s["text"] for s in steps)
    assert all(len(s["pieces"]) == 2 and len(s["pieces"][0]) == 4 for s in steps)

    fairness = model["fairness"]
    seed = bytes.fromhex(fairness["server_seed"])
    assert hashlib.sha256(seed).hexdigest() == fairness["seed_hash"]
    rolls = [s for s in steps if s["type"] == "DieRolled"]
    assert [s["n"] for s in rolls] == list(range(len(rolls)))
    assert all(die_for_roll(seed, fairness["client_seed"], s["n"]) == s["die"] for s in rolls)

    chose = [s for s in rolls if s["options"]]
    assert chose, "some roll offered a choice"
    for s in chose:
        assert s["chosen"] in {o["piece"] for o in s["options"]}
        assert set(s["options"][0]) == {"piece", "from", "to", "captures"}
        moved = steps[s["version"] + 1]
        assert moved["type"] == "PieceMoved" and moved["chosen"] == s["chosen"]
        assert moved["by"] == "player" and moved["pieces"] != s["pieces"]
    # A roll with no legal move offers an empty choice; a third six in a row is passed
    # at once and offers none at all.
    for s in rolls:
        after = steps[s["version"] + 1]
        if after["type"] == "RollPassed":
            expected: list[Any] | None = None if "third six" in after["text"] else []
            assert s["options"] == expected and s["chosen"] is None
    captures = [s for s in steps if s["captures"]]
    assert all("capture" in s["marks"] for s in captures)
    assert "finish" in steps[-2]["marks"]  # MatchFinished

    # The fields the viewer words an event from are the events' own, null elsewhere.
    events = load_replay((await api.call("GET", f"/api/matches/{match_id}/replay")).content).events
    fields = {
        "PieceMoved": {"from": "frm", "to": "to", "bonus": "bonus"},
        "RollPassed": {"reason": "reason", "retry": "retry"},
        "SeatStoodIn": {"reason": "reason"},
        "TurnEnded": {"next_seat": "next_seat"},
        "PlayerFinished": {"place": "place"},
    }
    extra = ("from", "to", "bonus", "reason", "retry", "next_seat", "place")
    for step, event in zip(steps, events, strict=True):
        mine = fields.get(step["type"], {})
        decoded = decode_event(
            event.data.encode(), type_name=event.type, schema_version=event.schema_version
        )
        assert step["type"] == type(decoded).__name__
        assert {k: step[k] for k in mine} == {k: getattr(decoded, a) for k, a in mine.items()}
        assert all(step[k] is None for k in extra if k not in mine), step
    assert {s["type"] for s in steps} >= {"PieceMoved", "TurnEnded", "PlayerFinished"}


async def test_report_needs_the_operator_token(op_api: Api, api: Api) -> None:
    """The dispute report needs the operator's bearer token; with none configured, nobody."""
    match_id, _, _ = await op_api.duel()
    url = f"/api/matches/{match_id}/report"
    assert (await op_api.call("GET", url)).status_code == 401
    wrong = await op_api.call("GET", url, headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["error"] == "unauthorized"
    basic = await op_api.call("GET", url, headers={"Authorization": f"Basic {TOKEN}"})
    assert basic.status_code == 401
    assert (await op_api.call("GET", url, headers=OPERATOR)).status_code == 200
    # With no LUDO_OPERATOR_TOKEN configured, the report is refused to everyone.
    other_id, _, _ = await api.duel()
    refused = await api.call("GET", f"/api/matches/{other_id}/report", headers=OPERATOR)
    assert refused.status_code == 401


@pytest.mark.slow
async def test_report_shows_turns_choices_timeouts_stand_ins_and_connections(
    op_api: Api,
) -> None:
    """The dispute report shows turns, choices, timeouts, stand-ins and connections."""
    api = op_api
    service = service_of(api)
    alice = await api.player("alice")
    bob = await api.player("bob")
    party = await api.party(alice, seats=3, rules={"preset": "bga"}, turn_limit=30)
    r = await api.call("POST", f"/api/parties/{party['id']}/join", json={}, headers=api.h(bob))
    assert r.status_code == 200, r.text
    r = await api.call(
        "POST",
        f"/api/parties/{party['id']}/cpus",
        json={"level": "easy"},
        headers=api.h(alice),
    )
    assert r.status_code == 200, r.text
    match_id = await api.start(party["id"], alice)
    players = [alice, bob]

    # Both guests open a live connection; alice's turn times out; alice's socket closes.
    assert await service.presence.connected(match_id, Player(alice["id"], "alice")) == 0
    assert await service.presence.connected(match_id, Player(bob["id"], "bob")) == 1
    await api.past_due(match_id)
    assert await api.scheduler.run_due() >= 1
    await service.presence.disconnected(match_id, 0)
    state = await api.match(match_id)
    assert state["turn"] == 1 and state["seats"][0]["timeouts"] == 1
    # bob plays his turn, the CPU seat its own; alice leaves, the stand-in plays for her.
    while (await api.match(match_id))["turn"] != 0:
        await advance(api, match_id, players)
    r = await api.call("POST", f"/api/matches/{match_id}/leave", headers=api.h(alice))
    assert r.status_code == 200, r.text
    while (await api.match(match_id))["turn"] == 0:
        assert await api.scheduler.run_due() >= 1
    r = await api.call("POST", f"/api/matches/{match_id}/reclaim", headers=api.h(alice))
    assert r.status_code == 200, r.text
    await finish(api, match_id, players)

    async with api.engine.connect() as conn:
        logged = (
            await conn.execute(
                sa.text("SELECT seat, kind FROM seat_connections WHERE stream_id = :s ORDER BY id"),
                {"s": f"match-{match_id}"},
            )
        ).all()
    assert [tuple(row) for row in logged] == [
        (0, "connected"),
        (1, "connected"),
        (0, "disconnected"),
    ]

    r = await api.call("GET", f"/api/matches/{match_id}/report", headers=OPERATOR)
    assert r.status_code == 200, r.text
    report = r.json()
    # The match's own placements: the dice are random, so the two who did not finish may
    # share a place (docs/rules.md#ties-and-draws: equal on goal, out and progress), [1, 2, 2].
    assert report["status"] == "finished"
    assert report["placements"] == (await api.match(match_id))["placements"]
    assert sorted(report["placements"]) in ([1, 2, 3], [1, 2, 2])
    assert [e["type"] for e in report["prologue"]][:2] == ["MatchCreated", "MatchStarted"]
    assert [e["type"] for e in report["epilogue"]] == ["SeedRevealed"]
    turns = report["turns"]
    assert [t["index"] for t in turns] == list(range(len(turns)))
    assert [t["seat"] for t in turns[:3]] == [0, 1, 2]
    for t in turns:
        assert t["started_at"] <= t["ended_at"] and t["seconds"] >= 0
        assert t["name"] == ["alice", "bob", "cpu"][t["seat"]] or t["seat"] == 2

    first = turns[0]
    # The turn began at the start; both sockets opened in it, before the timeout.
    assert [e["kind"] for e in first["entries"][:2]] == ["connected", "connected"]
    events = [e for e in first["entries"] if e["kind"] == "event"]
    assert first["timeouts"] == 1 and events[0]["type"] == "TurnTimedOut"
    assert events[0]["by"] == "timeout" and "timeout" in events[0]["marks"]
    assert {r["chosen_by"] for r in first["rolls"] if r["chosen"]} <= {"timeout"}
    assert all(r["rolled_by"] == "timeout" for r in first["rolls"])
    kinds = [e["kind"] for t in turns for e in t["entries"]] + [
        e["kind"] for e in report["prologue"] + report["epilogue"]
    ]
    assert kinds.count("connected") == 2 and kinds.count("disconnected") == 1
    assert any(
        e["kind"] == "disconnected" and e["seat"] == 0 and "closed" in e["text"]
        for e in first["entries"] + turns[1]["entries"]
    )

    stood = next(t for t in turns if "left" in t["stand_ins"])
    assert stood["seat"] == 0
    left_turn = next(t for t in turns[stood["index"] :] if t["seat"] == 0 and t["rolls"])
    assert {r["rolled_by"] for r in left_turn["rolls"]} == {"stand-in"}
    choosers = {r["chosen_by"] for t in turns for r in t["rolls"] if r["chosen"]}
    assert {"player", "cpu", "stand-in"} <= choosers
    cpu_turns = [t for t in turns if t["seat"] == 2]
    assert cpu_turns and all(r["rolled_by"] == "cpu" for t in cpu_turns for r in t["rolls"])
    with_options = [r for t in turns for r in t["rolls"] if r["options"]]
    assert with_options and all(
        r["chosen"] is not None and r["chosen"] in r["options"] for r in with_options
    )
    passed = [r for t in turns for r in t["rolls"] if r["passed"]]
    assert all(r["chosen"] is None and not r["options"] for r in passed)

    summary = {s["seat"]: s for s in report["summary"]}
    assert summary[0]["timeouts"] == 1 and summary[0]["stand_ins"] == 1
    assert summary[0]["reclaims"] == 1
    assert (summary[0]["connects"], summary[0]["disconnects"]) == (1, 1)
    assert (summary[1]["connects"], summary[1]["disconnects"]) == (1, 0)
    assert summary[2]["cpu"] == "easy" and summary[2]["connects"] == 0
    for seat, s in summary.items():
        assert s["turns"] == sum(1 for t in turns if t["seat"] == seat)
        assert s["max_seconds"] >= s["mean_seconds"] >= 0
        assert s["place"] == report["placements"][seat]


async def test_the_connection_log_is_append_only(api: Api) -> None:
    """Nobody can update or delete a line of the connection log."""
    match_id, players, _ = await api.duel()
    await service_of(api).presence.connected(match_id, Player(players[0]["id"], "alice"))
    for statement in ("UPDATE seat_connections SET seat = 1", "DELETE FROM seat_connections"):
        with pytest.raises(sa.exc.DBAPIError, match="append-only"):
            async with api.engine.begin() as conn:
                await conn.execute(sa.text(statement))


@pytest.mark.parametrize("what", ["replay", "audit", "steps"])
async def test_unknown_and_malformed_ids_are_404(api: Api, what: str) -> None:
    """A malformed id, an unknown match or a party's id gets 404 not_found from the replay reads."""
    _, _, party_id = await api.duel()
    for bad in ("not-a-uuid", str(uuid.uuid4()), party_id):
        r = await api.call("GET", f"/api/matches/{bad}/{what}")
        assert r.status_code == 404, (bad, r.text)
        assert r.json()["error"] == "not_found"


async def test_report_of_an_unknown_match_is_404_for_the_operator(op_api: Api) -> None:
    """The operator asking for the report of an unknown match gets 404 (a stranger 401 first)."""
    for bad in ("not-a-uuid", str(uuid.uuid4())):
        url = f"/api/matches/{bad}/report"
        assert (await op_api.call("GET", url)).status_code == 401  # the token first
        r = await op_api.call("GET", url, headers=OPERATOR)
        assert r.status_code == 404 and r.json()["error"] == "not_found"


async def test_pages_are_served_under_a_strict_csp(api: Api) -> None:
    """The viewer and report pages come under a CSP with hashed scripts and no external resource."""
    match_id, _, _ = await api.duel()
    for page in ("replay", "report"):
        r = await api.call("GET", f"/{page}/{match_id}")
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
        csp = r.headers["content-security-policy"]
        assert "default-src 'none'" in csp and "'unsafe-inline'" not in csp
        assert "script-src 'nonce-" in csp and "connect-src 'self'" in csp
        # No external resource: the only URL is the SVG namespace.
        assert set(re.findall(r"https?://[^\s\"'`]+", r.text)) <= {"http://www.w3.org/2000/svg"}
        for bad in ("nope", str(uuid.uuid4())):
            missing = await api.call("GET", f"/{page}/{bad}")
            assert missing.status_code == 404


async def test_openapi_documents_the_replay_endpoints(api: Api) -> None:
    """The OpenAPI names the replay operations with their 404s, the report with its security."""
    schema = (await api.call("GET", "/schema/openapi.json")).json()
    ops = {
        op["operationId"]: (path, op)
        for path, item in schema["paths"].items()
        for op in item.values()
        if isinstance(op, dict) and "operationId" in op
    }
    for name in ("exportReplay", "auditMatch", "getReplaySteps", "getDisputeReport"):
        assert name in ops, name
        assert "404" in ops[name][1]["responses"]
    assert ops["getDisputeReport"][1]["security"] == [{"operator": []}]
    assert "401" in ops["getDisputeReport"][1]["responses"]
    assert "operator" in schema["components"]["securitySchemes"]
    assert ops["exportReplay"][0] == "/api/matches/{match_id}/replay"
