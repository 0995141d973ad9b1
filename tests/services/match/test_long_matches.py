"""A long match read in pieces: the state served is the fold of every event, the log comes a
page at a time from its newest events, the match socket's catch-up can be bounded to the
last events (the rest named, not sent) and stays exact, and the replay's steps come by
range. On a real PostgreSQL, the matches stored as `benchmarks/long_match.py` stores them
for `ludo bench site` (2,000 events and more in a few milliseconds)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy.ext.asyncio import AsyncEngine

from benchmarks.long_match import long_match, store_match
from domain.decider import MatchState, apply, fold
from domain.events import Event, SeatSpec
from services.match.app import create_app
from services.match.play.reads import NO_ROW
from services.match.play.routes import LOG_PAGE, MAX_LOG_PAGE
from services.match.play.socket import MAX_TAIL
from services.match.play.views import match_view, moves_view
from services.match.replays.routes import MAX_STEPS_PAGE
from services.shared.settings import Settings
from tests.services.conftest import Api
from tests.services.match.test_live import Instance, _client, _settings
from tests.services.match.test_sockets import _socket

pytestmark = pytest.mark.anyio

LONG = 2000
MATCH = "6c0d7a43-6f55-4a52-9a3e-2f0b1c8d9e01"


def _json(value: Any) -> Any:
    """`value` as a client reads it (through JSON)."""
    return msgspec.json.decode(msgspec.json.encode(value))


async def _stored(engine: AsyncEngine, events: list[Event], seed: bytes) -> str:
    await store_match(engine, MATCH, events, seed)
    return MATCH


# ----------------------------------------------------------------- the state and the log


async def test_the_state_served_of_a_long_match_is_the_fold_of_all_its_events(api: Api) -> None:
    """`GET /api/matches/{id}` and `/moves` of a 2,000-event match in play, and of a
    finished one, are the views of the fold of every stored event (none skipped)."""
    for finished in (False, True):
        events, seed = long_match(LONG, finished=finished)
        match_id = MATCH if not finished else "0f1e2d3c-4b5a-4968-8776-655443322110"
        await store_match(api.engine, match_id, events, seed)
        whole = fold(events)
        assert whole.version == len(events) >= LONG
        served = await api.match(match_id)
        assert served == _json(match_view(match_id, whole, NO_ROW, None))
        moves = (await api.call("GET", f"/api/matches/{match_id}/moves")).json()
        assert moves == _json(moves_view(whole))
        assert served["status"] == ("finished" if finished else "playing")


async def test_the_log_pages_back_from_the_newest_events_to_the_first(api: Api) -> None:
    """`/log` with no cursor is the last 50 events; each page's `older` is the next page's
    `before`, down to the first event (`older` null); the pages together are `/events`."""
    events, seed = long_match(LONG)
    match_id = await _stored(api.engine, events, seed)
    every = (await api.call("GET", f"/api/matches/{match_id}/events")).json()["events"]
    first = (await api.call("GET", f"/api/matches/{match_id}/log")).json()
    assert first["version"] == len(events)
    assert [e["version"] for e in first["events"]] == list(
        range(len(events) - LOG_PAGE, len(events))
    )
    assert first["older"] == len(events) - LOG_PAGE
    pages = [first["events"]]
    older = first["older"]
    while older is not None:
        page = (
            await api.call(
                "GET", f"/api/matches/{match_id}/log?before={older}&limit={MAX_LOG_PAGE}"
            )
        ).json()
        assert [e["version"] for e in page["events"]] == list(
            range(max(0, older - MAX_LOG_PAGE), older)
        )
        pages.insert(0, page["events"])
        older = page["older"]
    assert [e for page in pages for e in page] == every
    nothing = (await api.call("GET", f"/api/matches/{match_id}/log?before=0")).json()
    assert nothing == {"events": [], "version": len(events), "older": None}


async def test_a_bad_log_cursor_is_a_4xx_that_names_it(api: Api) -> None:
    """A cursor below 0 or past the head, or not a number, and a limit out of 1..200, are 422
    naming the parameter; an unknown or malformed match is 404."""
    events, seed = long_match(100)
    match_id = await _stored(api.engine, events, seed)
    head = len(events)
    for query, field in (
        ("before=-1", "before"),
        (f"before={head + 1}", "before"),
        ("before=ten", "before"),
        ("limit=0", "limit"),
        (f"limit={MAX_LOG_PAGE + 1}", "limit"),
        ("limit=many", "limit"),
    ):
        r = await api.call("GET", f"/api/matches/{match_id}/log?{query}")
        assert r.status_code == 422, (query, r.text)
        assert r.json()["error"] == "invalid" and r.json()["field"] == field, query
    at_head = await api.call("GET", f"/api/matches/{match_id}/log?before={head}&limit=1")
    assert [e["version"] for e in at_head.json()["events"]] == [head - 1]
    for other in ("3a0c5d7e-1b2f-4c6d-8e9f-0a1b2c3d4e5f", "not-a-match"):
        r = await api.call("GET", f"/api/matches/{other}/log")
        assert r.status_code == 404 and r.json()["error"] == "not_found", r.text


# ------------------------------------------------------------------ the bounded catch-up


@pytest.fixture
def server(database_url: str, tmp_path: Path) -> Iterator[Instance]:
    """One instance of the match service, no scheduler, no message budget."""
    with Instance(_settings(tmp_path, database_url, ws_message_rate=0)) as instance:
        yield instance


def _url(server: Instance, match_id: str, query: str) -> str:
    return f"ws://127.0.0.1:{server.port}/ws/matches/{match_id}?{query}"


async def _guests(http: Any, count: int) -> list[dict[str, str]]:
    guests = []
    for i in range(count):
        made = (await http.post("/api/players", json={"name": f"g{i}"})).json()
        guests.append({"id": made["id"], "token": made["token"]})
    return guests


async def _act(http: Any, match_id: str, guests: list[dict[str, str]]) -> int:
    """The seat to act rolls or plays its first legal move over HTTP; the new version."""
    state = (await http.get(f"/api/matches/{match_id}")).json()
    auth = {"Authorization": f"Bearer {guests[state['turn']]['token']}"}
    if state["phase"] == "roll":
        r = await http.post(f"/api/matches/{match_id}/roll", headers=auth)
    else:
        moves = (await http.get(f"/api/matches/{match_id}/moves")).json()["moves"]
        r = await http.post(
            f"/api/matches/{match_id}/move", headers=auth, json={"piece": moves[0]["piece"]}
        )
    assert r.status_code == 200, r.text
    version: int = r.json()["version"]
    return version


async def test_a_bounded_catch_up_sends_the_last_events_and_stays_exact(
    server: Instance, engine: AsyncEngine
) -> None:
    """`?from=0&tail=50` on a 2,000-event match: a `skipped` frame naming versions
    0..head-50, then only the last 50 events and a state frame equal to GET (the fold of
    all). Events appended afterwards arrive once each, in order; a reconnect from the
    last version seen with the same tail gets exactly the missed ones, and no `skipped`."""
    async with _client(server.http) as http:
        guests = await _guests(http, 4)
        seats = tuple(SeatSpec(name=f"g{i}", player_id=g["id"]) for i, g in enumerate(guests))
        events, seed = long_match(LONG, seats=seats)
        match_id = await _stored(engine, events, seed)
        head = len(events)
        async with _socket(_url(server, match_id, "from=0&tail=50")) as socket:
            state = await socket.state(head)
            assert socket.side == [] or all(f["type"] == "presence" for f in socket.side)
            assert socket.frames[0] == {"type": "skipped", "from": 0, "until": head - 50}
            assert [f["version"] for f in socket.of("event")] == list(range(head - 50, head))
            assert state["match"] == (await http.get(f"/api/matches/{match_id}")).json()
            version = head
            for _ in range(6):
                version = await _act(http, match_id, guests)
            await socket.state(version)
            assert [f["version"] for f in socket.of("event")] == list(range(head - 50, version))
            assert len(socket.of("skipped")) == 1
            seen = version - 1
            for _ in range(4):
                version = await _act(http, match_id, guests)
        async with _socket(_url(server, match_id, f"from={seen + 1}&tail=50")) as again:
            last = await again.state(version)
            assert again.of("skipped") == []
            assert [f["version"] for f in again.of("event")] == list(range(seen + 1, version))
            stored = (await http.get(f"/api/matches/{match_id}/events")).json()["events"]
            assert [f["hash"] for f in again.of("event")] == [e["hash"] for e in stored[seen + 1 :]]
            assert last["match"] == (await http.get(f"/api/matches/{match_id}")).json()


async def test_a_catch_up_within_the_tail_skips_nothing(
    server: Instance, engine: AsyncEngine
) -> None:
    """A match shorter than the tail, and a `from` within the tail of the head: every
    event from `from`, no `skipped` frame."""
    events, seed = long_match(30)
    match_id = await _stored(engine, events, seed)
    for query, first in (
        ("from=0&tail=50", 0),
        (f"from={len(events) - 5}&tail=5", len(events) - 5),
    ):
        async with _socket(_url(server, match_id, query)) as socket:
            await socket.state(len(events))
            assert socket.of("skipped") == []
            assert [f["version"] for f in socket.of("event")] == list(range(first, len(events)))


async def test_a_bad_tail_is_an_error_frame_and_a_close(
    server: Instance, engine: AsyncEngine
) -> None:
    """`tail` of 0, past 200 or not a number: a 422 error frame naming `tail`, then the
    socket is closed with 4422 (as for a bad `from`)."""
    events, seed = long_match(30)
    match_id = await _stored(engine, events, seed)
    for tail in ("0", str(MAX_TAIL + 1), "all", "-3"):
        async with _socket(_url(server, match_id, f"from=0&tail={tail}")) as socket:
            frame = await socket.until(lambda f: f["type"] == "error")
            assert (frame["status"], frame["error"], frame["field"]) == (422, "invalid", "tail")
            await socket.ws.wait_closed()
            assert socket.ws.close_code == 4422


# ------------------------------------------------------------- the replay's steps by range


async def test_the_steps_of_a_long_match_come_by_range(api: Api) -> None:
    """`/steps?from=A&limit=N` is the same steps as the whole model's A..A+N, with the
    match's `count`, every timeline mark and the same header; the last range stops at the
    last step."""
    events, seed = long_match(LONG, finished=True)
    match_id = await _stored(api.engine, events, seed)
    whole = (await api.call("GET", f"/api/matches/{match_id}/steps")).json()
    count = len(events)
    assert whole["count"] == count == len(whole["steps"]) and whole["start"] == 0
    marks = [{"version": s["version"], "mark": m} for s in whole["steps"] for m in s["marks"]]
    assert whole["marks"] == marks and marks
    for start, limit in ((0, 100), (1234, 77), (count - 10, MAX_STEPS_PAGE)):
        part = (
            await api.call("GET", f"/api/matches/{match_id}/steps?from={start}&limit={limit}")
        ).json()
        assert part["steps"] == whole["steps"][start : start + limit]
        assert part["start"] == start and part["count"] == count
        assert {k: v for k, v in part.items() if k not in ("steps", "start")} == {
            k: v for k, v in whole.items() if k not in ("steps", "start")
        }


async def test_a_bad_steps_range_is_a_422_that_names_it(api: Api) -> None:
    """`from` below 0, at or past the last step, or not a number, and a `limit` out of
    1..500: 422 naming the parameter."""
    events, seed = long_match(40)
    match_id = await _stored(api.engine, events, seed)
    for query, field in (
        ("from=-1", "from"),
        (f"from={len(events)}", "from"),
        ("from=x", "from"),
        ("limit=0", "limit"),
        (f"limit={MAX_STEPS_PAGE + 1}", "limit"),
    ):
        r = await api.call("GET", f"/api/matches/{match_id}/steps?{query}")
        assert r.status_code == 422, (query, r.text)
        assert r.json()["field"] == field, query


async def test_every_roll_of_the_fairness_answer_names_its_event(api: Api) -> None:
    """`/fairness` gives each roll's event version: the viewer checks the dice after its
    first drawing from this list alone, and links each to its step."""
    events, seed = long_match(300, finished=True)
    match_id = await _stored(api.engine, events, seed)
    fairness = (await api.call("GET", f"/api/matches/{match_id}/fairness")).json()
    state = MatchState()
    rolled = []
    for version, event in enumerate(events):
        apply(state, event)
        if type(event).__name__ == "DieRolled":
            rolled.append({"n": state.rolls_made - 1, "version": version})
    assert [{"n": r["n"], "version": r["version"]} for r in fairness["rolls"]] == rolled
    assert fairness["verified"] is True


async def test_the_steps_of_a_long_match_in_play_follow_its_new_events(
    api: Api, tmp_path: Path
) -> None:
    """A match in play read by range, then played on: the next ranges hold the new steps,
    exactly as a walk of all its events gives them (the kept walk goes on, it does not
    drift or repeat)."""
    guests = [await api.player(f"g{i}") for i in range(4)]
    seats = tuple(SeatSpec(name=g["name"], player_id=g["id"]) for g in guests)
    events, seed = long_match(LONG, seats=seats)
    match_id = await _stored(api.engine, events, seed)
    first = (await api.call("GET", f"/api/matches/{match_id}/steps?from=0&limit=5")).json()
    assert first["count"] == len(events)
    for _ in range(12):
        await api.step(match_id, guests)
    now = (await api.call("GET", f"/api/matches/{match_id}/events")).json()["events"]
    assert len(now) > len(events)
    start = len(events) - 3
    later = (
        await api.call("GET", f"/api/matches/{match_id}/steps?from={start}&limit={MAX_STEPS_PAGE}")
    ).json()
    assert later["count"] == len(now)
    settings = Settings(data_dir=tmp_path, cpu_delay=0, scheduler=False, pairing=False)
    fresh = create_app(settings, engine=api.engine)
    async with AsyncTestClient(fresh) as other:
        walked_anew = (await other.get(f"/api/matches/{match_id}/steps?from={start}")).json()
    assert later["steps"] == walked_anew["steps"]
    assert [s["version"] for s in later["steps"]] == list(range(start, len(now)))
