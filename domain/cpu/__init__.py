"""CPU players: pick one of the legal moves, deterministically given a seed.

Every level is a pure function `(state, moves, seed) -> Move`: no clock, no global
randomness. Where a level needs chance (easy's random pick, tie breaks) it derives it from
the seed and the roll number, so a replay of the same match picks the same moves and any
service instance can play a stand-in's turn.

- `easy`: a uniformly random legal move.
- `normal`: one-move heuristics (capture, enter, escape danger, keep blocks, advance).
- `hard`: looks ahead over the coming dice and the opponents' replies; under the
  `standard` rules with four players it values positions with a network learned by
  self-play (`learned.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain.cpu.easy import choose_easy
from domain.cpu.hard import choose_hard
from domain.cpu.normal import choose_normal
from domain.decider import MatchState
from domain.events import CpuLevel
from domain.moves import Move

__all__ = ["CPU_LEVELS", "Chooser", "choose_move"]

Chooser = Callable[[MatchState, Sequence[Move], str], Move]

CPU_LEVELS: dict[CpuLevel, Chooser] = {
    "easy": choose_easy,
    "normal": choose_normal,
    "hard": choose_hard,
}


def choose_move(level: CpuLevel, state: MatchState, moves: Sequence[Move], seed: str) -> Move:
    """The move a CPU of `level` plays among `moves` (non-empty) in `state`."""
    if len(moves) == 1:
        return moves[0]
    return CPU_LEVELS[level](state, moves, seed)
