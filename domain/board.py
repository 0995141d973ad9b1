"""Board geometry (docs/rules.md#the-board): who sits where, the track, safe squares, the progress
scale.

A `Board` is compiled once per (ruleset, player count) and cached: it turns a piece's
progress into a track square with one tuple lookup, which is what keeps move generation fast.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from domain.rules import Ruleset, RulesetError, entering_value_ends_tries

__all__ = [
    "ARM",
    "COLOURS",
    "NEST",
    "PIECES",
    "SYMBOLS",
    "Board",
    "board_for",
]

COLOURS: tuple[str, ...] = ("yellow", "blue", "red", "green")
SYMBOLS: dict[str, str] = {"yellow": "○", "blue": "□", "red": "△", "green": "✚"}
# Final: the compiled engine (mypyc) inlines these instead of looking them up in a module
# dictionary on every use.
ARM: Final = 13  # squares per arm of the track
PIECES: Final = 4  # pieces per colour
NEST: Final = -1  # progress of a piece in its nest

# docs/rules.md#the-board, Decision: on the cross board 2 players sit opposite, 3 take
# yellow/blue/red.
_CROSS_COLOURS = {2: (0, 2), 3: (0, 1, 2), 4: (0, 1, 2, 3)}
_STAR_OFFSET = 8  # the star square sits 8 squares ahead of each arm's start


class Board:
    """The geometry of one ruleset at one player count. Immutable; build with `board_for`.

    Attributes are plain ints/tuples for speed: `track[seat][p]` is the track index of
    progress p (0 <= p <= last_track) for that seat.
    """

    __slots__ = (
        "blocks",
        "capture_bonus",
        "colour_index",
        "colours",
        "empty_course",
        "enter_on",
        "entering_ends_tries",
        "exact_finish",
        "goal",
        "goal_bonus",
        "home",
        "last_track",
        "length",
        "players",
        "progress_at",
        "ruleset",
        "safe",
        "safe_at",
        "starts",
        "three_sixes",
        "track",
    )

    # `players` is typed `object` because it is validated here: compiled (mypyc), an `int`
    # parameter would reject a float or None with a TypeError before this check ran.
    def __init__(self, ruleset: Ruleset, players: object) -> None:
        if isinstance(players, bool) or not isinstance(players, int) or not 2 <= players <= 4:
            raise RulesetError("players", f"must be 2, 3 or 4, got {players!r}")
        self.ruleset = ruleset
        self.players = players
        # Copies of the options that move generation and `decide` read on every roll. When
        # compiled (mypyc) a Board attribute is a native field, while reading a Ruleset's
        # (a msgspec Struct, an ordinary Python class) is a generic attribute look-up.
        self.enter_on: frozenset[int] = ruleset.enter_on
        self.exact_finish: bool = ruleset.exact_finish
        self.blocks: str = ruleset.blocks
        self.empty_course: str = ruleset.empty_course
        self.entering_ends_tries: bool = entering_value_ends_tries(ruleset)
        self.three_sixes: bool = ruleset.three_sixes
        self.capture_bonus: bool = ruleset.capture_bonus
        self.goal_bonus: bool = ruleset.goal_bonus
        if ruleset.board == "cross":
            arms = 4
            self.colour_index: tuple[int, ...] = _CROSS_COLOURS[players]
        else:
            arms = players
            self.colour_index = tuple(range(players))
        self.colours: tuple[str, ...] = tuple(COLOURS[c] for c in self.colour_index)
        self.length = arms * ARM
        self.last_track = self.length - 2  # a piece turns home instead of reaching start - 1
        self.home = self.length - 1  # first square of the home column
        self.goal = self.length + 4
        self.starts: tuple[int, ...] = tuple(
            ARM * (c if ruleset.board == "cross" else seat)
            for seat, c in enumerate(self.colour_index)
        )
        self.track: tuple[tuple[int, ...], ...] = tuple(
            tuple((start + p) % self.length for p in range(self.last_track + 1))
            for start in self.starts
        )
        # progress_at[seat][square]: the progress a piece of `seat` has on that track square;
        # -2 (matches no piece) on the square before its start, where it never stands.
        self.progress_at: tuple[tuple[int, ...], ...] = tuple(
            tuple(
                p if (p := (square - start) % self.length) <= self.last_track else -2
                for square in range(self.length)
            )
            for start in self.starts
        )
        if ruleset.safe_squares == "none":
            self.safe: frozenset[int] = frozenset()
        elif ruleset.safe_squares == "start":
            self.safe = frozenset(ARM * a for a in range(arms))
        else:
            self.safe = frozenset(
                sq for a in range(arms) for sq in (ARM * a, ARM * a + _STAR_OFFSET)
            )
        # safe_at[square] == (square in safe): move generation asks it for nearly every
        # landing, and indexing a tuple is cheaper than a set look-up (compiled or not).
        self.safe_at: tuple[bool, ...] = tuple(sq in self.safe for sq in range(self.length))

    def seat_of(self, colour: str) -> int:
        """The seat playing `colour`; RulesetError if that colour is not on this board."""
        try:
            return self.colours.index(colour)
        except ValueError:
            raise RulesetError(
                "colour", f"{colour!r} is not playing; this board seats {list(self.colours)}"
            ) from None

    def square(self, seat: int, progress: int) -> int | None:
        """Track index of a piece, or None when it is in the nest, home column or goal."""
        if 0 <= progress <= self.last_track:
            return self.track[seat][progress]
        return None

    def __repr__(self) -> str:
        return f"Board({self.ruleset.board}, players={self.players}, length={self.length})"


def board_for(ruleset: Ruleset, players: object) -> Board:
    """The (cached) board for a ruleset and a player count (RulesetError unless 2-4)."""
    # Checked before the cache: the cache hashes its arguments, and an unhashable count
    # (a list from a JSON query) would raise TypeError instead of the RulesetError.
    if isinstance(players, bool) or not isinstance(players, int) or not 2 <= players <= 4:
        raise RulesetError("players", f"must be 2, 3 or 4, got {players!r}")
    return _cached_board(ruleset, players)


@lru_cache(maxsize=256)
def _cached_board(ruleset: Ruleset, players: int) -> Board:
    return Board(ruleset, players)
