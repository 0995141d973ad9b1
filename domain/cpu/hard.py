"""The `hard` CPU: expectimax over its own bonus rolls on a strong static evaluation.

For each legal move it builds the resulting position (on a copy of the pieces). If the move
earns another roll this turn (a six, a capture, a goal, per ruleset; minus a third six
under `three_sixes`), it averages over the six die values the best follow-up move,
otherwise it scores the position directly. The score (`evaluation.evaluate`) prices every
piece in squares and subtracts, for each of our pieces, its chance of being captured by
any opponent's next roll (all die values, every capturing reply the rules allow) times
what it would lose. It only looks at the position: never at future dice or seeds.
"""

from __future__ import annotations

from collections.abc import Sequence

from domain.board import NEST, Board
from domain.cpu.chance import pick_index
from domain.cpu.evaluation import DEFAULT, Weights, evaluate
from domain.cpu.features import bonus_rolls, opponents
from domain.decider import MatchState
from domain.moves import Move, legal_moves

__all__ = ["choose_hard", "score_moves"]


def _after(pieces: Sequence[Sequence[int]], seat: int, move: Move) -> list[list[int]]:
    out = [list(row) for row in pieces]
    out[seat][move.piece] = move.to
    for s, i in move.captures:
        out[s][i] = NEST
    return out


def _follow_up(
    board: Board,
    pieces: list[list[int]],
    me: int,
    foes: Sequence[int],
    sixes: int,
    w: Weights,
) -> float:
    """Expected value when `me` rolls once more in `pieces` and plays its best move."""
    three_sixes = board.ruleset.three_sixes
    here = evaluate(board, pieces, me, foes, w)
    total = 0.0
    for die in range(1, 7):
        if die == 6 and three_sixes and sixes == 2:
            total += here  # the third six ends the turn unplayed
            continue
        best = None
        for move in legal_moves(board, pieces, me, die):
            value = evaluate(board, _after(pieces, me, move), me, foes, w)
            if best is None or value > best:
                best = value
        total += here if best is None else best
    return total / 6.0


def score_moves(
    state: MatchState, moves: Sequence[Move], w: Weights = DEFAULT
) -> list[float]:
    """The expected value of each move for the seat to act (higher is better)."""
    board = state.board
    assert board is not None
    me = state.turn
    die = state.die if state.die is not None else 0
    foes = opponents(board.players, me, state.finished)
    scores: list[float] = []
    for move in moves:
        after = _after(state.pieces, me, move)
        if move.to == board.goal and all(p == board.goal for p in after[me]):
            scores.append(float("inf"))  # finishing wins outright
            continue
        extra = state.rolls_left + bonus_rolls(board, die, bool(move.captures), move.to)
        if extra > 0:
            sixes = state.sixes if die == 6 else 0
            scores.append(_follow_up(board, after, me, foes, sixes, w))
        else:
            scores.append(evaluate(board, after, me, foes, w))
    return scores


def choose_hard(state: MatchState, moves: Sequence[Move], seed: str) -> Move:
    """The move of highest expected value; exact ties are split by the seed."""
    scores = score_moves(state, moves)
    best = max(scores)
    tied = [m for m, s in zip(moves, scores, strict=True) if s >= best - 1e-9]
    if len(tied) == 1:
        return tied[0]
    return tied[pick_index(seed, state.rolls_made, len(tied))]
