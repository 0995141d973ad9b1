"""The board and a move as the viewers draw them: the live table (the match service's
match view) and the replay pages share these shapes, so they sit below both."""

from __future__ import annotations

import msgspec

from domain.board import PIECES, Board
from domain.moves import Move

__all__ = ["BoardOut", "OptionOut", "board_view", "option_view"]


class BoardOut(msgspec.Struct, kw_only=True):
    """The geometry the viewer needs to place a piece of seat s at progress p:
    p < 0 nest; 0 <= p <= last_track track square (starts[s] + p) % length;
    home <= p < goal home column square p - home (0-4); p >= goal the goal."""

    kind: str
    players: int
    arms: int
    length: int
    colours: list[str]
    colour_index: list[int]
    starts: list[int]
    safe: list[int]
    last_track: int
    home: int
    goal: int
    pieces: int


class OptionOut(msgspec.Struct, kw_only=True):
    """A legal move: piece, progress before and after, captured (seat, piece) pairs."""

    piece: int
    frm: int = msgspec.field(name="from")
    to: int
    captures: list[list[int]]


def board_view(board: Board) -> BoardOut:
    """The board's geometry, as the match view, the replay viewer and the report show it."""
    return BoardOut(
        kind=board.ruleset.board,
        players=board.players,
        arms=board.length // 13,
        length=board.length,
        colours=list(board.colours),
        colour_index=list(board.colour_index),
        starts=list(board.starts),
        safe=sorted(board.safe),
        last_track=board.last_track,
        home=board.home,
        goal=board.goal,
        pieces=PIECES,
    )


def option_view(move: Move) -> OptionOut:
    """A legal move as `{"piece", "from", "to", "captures"}`."""
    return OptionOut(
        piece=move.piece, frm=move.frm, to=move.to, captures=[list(c) for c in move.captures]
    )
