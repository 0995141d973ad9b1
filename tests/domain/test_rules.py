"""The rules of docs/rules.md#a-turn, the core of docs/rules.md#moves and
docs/rules.md#the-end-of-a-match (placements).

Turn rules drive `decide` with commands and check the events; move rules ask `legal_moves`.
Unless a test says otherwise: standard rules, 2 players on `cross` (yellow seat 0 starts at
track 0, red seat 1 at track 26; safe squares 0, 8, 13, 21, 26, 34, 39, 47). A red piece at
progress p stands on track square (26 + p) % 52.
"""

from __future__ import annotations

import pytest

from domain.board import board_for
from domain.commands import CreateMatch, MovePiece, Roll
from domain.events import MatchFinished, PieceMoved, PlayerFinished, RollPassed, TurnEnded
from domain.moves import explain_move
from domain.placements import placements, standing_key
from tests.conftest import (
    NEST,
    SEED_HASH,
    at_position,
    event_as,
    kinds,
    move,
    moves_for,
    new_match,
    progress_on,
    rejected,
    roll,
    row_on,
    rules,
    seat_specs,
    targets,
)

STD = rules()
N = [NEST] * 4  # a colour with every piece in the nest


class TestTurn:
    """A turn: rolling, the counter of rolls left, bonuses, three sixes, passing the turn."""

    def test_roll_without_a_server_die_is_rejected(self) -> None:
        """Dice come only from the server: a roll that needs a die and carries none is refused."""
        assert rejected(new_match(), Roll(seat=0, die=None)).code == "bad_die"

    @pytest.mark.parametrize("die", [0, 7, -1, 12])
    def test_die_outside_one_to_six_is_rejected(self, die: int) -> None:
        """A die is a value 1-6; anything else is refused with bad_die."""
        assert rejected(new_match(), Roll(seat=0, die=die)).code == "bad_die"

    def test_roll_with_a_legal_move_must_be_followed_by_exactly_one_move(self) -> None:
        """After a roll with a legal move the seat must move once: no roll before, none after."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST]})
        assert kinds(roll(state, 2)) == ["DieRolled"]
        assert rejected(state, Roll(seat=0, die=4)).code == "move_first"
        assert kinds(move(state, 0)) == ["PieceMoved", "TurnEnded"]
        assert rejected(state, MovePiece(seat=1, piece=0)).code == "roll_first"

    def test_roll_without_a_legal_move_is_passed(self) -> None:
        """A roll with no legal move is passed (RollPassed no_legal_move) and nothing moves."""
        state = new_match()
        events = roll(state, 3)
        assert kinds(events) == ["DieRolled", "RollPassed", "TurnEnded"]
        assert events[1] == RollPassed(seat=0, reason="no_legal_move")
        assert state.pieces == [N, N]

    def test_rolls_left_starts_at_one_and_each_roll_uses_one(self) -> None:
        """A turn starts with one roll; rolling uses it, so a plain move ends the turn."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST]})
        assert state.rolls_left == 1
        roll(state, 2)
        assert state.rolls_left == 0
        assert move(state, 0)[-1] == TurnEnded(seat=0, next_seat=1)
        assert (state.turn, state.rolls_left) == (1, 1)

    def test_played_six_adds_one_roll(self) -> None:
        """A played 6 earns one more roll: bonus 1, the same seat rolls again."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST]})
        roll(state, 6)
        events = move(state, 0)
        assert kinds(events) == ["PieceMoved"]
        assert event_as(PieceMoved, events[0]).bonus == 1
        assert (state.turn, state.phase, state.rolls_left) == (0, "roll", 1)

    def test_capture_adds_one_roll_when_capture_bonus_is_on(self) -> None:
        """取ったらもう1回: a capture earns one more roll (standard has it on)."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST], "red": row_on(5)})
        roll(state, 2)
        events = move(state, 0)
        assert kinds(events) == ["PieceMoved"]
        moved = event_as(PieceMoved, events[0])
        assert (moved.captures, moved.bonus) == (((1, 0),), 1)
        assert state.rolls_left == 1

    def test_capture_adds_nothing_when_capture_bonus_is_off(self) -> None:
        """Without capture_bonus a capture by a non-6 ends the turn as usual."""
        r = rules(capture_bonus=False)
        state = at_position(r, 2, {"yellow": [3, NEST, NEST, NEST], "red": row_on(5)})
        roll(state, 2)
        events = move(state, 0)
        assert kinds(events) == ["PieceMoved", "TurnEnded"]
        assert event_as(PieceMoved, events[0]).bonus == 0

    def test_reaching_the_goal_adds_one_roll_when_goal_bonus_is_on(self) -> None:
        """ゴールでもう1回: a piece reaching the goal earns one more roll when goal_bonus is on."""
        state = at_position(rules(goal_bonus=True), 2, {"yellow": [53, 56, 56, NEST]})
        roll(state, 3)
        events = move(state, 0)
        assert kinds(events) == ["PieceMoved"]
        moved = event_as(PieceMoved, events[0])
        assert (moved.to, moved.bonus) == (56, 1)

    def test_reaching_the_goal_adds_nothing_when_goal_bonus_is_off(self) -> None:
        """Standard has goal_bonus off: reaching the goal with a non-6 ends the turn."""
        state = at_position(STD, 2, {"yellow": [53, 56, 56, NEST]})
        roll(state, 3)
        assert kinds(move(state, 0)) == ["PieceMoved", "TurnEnded"]

    def test_bonuses_from_one_move_stack_six_and_capture(self) -> None:
        """A 6 that captures earns two rolls, and both are played."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST], "red": row_on(9)})
        roll(state, 6)
        events = move(state, 0)
        moved = event_as(PieceMoved, events[0])
        assert (moved.captures, moved.bonus, state.rolls_left) == (((1, 0),), 2, 2)
        roll(state, 1)
        assert kinds(move(state, 0)) == ["PieceMoved"]
        roll(state, 1)
        assert kinds(move(state, 0)) == ["PieceMoved", "TurnEnded"]

    def test_bonuses_from_one_move_stack_six_and_goal(self) -> None:
        """A 6 that reaches the goal under goal_bonus earns two rolls."""
        state = at_position(rules(goal_bonus=True), 2, {"yellow": [50, 56, 56, NEST]})
        roll(state, 6)
        events = move(state, 0)
        moved = event_as(PieceMoved, events[0])
        assert (moved.to, moved.bonus, state.rolls_left) == (56, 2, 2)

    def test_bonuses_from_one_move_stack_when_entering_captures(self) -> None:
        """Entering on a 6 onto an opponent on an unsafe start earns 6 + capture = two rolls."""
        state = at_position(rules(safe_squares="none"), 2, {"red": row_on(0)})
        roll(state, 6)
        events = move(state, 0)
        moved = event_as(PieceMoved, events[0])
        assert (moved.captures, moved.bonus, state.rolls_left) == (((1, 0),), 2, 2)

    def test_passed_six_gives_no_bonus(self) -> None:
        """Decision: a 6 that cannot be played is passed and earns nothing; the turn ends."""
        state = at_position(STD, 2, {"yellow": [53, 54, 56, 56]})
        events = roll(state, 6)
        assert kinds(events) == ["DieRolled", "RollPassed", "TurnEnded"]
        assert state.turn == 1

    def test_passed_roll_adds_nothing_to_remaining_bonus_rolls(self) -> None:
        """A passed roll uses its roll and adds none; earlier bonus rolls remain."""
        state = at_position(STD, 2, {"yellow": [53, 54, 56, 56]}, rolls_left=2)
        assert kinds(roll(state, 5)) == ["DieRolled", "RollPassed"]
        assert (state.turn, state.rolls_left) == (0, 1)
        assert kinds(roll(state, 5)) == ["DieRolled", "RollPassed", "TurnEnded"]

    def test_turn_ends_when_no_rolls_remain(self) -> None:
        """TurnEnded comes exactly when the counter reaches zero, then the next seat has one."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST]}, rolls_left=2)
        roll(state, 1)
        assert kinds(move(state, 0)) == ["PieceMoved"]
        roll(state, 1)
        assert kinds(move(state, 0)) == ["PieceMoved", "TurnEnded"]
        assert (state.turn, state.rolls_left) == (1, 1)

    def test_three_sixes_third_consecutive_six_is_not_played_and_ends_turn(self) -> None:
        """6が3回で番が終わる: the third 6 in a row is passed (three_sixes) and ends the turn."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST]})
        for _ in range(2):
            roll(state, 6)
            move(state, 0)
        events = roll(state, 6)
        assert kinds(events) == ["DieRolled", "RollPassed", "TurnEnded"]
        assert events[1] == RollPassed(seat=0, reason="three_sixes")
        assert state.pieces[0] == [15, NEST, NEST, NEST]
        assert state.turn == 1

    def test_three_sixes_ends_the_turn_at_once_bonus_rolls_and_all(self) -> None:
        """The third six ends the turn even with capture bonus rolls still in hand."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST], "red": row_on(9)})
        roll(state, 6)
        move(state, 0)  # captures: +2
        roll(state, 6)
        move(state, 0)  # +1
        assert state.rolls_left == 2
        assert kinds(roll(state, 6)) == ["DieRolled", "RollPassed", "TurnEnded"]
        assert (state.turn, state.rolls_left) == (1, 1)

    def test_three_sixes_any_non_six_resets_the_count(self) -> None:
        """After 6, 6 and a non-6 (kept going by a capture), the next 6 is played normally."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST], "red": row_on(17)})
        for die in (6, 6, 2):
            roll(state, die)
            move(state, 0)
        assert (state.sixes, state.rolls_left) == (0, 1)
        assert kinds(roll(state, 6)) == ["DieRolled"]

    def test_three_sixes_off_third_six_is_played(self) -> None:
        """With three_sixes off a third 6 is played like any other."""
        state = at_position(rules(three_sixes=False), 2, {"yellow": [3, NEST, NEST, NEST]})
        for _ in range(2):
            roll(state, 6)
            move(state, 0)
        assert kinds(roll(state, 6)) == ["DieRolled"]
        assert kinds(move(state, 0)) == ["PieceMoved"]

    def test_six_count_does_not_carry_into_the_next_turn(self) -> None:
        """Sixes are counted within one turn: the count starts at zero for every turn."""
        state = at_position(STD, 2, {"yellow": [3, NEST, NEST, NEST]})
        roll(state, 6)
        move(state, 0)
        roll(state, 6)
        move(state, 0)
        roll(state, 1)
        move(state, 0)
        assert (state.turn, state.sixes) == (1, 0)

    def test_play_passes_clockwise_to_the_next_seat(self) -> None:
        """Play passes clockwise: seat 0, 1, 2, 3, then 0 again."""
        state = new_match(STD, 4)
        order = []
        for _ in range(5):
            order.append(state.turn)
            roll(state, 1)
        assert order == [0, 1, 2, 3, 0]

    def test_play_passes_to_the_next_seat_still_playing(self) -> None:
        """A finished seat (play_to_end) is skipped when the turn passes."""
        state = at_position(
            rules(play_to_end=True), 3, [[53, 56, 56, 56], N, [10, NEST, NEST, NEST]]
        )
        roll(state, 3)
        assert move(state, 0)[-1] == TurnEnded(seat=0, next_seat=1)
        roll(state, 1)
        roll(state, 1)
        assert kinds(move(state, 0)) == ["PieceMoved", "TurnEnded"]
        assert state.turn == 1

    def test_first_match_starts_with_seat_zero_by_default(self) -> None:
        """A match created without a first seat starts with seat 0."""
        assert CreateMatch(ruleset=STD, seats=seat_specs(3), seed_hash=SEED_HASH).first_seat == 0
        assert new_match(STD, 3).turn == 0

    def test_match_starts_with_its_first_seat(self) -> None:
        """The seat named first_seat at creation rolls first (rematches rotate it)."""
        assert new_match(STD, 4, first_seat=2).turn == 2


class TestEnter:
    """Moves, entering: leaving the nest."""

    def test_nest_piece_enters_to_progress_zero_on_an_entering_value(self) -> None:
        """With the default entering value 6 every nest piece may move to p = 0."""
        assert targets(STD, 2, [N, N], 0, 6) == {0: 0, 1: 0, 2: 0, 3: 0}

    @pytest.mark.parametrize("die", [1, 2, 3, 4, 5])
    def test_nest_piece_does_not_enter_on_other_values(self, die: int) -> None:
        """Only entering values leave the nest: 1-5 cannot by default."""
        assert targets(STD, 2, [N, N], 0, die) == {}
        assert "leaves the nest only on [6]" in str(
            explain_move(board_for(STD, 2), [N, N], 0, 0, die)
        )

    @pytest.mark.parametrize("die", [1, 2, 3, 4, 5, 6])
    def test_enter_on_every_value_lets_any_roll_enter(self, die: int) -> None:
        """スタート制限なし: with enter_on {1…6} any roll enters a nest piece."""
        assert targets(rules(enter_on=[1, 2, 3, 4, 5, 6]), 2, [N, N], 0, die) == dict.fromkeys(
            range(4), 0
        )

    def test_enter_on_is_exactly_the_configured_set(self) -> None:
        """A custom set {1, 6} enters on 1 and 6 only."""
        r = rules(enter_on=[1, 6])
        assert [die for die in range(1, 7) if targets(r, 2, [N, N], 0, die)] == [1, 6]

    @pytest.mark.parametrize("die", [1, 4, 6])
    def test_entering_uses_the_whole_roll(self, die: int) -> None:
        """An entering piece stops at p = 0 whatever the value; the roll is spent on it."""
        state = at_position(rules(enter_on=[1, 4, 6]), 2, {"yellow": [NEST, 20, NEST, NEST]})
        roll(state, die)
        events = move(state, 0)
        moved = event_as(PieceMoved, events[0])
        assert (moved.frm, moved.to) == (NEST, 0)
        assert state.pieces[0] == [0, 20, NEST, NEST]


class TestAdvance:
    """Moves, advancing: a piece on the course moves exactly the roll."""

    @pytest.mark.parametrize("frm", [0, 10, 47, 50, 51, 52])
    @pytest.mark.parametrize("die", [1, 2, 3, 4])
    def test_piece_on_the_course_moves_exactly_roll_steps(self, frm: int, die: int) -> None:
        """A piece with 0 ≤ p < L+4 goes from p to p + roll, on the track or home column."""
        assert targets(STD, 2, {"yellow": [frm, NEST, NEST, NEST]}, 0, die) == {0: frm + die}

    def test_piece_in_the_goal_cannot_move(self) -> None:
        """A piece at p = L+4 has arrived: no roll moves it."""
        pieces = {"yellow": [56, 56, 56, 10]}
        assert all(set(targets(STD, 2, pieces, 0, die)) <= {3} for die in range(1, 7))
        assert str(explain_move(board_for(STD, 2), [[56, 56, 56, 10], N], 0, 0, 1)) == (
            "the piece is already in the goal"
        )

    def test_advance_wraps_around_the_track(self) -> None:
        """Red (start 26) at p = 25 (square 51) moving 2 reaches p = 27, track square 1."""
        b = board_for(STD, 2)
        assert targets(STD, 2, {"red": [25, NEST, NEST, NEST]}, "red", 2) == {0: 27}
        assert (b.square(1, 25), b.square(1, 27)) == (51, 1)

    def test_advance_from_the_track_into_the_home_column(self) -> None:
        """A piece runs from the track into its home column and on to the goal by progress."""
        assert targets(STD, 2, {"yellow": [48, NEST, NEST, NEST]}, 0, 5) == {0: 53}
        assert targets(STD, 2, {"yellow": [50, NEST, NEST, NEST]}, 0, 6)[0] == 56


class TestExactFinish:
    """Moves, exact finish (ぴったりで上がる)."""

    def test_exact_finish_move_past_the_goal_is_illegal(self) -> None:
        """With exact_finish (default) a roll larger than the distance to the goal is illegal."""
        assert targets(STD, 2, {"yellow": [53, NEST, NEST, NEST]}, 0, 4) == {}
        assert str(explain_move(board_for(STD, 2), [[53, NEST, NEST, NEST], N], 0, 0, 4)) == (
            "the goal needs exactly 3"
        )

    def test_exact_finish_exact_roll_reaches_the_goal(self) -> None:
        """The exact distance reaches the goal."""
        assert targets(STD, 2, {"yellow": [53, NEST, NEST, NEST]}, 0, 3) == {0: 56}

    @pytest.mark.parametrize("die", [3, 4, 6])
    def test_without_exact_finish_an_overshooting_move_stops_on_the_goal(self, die: int) -> None:
        """With exact_finish off any roll at least the distance lands on the goal."""
        r = rules(exact_finish=False)
        assert targets(r, 2, {"yellow": [53, NEST, NEST, NEST]}, 0, die)[0] == 56

    def test_without_exact_finish_an_overshooting_piece_can_finish_the_player(self) -> None:
        """An overshooting last piece finishes the player and the match."""
        state = at_position(rules(exact_finish=False), 2, {"yellow": [54, 56, 56, 56]})
        roll(state, 5)
        assert kinds(move(state, 0)) == ["PieceMoved", "PlayerFinished", "MatchFinished"]


class TestCapture:
    """Moves, landing on an opponent."""

    def test_landing_on_an_opponent_on_an_unsafe_square_captures_it(self) -> None:
        """Landing on a lone opponent on a non-safe square sends it back to its nest."""
        state = at_position(
            STD, 2, {"yellow": [3, NEST, NEST, NEST], "red": [progress_on(5), 4, 4, 4]}
        )
        roll(state, 2)
        events = move(state, 0)
        assert events[0] == PieceMoved(
            seat=0, piece=0, frm=3, to=5, captures=((1, 0),), die=2, bonus=1
        )
        assert state.pieces == [[5, NEST, NEST, NEST], [NEST, 4, 4, 4]]

    @pytest.mark.parametrize("square", [8, 13, 21, 26, 34, 39, 47])
    def test_opponents_share_a_safe_square(self, square: int) -> None:
        """On a safe square (start or star) a landing piece captures nobody: they share it."""
        pieces = {"yellow": [square - 2, NEST, NEST, NEST], "red": row_on(square)}
        (only,) = moves_for(STD, 2, pieces, 0, 2).values()
        assert (only.to, only.captures) == (square, ())

    def test_capture_sends_every_opponent_piece_there_home(self) -> None:
        """Every opponent piece on the landing square goes home (a stack, without blocks)."""
        r = rules(blocks="none")
        pieces = {"yellow": [3, NEST, NEST, NEST], "red": [*row_on(5, 5)[:2], 7, NEST]}
        (only,) = moves_for(r, 2, pieces, 0, 2).values()
        assert only.captures == ((1, 0), (1, 1))

    def test_entering_onto_an_opponent_on_an_unsafe_start_captures_it(self) -> None:
        """Entering lands on the start square, and captures there when it is not safe."""
        r = rules(safe_squares="none")
        moves = moves_for(r, 2, {"red": row_on(0)}, 0, 6)
        assert moves[0].captures == ((1, 0),)

    def test_capturing_move_never_takes_own_pieces(self) -> None:
        """Landing on a square holding own and opponent pieces captures only the opponents."""
        r = rules(blocks="none", safe_squares="none")
        pieces = {"yellow": [3, 5, NEST, NEST], "red": row_on(5)}
        assert moves_for(r, 2, pieces, 0, 2)[0].captures == ((1, 0),)


class TestStacking:
    """Moves: own pieces may share any square."""

    @pytest.mark.parametrize("to", [5, 8, 30, 53])
    def test_own_pieces_may_share_any_square(self, to: int) -> None:
        """A piece may land on its own piece: track, safe square or home column."""
        pieces = {"yellow": [to - 2, to, NEST, NEST]}
        (landing,) = [m for m in moves_for(STD, 2, pieces, 0, 2).values() if m.piece == 0]
        assert (landing.to, landing.captures) == (to, ())

    def test_own_pieces_may_share_the_start_square_when_entering(self) -> None:
        """A piece enters onto its own piece already on the start square."""
        assert targets(STD, 2, {"yellow": [0, 0, NEST, NEST]}, 0, 6)[2] == 0

    def test_own_pieces_pass_their_own_stack(self) -> None:
        """An own pair is no obstacle for its own colour (blocks are for others)."""
        assert targets(STD, 2, {"yellow": [3, 5, 5, NEST]}, 0, 4)[0] == 7


class TestEnd:
    """The end of a match and placements.

    What a ranked draw is worth (0.5 in the rating, docs/design.md#the-ranking-service) belongs to
    the ranking service; the engine's part is reporting the draw as a shared place, pinned here.
    """

    def test_player_with_all_four_pieces_in_the_goal_has_finished(self) -> None:
        """The move that brings the fourth piece to the goal finishes the player."""
        state = at_position(STD, 2, {"yellow": [53, 56, 56, 56], "red": [10, 5, NEST, NEST]})
        roll(state, 3)
        events = move(state, 0)
        assert PlayerFinished(seat=0, place=1) in events

    def test_three_pieces_in_the_goal_is_not_finished(self) -> None:
        """A player with a piece still out has not finished."""
        state = at_position(STD, 2, {"yellow": [50, 53, 56, 56]})
        roll(state, 3)
        assert kinds(move(state, 1)) == ["PieceMoved", "TurnEnded"]

    @pytest.mark.parametrize("players", [2, 3, 4])
    def test_by_default_the_match_ends_when_the_first_player_finishes(self, players: int) -> None:
        """Default: the first finisher ends the match as 1st; nobody acts afterwards."""
        state = at_position(STD, players, [[53, 56, 56, 56]] + [[1, 2, 3, NEST]] * (players - 1))
        roll(state, 3)
        events = move(state, 0)
        assert kinds(events) == ["PieceMoved", "PlayerFinished", "MatchFinished"]
        assert event_as(MatchFinished, events[-1]).placements[0] == 1
        assert state.status == "finished"
        assert rejected(state, Roll(seat=state.turn, die=1)).code == "match_finished"

    def test_finisher_with_bonus_rolls_left_still_ends_the_match(self) -> None:
        """Finishing with a 6 (a bonus roll in hand) ends the match all the same."""
        state = at_position(STD, 2, {"yellow": [50, 56, 56, 56]})
        roll(state, 6)
        assert kinds(move(state, 0))[-1] == "MatchFinished"

    def test_unfinished_players_ordered_by_pieces_in_goal_first(self) -> None:
        """More pieces in the goal ranks higher, whatever the other two criteria say."""
        b = board_for(STD, 4)
        pieces = [[56] * 4, [56, NEST, NEST, NEST], [40, 40, 40, NEST], N]
        assert placements(b, pieces, [0]) == (1, 2, 3, 4)

    def test_unfinished_players_then_ordered_by_pieces_out_of_the_nest(self) -> None:
        """Equal in the goal, more pieces out of the nest ranks higher, even with less progress."""
        b = board_for(STD, 4)
        pieces = [[56] * 4, [50, NEST, NEST, NEST], [1, 1, NEST, NEST], N]
        assert placements(b, pieces, [0]) == (1, 3, 2, 4)

    def test_unfinished_players_then_ordered_by_total_progress_out_of_the_nest(self) -> None:
        """Equal in goal and out, more total progress of pieces out of the nest ranks higher."""
        b = board_for(STD, 4)
        pieces = [[56] * 4, [10, 15, NEST, NEST], [10, 20, NEST, NEST], [30, NEST, NEST, NEST]]
        assert placements(b, pieces, [0]) == (1, 3, 2, 4)
        assert standing_key(b, pieces[2]) == (0, 2, 30)

    def test_players_equal_on_all_three_share_the_place(self) -> None:
        """Equal (goal, out, progress) means a shared place; the next place is skipped."""
        b = board_for(STD, 4)
        pieces = [[56] * 4, [10, 20, NEST, NEST], [15, 15, NEST, NEST], [1, NEST, NEST, NEST]]
        assert placements(b, pieces, [0]) == (1, 2, 2, 4)

    def test_shared_place_reaches_the_match_result(self) -> None:
        """MatchFinished carries the shared places (the draw the rating service scores 0.5)."""
        state = at_position(STD, 4, [[53, 56, 56, 56], N, N, [5, NEST, NEST, NEST]])
        roll(state, 3)
        assert move(state, 0)[-1] == MatchFinished(placements=(1, 3, 3, 2))

    def test_play_to_end_finishers_take_places_in_finishing_order(self) -> None:
        """全員の順位まで: play goes on after a finisher; the next finisher is 2nd."""
        state = at_position(rules(play_to_end=True), 3, [[53, 56, 56, 56], N, [55, 56, 56, 56]])
        roll(state, 3)
        assert kinds(move(state, 0)) == ["PieceMoved", "PlayerFinished", "TurnEnded"]
        assert state.status == "playing"
        roll(state, 1)  # seat 1: passed
        roll(state, 1)
        events = move(state, 0)
        assert events[1] == PlayerFinished(seat=2, place=2)
        assert events[-1] == MatchFinished(placements=(1, 3, 2))

    def test_play_to_end_match_ends_when_one_player_is_left_who_is_placed_last(self) -> None:
        """The last player left is placed last, even with the best standing key."""
        state = at_position(
            rules(play_to_end=True),
            3,
            [[56, 56, 56, 55], [55, 55, 55, 55], [56, 56, 56, 53]],
            turn=2,
        )
        roll(state, 3)
        assert kinds(move(state, 3)) == ["PieceMoved", "PlayerFinished", "TurnEnded"]
        roll(state, 1)
        assert move(state, 3)[-1] == MatchFinished(placements=(2, 3, 1))

    def test_play_to_end_finisher_turn_ends_at_once_despite_bonus_rolls(self) -> None:
        """A player who finishes on a 6 under play_to_end hands the turn on immediately."""
        state = at_position(rules(play_to_end=True), 3, [[50, 56, 56, 56], N, N])
        roll(state, 6)
        assert move(state, 0)[-1] == TurnEnded(seat=0, next_seat=1)

    def test_play_to_end_four_players_ranks_three_finishers_then_the_last(self) -> None:
        """With 4 players the match goes on through three finishers in order."""
        state = at_position(
            rules(play_to_end=True), 4, [[55, 56, 56, 56]] * 3 + [[10, NEST, NEST, NEST]]
        )
        for seat in (0, 1):
            roll(state, 1)
            assert kinds(move(state, 0))[-1] == "TurnEnded"
            assert state.finished[-1] == seat
        roll(state, 1)
        assert move(state, 0)[-1] == MatchFinished(placements=(1, 2, 3, 4))
