"""Why a piece cannot move, as facts (`why_not`'s `CannotMove`): each rule of RULES.md §3
that stops a piece, its fields, its JSON (what a client words in its own language) and its
English sentence (the rejection's text).

Positions as in test_options.py: 2 players on `cross` unless a case says otherwise
(yellow seat 0 starts at track 0, red seat 1 at track 26); `row_on(*squares)` puts red
pieces on track squares.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from domain.board import board_for
from domain.moves import CannotMove, explain_move, legal_moves, why_not
from domain.rules import Ruleset
from tests.conftest import NEST, row_on, rules

N = [NEST] * 4
STD = rules()
NO_OVERTAKING = rules(blocks="no_overtaking")

# (what it shows, ruleset, players, pieces, piece, die, the facts, their JSON, the sentence);
# seat 0 is the mover in every case.
CASES: list[tuple[str, Ruleset, int, list[list[int]], int, int, CannotMove, Any, str]] = [
    (
        "a nest piece and a die that does not enter",
        STD,
        2,
        [N, N],
        0,
        3,
        CannotMove(rule="enter_on", values=(6,)),
        {"rule": "enter_on", "values": [6]},
        "a piece leaves the nest only on [6]",
    ),
    (
        "several entering values, sorted",
        rules(enter_on=[6, 1]),
        2,
        [N, N],
        0,
        3,
        CannotMove(rule="enter_on", values=(1, 6)),
        {"rule": "enter_on", "values": [1, 6]},
        "a piece leaves the nest only on [1, 6]",
    ),
    (
        "a piece in the goal",
        STD,
        2,
        [[56, 56, 56, 10], N],
        0,
        1,
        CannotMove(rule="in_goal"),
        {"rule": "in_goal"},
        "the piece is already in the goal",
    ),
    (
        "a die past the goal under exact finish",
        STD,
        2,
        [[53, *N[1:]], N],
        0,
        4,
        CannotMove(rule="exact_finish", needs=3),
        {"rule": "exact_finish", "needs": 3},
        "the goal needs exactly 3",
    ),
    (
        "a pair on the path",
        STD,
        2,
        [[3, *N[1:]], row_on(6, 6)],
        0,
        4,
        CannotMove(rule="block", square=6, seat=1),
        {"rule": "block", "square": 6, "seat": 1},
        "a block stands on square 6",
    ),
    (
        "a pair on the landing square",
        STD,
        2,
        [[3, *N[1:]], row_on(6, 6)],
        0,
        3,
        CannotMove(rule="block", square=6, seat=1),
        {"rule": "block", "square": 6, "seat": 1},
        "a block stands on square 6",
    ),
    (
        "a pair on the start square of an entering piece",
        STD,
        2,
        [N, row_on(0, 0)],
        0,
        6,
        CannotMove(rule="block", square=0, seat=1),
        {"rule": "block", "square": 0, "seat": 1},
        "a block stands on square 0",
    ),
    (
        "the pair's own seat, of four (seat 2 starts at track 26)",
        STD,
        4,
        [[3, *N[1:]], N, row_on(6, 6, who=2, players=4), N],
        0,
        4,
        CannotMove(rule="block", square=6, seat=2),
        {"rule": "block", "square": 6, "seat": 2},
        "a block stands on square 6",
    ),
    (
        "an opponent's piece passed on the track",
        NO_OVERTAKING,
        2,
        [[3, *N[1:]], row_on(6)],
        0,
        4,
        CannotMove(rule="no_overtaking", seat=1, square=6),
        {"rule": "no_overtaking", "seat": 1, "square": 6},
        "no overtaking: a piece stands on square 6",
    ),
    (
        "an own piece passed on the track",
        NO_OVERTAKING,
        2,
        [[3, 5, NEST, NEST], N],
        0,
        4,
        CannotMove(rule="no_overtaking", seat=0, square=5),
        {"rule": "no_overtaking", "seat": 0, "square": 5},
        "no overtaking: a piece stands on square 5",
    ),
    (
        "an own piece passed in the home column: no track square",
        NO_OVERTAKING,
        2,
        [[51, 53, NEST, NEST], N],
        0,
        4,
        CannotMove(rule="no_overtaking", seat=0),
        {"rule": "no_overtaking", "seat": 0},
        "no overtaking: an own piece stands in the home column",
    ),
]


class TestCannotMove:
    """Each rule that stops a piece, as `why_not` and `explain_move` give it: the facts,
    their JSON (only the rule's own fields) and their sentence."""

    @pytest.mark.parametrize(
        ("ruleset", "players", "pieces", "piece", "die", "facts", "json", "sentence"),
        [case[1:] for case in CASES],
        ids=[case[0] for case in CASES],
    )
    def test_a_rule_that_stops_a_piece_is_given_as_facts_json_and_a_sentence(
        self,
        ruleset: Ruleset,
        players: int,
        pieces: list[list[int]],
        piece: int,
        die: int,
        facts: CannotMove,
        json: Any,
        sentence: str,
    ) -> None:
        """why_not and explain_move give the rule's facts, their JSON and the sentence."""
        board = board_for(ruleset, players)
        assert piece not in {m.piece for m in legal_moves(board, pieces, 0, die)}
        why = why_not(board, pieces, 0, piece, die)
        assert why == facts
        assert explain_move(board, pieces, 0, piece, die) == facts
        assert msgspec.json.decode(msgspec.json.encode(why)) == json
        assert str(why) == facts.sentence == sentence

    def test_a_piece_that_can_move_has_no_reason(self) -> None:
        """No rule stops a legal move: why_not is None, explain_move gives the move."""
        board = board_for(STD, 2)
        pieces = [[3, *N[1:]], N]
        assert why_not(board, pieces, 0, 0, 4) is None
        assert explain_move(board, pieces, 0, 0, 4) == next(iter(legal_moves(board, pieces, 0, 4)))

    def test_several_colours_on_a_passed_square_name_the_first_seat(self) -> None:
        """A safe square shared by red and green (no_overtaking, 4 players): seat 1, the
        first in seat order, is named."""
        pieces = [[5, *N[1:]], row_on(8, who=1, players=4), N, row_on(8, who=3, players=4)]
        board = board_for(NO_OVERTAKING, 4)
        assert why_not(board, pieces, 0, 0, 4) == CannotMove(rule="no_overtaking", seat=1, square=8)

    def test_the_facts_decode_from_their_json(self) -> None:
        """A client reading the JSON with the same type gets the same facts back."""
        for case in CASES:
            facts = case[6]
            assert msgspec.json.decode(msgspec.json.encode(facts), type=CannotMove) == facts
