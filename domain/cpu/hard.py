"""The `hard` CPU: expectimax over its own bonus rolls on a danger-aware evaluation.

For each legal move it builds the resulting position on a copy of the pieces:

- a move that finishes the seat's last piece is taken at once;
- if the move leaves the seat another roll this turn (rolls still owed, or a bonus for a
  six, a capture or a goal as the ruleset grants; a third six under `three_sixes` is
  forfeit), its value is the average over the six die values of the best follow-up move
  (a chance node, then a max node);
- otherwise the position is scored directly.

Scores come from `evaluation.evaluate`: piece values in squares, the expected loss from
every capture any opponent could make with each value of its next roll, and the few
positional premiums tuned in docs/cpu.md. Under the `standard` rules with four players
(`learned.applies`) a leaf is instead the chance of winning that `learned.win_chance`
gives, with that evaluation as one of its inputs (+1.5 points against three `normal`,
docs/cpu.md). The choice depends only on the position, the die just rolled and the turn
counters: never on future dice or seeds. Exact ties are split by
`chance.pick_index(seed, roll number, k)`.

Cost: one evaluation per legal move, times about 6 x 3 when a bonus roll follows;
about 0.37 ms per decision on average in `ludo simulate` compiled, 1.3 ms with the
learned value (docs/cpu.md).
"""

from __future__ import annotations

from collections.abc import Sequence

from mypy_extensions import mypyc_attr

from domain.board import Board
from domain.cpu.chance import best_of
from domain.cpu.evaluation import DEFAULT, Weights, evaluate
from domain.cpu.features import opponents
from domain.cpu.learned import applies as learned_applies
from domain.cpu.learned import win_chance
from domain.decider import MatchState, bonus_rolls, third_six
from domain.moves import Move, legal_move_list, pushed

__all__ = ["Leaf", "choose_hard", "score_moves"]


@mypyc_attr(allow_interpreted_subclasses=True)
class Leaf:
    """How `hard` values a position where `me`'s turn has ended: the learned chance of
    winning where the network applies (`learned.applies`), else the hand-made evaluation.

    A class, not a function, so the match analysis (`domain.analysis`) can value the same
    look-ahead in chances everywhere by overriding `value`, while `hard`'s own calls stay
    native calls when compiled."""

    def __init__(self, w: Weights = DEFAULT) -> None:
        self.w = w

    def value(self, board: Board, pieces: list[list[int]], me: int, foes: Sequence[int]) -> float:
        w = self.w
        hand = evaluate(board, pieces, me, foes, w)
        if w is DEFAULT and learned_applies(board):
            return win_chance(pieces, me, hand)
        return hand


_DEFAULT_LEAF = Leaf()


def _follow_up(
    board: Board,
    pieces: list[list[int]],
    me: int,
    foes: Sequence[int],
    sixes: int,
    leaf: Leaf,
) -> float:
    """Expected value when `me` rolls once more in `pieces` and plays its best move.

    `sixes` counts the sixes already rolled in a row this turn.
    """
    here: float | None = None
    total = 0.0
    for die in range(1, 7):
        best: float | None = None
        if not third_six(board, sixes, die):
            for move in legal_move_list(board, pieces, me, die):
                value = leaf.value(board, pushed(pieces, me, move), me, foes)
                if best is None or value > best:
                    best = value
        if best is None:  # no legal move (or the third six): the position stays
            if here is None:
                here = leaf.value(board, pieces, me, foes)
            best = here
        total += best
    return total / 6.0


def score_moves(
    state: MatchState, moves: Sequence[Move], w: Weights = DEFAULT, leaf: Leaf | None = None
) -> list[float]:
    """The expected value of each move for the seat to act (higher is better); a move that
    finishes the seat's last piece is worth +inf. `leaf` values the positions at the end
    of the look-ahead (default: `Leaf(w)`)."""
    if leaf is None:
        leaf = _DEFAULT_LEAF if w is DEFAULT else Leaf(w)
    board = state.board
    assert board is not None
    me = state.turn
    die = state.die if state.die is not None else 0
    foes = opponents(board.players, me, state.finished)
    goal = board.goal
    scores: list[float] = []
    for move in moves:
        after = pushed(state.pieces, me, move)
        if move.to == goal and all(p == goal for p in after[me]):
            scores.append(float("inf"))  # the seat finishes
            continue
        extra = state.rolls_left + bonus_rolls(board, die, bool(move.captures), move.to)
        if extra > 0:
            sixes = state.sixes if die == 6 else 0
            scores.append(_follow_up(board, after, me, foes, sixes, leaf))
        else:
            scores.append(leaf.value(board, after, me, foes))
    return scores


def choose_hard(state: MatchState, moves: Sequence[Move], seed: str) -> Move:
    """The move of highest expected value; exact ties are split by the seed."""
    return best_of(moves, score_moves(state, moves), seed, state.rolls_made)
