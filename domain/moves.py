"""Move generation (RULES.md §3), kept apart from applying a move.

`legal_moves` is a lazy generator over the moves one die allows; `explain_move` says why a
given piece cannot move (the validating side uses it for its rejection text); `push` applies a
move without checking it, like python-chess's `push`: callers pass only moves this module
generated. `decide` in `domain.decider` is the one place that validates player input.

Pieces are `list[list[int]]`, indexed `[seat][piece]`, holding progress values (RULES.md §1).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec

from domain.board import NEST, PIECES, Board

__all__ = [
    "Move",
    "entering_move",
    "explain_move",
    "has_course_piece",
    "legal_moves",
    "push",
]

Pieces = Sequence[Sequence[int]]


class Move(msgspec.Struct, frozen=True, array_like=True):
    """One piece moving for one die: `frm` -1 means entering from the nest.

    `captures` lists `(seat, piece)` of every opponent piece sent home by landing.
    """

    piece: int
    frm: int
    to: int
    captures: tuple[tuple[int, int], ...] = ()


class _Occupancy:
    """Who stands on which track square, built at most once per generation call and only
    when some piece could move at all (most passed rolls never need it)."""

    __slots__ = ("blocked", "by_square")

    def __init__(self, board: Board, pieces: Pieces, seat: int) -> None:
        last = board.last_track
        by_square: dict[int, list[tuple[int, int]]] = {}
        blocked: set[int] = set()
        double = board.ruleset.blocks == "double"
        for s, row in enumerate(pieces):
            track = board.track[s]
            squares = [track[p] if 0 <= p <= last else -1 for p in row]
            for i, square in enumerate(squares):
                if square >= 0:
                    there = by_square.get(square)
                    if there is None:
                        by_square[square] = [(s, i)]
                    else:
                        there.append((s, i))
                        # two of one colour form a block for everyone else
                        if double and s != seat and squares.count(square) >= 2:
                            blocked.add(square)
        self.by_square = by_square
        self.blocked = blocked


def _move_or_reason(
    board: Board, pieces: Pieces, seat: int, piece: int, die: int, occ: _Occupancy
) -> Move | str:
    rules = board.ruleset
    frm = pieces[seat][piece]
    track = board.track[seat]
    if frm == NEST:
        if die not in rules.enter_on:
            return f"a piece leaves the nest only on {sorted(rules.enter_on)}"
        return _landing(board, seat, piece, NEST, 0, track[0], occ)
    goal = board.goal
    if frm == goal:
        return "the piece is already in the goal"
    to = frm + die
    if to > goal:
        if rules.exact_finish:
            return f"the goal needs exactly {goal - frm}"
        to = goal
    last = board.last_track
    if rules.blocks == "double" and occ.blocked:
        for q in range(frm + 1, min(to, last) + 1):
            if track[q] in occ.blocked:
                return f"a block stands on square {track[q]}"
    elif rules.blocks == "no_overtaking":
        for q in range(frm + 1, to):
            if q <= last:
                if track[q] in occ.by_square:
                    return f"no overtaking: a piece stands on square {track[q]}"
            elif q < goal and any(p == q for j, p in enumerate(pieces[seat]) if j != piece):
                return f"no overtaking: an own piece stands at {q} in the home column"
    if to <= last:
        return _landing(board, seat, piece, frm, to, track[to], occ)
    return Move(piece, frm, to)


def _landing(
    board: Board, seat: int, piece: int, frm: int, to: int, square: int, occ: _Occupancy
) -> Move | str:
    if square in occ.blocked:
        return f"a block stands on square {square}"
    there = occ.by_square.get(square)
    if not there or square in board.safe:
        return Move(piece, frm, to)
    captures = tuple(sorted(sp for sp in there if sp[0] != seat))
    return Move(piece, frm, to, captures)


def legal_moves(board: Board, pieces: Pieces, seat: int, die: int) -> Iterator[Move]:
    """Every legal move of `seat` for `die`, one per movable piece, in piece order."""
    row = pieces[seat]
    goal = board.goal
    enters = die in board.ruleset.enter_on
    reach = goal - die if board.ruleset.exact_finish else goal - 1
    # Cheap pre-check without the occupancy: can any piece move this far at all?
    if not any((p == NEST and enters) or (NEST < p <= reach) for p in row):
        return
    occ = _Occupancy(board, pieces, seat)
    for piece in range(PIECES):
        result = _move_or_reason(board, pieces, seat, piece, die, occ)
        if type(result) is Move:
            yield result


def explain_move(board: Board, pieces: Pieces, seat: int, piece: int, die: int) -> Move | str:
    """The move `piece` makes with `die`, or a sentence saying why it cannot move."""
    if not 0 <= piece < PIECES:
        return f"piece must be 0-{PIECES - 1}, got {piece}"
    return _move_or_reason(board, pieces, seat, piece, die, _Occupancy(board, pieces, seat))


def entering_move(board: Board, pieces: Pieces, seat: int) -> Move | None:
    """The move that enters the lowest-numbered nest piece, if entering is possible.

    Used by `empty_course = auto_enter`, where entering needs no die.
    """
    row = pieces[seat]
    if NEST not in row:
        return None
    piece = row.index(NEST)
    result = _landing(
        board, seat, piece, NEST, 0, board.track[seat][0], _Occupancy(board, pieces, seat)
    )
    return result if type(result) is Move else None


def has_course_piece(board: Board, pieces: Pieces, seat: int) -> bool:
    """True when some own piece is on the track or in the home column (RULES.md §3)."""
    goal = board.goal
    return any(0 <= p < goal for p in pieces[seat])


def push(pieces: list[list[int]], seat: int, move: Move) -> None:
    """Apply a generated move in place, unchecked: the piece moves, captured pieces go home."""
    pieces[seat][move.piece] = move.to
    for s, i in move.captures:
        pieces[s][i] = NEST
