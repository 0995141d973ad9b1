"""docs/rules.md#the-board: the board and the progress coordinate, on both boards for 2, 3
and 4 players.

Geometry is checked against `conftest.ref_*`, recomputed from docs/rules.md's formulas.
"""

from __future__ import annotations

import pytest

from domain.board import COLOURS, PIECES, SYMBOLS, board_for
from tests.conftest import (
    BOARDS,
    NEST,
    PLAYER_COUNTS,
    moves_for,
    new_match,
    ref_colours,
    ref_goal,
    ref_length,
    ref_square,
    ref_starts,
    rules,
    targets,
)

BOARD_PLAYERS = [(b, n) for b in BOARDS for n in PLAYER_COUNTS]


class TestBoard:
    """The board: colours, seats, starts, track length."""

    def test_colours_in_clockwise_seat_order_are_yellow_blue_red_green(self) -> None:
        """The four colours, in clockwise seat order, are yellow, blue, red, green."""
        assert COLOURS == ("yellow", "blue", "red", "green")

    def test_every_piece_carries_its_owner_symbol(self) -> None:
        """Each colour has its own symbol (○ □ △ ✚) so colour-blind players can tell them apart."""
        assert SYMBOLS == {"yellow": "○", "blue": "□", "red": "△", "green": "✚"}

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_each_colour_has_a_nest_of_four_pieces(self, board: str, players: int) -> None:
        """A new match gives every seat four pieces, all in the nest."""
        state = new_match(rules(board=board), players)
        assert PIECES == 4
        assert state.pieces == [[NEST] * 4 for _ in range(players)]

    @pytest.mark.parametrize("players", PLAYER_COUNTS)
    def test_cross_board_is_the_default_with_a_52_square_track(self, players: int) -> None:
        """The default board is `cross`, whose track has L = 52 squares at any player count."""
        assert rules().board == "cross"
        assert board_for(rules(), players).length == 52

    @pytest.mark.parametrize("players", PLAYER_COUNTS)
    def test_cross_board_colour_c_starts_at_track_index_13c(self, players: int) -> None:
        """On `cross`, colour index c (yellow 0 … green 3) starts at track index 13*c."""
        b = board_for(rules(), players)
        assert b.starts == tuple(13 * COLOURS.index(c) for c in b.colours)

    def test_cross_board_two_players_sit_opposite_yellow_and_red(self) -> None:
        """Decision: two players on `cross` are yellow and red, sitting opposite."""
        b = board_for(rules(), 2)
        assert b.colours == ("yellow", "red")
        assert b.starts == (0, 26)

    def test_cross_board_three_players_take_yellow_blue_red(self) -> None:
        """Decision: three players on `cross` are yellow, blue and red."""
        b = board_for(rules(), 3)
        assert b.colours == ("yellow", "blue", "red")
        assert b.starts == (0, 13, 26)

    def test_cross_board_four_players_take_every_colour(self) -> None:
        """Four players on `cross` are yellow, blue, red, green at 0, 13, 26, 39."""
        b = board_for(rules(), 4)
        assert b.colours == COLOURS
        assert b.starts == (0, 13, 26, 39)

    @pytest.mark.parametrize("players", PLAYER_COUNTS)
    def test_by_players_board_track_is_13_squares_per_player(self, players: int) -> None:
        """On `by_players` the track has L = 13 × players squares (26, 39, 52)."""
        assert board_for(rules(board="by_players"), players).length == 13 * players

    @pytest.mark.parametrize("players", PLAYER_COUNTS)
    def test_by_players_board_seat_i_starts_at_13i(self, players: int) -> None:
        """On `by_players` seat i starts at track index 13*i, colours in seat order."""
        b = board_for(rules(board="by_players"), players)
        assert b.starts == tuple(13 * i for i in range(players))
        assert b.colours == COLOURS[:players]

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_board_geometry_matches_the_rules_formulas(self, board: str, players: int) -> None:
        """Colours, starts, track length and goal agree with docs/rules.md#the-board for every
        board."""
        b = board_for(rules(board=board), players)
        assert b.colours == ref_colours(board, players)
        assert b.starts == ref_starts(board, players)
        assert b.length == ref_length(board, players)
        assert b.goal == ref_goal(board, players)
        assert b.players == players

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_seat_of_finds_each_colour_and_rejects_absent_ones(
        self, board: str, players: int
    ) -> None:
        """`seat_of` maps a playing colour to its seat and refuses a colour not on the board."""
        b = board_for(rules(board=board), players)
        for seat, colour in enumerate(b.colours):
            assert b.seat_of(colour) == seat
        for colour in set(COLOURS) - set(b.colours):
            with pytest.raises(ValueError, match="not playing"):
                b.seat_of(colour)


