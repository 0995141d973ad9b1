"""The JSON notation of docs/rules.md#notation-for-tools-and-tests and the rules oracle built on it
(docs/design.md#public-contracts).

A position is `{"players": n, "pieces": {colour: [p, p, p, p], ...}, "turn": colour,
"sixes": n, "rolls_left": n}`; `rolls_left` counts the roll about to be made. The oracle
answers "which moves does this die allow here, and where does each lead" by running the
real `decide` on a state placed at the position, so it cannot disagree with live play.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from domain.board import PIECES, Board, board_for
from domain.commands import MovePiece, Rejection, Roll
from domain.decider import MatchState, apply, current_legal_moves, decide
from domain.events import Event, PieceMoved, SeatSpec
from domain.rules import RulesetError, parse_ruleset

__all__ = [
    "NotationError",
    "answer_query",
    "parse_position",
    "position_to_json",
    "state_at_position",
]

NotationError = RulesetError  # same shape: a `field` and a message

_NOTATION_SEATS = tuple(SeatSpec(name=f"seat-{i}") for i in range(4))


def _int(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise NotationError(field, f"expected an integer {low}-{high}, got {value!r}")
    return value


def parse_position(board: Board, position: object) -> tuple[list[list[int]], int, int, int]:
    """Validate a notation position against `board`: (pieces, turn seat, sixes, rolls_left)."""
    if not isinstance(position, Mapping):
        raise NotationError("position", "expected an object")
    unknown = set(position) - {"players", "pieces", "turn", "sixes", "rolls_left"}
    if unknown:
        raise NotationError(f"position.{sorted(unknown)[0]}", "unknown key")
    raw = position.get("pieces")
    if not isinstance(raw, Mapping):
        raise NotationError("position.pieces", "expected an object of colour -> 4 progresses")
    if set(raw) != set(board.colours):
        raise NotationError(
            "position.pieces", f"this board seats exactly {list(board.colours)}, got {list(raw)}"
        )
    pieces: list[list[int]] = []
    for colour in board.colours:
        row = raw[colour]
        field = f"position.pieces.{colour}"
        if not isinstance(row, list) or len(row) != PIECES:
            raise NotationError(field, f"expected a list of {PIECES} progress values")
        pieces.append([_int(field, p, -1, board.goal) for p in row])
    _check_reachable(board, pieces)
    turn = position.get("turn", board.colours[0])
    if turn not in board.colours:
        raise NotationError("position.turn", f"expected one of {list(board.colours)}")
    # With three_sixes on, a third six ends the turn, so at most two can precede a roll.
    most_sixes = 2 if board.ruleset.three_sixes else 10_000
    sixes = _int("position.sixes", position.get("sixes", 0), 0, most_sixes)
    rolls_left = _int("position.rolls_left", position.get("rolls_left", 1), 1, 10_000)
    return pieces, board.colours.index(turn), sixes, rolls_left


def _check_reachable(board: Board, pieces: list[list[int]]) -> None:
    """Reject positions no match can reach, which the engine would otherwise answer for.

    - Two colours never share a track square that is not safe: whoever lands there
      captures (docs/rules.md#a-turn), whatever the `blocks` option.
    - A match in play has a player to move: with `play_to_end` off it ends at the first
      finisher, with it on when one player is left.
    """
    field = "position.pieces"
    owner: dict[int, int] = {}
    for seat, row in enumerate(pieces):
        for progress in row:
            if not 0 <= progress <= board.last_track:
                continue
            square = board.track[seat][progress]
            other = owner.setdefault(square, seat)
            if other != seat and square not in board.safe:
                raise NotationError(
                    field,
                    f"{board.colours[other]} and {board.colours[seat]} share track square "
                    f"{square}, which is not safe: the later one would have captured",
                )
    finished = [c for c, row in zip(board.colours, pieces, strict=True) if min(row) == board.goal]
    left_to_play = 1 if board.ruleset.play_to_end else board.players - 1
    if len(finished) >= board.players - left_to_play:
        raise NotationError(
            field, f"the match is over ({', '.join(finished)} finished), so nobody moves"
        )


def position_to_json(state: MatchState) -> dict[str, Any]:
    """The notation of a state; adds `placements` (colour -> place) once the match is over."""
    board = state.board
    assert board is not None
    out: dict[str, Any] = {
        "players": board.players,
        "pieces": {colour: list(state.pieces[s]) for s, colour in enumerate(board.colours)},
        "turn": board.colours[state.turn],
        "sixes": state.sixes,
        "rolls_left": state.rolls_left,
    }
    if state.placements is not None:
        out["placements"] = dict(zip(board.colours, state.placements, strict=True))
    return out


def state_at_position(
    board: Board, pieces: list[list[int]], turn: int, sixes: int = 0, rolls_left: int = 1
) -> MatchState:
    """A match in play at a given position, awaiting a roll from `turn`.

    For tools that start from notation (the oracle, tests, CPU analysis), not for matches:
    those are only ever folded from their events. Seats already all in the goal count as
    finished, in seat order.
    """
    state = MatchState()
    state.status = "playing"
    state.ruleset = board.ruleset
    state.board = board
    state.seats = tuple(_NOTATION_SEATS[: board.players])
    state.pieces = [row[:] for row in pieces]
    state.turn = turn
    state.sixes = sixes
    state.rolls_left = rolls_left
    state.finished = [s for s, row in enumerate(pieces) if all(p == board.goal for p in row)]
    state.timeouts = [0] * board.players
    state.stood_in = [None] * board.players
    return state


def _apply_all(state: MatchState, events: list[Event]) -> MatchState:
    for event in events:
        apply(state, event)
    return state


def answer_query(query: object) -> dict[str, Any]:
    """One oracle query `{"rules", "position", "die"}` -> `{"moves": [...]}`.

    Raises NotationError (a RulesetError) naming the bad field.
    """
    if not isinstance(query, Mapping):
        raise NotationError("query", "expected an object with rules, position and die")
    unknown = set(query) - {"rules", "position", "die"}
    if unknown:
        raise NotationError(sorted(unknown)[0], "unknown key; expected rules, position, die")
    try:
        ruleset = parse_ruleset(query.get("rules"))
    except RulesetError as error:  # named as the query spells it: rules.<option>
        field = error.field if error.field == "rules" else f"rules.{error.field}"
        raise NotationError(field, error.message) from None
    position = query.get("position")
    if not isinstance(position, Mapping):
        raise NotationError(
            "position", "expected an object (docs/rules.md#notation-for-tools-and-tests)"
        )
    try:
        board = board_for(ruleset, position.get("players"))
    except RulesetError as error:
        raise NotationError("position.players", error.message) from None
    pieces, turn, sixes, rolls_left = parse_position(board, position)
    if "die" not in query:
        raise NotationError("die", "missing: the die value (1-6) to list the moves for")
    die = _int("die", query["die"], 1, 6)
    if turn in [s for s, row in enumerate(pieces) if all(p == board.goal for p in row)]:
        raise NotationError("position.turn", "that colour has already finished")
    state = state_at_position(board, pieces, turn, sixes, rolls_left)
    rolled = decide(Roll(seat=turn, die=die), state)
    if type(rolled) is Rejection:  # pragma: no cover - the position was validated above
        raise NotationError("query", rolled.reason)
    assert isinstance(rolled, list)
    colours = board.colours
    first = rolled[0]
    if type(first) is PieceMoved:  # auto_enter: the roll action entered a piece, no die
        return {"moves": [_move_json(colours, first, _apply_all(state.copy(), rolled))]}
    after_roll = _apply_all(state.copy(), rolled)
    moves = []
    for move in current_legal_moves(after_roll):
        events = decide(MovePiece(seat=turn, piece=move.piece), after_roll)
        assert isinstance(events, list)
        moved = events[0]
        assert type(moved) is PieceMoved
        moves.append(_move_json(colours, moved, _apply_all(after_roll.copy(), events)))
    return {"moves": moves}


def _move_json(colours: tuple[str, ...], moved: PieceMoved, after: MatchState) -> dict[str, Any]:
    return {
        "piece": moved.piece,
        "from": moved.frm,
        "to": moved.to,
        "captures": [[colours[s], i] for s, i in moved.captures],
        "position": position_to_json(after),
    }
