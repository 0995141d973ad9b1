"""Move generation (`domain.moves`, docs/rules.md#moves), as documentation: the building blocks
each walker of the rules calls (entering, blocks, landing, overtaking), the legal moves
they make, why a piece cannot move (`why_not`'s `CannotMove`: each rule that stops a
piece, its fields, its JSON, what a client words in its own language, and its English
sentence, the rejection's text), and applying a move (`push`).

Positions as in test_options.py: 2 players on `cross` unless a case says otherwise
(yellow seat 0 starts at track 0, red seat 1 at track 26; safe squares 0, 8, 13, 21, 26,
34, 39, 47; progress 50 is the last track square, 51-55 the home column, 56 the goal);
`row_on(*squares)` puts red pieces on track squares.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from domain.board import board_for
from domain.moves import (
    CannotMove,
    Move,
    block_on_path,
    blocks_against,
    entering_move,
    enters,
    explain_move,
    has_course_piece,
    landing_block,
    legal_move_list,
    legal_moves,
    piece_between,
    push,
    pushed,
    why_not,
)
from domain.rules import Ruleset
from tests.conftest import NEST, row_on, rules

N = [NEST] * 4
STD = rules()
NO_OVERTAKING = rules(blocks="no_overtaking")
NO_BLOCKS = rules(blocks="none")
BOARD = board_for(STD, 2)


def targets(ruleset: Ruleset, pieces: list[list[int]], die: int, seat: int = 0) -> Any:
    """`{piece: to}` of `seat`'s legal moves for `die` on a 2-player board."""
    return {m.piece: m.to for m in legal_move_list(board_for(ruleset, 2), pieces, seat, die)}


class TestEntering:
    """A nest piece enters its start square (progress 0) on an entering value."""

    def test_enters_only_on_the_entering_values(self) -> None:
        """`enters`: the standard rules enter on a 6 only; `enter_on` names the values."""
        assert [d for d in range(1, 7) if enters(BOARD, d)] == [6]
        assert [d for d in range(1, 7) if enters(board_for(rules(enter_on=[1, 6]), 2), d)] == [
            1,
            6,
        ]

    def test_a_six_enters_every_nest_piece_onto_the_start_square(self) -> None:
        """One move per nest piece, each to progress 0."""
        assert targets(STD, [N, N], 6) == {0: 0, 1: 0, 2: 0, 3: 0}

    def test_a_value_that_does_not_enter_moves_no_nest_piece(self) -> None:
        """No move at all with every piece in the nest."""
        assert targets(STD, [N, N], 5) == {}

    def test_entering_move_is_the_lowest_nest_piece_entering(self) -> None:
        """`entering_move` (auto_enter): the first nest piece, whatever value enters."""
        assert entering_move(BOARD, [[4, NEST, NEST, NEST], N], 0) == Move(1, NEST, 0)
        assert entering_move(BOARD, [[4, 7, 9, 11], N], 0) is None

    def test_has_course_piece_means_a_piece_on_the_track_or_in_the_home_column(self) -> None:
        """Nest and goal pieces are off the course; track and home column are on it."""
        assert not has_course_piece(BOARD, [[NEST, 56, NEST, 56], N], 0)
        assert has_course_piece(BOARD, [[NEST, 53, NEST, 56], N], 0)
        assert has_course_piece(BOARD, [[0, NEST, NEST, NEST], N], 0)


class TestBlocks:
    """`blocks="double"`: a pair of one colour on a track square stops other colours."""

    def test_blocks_against_lists_the_pairs_of_other_colours(self) -> None:
        """`blocks_against`: square -> the pair's seat; the mover's own pairs are left out."""
        pieces = [[3, 3, NEST, NEST], row_on(6, 6, 30)]
        assert blocks_against(BOARD, pieces, 0) == {6: 1}
        assert blocks_against(BOARD, pieces, 1) == {3: 0}

    def test_three_of_a_colour_on_a_square_are_one_block(self) -> None:
        """A triple is a block like a pair."""
        assert blocks_against(BOARD, [N, row_on(6, 6, 6)], 0) == {6: 1}

    def test_block_on_path_names_the_nearest_block_passed_or_landed_on(self) -> None:
        """`block_on_path`: from `frm` (excluded) to `stop` (included), the nearest; -1 none."""
        blocks = {6: 1, 4: 1}
        assert block_on_path(BOARD, 0, 3, 6, blocks) == 4
        assert block_on_path(BOARD, 0, 4, 6, blocks) == 6
        assert block_on_path(BOARD, 0, 3, 3, blocks) == -1
        assert block_on_path(BOARD, 1, 0, 50, blocks) == -1  # its own pairs never stop it

    def test_landing_block_stops_a_landing_on_another_colours_pair(self) -> None:
        """`landing_block`: the pair's seat, or -1 on a free square or one's own pair."""
        assert landing_block({6: 1}, 6, 0) == 1
        assert landing_block({6: 1}, 7, 0) == -1
        assert landing_block({6: 1}, 6, 1) == -1

    def test_a_block_on_the_path_or_landing_square_stops_the_move(self) -> None:
        """Passing or landing on the pair is not a move; stopping before it is."""
        pieces = [[3, *N[1:]], row_on(6, 6)]
        assert targets(STD, pieces, 2) == {0: 5}
        assert targets(STD, pieces, 3) == {}
        assert targets(STD, pieces, 4) == {}

    def test_a_block_on_the_start_square_stops_entering(self) -> None:
        """No piece enters onto another colour's pair."""
        assert targets(STD, [N, row_on(0, 0)], 6) == {}

    def test_without_blocks_a_pair_is_passed(self) -> None:
        """`blocks="none"`: pairs stop nobody (and are captured together)."""
        pieces = [[3, *N[1:]], row_on(6, 6)]
        assert targets(NO_BLOCKS, pieces, 4) == {0: 7}
        assert legal_move_list(board_for(NO_BLOCKS, 2), pieces, 0, 3) == [
            Move(0, 3, 6, ((1, 0), (1, 1)))
        ]


