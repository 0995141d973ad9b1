"""How a finished match ended for each seat: its place, and whether its player left. The one
reading of a match's end: the ratings and the reputation (`services.ranking.ratings.consumer`,
`domain.reputation`) and the arenas' scoring (`domain.arena`, from scoring revision 2)
all take it from here, so that an arena and the ratings never tell one match two ways.

**Who left** (`left_seats`): a seat whose CPU stand-in is still there when the match ends,
because its player left (`left`) or lost their connection and never came back
(`disconnected`): stood in for good. A stand-in for timeouts (`timeouts`) is not a leave
(the player was there, only slow), and a player who came back (`SeatReclaimed`) did not
leave.

**The place** (`seat_outcomes`): the seats whose player stayed keep the order
`MatchFinished.placements` gives them, ranked among themselves; every leaver comes after
all of them, the leavers sharing the last place. A leaver is never placed ahead of a
player who stayed, whatever the CPU made of their seat. Places are standard competition
ranking over all seats (1 = best; a place is 1 + the seats ahead of it: two tied 2nd are
both 2nd and the next is 4th; k leavers of n seats are each n - k + 1), the form
`domain.arena` checks. CPU seats are seats like any other here (their player never
leaves); the ratings leave them out afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

__all__ = ["LEFT_REASONS", "SeatOutcome", "left_seats", "seat_outcomes"]

# The stand-in reasons that mean the player left, when the stand-in is still there at the end.
LEFT_REASONS: Final = frozenset({"left", "disconnected"})


class SeatOutcome(msgspec.Struct, frozen=True):
    """One seat's end of a match: its `place` (1 = best) and whether its player `left`."""

    place: int
    left: bool


def left_seats(stood_in: Sequence[str | None]) -> list[bool]:
    """Per seat, whether its player left the match (module docstring), from the stand-in
    reasons of each seat at `MatchFinished` (`MatchState.stood_in`)."""
    return [reason in LEFT_REASONS for reason in stood_in]


def seat_outcomes(
    placements: Sequence[int], stood_in: Sequence[str | None]
) -> tuple[SeatOutcome, ...]:
    """Each seat's place and whether its player left (module docstring), from the match's
    `MatchFinished.placements` and each seat's stand-in reason at the end."""
    if len(placements) != len(stood_in):
        raise ValueError("a placement and a stand-in reason for each seat")
    left = left_seats(stood_in)
    stayed = [p for p, gone in zip(placements, left, strict=True) if not gone]
    last = 1 + len(stayed)
    return tuple(
        SeatOutcome(last if gone else 1 + sum(1 for other in stayed if other < place), gone)
        for place, gone in zip(placements, left, strict=True)
    )
