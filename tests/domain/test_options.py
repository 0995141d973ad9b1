"""docs/rules.md#moves options: blocks, safe squares, empty course, quick start.

Unless a test says otherwise: 2 players on `cross` (yellow seat 0 starts at track 0, red seat 1
at track 26), `progress_on(square)` is red's progress on that track square.
"""

from __future__ import annotations

import pytest

from domain.board import board_for
from domain.commands import Roll
from domain.decider import needs_die
from domain.events import DieRolled, PieceMoved, RollPassed, TurnEnded
from domain.moves import explain_move
from tests.conftest import (
    BOARDS,
    NEST,
    PLAYER_COUNTS,
    at_position,
    event_as,
    kinds,
    move,
    moves_for,
    new_match,
    progress_on,
    ref_length,
    ref_safe,
    ref_starts,
    rejected,
    roll,
    row_on,
    rules,
    targets,
)

N = [NEST] * 4
DOUBLE = rules(blocks="double")
NONE = rules(blocks="none")
NO_OVERTAKING = rules(blocks="no_overtaking")


class TestBlocksDouble:
    """通れないマス `double` (default): two of one colour on a track square form a block."""

    def test_double_is_the_default(self) -> None:
        """The standard preset uses blocks = double."""
        assert rules().blocks == "double"

    def test_other_colours_cannot_pass_a_block(self) -> None:
        """A red pair on square 6 stops yellow from moving 3 → 7 over it."""
        pieces = {"yellow": [3, NEST, NEST, NEST], "red": row_on(6, 6)}
        assert 0 not in targets(DOUBLE, 2, pieces, 0, 4)
        reason = explain_move(board_for(DOUBLE, 2), [[3, *N[1:]], row_on(6, 6)], 0, 0, 4)
        assert str(reason) == "a block stands on square 6"

    def test_other_colours_cannot_land_on_a_block(self) -> None:
        """Nor may yellow land on the red pair (no capture of a block)."""
        assert 0 not in targets(DOUBLE, 2, {"yellow": [3, *N[1:]], "red": row_on(6, 6)}, 0, 3)

    def test_moves_short_of_a_block_stay_legal(self) -> None:
        """Squares before the block are reachable."""
        assert targets(DOUBLE, 2, {"yellow": [3, *N[1:]], "red": row_on(6, 6)}, 0, 2) == {0: 5}

    def test_other_colours_cannot_enter_onto_a_block(self) -> None:
        """Entering included: a red pair on yellow's start square keeps yellow in the nest."""
        assert targets(DOUBLE, 2, {"red": row_on(0, 0)}, 0, 6) == {}

    def test_three_pieces_of_one_colour_are_a_block_too(self) -> None:
        """Two *or more* pieces of one colour form a block."""
        assert 0 not in targets(DOUBLE, 2, {"yellow": [3, *N[1:]], "red": row_on(6, 6, 6)}, 0, 5)

    def test_block_on_a_safe_square_blocks_too(self) -> None:
        """Any track square can hold a block, safe squares included."""
        pieces = {"yellow": [5, *N[1:]], "red": row_on(8, 8)}
        assert 0 not in targets(DOUBLE, 2, pieces, 0, 4)

    def test_single_piece_is_no_block(self) -> None:
        """One red piece can be passed."""
        assert targets(DOUBLE, 2, {"yellow": [3, *N[1:]], "red": row_on(6)}, 0, 4) == {0: 7}

    def test_block_does_not_stop_its_own_colour(self) -> None:
        """Red may pass and land on its own pair."""
        pieces = {"red": [0, 3, 3, NEST]}
        assert targets(DOUBLE, 2, pieces, "red", 3) == {0: 3, 1: 6, 2: 6}
        assert targets(DOUBLE, 2, pieces, "red", 5)[0] == 5

    def test_pieces_of_two_colours_on_a_safe_square_are_no_block(self) -> None:
        """A block needs one colour: red + blue sharing a star square can be passed."""
        r, players = DOUBLE, 3
        pieces = {
            "yellow": [5, *N[1:]],
            "blue": [progress_on(8, "blue", r, players), *N[1:]],
            "red": [progress_on(8, "red", r, players), *N[1:]],
        }
        assert targets(r, players, pieces, 0, 4) == {0: 9}

    def test_block_keeps_blocking_every_other_colour(self) -> None:
        """With 4 players a red pair stops yellow, blue and green alike."""
        r, players = DOUBLE, 4
        for colour in ("yellow", "blue", "green"):
            square = (ref_starts("cross", players)[board_for(r, 4).seat_of(colour)] + 5) % 52
            pieces = {
                colour: [3, *N[1:]],
                "red": [progress_on(square, "red", r, players)] * 2 + [NEST] * 2,
            }
            assert 0 not in targets(r, players, pieces, colour, 4), colour


