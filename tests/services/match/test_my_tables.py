"""`GET /api/players/me/tables` (`myTables`) and `tables_of`, on real PostgreSQL: a
guest's own open parties, running and lately finished matches, nobody else's, and the
table that keeps a player out of the pools (`holding`)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from services.match.parties.my_tables import holding, tables_of
from tests.services.conftest import Api

pytestmark = pytest.mark.anyio


async def tables(api: Api, player: dict[str, str]) -> list[dict[str, Any]]:
    """The player's tables as the API answers them (asserting a 200)."""
    r = await api.call("GET", "/api/players/me/tables", headers=api.h(player))
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["tables"]
    return found


async def test_my_tables_needs_a_known_token(api: Api) -> None:
    """Without a token, or with an unknown one, the answer is 401 `unauthorized` JSON."""
    r = await api.call("GET", "/api/players/me/tables")
    assert r.status_code == 401 and r.json()["error"] == "unauthorized", r.text
    r = await api.call(
        "GET", "/api/players/me/tables", headers={"Authorization": "Bearer not-a-token"}
    )
    assert r.status_code == 401 and r.json()["error"] == "unauthorized", r.text


async def test_a_new_guest_sits_nowhere(api: Api) -> None:
    """A guest who has sat at no table has an empty list."""
    assert await tables(api, await api.player("nobody")) == []


async def test_an_open_party_is_listed_for_its_seated_guests_only(api: Api) -> None:
    """The host and a guest who joined see the open party (one press opens it); a guest
    elsewhere and one who left it do not."""
    host, guest, other, leaver = [await api.player(n) for n in ("host", "guest", "x", "y")]
    party = await api.party(host, seats=4, ranked=True, turn_limit=30)
    for who in (guest, leaver):
        r = await api.call("POST", f"/api/parties/{party['id']}/join", headers=api.h(who))
        assert r.status_code == 200, r.text
    r = await api.call("POST", f"/api/parties/{party['id']}/leave", headers=api.h(leaver))
    assert r.status_code == 200, r.text
    await api.party(other, seats=2)
    for who in (host, guest):
        (table,) = await tables(api, who)
        assert table["party_id"] == party["id"] and table["status"] == "open"
        assert table["action"] == "open_party" and table["href"] == f"/party/{party['id']}"
        assert table["match_id"] is None and table["host_id"] == host["id"]
        assert table["ranked"] is True and table["turn_limit"] == 30
        assert [s["name"] for s in table["seats"]] == ["host", "guest", None, None]
    assert await tables(api, leaver) == []
    assert party["id"] not in [t["party_id"] for t in await tables(api, other)]


async def test_a_running_match_comes_first_then_open_parties_then_finished(api: Api) -> None:
    """A duel's players see its running match ahead of an open party of theirs; once the
    match ends it is listed as finished (see the result, もう一度), after the open party."""
    match_id, (alice, bob), party_id = await api.duel()
    waiting = await api.party(alice, seats=3)
    listed = await tables(api, alice)
    assert [(t["party_id"], t["status"], t["action"]) for t in listed] == [
        (party_id, "playing", "return_to_match"),
        (waiting["id"], "open", "open_party"),
    ]
    assert listed[0]["match_id"] == match_id
    assert [t["status"] for t in await tables(api, bob)] == ["playing"]
    await api.play_to_end(match_id, [alice, bob])
    listed = await tables(api, alice)
    assert [(t["party_id"], t["status"], t["action"]) for t in listed] == [
        (waiting["id"], "open", "open_party"),
        (party_id, "finished", "see_result"),
    ]
    (finished,) = await tables(api, bob)
    assert finished["status"] == "finished" and finished["href"] == f"/party/{party_id}"


async def test_holding_is_the_running_match_else_an_open_party(api: Api) -> None:
    """`tables_of` drops a finished match once it is older than the window, and `holding`
    (the pool service's `seated_elsewhere`) names a running match before an open party."""
    service = api.client.app.state.parts
    match_id, (alice, bob), party_id = await api.duel()
    waiting = await api.party(alice, seats=2)
    found = await tables_of(service.engine, service.store, alice["id"])
    held = holding(found)
    assert held is not None and held.match_id == match_id and held.status == "playing"
    await api.play_to_end(match_id, [alice, bob])
    found = await tables_of(service.engine, service.store, alice["id"])
    held = holding(found)
    assert held is not None and held.party_id == waiting["id"]
    assert holding(await tables_of(service.engine, service.store, bob["id"])) is None
    gone = await tables_of(service.engine, service.store, bob["id"], finished_within=timedelta(0))
    assert gone == [] and party_id
