"""The `normal` CPU (placeholder until the heuristics land): plays like `easy`."""

from __future__ import annotations

from collections.abc import Sequence

from domain.cpu.easy import choose_easy
from domain.decider import MatchState
from domain.moves import Move

__all__ = ["choose_normal"]


def choose_normal(state: MatchState, moves: Sequence[Move], seed: str) -> Move:
    return choose_easy(state, moves, seed)
