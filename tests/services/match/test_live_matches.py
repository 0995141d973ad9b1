"""`GET /api/matches/live` (`listLiveMatches`, services/match/play/live_matches.py) on real
PostgreSQL: the matches being played now, to watch from the lobby — who plays, ranked or
not, how far along — and none that is over, still forming, or in a private arena."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from tests.services.conftest import Api

pytestmark = pytest.mark.anyio


async def live(api: Api) -> list[dict[str, Any]]:
    r = await api.call("GET", "/api/matches/live")
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["matches"]
    return found


async def test_a_running_match_is_listed_with_its_players_and_progress(api: Api) -> None:
    """A ranked duel in play is listed: its page, both seats by name and colour, ranked,
    whose turn; each seat's pieces in the goal and progress follow the match's state."""
    assert await live(api) == []
    match_id, players, party_id = await api.duel(ranked=True)
    for _ in range(30):
        await api.step(match_id, players)
    state = await api.match(match_id)
    (listed,) = await live(api)
    assert listed["match_id"] == match_id and listed["party_id"] == party_id
    assert listed["href"] == f"/match/{match_id}"
    assert listed["ranked"] is True and listed["turn"] == state["turn"]
    assert [(s["name"], s["colour"], s["player_id"]) for s in listed["seats"]] == [
        (s["name"], s["colour"], s["player_id"]) for s in state["seats"]
    ]
    goal = state["board"]["goal"]
    for seat in listed["seats"]:
        pieces = state["pieces"][seat["colour"]]
        assert seat["goal"] == sum(1 for p in pieces if p >= goal)
        assert seat["progress"] == round(sum(max(p, 0) for p in pieces) / (4 * goal), 3)
    assert any(seat["progress"] > 0 for seat in listed["seats"])


async def test_open_finished_and_private_arena_tables_are_not_listed(api: Api) -> None:
    """An open party (no match yet) is not listed; a finished match leaves the list; a
    match of a private arena (reached only by its link) is never listed; the newest
    running match comes first."""
    host = await api.player("host")
    await api.party(host, seats=2)
    assert await live(api) == []
    first, first_players, _ = await api.duel()
    second, _, second_party = await api.duel()
    assert [m["match_id"] for m in await live(api)] == [second, first]
    # The second table belongs to a private arena: its party says so, as an arena's does.
    async with api.engine.begin() as conn:
        await conn.execute(
            sa.text(
                "INSERT INTO arenas (arena_id, private, starts_at, ends_at, status, done, "
                "summary) VALUES ('a-private', true, now(), now() + interval '1 hour', "
                "'running', false, '{}')"
            )
        )
        await conn.execute(
            sa.text(
                "UPDATE parties SET settings = jsonb_set(settings, '{arena_id}', "
                "'\"a-private\"') WHERE party_id = :p"
            ),
            {"p": second_party},
        )
    assert [m["match_id"] for m in await live(api)] == [first]
    await api.play_to_end(first, first_players)
    assert await live(api) == []
