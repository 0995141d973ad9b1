"""The `normal` CPU: one-move heuristics, the way a careful casual player thinks.

Each legal move gets a score from what it does right now, nothing deeper:

- capture (worth more the further the victim had come), enter a piece,
- get into the home column or the goal,
- escape danger (the piece stands where an opponent could hit it next roll, and the move
  takes it somewhere no opponent can), avoid landing in danger,
- form a block / keep one (only under `blocks="double"`), stop on a safe square,
- otherwise advance, preferring the piece furthest along.

"Danger" is exact for the ruleset: `features.Occupancy.hit_mask` knows safe squares,
blocks, `no_overtaking` and entering on a start square; a move that lands in danger is
penalised in proportion to the chance that some opponent's next roll can hit it. Equal
scores are split by the seed and the roll number (`chance.pick_index`).
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.board import NEST
from domain.cpu.chance import best_of
from domain.cpu.features import Occupancy, opponents
from domain.decider import MatchState
from domain.moves import Move

__all__ = ["choose_normal", "score_moves"]

CAPTURE = 60.0
CAPTURE_PER_SQUARE = 0.5
ENTER = 45.0
GOAL = 30.0
HOME_COLUMN = 25.0
ESCAPE = 30.0
DANGER = 40.0
FORM_BLOCK = 12.0
BREAK_BLOCK = 12.0
SAFE_SQUARE = 8.0
ADVANCE_PER_PROGRESS = 0.05


def score_moves(state: MatchState, moves: Sequence[Move]) -> list[float]:
    """The heuristic score of each move (higher is better), as `choose_normal` sees them."""
    board = state.board
    assert board is not None
    seat = state.turn
    pieces = state.pieces
    foes = opponents(board.players, seat, state.finished)
    occ = Occupancy(board, pieces)
    last = board.last_track
    goal = board.goal
    track = board.track[seat]
    safe = board.safe
    double = board.ruleset.blocks == "double"
    mine_now = occ.square[seat]
    scores: list[float] = []
    for move in moves:
        score = 0.0
        frm, to = move.frm, move.to
        if move.captures:
            score += CAPTURE + CAPTURE_PER_SQUARE * sum(pieces[s][i] for s, i in move.captures)
        if frm == NEST:
            score += ENTER
        if to == goal:
            score += GOAL
        elif frm <= last < to:
            score += HOME_COLUMN
        frm_sq = mine_now[move.piece]
        if frm_sq >= 0 and double and mine_now.count(frm_sq) == 2:
            score -= BREAK_BLOCK  # leaving breaks a block of exactly two
        # "in danger where it stands" (some foe can hit it) is asked only when it counts
        if to <= last:
            danger_after = occ.threat_after(seat, move.piece, to, move.captures, foes)
            to_sq = track[to]
            if danger_after > 0.0:
                score -= DANGER * danger_after * 3.0
            elif frm_sq >= 0 and occ.hit_by_any(frm_sq, foes):
                score += ESCAPE
            if to_sq in safe:
                score += SAFE_SQUARE
            if double and to_sq in mine_now:
                score += FORM_BLOCK
        elif frm_sq >= 0 and occ.hit_by_any(frm_sq, foes):
            score += ESCAPE
        score += ADVANCE_PER_PROGRESS * max(frm, 0)
        scores.append(score)
    return scores


def choose_normal(state: MatchState, moves: Sequence[Move], seed: str) -> Move:
    """The best-scoring move; equal scores are split by the seed and the roll number."""
    return best_of(moves, score_moves(state, moves), seed, state.rolls_made)
