"""The `easy` CPU: a uniformly random legal move (random given its seed)."""

from __future__ import annotations

from collections.abc import Sequence

from domain.cpu.chance import pick_index
from domain.decider import MatchState
from domain.moves import Move

__all__ = ["choose_easy"]


def choose_easy(state: MatchState, moves: Sequence[Move], seed: str) -> Move:
    """Any legal move, chosen by the seed and the roll number."""
    return moves[pick_index(seed, state.rolls_made, len(moves))]