class TestBlocksNone:
    """`none`: stacks never block; landing on a stack captures all of it (if not safe)."""

    def test_stacks_never_block(self) -> None:
        """A red pair on square 6 is passed freely."""
        assert targets(NONE, 2, {"yellow": [3, *N[1:]], "red": row_on(6, 6)}, 0, 4) == {0: 7}

    def test_entering_onto_a_stack_on_a_safe_start_is_allowed(self) -> None:
        """A red pair on yellow's start square does not keep yellow in the nest."""
        assert targets(NONE, 2, {"red": row_on(0, 0)}, 0, 6) == dict.fromkeys(range(4), 0)

    def test_landing_on_a_stack_captures_every_opponent_piece_in_it(self) -> None:
        """Landing on a red pair on an unsafe square sends both home."""
        state = at_position(NONE, 2, {"yellow": [3, *N[1:]], "red": row_on(6, 6)})
        roll(state, 3)
        assert event_as(PieceMoved, move(state, 0)[0]).captures == ((1, 0), (1, 1))
        assert state.pieces[1] == N

    def test_landing_on_a_stack_on_a_safe_square_captures_nothing(self) -> None:
        """On a safe square the stack and the lander share it."""
        (only,) = moves_for(NONE, 2, {"yellow": [5, *N[1:]], "red": row_on(8, 8)}, 0, 3).values()
        assert (only.to, only.captures) == (8, ())


