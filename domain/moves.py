"""Move generation (RULES.md §3), kept apart from applying a move.

`legal_move_list` is the one walk that decides which moves one die allows; `legal_moves`
iterates what it returns. The walk is eager, not a lazy generator: every caller takes all
the moves, and as a generator the walk costs 8% more CPU on this hot path (interpreted, over
positions from real matches). `why_not` says, as facts (`CannotMove`), which rule stops a
piece the walk leaves out: `decide` puts them in its rejection, for a client to word in its
own language, and their sentence in the rejection's text. `explain_move` gives a piece's
move (from the walk) or that `CannotMove`; tests/domain/test_properties.py pins that the two
agree. `push` applies a move without checking it, like python-chess's `push`: callers pass
only moves this module generated. `decide` in `domain.decider` is the one place that
validates player input.

Pieces are `list[list[int]]`, indexed `[seat][piece]`, holding progress values (RULES.md §1).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec
from mypy_extensions import mypyc_attr

from domain.board import NEST, PIECES, Board
from domain.cannot_move import CannotMove

__all__ = [
    "CannotMove",
    "Move",
    "entering_move",
    "explain_move",
    "has_course_piece",
    "legal_move_list",
    "legal_moves",
    "push",
    "pushed",
    "why_not",
]

Pieces = Sequence[Sequence[int]]


# Not a native class when mypyc compiles this module (see docs/benchmarks.md): a msgspec
# Struct or an exception subclass must stay an ordinary Python class.
@mypyc_attr(native_class=False)
class Move(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One piece moving for one die: `frm` -1 means entering from the nest.

    `captures` lists `(seat, piece)` of every opponent piece sent home by landing.
    `gc=False`: it holds only ints, so it cannot be part of a reference cycle; untracked
    by the cycle collector it is cheaper to create and free (one per legal move).
    """

    piece: int
    frm: int
    to: int
    captures: tuple[tuple[int, int], ...] = ()


class _Occupancy:
    """Who stands where, computed lazily per `why_not` call: most calls need only one
    look-up, and building a full square map for 16 pieces would cost more than the call.
    Both maps go from a track square to a seat standing on it, as a rejection names it.
    """

    __slots__ = ("_blocked", "_by_square", "board", "pieces", "seat")

    def __init__(self, board: Board, pieces: Pieces, seat: int) -> None:
        self.board = board
        self.pieces = pieces
        self.seat = seat
        self._blocked: dict[int, int] | None = None
        self._by_square: dict[int, int] | None = None

    def blocked(self) -> dict[int, int]:
        """Track squares holding two or more pieces of one other colour (RULES.md §3), to
        the seat owning the pair."""
        if self._blocked is None:
            board = self.board
            last = board.last_track
            blocked: dict[int, int] = {}
            for s, row in enumerate(self.pieces):
                if s != self.seat:
                    squares = [board.track[s][p] for p in row if 0 <= p <= last]
                    blocked.update((sq, s) for sq in squares if squares.count(sq) >= 2)
            self._blocked = blocked
        return self._blocked

    def standing(self, square: int) -> int | None:
        """The seat of a piece, own or not, on the track square (the first in seat order
        when several colours share it, as on a safe square); None when it is empty."""
        if self._by_square is None:
            board = self.board
            last = board.last_track
            by_square: dict[int, int] = {}
            for s, row in enumerate(self.pieces):
                for p in row:
                    if 0 <= p <= last:
                        by_square.setdefault(board.track[s][p], s)
            self._by_square = by_square
        return self._by_square.get(square)


