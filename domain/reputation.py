"""A player's reputation, as a fold of their matches: who left a match, their
completion rate, and when abandoning ranked matches keeps them out of ranked pools.

**Who left** (`left_seats`) is `domain.outcome`'s reading of a match's end, the one the
ratings (a leaver is placed last) and the arenas use too: a seat whose CPU stand-in is
still there when the match ends, because its player left (`left`) or lost their
connection and never came back (`disconnected`). A stand-in for timeouts (`timeouts`) is
not a leave: the player was there, only slow; and a player who came back
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

from domain import outcome
from domain.decider import MatchState
from domain.outcome import LEFT_REASONS

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
    "ranked_pause",
]

RECENT: Final = 50
ABANDONS: Final = 3
WINDOW: Final = 24 * 3600.0
PAUSE: Final = 3600.0
REPEAT_WINDOW: Final = 7 * 24 * 3600.0


def left_seats(state: MatchState) -> list[bool]:
    """Per seat, whether its player left the match (`domain.outcome.left_seats`); read on
    the state at `MatchFinished`."""
    return outcome.left_seats(state.stood_in)


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
