"""Public views of a party's folded state: one party, the lobby's listing."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from domain import party as pd
from services.match.parties.schemas import PartyListOut, PartyOut, PartySeatOut


def party_view(party_id: str, state: pd.PartyState) -> PartyOut:
    seats = [
        PartySeatOut(
            seat=i,
            name=None if s is None else s.name,
            player_id=None if s is None else s.player_id,
            cpu=None if s is None else s.cpu,
        )
        for i, s in enumerate(state.seats)
    ]
    return PartyOut(
        id=party_id,
        status=state.status,
        host_id=state.host_id,
        seats=seats,
        rules=state.ruleset,
        turn_limit=state.turn_limit,
        ranked=state.ranked,
        match_id=state.match_id,
        game=state.game,
        first_seat=state.first_seat,
        version=state.version,
        stamps=state.stamps,
        arena_id=state.arena_id,
        cpu_speed=state.cpu_speed,
    )


def party_list_view(rows: Iterable[dict[str, Any]]) -> PartyListOut:
    """The lobby: the `parties` read model's rows (each a party view, as stored)."""
    return PartyListOut(parties=[msgspec.convert(r, PartyOut) for r in rows])
