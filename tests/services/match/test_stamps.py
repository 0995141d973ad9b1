"""Quick-chat stamps at a match (services/match/play/stamps.py): `POST` and `GET
/api/matches/{id}/stamps`, every refusal a 4xx that appends nothing, the host's switch,
the match socket's `stamp` message and frames, who is connected, and a match's replay
unchanged by the stamps beside it.

The service's clock is the test's (`service.stamps.clock`): nothing sleeps through the
3 seconds between two stamps of a seat.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from replays.format import dump_replay
from replays.verify import verify_replay
from tests.services.conftest import Api
from tests.services.match.test_live import Table, _client
from tests.services.match.test_replay_api import OPERATOR
from tests.services.match.test_replay_api import op_api as op_api  # noqa: PLC0414 - fixture
from tests.services.match.test_sockets import _socket
from tests.services.match.test_sockets import server as server  # noqa: PLC0414 - the fixture

pytestmark = pytest.mark.anyio


class Clock:
    """The stamps' clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def clocked(api: Api) -> Clock:
    clock = Clock()
    api.client.app.state.parts.stamps.clock = clock
    return clock


async def stamp(
    api: Api, match_id: str, who: dict[str, str] | None, body: Any, **headers: str
) -> Any:
    """POST a stamp body (bytes: sent as is) as `who` (None: no token)."""
    headers = {**(api.h(who) if who is not None else {}), **headers}
    url = f"/api/matches/{match_id}/stamps"
    if isinstance(body, bytes):
        headers["Content-Type"] = "application/json"
        return await api.call("POST", url, content=body, headers=headers)
    return await api.call("POST", url, json=body, headers=headers)


async def stamps_of(api: Api, match_id: str) -> list[dict[str, Any]]:
    r = await api.call("GET", f"/api/matches/{match_id}/stamps")
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["stamps"]
    return found