class TestProgress:
    """Progress: the one coordinate, from -1 (nest) to L+4 (goal)."""

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_nest_is_progress_minus_one_and_off_the_track(self, board: str, players: int) -> None:
        """p = -1 is the nest: it has no track square."""
        b = board_for(rules(board=board), players)
        assert all(b.square(seat, NEST) is None for seat in range(players))

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_track_index_is_start_plus_progress_mod_length(self, board: str, players: int) -> None:
        """For 0 ≤ p ≤ L-2 the track index is (start + p) mod L, p = 0 being the start square."""
        b = board_for(rules(board=board), players)
        for seat in range(players):
            assert b.square(seat, 0) == ref_starts(board, players)[seat]
            for p in range(ref_length(board, players) - 1):
                assert b.square(seat, p) == ref_square(board, players, seat, p)

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_home_column_is_progress_l_minus_1_to_l_plus_3(self, board: str, players: int) -> None:
        """p = L-1 … L+3 are the five home-column squares: private, off the shared track."""
        b = board_for(rules(board=board), players)
        length = ref_length(board, players)
        assert (b.home, b.last_track) == (length - 1, length - 2)
        for seat in range(players):
            assert [b.square(seat, p) for p in range(length - 1, length + 4)] == [None] * 5

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_goal_is_progress_l_plus_4(self, board: str, players: int) -> None:
        """The goal is p = L+4 (56 on a 52-square track) and is off the track."""
        b = board_for(rules(board=board), players)
        assert b.goal == ref_length(board, players) + 4
        assert board_for(rules(), players).goal == 56
        assert b.square(0, b.goal) is None

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_piece_never_stands_on_the_square_before_its_own_start(
        self, board: str, players: int
    ) -> None:
        """No progress maps to start-1, and from p = L-2 one step leads into the home column."""
        r = rules(board=board)
        b = board_for(r, players)
        length = ref_length(board, players)
        for seat in range(players):
            before_start = (ref_starts(board, players)[seat] - 1) % length
            assert before_start not in {b.square(seat, p) for p in range(length + 5)}
        pieces = [[length - 2, NEST, NEST, NEST]] + [[NEST] * 4] * (players - 1)
        assert targets(r, players, pieces, 0, 1) == {0: length - 1}
        assert targets(r, players, [[length - 3, NEST, NEST, NEST], *pieces[1:]], 0, 2) == {
            0: length - 1
        }

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_home_columns_are_private_no_capture_there(self, board: str, players: int) -> None:
        """Two colours at the same home-column progress are on different squares: no capture."""
        r = rules(board=board, safe_squares="none")
        length = ref_length(board, players)
        pieces = [[length - 2, NEST, NEST, NEST], [length + 1, NEST, NEST, NEST]]
        pieces += [[NEST] * 4] * (players - 2)
        (only,) = moves_for(r, players, pieces, 0, 3).values()
        assert (only.to, only.captures) == (length + 1, ())

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_home_columns_are_private_no_block_there(self, board: str, players: int) -> None:
        """An opponent pair in its own home column never blocks a piece in another column."""
        r = rules(board=board, blocks="double")
        length = ref_length(board, players)
        pieces = [[length - 2, NEST, NEST, NEST], [length, length, NEST, NEST]]
        pieces += [[NEST] * 4] * (players - 2)
        assert targets(r, players, pieces, 0, 4) == {0: length + 2}

    @pytest.mark.parametrize(("board", "players"), BOARD_PLAYERS)
    def test_goal_is_shared_and_private_pieces_there_never_capture(
        self, board: str, players: int
    ) -> None:
        """Any number of pieces of any colour may reach the goal; nobody is captured there."""
        r = rules(board=board)
        goal = ref_goal(board, players)
        pieces = [[goal - 3, goal, NEST, NEST]] + [[goal, goal, NEST, NEST]] * (players - 1)
        (only,) = moves_for(r, players, pieces, 0, 3).values()
        assert (only.to, only.captures) == (goal, ())
