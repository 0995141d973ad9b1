"""A player's reputation, as a fold of their matches (issue 28): who left a match, their
completion rate, and when abandoning ranked matches keeps them out of ranked pools.

**Who left** (`left_seats`) is read once here, for the ratings (a leaver is placed last:
`places_leavers_last`) and for the reputation (an abandoned match) alike: a seat whose
CPU stand-in is still there when the match ends, because its player left (`left`) or lost
their connection and never came back (`disconnected`). A stand-in for timeouts
(`timeouts`) is not a leave: the player was there, only slow; and a player who came back
(`SeatReclaimed`) did not leave.

**Completion rate** (`completion`): matches played to the end ÷ matches ended, over the
player's last `RECENT` ended matches.

**Ranked pause** (`ranked_pause`): abandoning `ABANDONS` ranked matches within `WINDOW`
seconds keeps the player out of ranked pools for `PAUSE` seconds, doubled for each pause
they earned in the `REPEAT_WINDOW` before it. The abandons that earned a pause count for no
other. Times are the service's clock in seconds (the domain has none).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import msgspec

from domain.decider import MatchState

__all__ = [
    "ABANDONS",
    "LEFT_REASONS",
    "PAUSE",
    "RECENT",
    "REPEAT_WINDOW",
    "WINDOW",
    "Completion",
    "Ended",
    "Pause",
    "completion",
    "left_seats",
    "places_leavers_last",
    "ranked_pause",
]

LEFT_REASONS: Final = frozenset({"left", "disconnected"})
RECENT: Final = 50
ABANDONS: Final = 3
WINDOW: Final = 24 * 3600.0
PAUSE: Final = 3600.0
REPEAT_WINDOW: Final = 7 * 24 * 3600.0


def left_seats(state: MatchState) -> list[bool]:
    """Per seat, whether its player left the match (see the module docstring); read on
    the state at `MatchFinished`."""
    return [reason in LEFT_REASONS for reason in state.stood_in]


def places_leavers_last(placements: Sequence[int], left: Sequence[bool]) -> tuple[int, ...]:
    """Per seat, its place once every leaver is placed last: the seats that stayed keep
    the order of `placements` (ties included), the leavers share the place after them.

    A place is 1 + the number of seats ranked strictly ahead (standard competition
    ranking, as `domain.placements`), so every place is one a seat of this match can
    hold (1 to the number of seats): a 2-player match placed (1, 2) whose second left is
    (1, 2), and whose winner left is (2, 1); never a third place in a duel. Only the
    order of the places is rated, so it is the same rating as any placing with the same
    order."""
    keys = [(gone, 0 if gone else place) for place, gone in zip(placements, left, strict=True)]
    return tuple(1 + sum(1 for other in keys if other < key) for key in keys)


class Ended(msgspec.Struct, frozen=True):
    """One ended match of a player: when it ended, whether it was ranked, and whether
    they left it (`left_seats`)."""

    match_id: str
    ended_at: float
    ranked: bool
    left: bool


class Completion(msgspec.Struct, frozen=True):
    """Matches played to the end out of the last ended ones (`rate`: None before any)."""

    completed: int
    ended: int

    @property
    def rate(self) -> float | None:
        return self.completed / self.ended if self.ended else None


class Pause(msgspec.Struct, frozen=True):
    """Out of ranked pools from `since` to `until`: the `abandons` that earned it, and
    how many pauses came before it in the repeat window (`repeat`: the doubling)."""

    since: float
    until: float
    abandons: tuple[str, ...]
    repeat: int


def completion(history: Sequence[Ended]) -> Completion:
    """The completion over the last `RECENT` ended matches of `history` (any order)."""
    recent = sorted(history, key=lambda e: (e.ended_at, e.match_id))[-RECENT:]
    return Completion(completed=sum(not e.left for e in recent), ended=len(recent))


def _pauses(history: Sequence[Ended]) -> list[Pause]:
    pauses: list[Pause] = []
    counting: list[Ended] = []  # ranked abandons since the last pause began
    for match in sorted(history, key=lambda e: (e.ended_at, e.match_id)):
        if not (match.ranked and match.left):
            continue
        counting = [e for e in counting if match.ended_at - e.ended_at < WINDOW]
        counting.append(match)
        if len(counting) < ABANDONS:
            continue
        since = match.ended_at
        repeat = sum(1 for p in pauses if since - p.since < REPEAT_WINDOW)
        until = since + PAUSE * 2**repeat
        pauses.append(Pause(since, until, tuple(e.match_id for e in counting), repeat))
        counting = []
    return pauses


def ranked_pause(history: Sequence[Ended], now: float) -> Pause | None:
    """The pause that keeps the player out of ranked pools at `now` (of two at once, the
    one that lasts longer), if any."""
    active = [p for p in _pauses(history) if p.since <= now < p.until]
    return max(active, key=lambda p: p.until, default=None)