class TestOvertaking:
    """`blocks="no_overtaking"`: no piece passes another, of any colour."""

    def test_piece_between_names_the_first_piece_passed(self) -> None:
        """`piece_between`: (seat, track square) of the first piece strictly between."""
        pieces = [[3, 5, NEST, NEST], row_on(6)]
        assert piece_between(BOARD, pieces, 0, 3, 8) == (0, 5)
        assert piece_between(BOARD, pieces, 0, 5, 8) == (1, 6)
        assert piece_between(BOARD, pieces, 0, 3, 5) is None  # landing on it is no pass

    def test_a_square_about_to_empty_counts_as_empty(self) -> None:
        """`gone`: the square a moving piece leaves (the CPU's reach after a move)."""
        assert piece_between(BOARD, [[3, 5, NEST, NEST], N], 0, 3, 8, gone=5) is None

    def test_an_own_piece_in_the_home_column_is_named_without_a_square(self) -> None:
        """In the home column only own pieces stand: (seat, -1)."""
        assert piece_between(BOARD, [[51, 53, NEST, NEST], N], 0, 51, 55) == (0, -1)

    def test_no_overtaking_leaves_out_the_moves_that_pass(self) -> None:
        """The piece behind waits; the piece in front moves freely."""
        assert targets(NO_OVERTAKING, [[3, 5, NEST, NEST], N], 4) == {1: 9}


class TestLanding:
    """Where a piece lands: captures, safe squares, the goal."""

    def test_landing_on_opponents_captures_every_piece_there(self) -> None:
        """Every opponent piece on an unsafe landing square goes home, in seat order."""
        four = board_for(STD, 4)
        pieces = [[3, *N[1:]], row_on(6, who=1, players=4), N, row_on(6, who=3, players=4)]
        [move] = legal_move_list(four, pieces, 0, 3)
        assert move == Move(0, 3, 6, ((1, 0), (3, 0)))

    def test_a_safe_square_captures_nobody(self) -> None:
        """Square 8 is safe: the piece lands beside the opponent."""
        assert legal_move_list(BOARD, [[5, *N[1:]], row_on(8)], 0, 3) == [Move(0, 5, 8)]

    def test_exact_finish_needs_the_exact_value_to_the_goal(self) -> None:
        """Progress 53 reaches the goal (56) on a 3; a 4 is no move."""
        assert targets(STD, [[53, *N[1:]], N], 3) == {0: 56}
        assert targets(STD, [[53, *N[1:]], N], 4) == {}

    def test_without_exact_finish_an_overshoot_stops_in_the_goal(self) -> None:
        """`exact_finish=false`: any value past the goal ends in it."""
        assert targets(rules(exact_finish=False), [[53, *N[1:]], N], 5) == {0: 56}

    def test_a_piece_in_the_goal_never_moves(self) -> None:
        """Goal pieces have no move; the others keep theirs, in piece order."""
        assert targets(STD, [[56, 10, 56, 20], N], 1) == {1: 11, 3: 21}

    def test_legal_moves_iterates_the_list(self) -> None:
        """`legal_moves` yields exactly `legal_move_list`, in piece order."""
        pieces = [[3, 10, NEST, 20], row_on(12)]
        assert list(legal_moves(BOARD, pieces, 0, 6)) == legal_move_list(BOARD, pieces, 0, 6)


class TestPush:
    """Applying a generated move, unchecked."""

    def test_push_moves_the_piece_and_sends_captures_home(self) -> None:
        """In place: the mover's progress changes, captured pieces return to the nest."""
        pieces = [[3, *N[1:]], row_on(6)]
        push(pieces, 0, Move(0, 3, 6, ((1, 0),)))
        assert pieces == [[6, *N[1:]], N]

    def test_pushed_leaves_the_position_as_it_was(self) -> None:
        """`pushed` returns a moved copy."""
        pieces = [[3, *N[1:]], row_on(6)]
        after = pushed(pieces, 0, Move(0, 3, 6, ((1, 0),)))
        assert (pieces, after) == ([[3, *N[1:]], row_on(6)], [[6, *N[1:]], N])


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