def why_not(board: Board, pieces: Pieces, seat: int, piece: int, die: int) -> CannotMove | None:
    """The rule of RULES.md §3 that stops `piece` (0-3) moving `die`, as facts; None when
    no rule does. Rule by rule, for rejections: `legal_moves` alone decides what is legal,
    and tests/domain/test_properties.py pins that the two agree in every position."""
    rules = board.ruleset
    occ = _Occupancy(board, pieces, seat)
    frm = pieces[seat][piece]
    track = board.track[seat]
    if frm == NEST:
        if die not in rules.enter_on:
            return CannotMove(rule="enter_on", values=tuple(sorted(rules.enter_on)))
        return _landing_blocked(board, track[0], occ)
    goal = board.goal
    if frm == goal:
        return CannotMove(rule="in_goal")
    to = frm + die
    if to > goal:
        if rules.exact_finish:
            return CannotMove(rule="exact_finish", needs=goal - frm)
        to = goal
    last = board.last_track
    blocks = rules.blocks
    if blocks == "double":
        for q in range(frm + 1, min(to, last) + 1):
            owner = occ.blocked().get(track[q])
            if owner is not None:
                return CannotMove(rule="block", square=track[q], seat=owner)
    elif blocks == "no_overtaking":
        own = pieces[seat]
        for q in range(frm + 1, to):
            if q <= last:
                other = occ.standing(track[q])
                if other is not None:
                    return CannotMove(rule="no_overtaking", seat=other, square=track[q])
            elif q in own:  # q < to <= goal: a home-column square, only own pieces there
                return CannotMove(rule="no_overtaking", seat=seat)
    return _landing_blocked(board, track[to], occ) if to <= last else None


def _landing_blocked(board: Board, square: int, occ: _Occupancy) -> CannotMove | None:
    if board.ruleset.blocks == "double":
        owner = occ.blocked().get(square)
        if owner is not None:
            return CannotMove(rule="block", square=square, seat=owner)
    return None


def legal_moves(board: Board, pieces: list[list[int]], seat: int, die: int) -> Iterator[Move]:
    """Every legal move of `seat` for `die`, one per movable piece, in piece order (an
    iterator over `legal_move_list`, which computes them all at once)."""
    yield from legal_move_list(board, pieces, seat, die)


def legal_move_list(board: Board, pieces: list[list[int]], seat: int, die: int) -> list[Move]:
    """Every legal move of `seat` for `die`, one per movable piece, in piece order.

    The walk that decides legality, written out in one loop: it runs for every roll of
    every match (`why_not` words the same rules for rejections). Blocks are found only
    when some piece can move at all, and captures only where a piece lands on an unsafe
    square. `pieces` is typed as the engine's own lists (`MatchState.pieces`), not any
    sequence: compiled (mypyc), indexing and iterating them is then native, not generic.
    """
    row = pieces[seat]
    goal = board.goal
    if board.exact_finish:
        reach = goal - die
        overshoot = False
    else:
        reach = goal - 1
        overshoot = True
    enters = die in board.enter_on
    moves: list[Move] = []
    track = board.track[seat]
    last = board.last_track
    blocks = board.blocks
    blocked: set[int] | None = None
    for piece in range(PIECES):
        frm = row[piece]
        if frm == NEST:
            if not enters:
                continue
            to = 0
        elif NEST < frm <= reach:
            to = frm + die
            if overshoot and to > goal:
                to = goal
            if blocks == "double":
                if frm < last:
                    if blocked is None:
                        blocked = _blocked(board, pieces, seat)
                    if blocked and _path_blocked(board, seat, frm, min(to, last), blocked):
                        continue
            elif (
                blocks == "no_overtaking"
                and to - frm > 1
                and _overtakes(board, pieces, seat, frm, to)
            ):
                continue
            if to > last:
                moves.append(Move(piece, frm, to))
                continue
        else:
            continue
        square = track[to]
        if blocks == "double":
            if blocked is None:
                blocked = _blocked(board, pieces, seat)
            if square in blocked:
                continue
        if board.safe_at[square]:
            moves.append(Move(piece, frm, to))
            continue
        # opponents on the landing square, in seat order: all of them are captured
        captures: list[tuple[int, int]] | None = None
        at = board.progress_at
        for s, other in enumerate(pieces):
            if s != seat:
                p = at[s][square]
                # `==` chains, not `p in other`: compiled, native int compares instead of a
                # generic containment test (and no slower when interpreted)
                a, b, c, d = other
                if p == a or p == b or p == c or p == d:  # noqa: PLR1714, SIM109
                    if captures is None:
                        captures = []
                    captures.extend((s, i) for i in range(PIECES) if other[i] == p)
        moves.append(Move(piece, frm, to, tuple(captures)) if captures else Move(piece, frm, to))
    return moves


