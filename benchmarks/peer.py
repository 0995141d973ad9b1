"""Peer baseline for ``ludo bench domain``.

``ludo bench domain`` reports our rules engine's full-match throughput. A bare
matches/s figure means little on its own: it moves with the machine, the
interpreter and whatever else is running. So the command also plays matches on
a public third-party engine, PyPI's ``ludo-king-engine`` (import name
``ludo_engine``), in the same process and run, and prints both figures side by
side.

The peer plays the same workload as ours: fresh 4-player matches, one thread,
each player taking the *first* legal move the engine lists, until the engine
declares a winner. In ``ludo_engine`` the winner is the first player with all
4 tokens finished. The engine is an optional dependency (the ``bench`` extra),
so it is imported lazily and ``peer_available()`` lets callers skip it.

The engine draws its dice from the global ``random`` module. A run seeds it
and puts the caller's generator state back afterwards, so a given
``(matches, seed)`` always replays the same games.
"""

from __future__ import annotations

import importlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ludo_engine import LudoGame, PlayerColor

__all__ = [
    "DEFAULT_TURN_CAP",
    "PEER_NAME",
    "PeerRun",
    "peer_available",
    "peer_version",
    "play_peer_matches",
]

PEER_NAME = "ludo-king-engine"
"""Distribution name on PyPI. Also the label ``ludo bench domain`` prints."""

_PEER_MODULE = "ludo_engine"

DEFAULT_TURN_CAP = 20_000
"""The most dice rolls allowed in one match before it is abandoned as capped.

A first-legal-move 4-player match takes a few hundred rolls, so reaching this
cap would mean an engine bug (a state with no progress), not a long game.
"""


@dataclass(frozen=True, slots=True)
class PeerRun:
    """The outcome of one ``play_peer_matches`` run.

    ``matches`` counts every match played, including capped ones. ``capped``
    counts the matches stopped at the roll cap without a winner; it is 0 in
    normal runs. ``turns`` is the total number of **dice rolls**
    (``LudoGame.roll_dice`` calls) over all matches. A six or a capture earns
    a bonus roll, and each roll is counted. This is not the engine's own
    ``LudoGame.turn_count``, which only goes up when play passes to the next
    player. ``seconds`` is wall time (``time.perf_counter``) spent building
    and playing the games. It leaves out the import and the ``on_progress``
    callbacks.
    """

    matches: int
    seconds: float
    turns: int
    capped: int = 0

    @property
    def matches_per_s(self) -> float:
        """Matches played per second of measured time (0.0 when nothing was timed)."""
        return self.matches / self.seconds if self.seconds > 0 else 0.0


def peer_available() -> bool:
    """Return True when the peer engine (``ludo_engine``) can be imported."""
    try:
        importlib.import_module(_PEER_MODULE)
    except ImportError:
        return False
    return True


def peer_version() -> str | None:
    """Return the installed ``ludo-king-engine`` version, or None when it is absent."""
    try:
        return metadata.version(PEER_NAME)
    except metadata.PackageNotFoundError:
        return None


def _play_one(
    game_cls: type[LudoGame], seats: Sequence[PlayerColor], turn_cap: int
) -> tuple[int, bool]:
    """Play one match through the engine's own `LudoGame.play_turn()`, which rolls and
    takes the first valid move. Return (dice rolls, finished).
    """
    game = game_cls(list(seats))
    rolls = 0
    while not game.game_over:
        if rolls >= turn_cap:
            return rolls, False
        game.play_turn()
        rolls += 1
    return rolls, True


def play_peer_matches(
    matches: int,
    seed: int = 0,
    on_progress: Callable[[int], None] | None = None,
    *,
    turn_cap: int = DEFAULT_TURN_CAP,
) -> PeerRun:
    """Play ``matches`` fresh 4-player ``ludo_engine`` matches with the first legal move.

    The peer is seeded from ``seed`` at the start of the run, so the same
    arguments replay the same games. The global ``random`` state is put back
    afterwards. ``on_progress`` receives the number of finished matches after
    each one; its time is not measured. Raises ``ImportError`` when the peer
    is not installed and ``ValueError`` for a negative ``matches`` or a
    non-positive ``turn_cap``.
    """
    if matches < 0:
        raise ValueError(f"matches must be >= 0, got {matches}")
    if turn_cap <= 0:
        raise ValueError(f"turn_cap must be > 0, got {turn_cap}")

    engine = importlib.import_module(_PEER_MODULE)
    game_cls: type[LudoGame] = engine.LudoGame
    colors = engine.PlayerColor
    # Seated in board order (start squares 1, 14, 27, 40), so turns go round the board.
    seats: tuple[PlayerColor, ...] = (colors.RED, colors.GREEN, colors.YELLOW, colors.BLUE)

    saved_state = random.getstate()
    random.seed(seed)
    seconds = 0.0
    turns = 0
    capped = 0
    try:
        for done in range(1, matches + 1):
            start = time.perf_counter()
            rolls, finished = _play_one(game_cls, seats, turn_cap)
            seconds += time.perf_counter() - start
            turns += rolls
            if not finished:
                capped += 1
            if on_progress is not None:
                on_progress(done)
    finally:
        random.setstate(saved_state)

    return PeerRun(matches=matches, seconds=seconds, turns=turns, capped=capped)
