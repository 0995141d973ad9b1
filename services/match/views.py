"""Public views of folded states and stored events (what the API returns).

Nothing here can show a server seed before `SeedRevealed`: the match view reads
`state.server_seed`, which only that event sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import msgspec

from domain import party as pd
from domain.decider import MatchState, current_legal_moves
from domain.events import DieRolled
from domain.rules import ruleset_to_dict
from replays.board_view import board_view, option_view
from services.match.schemas import (
    DeadlineOut,
    EventOut,
    MatchOut,
    MatchSeatOut,
    MovesOut,
    PartyListOut,
    PartyOut,
    PartySeatOut,
)
from services.shared.eventstore import AppendResult, StoredEvent

__all__ = [
    "board_view",
    "event_view",
    "match_view",
    "moves_view",
    "option_view",
    "party_list_view",
    "party_view",
    "rolls_of",
]


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
    )


def party_list_view(rows: Iterable[dict[str, Any]]) -> PartyListOut:
    """The lobby: the `parties` read model's rows (each a party view, as stored)."""
    return PartyListOut(parties=[msgspec.convert(r, PartyOut) for r in rows])


def match_view(
    match_id: str,
    state: MatchState,
    *,
    party_id: str | None,
    turn_limit: int | None,
    ranked: bool,
    deadline: tuple[str, str] | None,
) -> MatchOut:
    board = state.board
    assert board is not None and state.ruleset is not None
    colours = board.colours
    seats = [
        MatchSeatOut(
            seat=i,
            name=s.name,
            colour=colours[i],
            player_id=s.player_id,
            cpu=s.cpu,
            stood_in=state.stood_in[i],
            timeouts=state.timeouts[i],
        )
        for i, s in enumerate(state.seats)
    ]
    return MatchOut(
        id=match_id,
        party_id=party_id,
        status=state.status,
        rules=ruleset_to_dict(state.ruleset),
        seats=seats,
        pieces={c: list(state.pieces[i]) for i, c in enumerate(colours)},
        turn=None if state.status == "finished" else state.turn,
        phase=_phase(state),
        die=state.die,
        rolls_left=state.rolls_left,
        sixes=state.sixes,
        rolls_made=state.rolls_made,
        first_seat=state.first_seat,
        placements=None if state.placements is None else list(state.placements),
        seed_hash=state.seed_hash,
        client_seed=state.client_seed,
        server_seed=state.server_seed,
        turn_limit=turn_limit,
        ranked=ranked,
        version=state.version,
        deadline=None if deadline is None else DeadlineOut(kind=deadline[0], due_at=deadline[1]),
        board=board_view(board),
    )


def _phase(state: MatchState) -> Literal["roll", "move", "over"]:
    """What the seat to act must do; "over" once the match has ended (nobody acts)."""
    if state.status == "finished":
        return "over"
    return "move" if state.phase == "move" else "roll"


def moves_view(state: MatchState) -> MovesOut:
    moves = [option_view(m) for m in current_legal_moves(state)]
    return MovesOut(
        seat=None if state.status == "finished" else state.turn,
        phase=_phase(state),
        die=state.die,
        moves=moves,
        version=state.version,
    )


def event_view(e: StoredEvent) -> EventOut:
    return EventOut(
        version=e.version,
        type=e.type,
        data=msgspec.json.decode(e.data),
        recorded_at=e.recorded_at.isoformat(),
        hash=e.hash.hex(),
    )


def result_events(result: AppendResult) -> list[EventOut]:
    return [event_view(e) for e in result.events]


def rolls_of(stored: Iterable[StoredEvent]) -> list[DieRolled]:
    out = []
    for e in stored:
        if e.type == "DieRolled":
            event = e.event
            assert isinstance(event, DieRolled)
            out.append(event)
    return out
