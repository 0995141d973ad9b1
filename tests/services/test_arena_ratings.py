"""An arena and the ratings read one match the same way (`domain.outcome`), through both
services on one database: the match service's arena scores the match from its end
(`domain.arena.match_outcome`), the ranking consumer rates it from the same events.

The match is played by the service as a player would meet it: both players' connections
close at its start, the grace runs out (the scheduler fires it), CPU stand-ins play it to
its end (their turns' deadlines made due at once)."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa

from domain import arena as ar
from services.match.guests import Player
from services.match.parts import MatchParts
from services.ranking.ratings.consumer import RankingConsumer
from tests.services.conftest import Api

pytestmark = pytest.mark.anyio


def _service(api: Api) -> MatchParts:
    service: MatchParts = api.client.app.state.parts
    return service


async def _dropped_out_at_the_start(api: Api, match_id: str, players: list[Player]) -> None:
    """Each player's table opens, then closes for good: the grace runs out, a CPU stands
    in for each seat (`disconnected`)."""
    presence = _service(api).presence
    for player in players:
        seat = await presence.connected(match_id, player)
        assert seat is not None
        await presence.disconnected(match_id, seat)
    async with api.engine.begin() as conn:
        await conn.execute(
            sa.text(
                "UPDATE seat_presence SET grace_due = now() - interval '1 second'"
                " WHERE stream_id = :s"
            ),
            {"s": f"match-{match_id}"},
        )
    await api.scheduler.run_due()
    state = await api.match(match_id)
    assert [seat.get("stood_in") for seat in state["seats"]] == ["disconnected"] * 2, state


async def _played_out_by_the_stand_ins(api: Api, match_id: str) -> dict[str, Any]:
    for _ in range(5000):
        state = await api.match(match_id)
        if state["status"] == "finished":
            return state
        await api.past_due(match_id)
        await api.scheduler.run_due()
    raise AssertionError("the match did not end")


async def test_both_players_dropped_out_the_arena_and_the_ratings_say_both_left(
    api: Api,
) -> None:
    """Both players of an arena match dropped out at its start and CPU stand-ins played it
    out: the arena credits neither a place's points nor a streak (both left, 0 points,
    paused), and the ratings count the same match as left for both, at the same places."""
    service = _service(api)
    arenas = service.arenas
    created = await arenas.create(
        name="Drop-outs",
        seats=2,
        rules="bga",
        turn_limit=30,
        minutes=20,
        starts_at=arenas.clock() - 60,
        private=False,
    )
    assert created.created is not None and created.created.scoring == ar.SCORING
    arena_id = created.created.arena_id
    guests = [await api.player(name) for name in ("ann", "bob")]
    for guest in guests:
        r = await api.call(
            "POST", f"/api/tournaments/{arena_id}/join", json={}, headers=api.h(guest)
        )
        assert r.status_code == 200, r.text
        await service.lobby.hold(guest["id"])
    table = (await arenas.tick(arena_id)).paired[0]
    players = [Player(id=g["id"], name=g["name"]) for g in guests]
    await _dropped_out_at_the_start(api, table.match_id, players)
    end = await _played_out_by_the_stand_ins(api, table.match_id)
    assert sorted(end["placements"]) == [1, 2]  # the CPUs brought one seat home first
    assert (await arenas.tick(arena_id)).scored == 1
    state = await arenas.state(arena_id)
    result = state.results[table.match_id]
    assert [(r.place, r.left, r.points, r.doubled, r.streak) for r in result.results] == [
        (1, True, 0.0, False, 0)
    ] * 2
    assert all(state.entrants[g["id"]].paused for g in guests)
    view = (await api.call("GET", f"/api/tournaments/{arena_id}")).json()
    assert [(x["left"], x["points"]) for x in view["matches"][0]["results"]] == [(True, 0.0)] * 2
    assert {line["streak"] for line in view["standings"]} == {0}

    await RankingConsumer(api.engine, service.store).catch_up()
    async with api.engine.connect() as conn:
        rated = (
            await conn.execute(
                sa.text(
                    "SELECT player_id, place, left_match FROM rating_changes"
                    " WHERE model = 'openskill' AND match_stream = :s"
                ),
                {"s": f"match-{table.match_id}"},
            )
        ).all()
    by_player = {row.player_id: (row.place, row.left_match) for row in rated}
    assert by_player == {r.player_id: (r.place, r.left) for r in result.results}