class TestBlocksNoOvertaking:
    """`no_overtaking` (追い越し禁止): nobody passes any piece; landing is allowed."""

    def test_no_piece_may_pass_over_an_opponent_on_the_track(self) -> None:
        """A lone red piece on 6 cannot be passed by yellow from 3."""
        pieces = {"yellow": [3, *N[1:]], "red": row_on(6)}
        assert 0 not in targets(NO_OVERTAKING, 2, pieces, 0, 4)
        assert "no overtaking" in str(
            explain_move(board_for(NO_OVERTAKING, 2), [[3, *N[1:]], row_on(6)], 0, 0, 4)
        )

    def test_no_piece_may_pass_over_its_own_piece_on_the_track(self) -> None:
        """Its own included: yellow on 3 cannot pass yellow on 5."""
        assert 0 not in targets(NO_OVERTAKING, 2, {"yellow": [3, 5, NEST, NEST]}, 0, 4)

    def test_no_piece_may_pass_over_its_own_piece_in_its_home_column(self) -> None:
        """In the home column too: 51 cannot pass an own piece at 53."""
        assert 0 not in targets(NO_OVERTAKING, 2, {"yellow": [51, 53, NEST, NEST]}, 0, 4)

    def test_no_piece_may_pass_from_the_track_over_its_own_home_column_piece(self) -> None:
        """A move from the track into the home column cannot pass an own piece there."""
        assert 0 not in targets(NO_OVERTAKING, 2, {"yellow": [49, 52, NEST, NEST]}, 0, 5)

    def test_landing_on_an_opponent_is_allowed_and_captures(self) -> None:
        """Landing is allowed: yellow 3 → 6 captures the red piece there."""
        assert moves_for(NO_OVERTAKING, 2, {"yellow": [3, *N[1:]], "red": row_on(6)}, 0, 3)[
            0
        ].captures == ((1, 0),)

    def test_landing_on_an_own_piece_is_allowed(self) -> None:
        """Landing on an own piece stacks, on the track and in the home column."""
        assert targets(NO_OVERTAKING, 2, {"yellow": [3, 5, NEST, NEST]}, 0, 2)[0] == 5
        assert targets(NO_OVERTAKING, 2, {"yellow": [51, 53, NEST, NEST]}, 0, 2)[0] == 53

    def test_no_overtaking_has_no_blocks(self) -> None:
        """Two red pieces on one square are landed on (and captured), not a block."""
        assert moves_for(NO_OVERTAKING, 2, {"yellow": [3, *N[1:]], "red": row_on(6, 6)}, 0, 3)[
            0
        ].captures == ((1, 0), (1, 1))

    def test_pieces_in_the_goal_never_obstruct(self) -> None:
        """Own pieces in the goal do not stop a piece from reaching the goal."""
        assert targets(NO_OVERTAKING, 2, {"yellow": [53, 56, 56, 56]}, 0, 3) == {0: 56}
        r = rules(blocks="no_overtaking", exact_finish=False)
        assert targets(r, 2, {"yellow": [53, 56, 56, 56]}, 0, 6) == {0: 56}

    def test_entering_passes_nothing(self) -> None:
        """Entering onto a start square holding a piece is landing, not passing."""
        assert targets(NO_OVERTAKING, 2, {"yellow": [0, *N[1:]]}, 0, 6) == {0: 6, 1: 0, 2: 0, 3: 0}

    def test_opponent_pieces_in_their_home_column_never_obstruct(self) -> None:
        """Red's home column is private: red pieces there do not stop yellow on the track."""
        pieces = {"yellow": [23, *N[1:]], "red": [51, 52, 53, NEST]}
        assert targets(NO_OVERTAKING, 2, pieces, 0, 5) == {0: 28}


SAFE_CASES = [
    (b, n, s) for b in BOARDS for n in PLAYER_COUNTS for s in ("start_and_star", "start", "none")
]


def _lands_with_capture(r_board: str, players: int, safe: str, square: int) -> bool | None:
    """Whether seat 0 landing on a lone seat-1 piece on `square` captures it (None: that
    square cannot be set up: one of the two colours never stands there)."""
    r = rules(board=r_board, safe_squares=safe, blocks="none")
    length = ref_length(r_board, players)
    mover = (square - ref_starts(r_board, players)[0]) % length
    victim = (square - ref_starts(r_board, players)[1]) % length
    if mover == length - 1 or victim == length - 1:
        return None
    rows = [[NEST] * 4 for _ in range(players)]
    rows[1][0] = victim
    if mover == 0:
        die = 6
    else:
        rows[0][0], die = mover - 1, 1
    (landing,) = [m for m in moves_for(r, players, rows, 0, die).values() if m.piece == 0]
    assert landing.to == mover
    return bool(landing.captures)


class TestSafeSquaresStartAndStar:
    """安全なマス `start_and_star` (default): 13a and 13a+8 for every arm, used or not."""

    @pytest.mark.parametrize(("board", "players"), [(b, n) for b in BOARDS for n in PLAYER_COUNTS])
    def test_start_and_star_safe_squares_are_13a_and_13a_plus_8_for_every_arm(
        self, board: str, players: int
    ) -> None:
        """Safe squares are each arm's start and the square 8 ahead (cross: all four arms)."""
        r = rules(board=board, safe_squares="start_and_star")
        assert board_for(r, players).safe == ref_safe(board, "start_and_star", players)
        if board == "cross":
            assert board_for(r, players).safe == {0, 8, 13, 21, 26, 34, 39, 47}

    def test_unused_arm_squares_are_safe_too(self) -> None:
        """Two players on cross: blue's unused start 13 and star 21 are still safe."""
        for square in (13, 21):
            assert _lands_with_capture("cross", 2, "start_and_star", square) is False

    def test_star_square_shares_instead_of_capturing(self) -> None:
        """Landing on an opponent on a star square (8) captures nothing."""
        assert _lands_with_capture("cross", 2, "start_and_star", 8) is False


