"""`hard`'s learned value (domain/cpu/learned.py): its inputs, its range, where it applies,
and the weights it ships with."""

from __future__ import annotations

import hashlib
import json
import math
from importlib.resources import files

from hypothesis import given
from hypothesis import strategies as st

from domain.board import NEST, board_for
from domain.cpu.evaluation import evaluate
from domain.cpu.hard import score_moves
from domain.cpu.learned import INPUTS, SHAPES, WEIGHTS, applies, encode, win_chance
from domain.decider import current_legal_moves
from tests.conftest import rules, to_move

STANDARD = board_for(rules(), 4)
progress = st.sampled_from([NEST, *range(57)])
positions = st.lists(st.lists(progress, min_size=4, max_size=4), min_size=4, max_size=4)


class TestInputs:
    @given(positions, st.integers(0, 3))
    def test_sixteen_distinct_inputs_in_range(self, pieces: list[list[int]], me: int) -> None:
        """One input per piece, never two alike: the k-th piece on a place has its own."""
        on = encode(pieces, me)
        assert len(on) == 16 == len(set(on))
        assert all(0 <= i < INPUTS for i in on)
        assert all(i < 232 for i in on[:4])  # the seat's own pieces come first

    def test_opponents_are_placed_on_the_seats_own_track_squares(self) -> None:
        """An opponent's piece is encoded by its square counted from our start: the network
        sees the same place for "an opponent on square q" whichever opponent it is."""
        me = 1
        for r in (1, 2, 3):
            other = (me + r) % 4
            for p in range(51):
                square = (STANDARD.track[other][p] - STANDARD.track[me][0]) % 52
                pieces = [[NEST] * 4 for _ in range(4)]
                pieces[other] = [p, NEST, NEST, NEST]
                base = 232 + (r - 1) * 236
                assert base + square * 4 in encode(pieces, me)


class TestValue:
    @given(positions, st.integers(0, 3), st.floats(-2000, 2000))
    def test_a_probability(self, pieces: list[list[int]], me: int, hand: float) -> None:
        """The value is a chance: strictly between 0 and 1."""
        assert 0.0 < win_chance(pieces, me, hand) < 1.0

    def test_nearly_home_is_worth_more_than_not_started(self) -> None:
        """Three pieces home and the last in the home column beats four in the nest."""
        ahead = [[56, 56, 56, 54], [NEST] * 4, [NEST] * 4, [NEST] * 4]
        behind = [[NEST] * 4, [56, 56, 56, 54], [NEST] * 4, [NEST] * 4]
        foes = [1, 2, 3]
        assert win_chance(ahead, 0, evaluate(STANDARD, ahead, 0, foes)) > 0.9
        assert win_chance(behind, 0, evaluate(STANDARD, behind, 0, foes)) < 0.1


class TestWhereItApplies:
    def test_only_the_standard_rules_with_four_players(self) -> None:
        """The network knows the game it was trained on, nothing else."""
        assert applies(STANDARD)
        assert not applies(board_for(rules(), 3))
        assert not applies(board_for(rules("bga"), 4))
        assert not applies(board_for(rules(blocks="none"), 4))

    def test_elsewhere_hard_scores_with_the_hand_made_evaluation(self) -> None:
        """Under `bga` a move's score is the hand-made evaluation, in squares (not a chance)."""
        r = rules("bga")
        pieces = [[5, 20, NEST, NEST], [NEST] * 4, [30, NEST, NEST, NEST], [NEST] * 4]
        state = to_move(r, 4, pieces, 3)
        scores = score_moves(state, current_legal_moves(state))
        assert any(abs(s) > 1.0 for s in scores)  # squares, not a probability
        standard = to_move(rules(), 4, pieces, 6)
        chances = score_moves(standard, current_legal_moves(standard))
        assert all(0.0 < c < 1.0 for c in chances)


class TestShippedWeights:
    """The package data beside learned.py, read straight from the package's files."""

    def header(self) -> dict[str, object]:
        header: dict[str, object] = json.loads(
            (files("domain.cpu") / f"{WEIGHTS}.json").read_text("utf-8")
        )
        return header

    def test_the_binary_matches_the_sha256_in_its_header(self) -> None:
        """The header's sha256 is the hash of the binary that ships beside it."""
        data = (files("domain.cpu") / f"{WEIGHTS}.bin").read_bytes()
        assert hashlib.sha256(data).hexdigest() == self.header()["sha256"]

    def test_the_arrays_are_the_ones_the_network_needs(self) -> None:
        """The header lists every array learned.py uses with its shape, as float32, and the
        binary holds exactly that many values."""
        header = self.header()
        assert header["dtype"] == "<f4"
        arrays = header["arrays"]
        assert isinstance(arrays, list)
        shapes = {a["name"]: tuple(a["shape"]) for a in arrays}
        assert shapes == SHAPES
        data = (files("domain.cpu") / f"{WEIGHTS}.bin").read_bytes()
        assert len(data) == 4 * sum(math.prod(shape) for shape in shapes.values())

    def test_the_header_says_where_the_weights_come_from(self) -> None:
        """The parameters file and the training iteration that made the shipped weights."""
        header = self.header()
        assert header["source"] == f"params_{header['iteration']}.npz"
