"""The site's pages and the settings form's data, over HTTP (the browser tests are in
test_site.py)."""

from __future__ import annotations

import uuid

import pytest

from domain.rules import OPTION_KEYS, PRESETS, parse_ruleset, ruleset_to_dict

from .conftest import Api

pytestmark = pytest.mark.anyio


async def test_the_rule_options_list_both_presets_and_every_value(api: Api) -> None:
    """GET /api/rules/options spells out both presets and every value each option takes,
    and every combination it offers is a ruleset the party form can send."""
    r = await api.call("GET", "/api/rules/options")
    assert r.status_code == 200
    body = r.json()
    assert body["default"] == "standard"
    assert body["presets"] == {name: ruleset_to_dict(rules) for name, rules in PRESETS.items()}
    assert list(body["values"]) == list(OPTION_KEYS)
    for key, values in body["values"].items():
        for value in values:
            chosen = [value] if key == "enter_on" else value
            assert ruleset_to_dict(parse_ruleset({"preset": "bga", key: chosen}))[key] == chosen


@pytest.mark.parametrize("path", ["/", "/leaderboard", f"/players/{uuid.uuid4()}"])
async def test_the_site_pages_are_served_under_their_csp(api: Api, path: str) -> None:
    """The lobby and the ratings pages are HTML under a hash-based CSP, never cached."""
    r = await api.call("GET", path)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "script-src 'sha256-" in csp and "unsafe" not in csp
    assert r.headers["cache-control"] == "no-store"
    assert "<script>" in r.text and "http://" not in r.text.replace("http://www.w3.org", "")


async def test_a_table_page_exists_for_each_party_and_match(api: Api) -> None:
    """/party/{id} and /match/{id} serve the table for a real party or match and a 404
    page for an unknown or malformed id."""
    match_id, _players, party_id = await api.duel()
    for path in (f"/party/{party_id}", f"/match/{match_id}"):
        r = await api.call("GET", path)
        assert r.status_code == 200 and 'id="board"' in r.text
    for path in (f"/party/{uuid.uuid4()}", "/party/nope", f"/match/{party_id}", "/match/1"):
        r = await api.call("GET", path)
        assert r.status_code == 404 and "No such" in r.text