class TestSafeSquaresStart:
    """`start`: start squares only."""

    @pytest.mark.parametrize(("board", "players"), [(b, n) for b in BOARDS for n in PLAYER_COUNTS])
    def test_start_safe_squares_are_the_start_squares_only(self, board: str, players: int) -> None:
        """Safe squares are 13a for every arm a on the board."""
        r = rules(board=board, safe_squares="start")
        assert board_for(r, players).safe == ref_safe(board, "start", players)

    def test_star_square_is_not_safe(self) -> None:
        """Landing on an opponent on a star square captures it."""
        assert _lands_with_capture("cross", 2, "start", 8) is True

    def test_start_square_is_safe(self) -> None:
        """Landing on an opponent on a start square (entering included) shares it."""
        assert _lands_with_capture("cross", 2, "start", 0) is False
        assert _lands_with_capture("cross", 2, "start", 13) is False


class TestSafeSquaresNone:
    """`none`: no safe squares at all."""

    @pytest.mark.parametrize(("board", "players"), [(b, n) for b in BOARDS for n in PLAYER_COUNTS])
    def test_none_has_no_safe_squares(self, board: str, players: int) -> None:
        """The safe set is empty."""
        assert board_for(rules(board=board, safe_squares="none"), players).safe == frozenset()

    def test_capture_on_a_start_square(self) -> None:
        """Entering captures an opponent on the start square; landing on 8 captures too."""
        assert _lands_with_capture("cross", 2, "none", 0) is True
        assert _lands_with_capture("cross", 2, "none", 8) is True


@pytest.mark.parametrize(("board", "players", "safe"), SAFE_CASES)
def test_capture_happens_exactly_on_the_squares_that_are_not_safe(
    board: str, players: int, safe: str
) -> None:
    """On every track square a landing captures a lone opponent iff the square is not safe."""
    safe_set = ref_safe(board, safe, players)
    checked = 0
    for square in range(ref_length(board, players)):
        captured = _lands_with_capture(board, players, safe, square)
        if captured is not None:
            assert captured == (square not in safe_set), square
            checked += 1
    assert checked >= ref_length(board, players) - 2


class TestEmptyCourseNormal:
    """コースにコマが無いとき `normal` (default): roll as usual."""

    def test_normal_player_with_an_empty_course_rolls_as_usual(self) -> None:
        """All pieces in the nest: one ordinary roll; a non-entering value is passed."""
        state = new_match(rules(empty_course="normal"))
        assert needs_die(state)
        assert kinds(roll(state, 3)) == ["DieRolled", "RollPassed", "TurnEnded"]

    def test_normal_entering_value_enters_as_usual(self) -> None:
        """A 6 enters a piece and earns its bonus roll."""
        state = at_position(rules(empty_course="normal"), 2, {"yellow": [56, 56, NEST, NEST]})
        roll(state, 6)
        assert event_as(PieceMoved, move(state, 2)[0]).bonus == 1