async def test_a_seated_player_stamps_and_everyone_reads_it(api: Api) -> None:
    """A stamp from seat 1 is 201 with its seat, id and time, listed publicly, and the
    match's own stream does not grow."""
    clock = clocked(api)
    match_id, (alice, bob), _ = await api.duel()
    before = await api.stream_length(f"match-{match_id}")
    r = await stamp(api, match_id, bob, {"stamp": "good_luck"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["version"], body["seat"], body["stamp"], body["at"]) == (
        0,
        1,
        "good_luck",
        clock.now,
    )
    clock.now += 0.5
    assert (await stamp(api, match_id, alice, {"stamp": "thanks"})).status_code == 201
    listed = await stamps_of(api, match_id)
    assert [(s["seat"], s["stamp"]) for s in listed] == [(1, "good_luck"), (0, "thanks")]
    assert await api.stream_length(f"match-{match_id}") == before
    assert await api.stream_length(f"stamps-{match_id}") == 2


async def test_one_stamp_every_three_seconds_is_a_429_that_appends_nothing(api: Api) -> None:
    """A second stamp within 3 s is 429 `too_soon` with Retry-After; 3 s on it goes."""
    clock = clocked(api)
    match_id, (alice, _), _ = await api.duel()
    assert (await stamp(api, match_id, alice, {"stamp": "nice"})).status_code == 201
    clock.now += 2.0
    r = await stamp(api, match_id, alice, {"stamp": "wow"})
    assert r.status_code == 429 and r.json()["error"] == "too_soon", r.text
    assert r.headers["Retry-After"] == "1"
    assert await api.stream_length(f"stamps-{match_id}") == 1
    clock.now += 1.0
    assert (await stamp(api, match_id, alice, {"stamp": "wow"})).status_code == 201


async def test_bad_stamps_are_4xx_and_append_nothing(api: Api) -> None:
    """Free text or an id not in the set (422 `unknown_stamp`), wrong types and unknown
    fields (422), malformed JSON (400), no token (401), an unknown match (404): nothing
    appended by any."""
    clocked(api)
    match_id, (alice, _), _ = await api.duel()
    cases: list[tuple[Any, int, str]] = [
        ({"stamp": "hello there"}, 422, "unknown_stamp"),
        ({"stamp": "NICE"}, 422, "unknown_stamp"),
        ({"stamp": 3}, 422, "invalid"),
        ({"stamp": ""}, 422, "invalid"),
        ({"stamp": "x" * 200}, 422, "invalid"),
        ({"stamp": "nice", "text": "hi"}, 422, "invalid"),
        ({}, 422, "invalid"),
        (b'{"stamp": "nice"', 400, "malformed_json"),
        (b"[]", 422, "invalid"),
    ]
    for body, status, code in cases:
        r = await stamp(api, match_id, alice, body)
        assert (r.status_code, r.json()["error"]) == (status, code), (body, r.text)
    r = await stamp(api, match_id, None, {"stamp": "nice"})
    assert r.status_code == 401, r.text
    unknown = "00000000-0000-4000-8000-000000000000"
    r = await stamp(api, unknown, alice, {"stamp": "nice"})
    assert (r.status_code, r.json()["error"]) == (404, "not_found"), r.text
    assert (await api.call("GET", f"/api/matches/{unknown}/stamps")).status_code == 404
    assert (await api.call("GET", "/api/matches/nope/stamps")).status_code == 404
    assert await api.stream_length(f"stamps-{match_id}") == 0


async def test_a_spectator_sees_stamps_and_sends_none(api: Api) -> None:
    """A guest not seated at the match is 403 `spectator`; the list is public."""
    clocked(api)
    match_id, (alice, _), _ = await api.duel()
    await stamp(api, match_id, alice, {"stamp": "nice"})
    carol = await api.player("carol")
    r = await stamp(api, match_id, carol, {"stamp": "nice"})
    assert (r.status_code, r.json()["error"]) == (403, "spectator"), r.text
    assert len(await stamps_of(api, match_id)) == 1


async def test_the_host_switches_stamps_off_mid_match(api: Api) -> None:
    """The host's `stamps: false` (during the match) makes a stamp 409 `stamps_off` that
    appends nothing; a guest may not switch (403); on again, stamps go."""
    clock = clocked(api)
    match_id, (alice, bob), party_id = await api.duel()
    settings = f"/api/parties/{party_id}/settings"
    r = await api.call("POST", settings, json={"stamps": False}, headers=api.h(alice))
    assert r.status_code == 200 and r.json()["stamps"] is False, r.text
    r = await stamp(api, match_id, bob, {"stamp": "nice"})
    assert (r.status_code, r.json()["error"]) == (409, "stamps_off"), r.text
    r = await api.call("POST", settings, json={"stamps": True}, headers=api.h(bob))
    assert (r.status_code, r.json()["error"]) == (403, "not_host"), r.text
    r = await api.call("POST", settings, json={"stamps": "no"}, headers=api.h(alice))
    assert r.status_code == 422, r.text
    assert await api.stream_length(f"stamps-{match_id}") == 0
    r = await api.call("POST", settings, json={"stamps": True}, headers=api.h(alice))
    assert r.status_code == 200 and r.json()["stamps"] is True, r.text
    clock.now += 5
    assert (await stamp(api, match_id, bob, {"stamp": "nice"})).status_code == 201


async def test_a_retried_stamp_with_its_key_is_sent_once(api: Api) -> None:
    """The same Idempotency-Key twice: the first outcome again, one event."""
    clocked(api)
    match_id, (alice, _), _ = await api.duel()
    key = {"Idempotency-Key": "stamp-1"}
    first = await stamp(api, match_id, alice, {"stamp": "sorry"}, **key)
    again = await stamp(api, match_id, alice, {"stamp": "sorry"}, **key)
    assert first.status_code == again.status_code == 201, again.text
    assert first.json() == again.json()
    assert await api.stream_length(f"stamps-{match_id}") == 1


async def test_a_matchs_replay_is_the_same_with_and_without_stamps(api: Api) -> None:
    """The exported replay file (its export time aside) is byte-identical before and after
    stamps are sent, and it verifies."""
    clock = clocked(api)
    match_id, players, _ = await api.duel()
    await api.play_to_end(match_id, players)
    replays = api.client.app.state.parts.replays

    async def exported() -> bytes:
        replay = await replays.export(match_id)
        return dump_replay(msgspec.structs.replace(replay, exported_at=None))

    before = await exported()
    for i, who in enumerate(players * 2):
        clock.now += 3 * i
        assert (await stamp(api, match_id, who, {"stamp": "good_game"})).status_code == 201
    after = await exported()
    assert after == before
    assert verify_replay(await replays.export(match_id)).ok
    assert (await api.call("GET", f"/api/matches/{match_id}/audit")).json()["ok"] is True


async def test_the_dispute_report_shows_stamps_on_the_timeline(op_api: Api) -> None:
    """Each stamp is a `stamp` line of the operator's report, in time order among the
    events, with its seat and id, flagging no turn."""
    api = op_api
    clock = clocked(api)
    match_id, (alice, bob), _ = await api.duel()
    await stamp(api, match_id, alice, {"stamp": "good_luck"})
    await api.step(match_id, [alice, bob])
    clock.now += 3
    await stamp(api, match_id, bob, {"stamp": "tears"})
    r = await api.call("GET", f"/api/matches/{match_id}/report", headers=OPERATOR)
    assert r.status_code == 200, r.text
    report = r.json()
    lines = report["prologue"] + [e for turn in report["turns"] for e in turn["entries"]]
    said = [(e["seat"], e["type"]) for e in lines if e["kind"] == "stamp"]
    assert said == [(0, "good_luck"), (1, "tears")]
    kinds = [e["kind"] for e in lines]
    assert kinds.index("stamp") < kinds.index("event", kinds.index("stamp"))
    assert all("stamp" in e["text"] for e in lines if e["kind"] == "stamp")


async def test_the_match_socket_carries_stamps_and_presence(server: Any) -> None:
    """A seated player's `stamp` message is answered `stamped` and reaches a spectator's
    socket as a `stamp` frame with the seat; a spectator's is refused (401 before hello,
    403 after it); bad and too early stamps are error frames; each socket hears who is
    connected."""
    async with _client(server.http) as http:
        table = await Table(http).open()
        carol = (await http.post("/api/players", json={"name": "carol"})).json()
    alice = table.players[0]
    async with (
        _socket(server.ws(table.match_id), alice["token"]) as seated,
        _socket(server.ws(table.match_id)) as watcher,
    ):
        await watcher.until(lambda f: f["type"] == "presence" and f["connected"] == [0])
        message = {"type": "stamp", "stamp": "good_luck", "id": "k1"}
        await seated.ws.send(msgspec.json.encode(message).decode())
        stamped = await seated.until(lambda f: f["type"] in ("stamped", "error"))
        assert stamped == {"type": "stamped", "id": "k1", "version": 0, "duplicate": False}
        frame = await watcher.until(lambda f: f["type"] == "stamp")
        assert (frame["seat"], frame["stamp"], frame["version"]) == (0, "good_luck", 0)
        if not seated.of("stamp"):  # the sender's own socket hears it too
            await seated.until(lambda f: f["type"] == "stamp")
        refused = await watcher.send({"type": "stamp", "stamp": "nice"})
        assert (refused["status"], refused["error"]) == (401, "unauthorized")
        hello = await watcher.send({"type": "hello", "token": carol["token"]})
        assert hello == {"type": "hello", "seat": None}
        refused = await watcher.send({"type": "stamp", "stamp": "nice", "id": "k2"})
        assert (refused["status"], refused["error"], refused["id"]) == (403, "spectator", "k2")
        bad = await seated.send({"type": "stamp", "stamp": "free text"})
        assert (bad["status"], bad["error"]) == (422, "unknown_stamp")
        soon = await seated.send({"type": "stamp", "stamp": "nice"})
        assert (soon["status"], soon["error"]) == (429, "too_soon")
        extra = await seated.send({"type": "stamp", "stamp": "nice", "text": "hi"})
        assert (extra["status"], extra["error"]) == (422, "invalid")
    async with _socket(server.ws(table.match_id)) as watcher:
        await watcher.until(lambda f: f["type"] == "presence" and f["connected"] == [])
    async with _client(server.http) as http:
        listed = (await http.get(f"/api/matches/{table.match_id}/stamps")).json()
        assert [s["stamp"] for s in listed["stamps"]] == ["good_luck"]
