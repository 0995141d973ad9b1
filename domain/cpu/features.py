"""Shared position features for the `normal` and `hard` CPUs: who can hit what next turn.

The central question of Ludo tactics is "which die values let some opponent capture this
piece on their next roll?". `Occupancy` answers it for every ruleset without generating
moves: it indexes the track once per position, and `hit_mask` walks back at most six
squares per attacking piece, calling the building blocks of `domain.moves` that the
legal-move walk calls (`double` blocks on the path and the landing square,
`no_overtaking`, entering on a start square; safe squares). The tests check it against
`domain.moves.legal_moves` on random positions.

A die mask is an int with bit d set (1 << d) for each die value d in 1..6 that works.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from domain.board import NEST, Board
from domain.moves import block_on_path, enters, landing_block, piece_between

__all__ = [
    "MASK_COUNT",
    "Occupancy",
    "face_mask",
    "opponents",
]

# popcount of every 7-bit mask (bits 1..6 are die values), so a chance is MASK_COUNT[m] / 6
MASK_COUNT: tuple[int, ...] = tuple(bin(m).count("1") for m in range(128))
_ALL_DICE = 0b1111110


@lru_cache(maxsize=64)
def face_mask(faces: frozenset[int]) -> int:
    """The die mask of a set of die values."""
    out = 0
    for face in faces:
        out |= 1 << face
    return out


class Occupancy:
    """Who stands where on the track in one position (pieces indexed `[seat][piece]`).

    `square[s][i]` is the track square of piece i of seat s, or -1 off the track
    (nest, home column, goal). `stack[sq]` lists the seat of every piece on track square sq.
    `block[sq]` is the seat holding two or more pieces on sq (only under `blocks="double"`).
    """

    __slots__ = ("block", "board", "nests", "pieces", "square", "stack")

    def __init__(self, board: Board, pieces: Sequence[Sequence[int]]) -> None:
        self.board = board
        self.pieces = pieces
        last = board.last_track
        stack: dict[int, list[int]] = {}
        block: dict[int, int] = {}
        squares: list[list[int]] = []
        nests: list[int] = []
        double = board.ruleset.blocks == "double"
        for s, row in enumerate(pieces):
            track = board.track[s]
            mine: list[int] = []
            for p in row:
                if 0 <= p <= last:
                    sq = track[p]
                    mine.append(sq)
                    there = stack.get(sq)
                    if there is None:
                        stack[sq] = [s]
                    else:
                        if double and s in there:
                            block[sq] = s
                        there.append(s)
                else:
                    mine.append(-1)
            squares.append(mine)
            nests.append(row.count(NEST))
        self.square = squares
        self.stack = stack
        self.block = block
        self.nests = nests

    def threat_after(
        self,
        seat: int,
        piece: int,
        to: int,
        captures: Sequence[tuple[int, int]],
        attackers: Sequence[int],
    ) -> float:
        """`threat` to `piece` once `seat` has moved it to track progress `to`, sending
        `captures` home (a move as `domain.moves` generates it: every opponent piece on an
        unsafe landing square is captured), without building the new position.

        Equal to `Occupancy(board, pieces after the move).threat(seat, piece, attackers)`.
        What the move changes for an attacker: nothing of another colour is left on the
        landing square (a block there if `seat` already stood on it); the square the piece
        leaves may empty or lose its block, which opens paths; captured pieces go to their
        nests, from where they may enter onto the landing square.
        """
        board = self.board
        target = board.track[seat][to]
        if target in board.safe:
            return 0.0
        stack = self.stack
        block = self.block
        double = board.ruleset.blocks == "double"
        if double and seat in stack.get(target, ()):
            return 0.0  # it joins an own piece: a block nobody can land on
        frm_sq = self.square[seat][piece]
        gone = -1  # a track square the move empties
        if frm_sq >= 0:
            left = stack[frm_sq]
            if len(left) == 1:
                gone = frm_sq
            elif frm_sq in block:
                rest = left[:]
                rest.remove(seat)
                owner = _block_owner(rest)
                if owner != block[frm_sq]:
                    block = block.copy()
                    if owner < 0:
                        del block[frm_sq]
                    else:
                        block[frm_sq] = owner
        survive = 1.0
        for a in attackers:
            if a == seat:
                continue
            mask = self._reach(a, target, block, gone)
            if (
                captures
                and board.progress_at[a][target] == 0
                and not self.nests[a]
                and any(s == a for s, _ in captures)
            ):  # its piece captured on its own start square can enter again
                mask |= _entering_mask(board) & _ALL_DICE
            if mask:
                survive *= 1.0 - MASK_COUNT[mask] / 6.0
        return 1.0 - survive

    def hit_mask(self, attacker: int, target: int) -> int:
        """Die values with which `attacker` could capture on track square `target` next roll.

        Zero when nothing of another colour stands there, when `target` is safe, or when
        the pieces there form a block of their own. Does not ask whether the attacker
        would rather play something else with that die.
        """
        board = self.board
        if target in board.safe:
            return 0
        there = self.stack.get(target)
        if there is None or there.count(attacker) == len(there):
            return 0
        block = self.block
        if block and landing_block(block, target, attacker) >= 0:
            return 0
        return self._reach(attacker, target, block, -1)

    def _reach(self, attacker: int, target: int, block: dict[int, int], gone: int) -> int:
        """Die values that bring a piece of `attacker` onto `target` (or enter it there),
        with `block` the blocks in force and `gone` a track square to count as empty: the
        moves of `domain.moves`' building blocks, walked backwards from the target."""
        board = self.board
        blocks = board.ruleset.blocks
        at = board.progress_at[attacker]
        tp = at[target]  # the progress at which an attacker's piece stands on the target
        mask = 0
        for q in self.pieces[attacker]:
            d = tp - q
            # 1 <= d with tp <= last: a track piece that reaches the target before its
            # home column (tp is -2 on the one square the attacker never stands on)
            if 1 <= d <= 6 and q >= 0 and not mask & (1 << d):
                if block and blocks == "double":
                    if block_on_path(board, attacker, q, tp - 1, block) < 0:
                        mask |= 1 << d
                elif blocks == "no_overtaking":
                    if piece_between(board, self.pieces, attacker, q, tp, gone) is None:
                        mask |= 1 << d
                else:
                    mask |= 1 << d
        if tp == 0 and self.nests[attacker]:
            mask |= _entering_mask(board)
        return mask & _ALL_DICE

    def hit_by_any(self, square: int, attackers: Sequence[int]) -> bool:
        """True when some attacker could capture on `square` with some value of its next
        roll (`threat(...) > 0` for a piece standing there, without the arithmetic)."""
        for a in attackers:  # noqa: SIM110 (a loop: no generator to create, on a hot path)
            if self.hit_mask(a, square):
                return True
        return False

    def threat(self, seat: int, piece: int, attackers: Sequence[int]) -> float:
        """Chance that one of `attackers` can capture this piece with their next roll
        (each attacker rolling once, independently; 0 off the track or on a safe square)."""
        sq = self.square[seat][piece]
        if sq < 0:
            return 0.0
        survive = 1.0
        for a in attackers:
            m = self.hit_mask(a, sq)
            if m:
                survive *= 1.0 - MASK_COUNT[m] / 6.0
        return 1.0 - survive


def _entering_mask(board: Board) -> int:
    """The die mask of the values that enter a nest piece (`domain.moves.enters`)."""
    mask = 0
    for die in range(1, 7):
        if enters(board, die):
            mask |= 1 << die
    return mask


def _block_owner(seats: Sequence[int]) -> int:
    """The seat a fresh build records as holding a block in this stack (seat order): the
    last seat seen twice; -1 for none."""
    owner = -1
    for k in range(1, len(seats)):
        if seats[k] in seats[:k]:
            owner = seats[k]
    return owner


def opponents(players: int, seat: int, finished: Sequence[int]) -> list[int]:
    """The seats still playing other than `seat`, in the order they move after it."""
    return [s for s in ((seat + k) % players for k in range(1, players)) if s not in finished]
