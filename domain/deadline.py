"""What a match's deadline does when it passes (docs/design.md#timers-presence-and-cpu-stand-ins):
`deadline_command`.

The scheduler only fires the deadline; who acts then, and at which level a CPU plays,
are rules of the match, decided here from its state.
"""

from __future__ import annotations

from domain.commands import Command, MovePiece, Roll, TimeOut
from domain.cpu import choose_move
from domain.decider import MatchState, current_legal_moves

__all__ = ["deadline_command"]


def deadline_command(state: MatchState, match_id: str) -> Command:
    """The command the deadline of `state` (a match being played) sends: for a turn a CPU
    controls, the CPU's roll or its move (at `MatchState.cpu_level`; the match id and the
    seat seed its tie breaks), else the player's turn times out (`TimeOut`)."""
    seat = state.turn
    if not state.cpu_controls(seat):
        return TimeOut(seat=seat)
    if state.phase == "roll":
        return Roll(seat=seat, by="cpu")
    moves = current_legal_moves(state)
    move = choose_move(state.cpu_level(seat), state, moves, f"{match_id}:{seat}")
    return MovePiece(seat=seat, piece=move.piece, by="cpu")
