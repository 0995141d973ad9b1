"""Placements at the end of a match (docs/rules.md#the-end-of-a-match)."""

from __future__ import annotations

from collections.abc import Sequence

from domain.board import NEST, Board

__all__ = ["placements", "standing_key"]


def standing_key(board: Board, row: Sequence[int]) -> tuple[int, int, int]:
    """How an unfinished player ranks: pieces in goal, pieces out of the nest, their progress.

    Larger is better on each, compared in that order.
    """
    goal = board.goal
    out = [p for p in row if p != NEST]
    return (sum(1 for p in out if p == goal), len(out), sum(out))


def placements(
    board: Board,
    pieces: Sequence[Sequence[int]],
    finished: Sequence[int],
    conceded: int | None = None,
) -> tuple[int, ...]:
    """Place per seat (1 = best): finishers in finishing order, then the rest by
    `standing_key`; players equal on the key share a place (standard competition ranking:
    two tied for 2nd are both 2nd, the next is 4th). `conceded`: the seat that gave the
    match up, last alone whatever its pieces (docs/rules-decisions.md).
    """
    places = [0] * len(pieces)
    for place, seat in enumerate(finished, start=1):
        places[seat] = place
    if conceded is not None:
        places[conceded] = len(pieces)
    rest = sorted(
        (seat for seat in range(len(pieces)) if seat not in finished and seat != conceded),
        key=lambda seat: standing_key(board, pieces[seat]),
        reverse=True,
    )
    previous: tuple[int, int, int] | None = None
    place = len(finished)
    for index, seat in enumerate(rest):
        key = standing_key(board, pieces[seat])
        if key != previous:
            place = len(finished) + index + 1
            previous = key
        places[seat] = place
    return tuple(places)