class TestEmptyCourseAutoEnter:
    """`auto_enter` (振らずに1つ出る): the roll action enters a piece without a die."""

    AUTO = rules(empty_course="auto_enter")

    def test_auto_enter_roll_action_enters_one_piece_without_a_die_and_ends_the_turn(
        self,
    ) -> None:
        """Roll with no die: the first nest piece enters (die None), the turn ends."""
        state = new_match(self.AUTO)
        assert not needs_die(state)
        events = roll(state, None)
        assert events == [
            PieceMoved(seat=0, piece=0, frm=NEST, to=0, die=None, bonus=0),
            TurnEnded(seat=0, next_seat=1),
        ]
        assert (state.rolls_made, state.pieces[0]) == (0, [0, NEST, NEST, NEST])

    def test_auto_enter_applies_with_pieces_in_nest_and_goal(self) -> None:
        """Nest and goal only (at least one in the nest) counts as an empty course."""
        state = at_position(self.AUTO, 2, {"yellow": [56, 56, NEST, NEST]})
        assert not needs_die(state)
        assert event_as(PieceMoved, roll(state, None)[0]).piece == 2

    def test_auto_enter_not_used_with_a_piece_on_the_track(self) -> None:
        """A piece on the track: the seat rolls a die as usual."""
        state = at_position(self.AUTO, 2, {"yellow": [5, NEST, NEST, NEST]})
        assert needs_die(state)
        assert rejected(state, Roll(seat=0, die=None)).code == "bad_die"

    def test_auto_enter_home_column_counts_as_the_course(self) -> None:
        """A piece in the home column is on the course: no automatic entry."""
        state = at_position(self.AUTO, 2, {"yellow": [53, NEST, NEST, NEST]})
        assert needs_die(state)

    def test_auto_enter_ends_the_turn_even_after_a_capture(self) -> None:
        """With unsafe starts, the automatic entry captures but earns no roll."""
        r = rules(empty_course="auto_enter", safe_squares="none")
        state = at_position(r, 2, {"red": row_on(0)})
        events = roll(state, None)
        assert event_as(PieceMoved, events[0]).captures == ((1, 0),)
        assert kinds(events) == ["PieceMoved", "TurnEnded"]

    def test_auto_enter_ends_the_turn_even_with_bonus_rolls_in_hand(self) -> None:
        """A player whose course emptied with a bonus roll left still ends the turn."""
        state = at_position(self.AUTO, 2, {"yellow": [56, NEST, NEST, NEST]}, rolls_left=2)
        assert kinds(roll(state, None)) == ["PieceMoved", "TurnEnded"]

    def test_auto_enter_with_a_blocked_start_falls_back_to_rolling(self) -> None:
        """Engine decision: when a block stands on the start square the seat rolls normally."""
        state = at_position(self.AUTO, 2, {"red": row_on(0, 0)})
        assert needs_die(state)
        assert kinds(roll(state, 6)) == ["DieRolled", "RollPassed", "TurnEnded"]