def _blocked(board: Board, pieces: list[list[int]], seat: int) -> set[int]:
    """Track squares holding two or more pieces of one other colour (`blocks="double"`)."""
    last = board.last_track
    blocked: set[int] = set()
    for s, row in enumerate(pieces):
        if s == seat:
            continue
        # A later piece equal to an earlier one, on the track, makes a block; spelled out
        # for four pieces, with `==` chains rather than `in (tuple)`: no tuple to build
        # (a quarter fewer instructions; this runs on nearly every roll under `double`).
        a, b, c, d = row
        if a == b and 0 <= a <= last:
            blocked.add(board.track[s][a])
        if (c == a or c == b) and 0 <= c <= last:  # noqa: PLR1714, SIM109
            blocked.add(board.track[s][c])
        if (d == a or d == b or d == c) and 0 <= d <= last:  # noqa: PLR1714, SIM109
            blocked.add(board.track[s][d])
    return blocked


def _path_blocked(board: Board, seat: int, frm: int, stop: int, blocked: set[int]) -> bool:
    """True when a block stands on one of the squares frm+1 .. stop (track progress)."""
    at = board.progress_at[seat]
    for square in blocked:  # noqa: SIM110 (a loop: no generator to create, on a hot path)
        if frm < at[square] <= stop:
            return True
    return False


def _overtakes(board: Board, pieces: Pieces, seat: int, frm: int, to: int) -> bool:
    """`no_overtaking`: True when a piece stands strictly between progress frm and to."""
    last = board.last_track
    own = pieces[seat]
    for q in range(frm + 1, min(to, last + 1)):
        sq = board.track[seat][q]
        for s, row in enumerate(pieces):
            if board.progress_at[s][sq] in row:
                return True
    # a home-column square (last < q < to <= goal): only own pieces stand there
    return any(q in own for q in range(max(frm + 1, last + 1), to))


def explain_move(
    board: Board, pieces: Pieces, seat: int, piece: int, die: int
) -> Move | CannotMove:
    """The move `piece` (0-3) makes with `die` (as `legal_moves` generates it), or why it
    cannot move. A piece outside 0-3 is no piece: `decide` refuses it before asking."""
    rows = [list(row) for row in pieces]
    for move in legal_move_list(board, rows, seat, die):
        if move.piece == piece:
            return move
    why = why_not(board, pieces, seat, piece, die)
    # `why_not` finds a rule for every piece `legal_moves` leaves out: the properties test
    # pins it in every position, so None here would be a bug of the engine.
    assert why is not None, f"no rule stops piece {piece} moving {die}"
    return why


def entering_move(board: Board, pieces: list[list[int]], seat: int) -> Move | None:
    """The move that enters the lowest-numbered nest piece, if entering is possible.

    Used by `empty_course = auto_enter`, where entering needs no die: any entering value
    gives the same entering moves (a move from the nest goes to the start square).
    """
    for move in legal_move_list(board, pieces, seat, min(board.enter_on)):
        if move.frm == NEST:
            return move
    return None


def has_course_piece(board: Board, pieces: Pieces, seat: int) -> bool:
    """True when some own piece is on the track or in the home column (RULES.md §3)."""
    goal = board.goal
    return any(0 <= p < goal for p in pieces[seat])


def push(pieces: list[list[int]], seat: int, move: Move) -> None:
    """Apply a generated move in place, unchecked: the piece moves, captured pieces go home."""
    pieces[seat][move.piece] = move.to
    for s, i in move.captures:
        pieces[s][i] = NEST


def pushed(pieces: Pieces, seat: int, move: Move) -> list[list[int]]:
    """A copy of `pieces` with `move` pushed (for searches that keep the position)."""
    out = [list(row) for row in pieces]
    push(out, seat, move)
    return out
