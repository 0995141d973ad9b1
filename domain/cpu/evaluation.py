"""Static evaluation of a position for one seat: the leaf score of the `hard` CPU's search.

A position is scored in "squares" of progress:

- Each piece is worth a table value of its progress (`piece_values`): what getting it out
  of the nest is worth (large when only a 6 enters), plus its progress, plus a convex
  premium `convex * p^2 / last` (a square gained near home is worth more than one near
  the start: the piece has fewer squares left on which it can be caught), plus premiums
  for the home column and the goal, where it is out of reach for good.
- A piece standing on a safe square is worth `parked` more: it can wait there in safety
  while other pieces move.
- Danger is an expectation over the opponents' next rolls (`features.Occupancy.hit_mask`:
  every die value, every capturing reply the rules allow). For each opponent and each
  die value we assume the most valuable piece it could capture is captured, and weigh
  that loss by `risk` (a little over 1: the capturer also earns a bonus roll).
- Rolls the seat can expect to waste because nothing can move (all pieces in the nest,
  or only home-column pieces needing an exact count) cost `idle` each.
- Opponent pieces we can hit next turn are discounted by `attack` times the chance.

The seat's score is its own total minus the opponents' totals (`rival` times their sum):
sending an opponent's piece home is worth about as much as the same progress of our own.
The constants were tuned with `ludo simulate` (docs/cpu.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from domain.board import NEST, Board
from domain.cpu.features import MASK_COUNT, Occupancy, face_mask

__all__ = ["DEFAULT", "Weights", "evaluate", "idle_rolls", "piece_values"]


@dataclass(frozen=True, slots=True)
class Weights:
    """Tunable constants of the evaluation (in squares of progress unless a share)."""

    entry_six: float = 40.0  # worth of a piece out of the nest when only a 6 enters
    entry_any: float = 8.0  # ... when every die value enters (interpolated in between)
    convex: float = 2.0  # premium convex * p^2 / last for a piece at track progress p
    home_safe: float = 12.0  # premium for reaching the home column
    goal: float = 10.0  # further premium for reaching the goal
    parked: float = 0.25  # share of its worth added for a piece on a safe square
    risk: float = 1.3  # share of a piece's worth lost per unit of chance it is captured
    attack: float = 0.25  # share of an opponent piece's worth we expect to win per chance
    idle: float = 4.0  # cost of each roll expected to be wasted for want of a movable piece
    rival: float = 1.0  # weight of the opponents' summed score


DEFAULT = Weights()


@lru_cache(maxsize=64)
def piece_values(board: Board, w: Weights = DEFAULT) -> tuple[float, ...]:
    """Worth of a piece by progress: index p + 1 for p in -1 (nest) .. goal."""
    faces = len(board.ruleset.enter_on)
    entry = w.entry_any + (w.entry_six - w.entry_any) * (6 - faces) / 5
    last = board.last_track
    values = [0.0]
    for p in range(last + 1):
        values.append(entry + p + w.convex * p * p / last)
    top = values[-1]
    for p in range(last + 1, board.goal):
        values.append(top + (p - last) + w.home_safe)
    values.append(top + (board.goal - last) + w.home_safe + w.goal)
    return tuple(values)


def idle_rolls(board: Board, row: Sequence[int]) -> float:
    """Rolls a seat can expect to waste in a row before some piece can use the die.

    0 with a piece on the track (ignoring blocks, which rarely last). Otherwise nest
    pieces wait for an entering value and, under exact finish, home-column pieces for a
    small enough one: with q the chance a roll is usable, (1 - q) / q rolls are wasted.
    """
    goal = board.goal
    last = board.last_track
    exact = board.ruleset.exact_finish
    usable = 0
    for p in row:
        if p == NEST:
            usable |= face_mask(board.ruleset.enter_on)
        elif p <= last:
            return 0.0
        elif p < goal:
            usable |= (2 << (goal - p)) - 2 if exact else 0b1111110
    q = MASK_COUNT[usable] / 6.0
    return (1.0 - q) / q if q else 0.0


def evaluate(
    board: Board,
    pieces: Sequence[Sequence[int]],
    me: int,
    foes: Sequence[int],
    w: Weights = DEFAULT,
) -> float:
    """The value of `pieces` for seat `me`, with the seats `foes` to move before `me` again."""
    occ = Occupancy(board, pieces)
    values = piece_values(board, w)
    safe = board.safe
    parked = 1.0 + w.parked

    row = pieces[me]
    mine = -w.idle * idle_rolls(board, row)
    exposed: list[tuple[int, float]] = []
    for i, sq in enumerate(occ.square[me]):
        value = values[row[i] + 1]
        if sq >= 0:
            if sq in safe:
                value *= parked
            else:
                exposed.append((sq, value))
        mine += value
    if exposed:
        # per opponent and die value, the most valuable of our pieces it could capture
        loss = 0.0
        for a in foes:
            worst = [0.0] * 7
            for sq, value in exposed:
                m = occ.hit_mask(a, sq)
                if m:
                    for d in range(1, 7):
                        if m >> d & 1 and value > worst[d]:
                            worst[d] = value
            loss += sum(worst)
        mine -= w.risk * loss / 6.0

    rivals = 0.0
    attack = w.attack / 6.0
    for s in foes:
        srow = pieces[s]
        total = -w.idle * idle_rolls(board, srow)
        for i, sq in enumerate(occ.square[s]):
            value = values[srow[i] + 1]
            if sq >= 0 and sq not in safe and attack:
                m = occ.hit_mask(me, sq)
                if m:
                    value *= 1.0 - attack * MASK_COUNT[m]
            total += value
        rivals += total
    return mine - w.rival * rivals