class TestEmptyCourseThreeTries:
    """`three_tries` (3回振れる): up to three rolls until an entering value comes."""

    TRIES = rules(empty_course="three_tries")

    def test_three_tries_up_to_three_rolls_until_an_entering_value(self) -> None:
        """Three non-entering rolls: the first two are retried, the third ends the turn."""
        state = new_match(self.TRIES)
        for n, die in enumerate((1, 2)):
            events = roll(state, die)
            assert events == [
                DieRolled(seat=0, n=n, value=die),
                RollPassed(seat=0, reason="no_legal_move", retry=True),
            ]
            assert (state.turn, state.rolls_left) == (0, 1)
        events = roll(state, 3)
        assert kinds(events) == ["DieRolled", "RollPassed", "TurnEnded"]
        assert event_as(RollPassed, events[1]).retry is False
        assert (state.turn, state.rolls_made) == (1, 3)

    def test_three_tries_entering_value_is_played_normally_and_a_six_keeps_its_bonus(
        self,
    ) -> None:
        """A 6 on the second try enters and earns the usual bonus roll."""
        state = new_match(self.TRIES)
        roll(state, 2)
        assert kinds(roll(state, 6)) == ["DieRolled"]
        assert event_as(PieceMoved, move(state, 0)[0]).bonus == 1
        assert (state.turn, state.rolls_left) == (0, 1)
        roll(state, 3)
        assert kinds(move(state, 0)) == ["PieceMoved", "TurnEnded"]

    def test_three_tries_entering_non_six_ends_the_turn_after_its_move(self) -> None:
        """With enter_on {1, 6}, a 1 on the third try enters and the turn then ends."""
        state = new_match(rules(empty_course="three_tries", enter_on=[1, 6]))
        roll(state, 2)
        roll(state, 3)
        roll(state, 1)
        assert kinds(move(state, 0)) == ["PieceMoved", "TurnEnded"]

    def test_three_tries_applies_with_pieces_in_nest_and_goal(self) -> None:
        """Nest and goal only counts as an empty course: the failed roll is retried."""
        state = at_position(self.TRIES, 2, {"yellow": [56, 56, 56, NEST]})
        assert event_as(RollPassed, roll(state, 4)[1]).retry is True

    @pytest.mark.parametrize("revision", [1, 2])
    def test_three_tries_non_entering_rolls_are_retried_under_every_revision(
        self, revision: int
    ) -> None:
        """The revisions part only on entering values: a passed 4 is a failed try in both."""
        state = new_match(rules(empty_course="three_tries", revision=revision))
        assert roll(state, 4) == [
            DieRolled(seat=0, n=0, value=4),
            RollPassed(seat=0, reason="no_legal_move", retry=True),
        ]

    def test_revision_2_entering_value_stopped_by_a_block_ends_the_tries(self) -> None:
        """Revision 2 (docs/rules.md#revisions-of-the-rules): the entering value has come, so the
        tries are over; with an opponent's block on the start square it is passed, and a passed roll
        adds nothing: the turn ends."""
        state = at_position(rules(empty_course="three_tries", revision=2), 2, {"red": row_on(0, 0)})
        assert event_as(RollPassed, roll(state, 2)[1]).retry  # not entering: a failed try
        events = roll(state, 6)
        assert events == [
            DieRolled(seat=0, n=1, value=6),
            RollPassed(seat=0, reason="no_legal_move", retry=False),
            TurnEnded(seat=0, next_seat=1),
        ]
        assert (state.turn, state.rolls_left, state.tries) == (1, 1, 0)

    def test_revision_1_entering_value_stopped_by_a_block_was_a_failed_try(self) -> None:
        """Revision 1, which every match recorded before revisions is played under, counted
        that roll as a failed try and granted another, as those matches recorded it."""
        state = at_position(rules(empty_course="three_tries", revision=1), 2, {"red": row_on(0, 0)})
        assert roll(state, 6) == [
            DieRolled(seat=0, n=0, value=6),
            RollPassed(seat=0, reason="no_legal_move", retry=True),
        ]
        assert (state.turn, state.rolls_left, state.tries) == (0, 1, 1)

    def test_three_tries_not_used_with_a_piece_on_the_course(self) -> None:
        """A piece in the home column is on the course: one roll, passed, turn over."""
        state = at_position(self.TRIES, 2, {"yellow": [54, 56, NEST, NEST]})
        events = roll(state, 5)
        assert kinds(events) == ["DieRolled", "RollPassed", "TurnEnded"]
        assert event_as(RollPassed, events[1]).retry is False


class TestQuickStart:
    """クイックスタート: each player begins with one piece on p = 0."""

    @pytest.mark.parametrize(("board", "players"), [(b, n) for b in BOARDS for n in PLAYER_COUNTS])
    def test_quick_start_each_player_begins_with_one_piece_on_its_start(
        self, board: str, players: int
    ) -> None:
        """With quick_start every seat starts with exactly one piece at p = 0."""
        state = new_match(rules(board=board, quick_start=True), players)
        assert state.pieces == [[0, NEST, NEST, NEST]] * players

    def test_quick_start_is_off_by_default(self) -> None:
        """Standard: every piece begins in the nest."""
        assert new_match(rules(), 4).pieces == [N] * 4

    def test_quick_start_piece_can_move_on_the_first_roll(self) -> None:
        """The started piece lets a non-entering first roll be played."""
        state = new_match(rules(quick_start=True))
        roll(state, 3)
        assert event_as(PieceMoved, move(state, 0)[0]).to == 3
