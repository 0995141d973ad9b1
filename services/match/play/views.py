"""Public views of folded states and stored events (what the API returns).

Nothing here can show a server seed before `SeedRevealed`: the match view reads
`state.server_seed`, which only that event sets.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from domain.decider import MatchState, current_legal_moves, fold
from domain.events import DieRolled
from domain.rules import ruleset_to_dict
from replays.board_view import board_view, option_view
from replays.verify import verify_links
from services.match.play.reads import MatchRow, settings_of
from services.match.play.schemas import (
    DeadlineOut,
    EventOut,
    FairnessOut,
    MatchOut,
    MatchSeatOut,
    MovesOut,
    RollOut,
)
from services.shared.eventstore import AppendResult, StoredEvent

__all__ = ["board_view", "event_view", "fairness_view", "match_view", "moves_view", "option_view"]


def match_view(
    match_id: str,
    state: MatchState,
    row: MatchRow,
    deadline: tuple[str, str] | None,
) -> MatchOut:
    """`GET /api/matches/{id}`: the match as everyone may see it (no seed before the end),
    with its table's settings (`settings_of`: its MatchCreated's, or for a match stored
    before that its `matches` row's; NO_ROW: an imported match, no party or timer)."""
    row = settings_of(state, row)
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
        party_id=row.party_id or None,
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
        turn_limit=row.turn_limit,
        ranked=row.ranked,
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


def fairness_view(stored: list[StoredEvent]) -> FairnessOut:
    """`GET /api/matches/{id}/fairness`: the commitment, every roll, and after the end the
    revealed seed with `verified`: whether the stored match verifies as `ludo replay
    verify` checks a file (`replays.verify`, the one place that re-derives each die from
    the seed), dice included."""
    events = [e.event for e in stored]
    state = fold(events)
    rolls = [(v, e) for v, e in enumerate(events) if isinstance(e, DieRolled)]
    verified: bool | None = None
    if state.server_seed is not None:
        links = [
            (e.stream_id, e.version, e.type, e.schema_version, e.data, e.prev_hash, e.hash)
            for e in stored
        ]
        verdict = verify_links(stored[0].stream_id, links, require_finished=False)
        verified = verdict.ok and verdict.dice_checked
    return FairnessOut(
        seed_hash=state.seed_hash,
        client_seed=state.client_seed,
        server_seed=state.server_seed,
        rolls=[RollOut(n=r.n, version=v, seat=r.seat, value=r.value) for v, r in rolls],
        verified=verified,
    )
