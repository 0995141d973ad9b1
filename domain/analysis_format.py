"""The match analysis's result as it is stored and served (docs/analysis.md, "The stored
result"): the msgspec Structs `domain.analysis` builds, and `encode`.

Apart from `domain/analysis.py` because that module is compiled with mypyc (pyproject.toml,
`[tool.ludo]`), and a Struct defined in a compiled module loses its class options
(`frozen`, `kw_only`, `array_like`): these must stay ordinary Python classes, as
`cannot_move.py`'s. `domain.analysis` re-exports every name here.

Not a `replays.versioned_file.VersionedFile`, as replay and tournament files are: nothing
reads an analysis back (the service stores and serves these bytes, the command prints
them), its bytes are one compact line that the golden analyses pin, and `domain/` may not
import `replays/`.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

__all__ = [
    "FORMAT",
    "FORMAT_VERSION",
    "Analysis",
    "Decision",
    "Option",
    "Point",
    "Roll",
    "SeatAnalysis",
    "Swing",
    "encode",
]

FORMAT: Final = "ludo-analysis"
FORMAT_VERSION: Final = 1

# ----------------------------------------------------------------------------- the result


class Option(msgspec.Struct, frozen=True, array_like=True):
    """A legal move of a decision: the piece, where it goes, and its value."""

    piece: int
    frm: int
    to: int
    value: float


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """A choice among two or more different moves: `version` is the `PieceMoved`'s, `by`
    who chose (player, cpu, stand-in, timeout); `played` and `best` index `options`."""

    version: int
    seat: int
    by: str
    die: int
    options: list[Option]
    played: int
    best: int
    error: float


class Roll(msgspec.Struct, frozen=True, kw_only=True):
    """A die of seat `seat` (`version`: the `DieRolled`'s): `faces[i]` is the value of the
    best play of face i + 1, `before` their mean, `luck` = faces[die − 1] − before."""

    version: int
    seat: int
    die: int
    before: float
    luck: float
    faces: list[float]


class Point(msgspec.Struct, frozen=True, array_like=True):
    """Every seat's chance to place first after the event `version` (a turn's end, the
    start, the end), as the graph draws it: each seat's own value, shared out so the
    seats still playing sum to 1."""

    version: int
    chances: list[float]


class Swing(msgspec.Struct, frozen=True, kw_only=True):
    """One of a seat's largest changes of chance: a whole turn of seat `by` (from the
    event `version` to `until`), the dice it rolled and the seats it captured."""

    version: int
    until: int
    by: int
    dice: list[int]
    captured: list[int]
    change: float


class SeatAnalysis(msgspec.Struct, frozen=True, kw_only=True):
    """One seat's sums. `error` counts every choice made for the seat; `choices`,
    `own_error`, `best_choices`, `error_rate` and `best_share` only those of its own
    player (or CPU): not a stand-in's, nor a timed-out turn's."""

    seat: int
    rolls: int
    luck: float
    error: float
    choices: int
    own_error: float
    best_choices: int
    error_rate: float
    best_share: float
    others: float
    lookahead: float
    start: float
    end: float
    swings: list[Swing]


class Analysis(msgspec.Struct, frozen=True, kw_only=True):
    """A match's analysis (docs/analysis.md). `until`: the version it stopped at."""

    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    evaluator: str
    value: Literal["first"] = "first"
    players: int
    until: int
    seats: list[SeatAnalysis]
    points: list[Point]
    rolls: list[Roll]
    decisions: list[Decision]


_ENCODER: Final = msgspec.json.Encoder()


def encode(analysis: Analysis) -> bytes:
    """The analysis as the service stores it and `ludo replay analyse` prints it."""
    return _ENCODER.encode(analysis)
