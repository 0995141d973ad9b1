"""End to end: a ranked duel played through the match service's HTTP API gets rated."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from services.ranking.ratings.consumer import RankingConsumer
from tests.services.conftest import Api

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("ranked", [True, False])
async def test_a_played_duel_is_rated_only_when_ranked(api: Api, ranked: bool) -> None:
    """A duel played through the match service is rated when ranked, not when casual."""
    match_id, (a, b), _ = await api.duel(ranked=ranked)
    final = await api.play_to_end(match_id, [a, b])
    await RankingConsumer(api.engine).catch_up()
    async with api.engine.connect() as conn:
        rows = (
            await conn.execute(
                sa.text(
                    "SELECT player_id, place FROM rating_changes "
                    "WHERE model = 'openskill' AND match_stream = :s"
                ),
                {"s": f"match-{match_id}"},
            )
        ).all()
    if not ranked:
        assert rows == []
        return
    places = {r.player_id: r.place for r in rows}
    assert places == {a["id"]: final["placements"][0], b["id"]: final["placements"][1]}
