"""A learned value for `hard` under the `standard` rules with four players.

`win_chance(pieces, me, hand)` estimates the chance that seat `me` wins from
`pieces` (a position after its turn ended, the opponents to move), from a small neural
network trained by temporal-difference learning in matches of `hard` against three
`normal` (docs/cpu.md, "The learned value"; the training harness is
`tools/train_hard_value.py`):

- inputs: where every piece stands, seen from `me`: its own pieces by progress (nest,
  track, home column, goal), each opponent's by square relative to `me`'s start (so a
  hidden unit can see "an opponent two squares behind my piece"), with one unit per piece
  on a place (the first, second, ... piece there), 940 in all, 16 of them on;
- the hand-made evaluation (`evaluation.evaluate`) as one more input, so the network only
  has to learn what it misses;
- one hidden layer of 64 tanh units, a logistic output.

The weights are package data (`hard_weights.bin`, float32, described by `hard_weights.json`;
written by the harness, read once at import by `weights.load`), the same bytes on every
machine, and the arithmetic is plain Python floats in a fixed order, so every machine makes
the same choices. It applies only to the board and rules it was trained on (`applies`);
`hard` falls back to the hand-made evaluation elsewhere.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from importlib.resources import files
from typing import Final

import msgspec

from domain.board import Board
from domain.cpu.weights import Array, load
from domain.rules import PRESETS, REVISIONS

__all__ = ["HIDDEN", "INPUTS", "NETWORK", "SHAPES", "WEIGHTS", "applies", "encode", "win_chance"]

# The standard rules under every revision: the revisions differ only under three_tries,
# which the standard rules do not use, so the network knows the game under each.
_STANDARD: Final = frozenset(
    msgspec.structs.replace(PRESETS["standard"], revision=r) for r in REVISIONS
)
_QUARTER: Final = 13  # squares between two seats' starts on the 4-player cross board
_OWN: Final = 58 * 4  # inputs for the seat's own pieces: 58 places x 4 units
_THEIRS: Final = 59 * 4  # per opponent: 52 squares, nest, 6 home places, x 4 units
INPUTS: Final = _OWN + 3 * _THEIRS
HIDDEN: Final = 64
# The arrays the network is made of, as the package data must hold them: the first layer
# (row i: the weights of input i into every hidden unit), the hidden biases, the output
# weights and bias, and the weight of the hand-made evaluation (per square).
SHAPES: Final[dict[str, tuple[int, ...]]] = {
    "W1": (INPUTS, HIDDEN),
    "B1": (HIDDEN,),
    "W2": (HIDDEN,),
    "B2": (),
    "HAND": (),
}
WEIGHTS: Final = "hard_weights"  # the package data's name in this package: .bin and .json


def _weights() -> dict[str, Array]:
    arrays = load(files("domain.cpu"), WEIGHTS)
    shapes = {name: a.shape for name, a in arrays.items()}
    if shapes != SHAPES:
        raise ValueError(f"{WEIGHTS}.json holds the shapes {shapes}, expected {SHAPES}")
    return arrays


def _network() -> str:
    header = json.loads(files("domain.cpu").joinpath(f"{WEIGHTS}.json").read_text())
    return f"{header['iteration']}-{header['sha256'][:12]}"


_ARRAYS: Final = _weights()
# Which weights these are: the training iteration and the binary's sha256 (its first 12
# digits). The match analysis records it with every result (domain.analysis.EVALUATOR).
NETWORK: Final[str] = _network()
# The first layer by hidden unit: column j holds the weight of every input into unit j.
_COLUMNS: Final[tuple[tuple[float, ...], ...]] = tuple(
    _ARRAYS["W1"].values[j::HIDDEN] for j in range(HIDDEN)
)
_B1: Final[tuple[float, ...]] = _ARRAYS["B1"].values
_W2: Final[tuple[float, ...]] = _ARRAYS["W2"].values
_B2: Final[float] = _ARRAYS["B2"].values[0]
_HAND: Final[float] = _ARRAYS["HAND"].values[0]


def applies(board: Board) -> bool:
    """Whether the network knows this game: four players under the `standard` rules."""
    return board.players == 4 and board.ruleset in _STANDARD


def encode(pieces: Sequence[Sequence[int]], me: int) -> list[int]:
    """The 16 inputs that are on for `pieces` seen from seat `me` (see module doc)."""
    on: list[int] = []
    seen: dict[int, int] = {}
    for p in pieces[me]:
        k = seen.get(p, 0)
        seen[p] = k + 1
        on.append((p + 1) * 4 + k)
    for r in range(1, 4):
        base = _OWN + (r - 1) * _THEIRS
        seen = {}
        for p in pieces[(me + r) % 4]:
            if p < 0:
                place = 52
            elif p <= 50:
                place = (p + _QUARTER * r) % 52
            else:
                place = 53 + (p - 51)
            k = seen.get(place, 0)
            seen[place] = k + 1
            on.append(base + place * 4 + k)
    return on


def win_chance(pieces: Sequence[Sequence[int]], me: int, hand: float) -> float:
    """The estimated chance that `me` wins; `hand` is `evaluate(...)` of the position."""
    on = encode(pieces, me)
    y = _B2 + _HAND * hand
    # Unit by unit, its bias and then the weights of the inputs that are on, in `on`'s
    # order: a float local the compiled code keeps unboxed, no list of partial sums.
    for j in range(HIDDEN):
        column = _COLUMNS[j]
        total = _B1[j]
        for i in on:
            total += column[i]
        y += _W2[j] * math.tanh(total)
    return 1.0 / (1.0 + math.exp(-y))
