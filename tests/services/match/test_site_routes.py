"""The site's pages and the settings form's data, over HTTP (the browser tests are in
test_site.py)."""

from __future__ import annotations

import uuid

import pytest

from domain.rules import OPTION_KEYS, PRESETS, options_to_dict, parse_ruleset
from tests.services.conftest import Api

pytestmark = pytest.mark.anyio


async def test_the_rule_options_list_both_presets_and_every_value(api: Api) -> None:
    """GET /api/rules/options spells out both presets and every value each option takes,
    and every combination it offers is a ruleset the party form can send. The presets are
    options only: the revision is no setting."""
    r = await api.call("GET", "/api/rules/options")
    assert r.status_code == 200
    body = r.json()
    assert body["default"] == "standard"
    assert body["presets"] == {name: options_to_dict(rules) for name, rules in PRESETS.items()}
    assert all("revision" not in preset for preset in body["presets"].values())
    assert list(body["values"]) == list(OPTION_KEYS)
    for key, values in body["values"].items():
        for value in values:
            chosen = [value] if key == "enter_on" else value
            assert options_to_dict(parse_ruleset({"preset": "bga", key: chosen}))[key] == chosen


@pytest.mark.parametrize("path", ["/", "/leaderboard", "/tournaments"])
async def test_the_site_pages_are_served_under_their_csp(api: Api, path: str) -> None:
    """The lobby, the ratings and the arenas pages are HTML under a nonce-based CSP, never
    cached."""
    r = await api.call("GET", path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "script-src 'nonce-" in csp and "unsafe" not in csp
    assert r.headers["cache-control"] == "no-store"
    assert '<script nonce="' in r.text and "<script>" not in r.text  # no inline script
    assert "http://" not in r.text.replace("http://www.w3.org", "")


async def test_a_table_page_exists_for_each_party_and_match(api: Api) -> None:
    """/party/{id} and /match/{id} serve the table for a real party or match and a 404
    page for an unknown or malformed id."""
    match_id, _players, party_id = await api.duel()
    for path in (f"/party/{party_id}", f"/match/{match_id}"):
        r = await api.call("GET", path)
        assert r.status_code == 200 and 'id="board"' in r.text
    for path in (f"/party/{uuid.uuid4()}", "/party/nope", f"/match/{party_id}", "/match/1"):
        r = await api.call("GET", path)
        assert r.status_code == 404 and 'id="what"' in r.text  # the 404 page


async def test_an_arena_page_exists_for_each_arena(api: Api) -> None:
    """/tournament/{id} serves the arena page for an arena that exists (a private one
    included) and the 404 page for an unknown or malformed id."""
    me = await api.player("arina")
    made = await api.call("POST", "/api/tournaments", json={"name": "Friday"}, headers=api.h(me))
    assert made.status_code == 201, made.text
    r = await api.call("GET", f"/tournament/{made.json()['tournament_id']}")
    assert r.status_code == 200 and 'id="arena-view"' in r.text
    for path in (f"/tournament/{uuid.uuid4()}", "/tournament/nope"):
        r = await api.call("GET", path)
        assert r.status_code == 404 and 'id="what"' in r.text  # the 404 page


async def test_a_guest_renamed_stays_the_same_player(api: Api) -> None:
    """PUT /api/players/me gives the token's guest a new name: same id, same token; a bad
    name is 422 and an unknown token 401, both changing nothing."""
    me = await api.player("ichiro")
    r = await api.call("PUT", "/api/players/me", json={"name": "jiro"}, headers=api.h(me))
    assert r.status_code == 200 and r.json() == {"id": me["id"], "name": "jiro"}
    r = await api.call("GET", "/api/players/me", headers=api.h(me))
    assert r.json() == {"id": me["id"], "name": "jiro"}
    for bad in ({"name": ""}, {"name": "x" * 33}, {"name": 5}, {"nom": "x"}):
        r = await api.call("PUT", "/api/players/me", json=bad, headers=api.h(me))
        assert r.status_code == 422, bad
    r = await api.call(
        "PUT", "/api/players/me", json={"name": "saburo"}, headers={"Authorization": "Bearer x"}
    )
    assert r.status_code == 401
    assert (await api.call("GET", "/api/players/me", headers=api.h(me))).json()["name"] == "jiro"


async def test_unknown_pages_get_the_site_404_and_the_api_stays_json(api: Api) -> None:
    """A browser asking for an unknown page, party, match or player gets the site's 404
    page (status 404, under its CSP); the API and tools keep the JSON error."""
    html = {"Accept": "text/html,application/xhtml+xml"}
    for path in (
        "/nope",
        "/party/nope",
        f"/match/{uuid.uuid4()}",
        f"/players/{uuid.uuid4()}",
        "/players/xyz",
        f"/replay/{uuid.uuid4()}",
    ):
        r = await api.call("GET", path, headers=html)
        assert r.status_code == 404, path
        assert r.headers["content-type"].startswith("text/html")
        assert "script-src 'nonce-" in r.headers["content-security-policy"]
        assert 'id="what"' in r.text
    for path, headers in (
        ("/nope", {"Accept": "application/json"}),
        ("/api/nope", html),
        ("/static/js/nope.js", html),
    ):
        r = await api.call("GET", path, headers=headers)
        assert r.status_code == 404 and r.json()["error"] == "not_found"


async def test_a_known_players_page_is_served(api: Api) -> None:
    """/players/{id} is the ratings page for a guest that exists."""
    me = await api.player("kenta")
    r = await api.call("GET", f"/players/{me['id']}")
    assert r.status_code == 200 and 'id="player"' in r.text


async def test_reclaiming_a_seat_wins_the_race_with_its_stand_in(scheduled_api: Api) -> None:
    """While CPUs play every seat as fast as they can, leaving and taking the seat back
    are retried past the version race: 200 each time, never 409."""
    api = scheduled_api
    me = await api.player("mika")
    party = await api.party(me, seats=2, rules={"preset": "standard"})
    r = await api.call("POST", f"/api/parties/{party['id']}/cpus", json={}, headers=api.h(me))
    assert r.status_code == 200
    match_id = await api.start(party["id"], me)
    for _ in range(3):
        for action in ("leave", "reclaim"):
            r = await api.call("POST", f"/api/matches/{match_id}/{action}", headers=api.h(me))
            assert r.status_code == 200, r.text
    events = (await api.call("GET", f"/api/matches/{match_id}/events")).json()["events"]
    assert [e["type"] for e in events].count("SeatReclaimed") == 3
