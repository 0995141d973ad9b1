"""Static evaluation of a position for one seat, used by the `hard` CPU's lookahead.

A position is scored in "squares". Each piece is worth a table value of its progress
(`piece_values`): what it cost to get out of the nest (large when only a 6 enters), plus
its progress, plus a convex premium that grows towards the home column, because a piece
far along has fewer squares left on which it can be captured; once in the home column
or the goal it is out of reach for good.

Exposure is priced as an expectation: a piece that an opponent can hit with their next
roll (`features.Occupancy.hit_mask`: every die value, every capturing reply the rules
allow) loses its value with that chance; a piece a six-and-another-roll away carries a
smaller share. Opponent pieces we threaten count a little against their owner. The
seat's score is its total minus a blend of the opponents' totals (their sum and their
leader), because what wins is finishing before every opponent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import erf, sqrt

from domain.board import NEST, Board
from domain.cpu.features import MASK_COUNT, Occupancy

__all__ = ["DEFAULT", "Weights", "evaluate", "piece_values"]


@dataclass(frozen=True, slots=True)
class Weights:
    """Tunable constants of the evaluation (all in squares of progress)."""

    entry_six: float = 40.0  # worth of a piece out of the nest when only a 6 enters
    entry_any: float = 8.0  # ... when every die value enters
    convex: float = 1.5  # premium convex * p^2 / last for a piece at track progress p
    home_safe: float = 6.0  # premium for reaching the home column (out of reach)
    goal: float = 10.0  # premium for a piece in the goal
    risk: float = 1.0  # share of an exposed piece's value lost per unit of hit chance
    risk_far: float = 0.0  # the same for a hit needing a six first (7-12 squares behind)
    attack: float = 0.25  # share of an exposed opponent piece's value we may win
    rival_sum: float = 1.0  # weight of the opponents' summed score
    rival_max: float = 0.0  # extra weight of the leading opponent
    block: float = 0.0  # worth of each own block (two pieces on one track square, "double")
    race: float = 0.0  # >0: score = chance of out-racing every opponent, with this spread
    idle: float = 4.0  # cost of each roll expected to be wasted for want of a movable piece


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


def _idle_rolls(board: Board, row: Sequence[int], enter_mask: int) -> float:
    """Rolls the seat can expect to waste in a row before some piece can use the die:
    0 with a piece on the track; otherwise its nest pieces wait for an entering value
    and its home-column pieces (under exact finish) for a small enough one."""
    goal = board.goal
    last = board.last_track
    usable = 0
    for p in row:
        if p == NEST:
            usable |= enter_mask
        elif p <= last:
            return 0.0
        elif p < goal:
            usable |= (2 << (goal - p)) - 2 if board.ruleset.exact_finish else 0b1111110
    q = MASK_COUNT[usable & 0b1111110] / 6.0
    return (1.0 - q) / q if q else 0.0


def _far_mask(occ: Occupancy, attacker: int, square: int) -> int:
    """Distances 7-12 behind `square` holding an attacker piece on its own track (as
    die-value bits 1-6 of distance - 6): hits that need a six first."""
    board = occ.board
    length = board.length
    last = board.last_track
    mask = 0
    row = occ.pieces[attacker]
    for i, sq in enumerate(occ.square[attacker]):
        if sq < 0:
            continue
        d = (square - sq) % length
        if 7 <= d <= 12 and row[i] + d <= last:
            mask |= 1 << (d - 6)
    return mask


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
    far = w.risk_far
    idle = w.idle
    enter_mask = 0
    for face in board.ruleset.enter_on:
        enter_mask |= 1 << face
    row = pieces[me]
    mine = -idle * _idle_rolls(board, row, enter_mask) if idle else 0.0
    for i, sq in enumerate(occ.square[me]):
        value = values[row[i] + 1]
        if sq >= 0 and sq not in safe:
            survive = 1.0
            for a in foes:
                m = occ.hit_mask(a, sq)
                if m:
                    survive *= 1.0 - MASK_COUNT[m] / 6.0
                if far:
                    fm = _far_mask(occ, a, sq)
                    if fm:
                        survive *= 1.0 - far * MASK_COUNT[fm] / 36.0
            value *= 1.0 - w.risk * (1.0 - survive)
        mine += value

    if w.block and occ.block:
        mine += w.block * sum(1 for owner in occ.block.values() if owner == me)

    rivals: list[float] = []
    attack = w.attack
    for s in foes:
        srow = pieces[s]
        total = -idle * _idle_rolls(board, srow, enter_mask) if idle else 0.0
        for i, sq in enumerate(occ.square[s]):
            value = values[srow[i] + 1]
            if attack and sq >= 0 and sq not in safe:
                m = occ.hit_mask(me, sq)
                if m:
                    value *= 1.0 - attack * MASK_COUNT[m] / 6.0
            total += value
        rivals.append(total)
    if not rivals:
        return mine
    if w.race:
        # Chance of finishing before each opponent, the gap in value measured against a
        # spread growing with the distance both still have to go (a race of dice).
        full = 4 * values[-1]
        spread = w.race
        chance = 1.0
        need_me = full - mine
        for total in rivals:
            z = (mine - total) / (spread * sqrt(max(need_me + full - total, 1.0)))
            chance *= 0.5 * (1.0 + erf(z * 0.7071067811865476))
        return chance
    return mine - w.rival_sum * sum(rivals) - w.rival_max * max(rivals)
