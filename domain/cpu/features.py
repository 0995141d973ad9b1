"""Shared position features for the `normal` and `hard` CPUs: who can hit what next turn.

The central question of Ludo tactics is "which die values let some opponent capture this
piece on their next roll?". `Occupancy` answers it for every ruleset without generating
moves: it indexes the track once per position, and `hit_mask` walks back at most six
squares per attacking piece, applying the same landing and passing rules as
`domain.moves` (safe squares, `double` blocks, `no_overtaking`, entering on a start
square). The tests check it against `domain.moves.legal_moves` on random positions.

A die mask is an int with bit d set (1 << d) for each die value d in 1..6 that works.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from domain.board import NEST, Board

__all__ = [
    "MASK_COUNT",
    "Occupancy",
    "bonus_rolls",
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
            mine = [track[p] if 0 <= p <= last else -1 for p in row]
            squares.append(mine)
            nests.append(row.count(NEST))
            for sq in mine:
                if sq >= 0:
                    there = stack.get(sq)
                    if there is None:
                        stack[sq] = [s]
                    else:
                        if double and s in there:
                            block[sq] = s
                        there.append(s)
        self.square = squares
        self.stack = stack
        self.block = block
        self.nests = nests

    def after(
        self, seat: int, piece: int, to: int, captures: Sequence[tuple[int, int]]
    ) -> Occupancy:
        """The occupancy once `seat` has moved `piece` to progress `to`, sending the pieces
        `captures` (`(seat, piece)`, as `domain.moves` generates them) back to their nests.

        Equal to `Occupancy(board, pieces after the move)`, field by field, but built by
        patching this one: only the rows and squares the move touches are copied.
        """
        board = self.board
        last = board.last_track
        double = board.ruleset.blocks == "double"
        new = Occupancy.__new__(Occupancy)
        new.board = board
        pieces = list(self.pieces)
        squares = list(self.square)
        stack = self.stack.copy()
        block = self.block
        nests = self.nests
        changed: list[int] = []  # track squares whose stack changed (for blocks)

        row = list(pieces[seat])
        mine = squares[seat][:]
        frm = row[piece]
        row[piece] = to
        pieces[seat] = row
        frm_sq = mine[piece]
        if frm_sq >= 0:
            there = stack[frm_sq][:]
            there.remove(seat)
            if there:
                stack[frm_sq] = there
            else:
                del stack[frm_sq]
            changed.append(frm_sq)
        if NEST in (frm, to):
            nests = nests[:]
            nests[seat] += (to == NEST) - (frm == NEST)
        to_sq = board.track[seat][to] if 0 <= to <= last else -1
        mine[piece] = to_sq
        squares[seat] = mine

        for s, i in captures:
            if nests is self.nests:
                nests = nests[:]
            nests[s] += 1
            srow = list(pieces[s])
            srow[i] = NEST
            pieces[s] = srow
            ssq = squares[s][:]
            sq = ssq[i]
            ssq[i] = -1
            squares[s] = ssq
            if sq >= 0:
                there = stack[sq][:]
                there.remove(s)
                if there:
                    stack[sq] = there
                else:
                    del stack[sq]
                changed.append(sq)

        if to_sq >= 0:
            landed = stack.get(to_sq)
            if landed is None:
                stack[to_sq] = [seat]
            else:
                # keep each stack in seat order, as a fresh build appends them
                k = len(landed)
                while k and landed[k - 1] > seat:
                    k -= 1
                stack[to_sq] = [*landed[:k], seat, *landed[k:]]
            changed.append(to_sq)

        if double:
            for sq in changed:
                now = stack.get(sq)
                owner = -1
                if now is not None:
                    for k in range(1, len(now)):
                        if now[k] in now[:k]:
                            owner = now[k]
                if owner != block.get(sq, -1):
                    if block is self.block:
                        block = block.copy()
                    if owner < 0:
                        del block[sq]
                    else:
                        block[sq] = owner
        new.pieces = pieces
        new.square = squares
        new.stack = stack
        new.block = block
        new.nests = nests
        return new

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
        rules = board.ruleset
        blocks = rules.blocks
        block = self.block
        if blocks == "double" and block.get(target, attacker) != attacker:
            return 0
        mask = 0
        length = board.length
        last = board.last_track
        track = board.track[attacker]
        row = self.pieces[attacker]
        for i, sq in enumerate(self.square[attacker]):
            if sq < 0:
                continue
            d = (target - sq) % length
            if not 1 <= d <= 6:
                continue
            q = row[i]
            if q + d > last:
                continue  # that piece turns into its home column first
            if mask & (1 << d):
                continue
            if blocks == "double" and block:
                if any(block.get(track[x], attacker) != attacker for x in range(q + 1, q + d)):
                    continue
            elif blocks == "no_overtaking" and any(
                track[x] in self.stack for x in range(q + 1, q + d)
            ):
                continue
            mask |= 1 << d
        if self.nests[attacker] and track[0] == target:
            mask |= face_mask(rules.enter_on)
        return mask & _ALL_DICE

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


def opponents(players: int, seat: int, finished: Sequence[int]) -> list[int]:
    """The seats still playing other than `seat`, in the order they move after it."""
    return [s for s in ((seat + k) % players for k in range(1, players)) if s not in finished]


def bonus_rolls(board: Board, die: int, captures: bool, to: int) -> int:
    """Extra rolls a move earns under the board's ruleset (RULES.md §2.3)."""
    rules = board.ruleset
    return (die == 6) + (rules.capture_bonus and captures) + (rules.goal_bonus and to == board.goal)
