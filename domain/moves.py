"""Move generation (docs/rules.md#moves), kept apart from applying a move.

`legal_move_list` is the one walk that decides which moves one die allows; `legal_moves`
iterates what it returns. Each rule of moving is one building block (`enters`,
`blocks_against`, `block_on_path`, `landing_block`, `piece_between`), called by the
walk, by `why_not` and by the CPU's reach (`domain.cpu.features.Occupancy`). The walk is
eager, not a lazy generator: every caller takes all the moves, and as a generator the walk
costs 8% more CPU on this hot path (interpreted, over positions from real matches).
`why_not` says, as facts (`CannotMove`), which rule stops a piece the walk leaves out:
`decide` puts them in its rejection, for a client to word in its own language, and their
sentence in the rejection's text. `explain_move` gives a piece's
move (from the walk) or that `CannotMove`; tests/domain/test_properties.py pins that the two
agree. `push` applies a move without checking it, like python-chess's `push`: callers pass
only moves this module generated. `decide` in `domain.decider` is the one place that
validates player input.

Pieces are `list[list[int]]`, indexed `[seat][piece]`, holding progress values
(docs/rules.md#progress-where-a-piece-is).
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
    "block_on_path",
    "blocks_against",
    "entering_move",
    "enters",
    "explain_move",
    "has_course_piece",
    "landing_block",
    "legal_move_list",
    "legal_moves",
    "piece_between",
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


# ------------------------------------------------------------- the building blocks
#
# Each rule of moving (docs/rules.md#moves) written once, for the three walkers of the rules: the
# legal-move walk (`legal_move_list`), the explanation of an illegal move (`why_not`) and
# the CPU's reach backwards from a square (`domain.cpu.features.Occupancy`). A block is
# given as `blocks`, track square -> the seat whose pair stands there; each walker builds
# that map its own way (the walk lazily, only for the pairs of other colours).


def enters(board: Board, die: int) -> bool:
    """Entering: `die` takes a nest piece to its start square (progress 0)."""
    return die in board.enter_on


def blocks_against(board: Board, pieces: list[list[int]], seat: int) -> dict[int, int]:
    """Blocks (`blocks="double"`): the track squares holding two or more pieces of one
    colour other than `seat`'s, each to the seat whose pair it is (the later seat when two
    pairs share a square, which no match reaches)."""
    last = board.last_track
    blocked: dict[int, int] = {}
    for s, row in enumerate(pieces):
        if s == seat:
            continue
        # A later piece equal to an earlier one, on the track, makes a block; spelled out
        # for four pieces, with `==` chains rather than `in (tuple)`: no tuple to build
        # (a quarter fewer instructions; this runs on nearly every roll under `double`).
        a, b, c, d = row
        if a == b and 0 <= a <= last:
            blocked[board.track[s][a]] = s
        if (c == a or c == b) and 0 <= c <= last:  # noqa: PLR1714, SIM109
            blocked[board.track[s][c]] = s
        if (d == a or d == b or d == c) and 0 <= d <= last:  # noqa: PLR1714, SIM109
            blocked[board.track[s][d]] = s
    return blocked


def block_on_path(board: Board, seat: int, frm: int, stop: int, blocks: dict[int, int]) -> int:
    """Blocks: the nearest track square on `seat`'s path from progress `frm` (excluded) to
    `stop` (included) where a pair of another colour stands; -1 when none does."""
    at = board.progress_at[seat]
    nearest = -1
    before = stop + 1
    for square, owner in blocks.items():
        progress = at[square]
        if frm < progress < before and owner != seat:
            nearest = square
            before = progress
    return nearest


def landing_block(blocks: dict[int, int], square: int, seat: int) -> int:
    """Landing: the seat whose pair on track `square` stops a piece of `seat` landing there
    (nothing lands on a block of another colour); -1 when none does."""
    owner = blocks.get(square, seat)
    return -1 if owner == seat else owner


def piece_between(
    board: Board, pieces: Pieces, seat: int, frm: int, to: int, gone: int = -1
) -> tuple[int, int] | None:
    """Overtaking (`blocks="no_overtaking"`): the first piece, of any colour, standing
    strictly between progress `frm` and `to` of `seat`'s path, as (its seat, its track
    square; -1 in `seat`'s home column, where only its own pieces stand); None when the
    path is clear. `gone`: a track square to count as empty (a piece about to leave it)."""
    last = board.last_track
    track = board.track[seat]
    for q in range(frm + 1, min(to, last + 1)):
        square = track[q]
        if square == gone:
            continue
        for s, row in enumerate(pieces):
            if board.progress_at[s][square] in row:
                return s, square
    own = pieces[seat]
    for q in range(max(frm + 1, last + 1), to):
        if q in own:
            return seat, -1
    return None


# ------------------------------------------------------------------------ the walkers


def why_not(board: Board, pieces: Pieces, seat: int, piece: int, die: int) -> CannotMove | None:
    """The rule of docs/rules.md#why-a-piece-cannot-move that stops `piece` (0-3) moving `die`, as
    facts; None when no rule does. Rule by rule, for rejections: `legal_moves` alone decides what is
    legal, and tests/domain/test_properties.py pins that the two agree in every position."""
    rules = board.ruleset
    rows = [list(row) for row in pieces]
    frm = rows[seat][piece]
    track = board.track[seat]
    double = rules.blocks == "double"
    blocks = blocks_against(board, rows, seat) if double else {}
    if frm == NEST:
        if not enters(board, die):
            return CannotMove(rule="enter_on", values=tuple(sorted(rules.enter_on)))
        to = 0
    else:
        goal = board.goal
        if frm == goal:
            return CannotMove(rule="in_goal")
        to = frm + die
        if to > goal:
            if rules.exact_finish:
                return CannotMove(rule="exact_finish", needs=goal - frm)
            to = goal
        if double:
            square = block_on_path(board, seat, frm, min(to, board.last_track), blocks)
            if square >= 0:
                return CannotMove(rule="block", square=square, seat=blocks[square])
        elif rules.blocks == "no_overtaking":
            found = piece_between(board, rows, seat, frm, to)
            if found is not None:
                other, square = found
                return CannotMove(
                    rule="no_overtaking", seat=other, square=square if square >= 0 else None
                )
    if to <= board.last_track:
        owner = landing_block(blocks, track[to], seat)
        if owner >= 0:
            return CannotMove(rule="block", square=track[to], seat=owner)
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
    entering = enters(board, die)
    moves: list[Move] = []
    track = board.track[seat]
    last = board.last_track
    blocks = board.blocks
    blocked: dict[int, int] | None = None
    for piece in range(PIECES):
        frm = row[piece]
        if frm == NEST:
            if not entering:
                continue
            to = 0
        elif NEST < frm <= reach:
            to = frm + die
            if overshoot and to > goal:
                to = goal
            if blocks == "double":
                if frm < last:
                    if blocked is None:
                        blocked = blocks_against(board, pieces, seat)
                    if blocked and block_on_path(board, seat, frm, min(to, last), blocked) >= 0:
                        continue
            elif (
                blocks == "no_overtaking"
                and to - frm > 1
                and piece_between(board, pieces, seat, frm, to) is not None
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
                blocked = blocks_against(board, pieces, seat)
            if blocked and landing_block(blocked, square, seat) >= 0:
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
    """True when some own piece is on the track or in the home column (docs/rules.md#moves)."""
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
