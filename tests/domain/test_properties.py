"""Property tests: whole random CPU matches under random rulesets, re-folded event by event.

Each test draws a match (`conftest.match_setups`: any ruleset, 2-4 players, random seeds and
first seat, all seats CPU `easy`), plays it with `domain.selfplay.play_match`, then walks its
events, checking one family of invariants against the position *before* each event. The
checks use docs/rules.md's geometry from `conftest.ref_*`, not the engine's Board.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.board import Board, board_for
from domain.decider import MatchState, apply, fold
from domain.dice import die_for_roll
from domain.events import (
    DieRolled,
    MatchFinished,
    PieceMoved,
    PlayerFinished,
    RollPassed,
    TurnEnded,
)
from domain.moves import explain_move, legal_moves, why_not
from domain.rules import Ruleset, parse_ruleset, ruleset_to_dict
from tests.conftest import (
    NEST,
    MatchSetup,
    event_as,
    match_setups,
    ref_goal,
    ref_length,
    ref_moves,
    ref_safe,
    ref_square,
    ref_tries_again,
    rulesets,
    snapshot,
)

MATCHES = settings()  # the active profile (conftest): 100 examples, or 3,000 if thorough
# Positions per example of the walker test: `HYPOTHESIS_PROFILE=thorough
# LUDO_WALKER_POSITIONS=400` checks 1.2 million positions per option value.
WALKER_POSITIONS = int(os.environ.get("LUDO_WALKER_POSITIONS", "8"))
# Every value of each option that move generation reads, the other options drawn at random.
WALKER_OPTIONS = [
    *(("board", v) for v in ("cross", "by_players")),
    *(("enter_on", v) for v in ([6], [1, 6], [1, 2, 3, 4, 5, 6], [2, 5])),
    *(("safe_squares", v) for v in ("start_and_star", "start", "none")),
    *(("blocks", v) for v in ("double", "none", "no_overtaking")),
    *(("exact_finish", v) for v in (True, False)),
]


def walk(events: list[Any]) -> Iterator[tuple[MatchState, Any]]:
    """Yield (state before the event, event) for each event; the state is reused, so a
    consumer must read it before resuming the walk."""
    state = MatchState()
    for event in events:
        yield state, event
        apply(state, event)


def forced(**options: Any) -> st.SearchStrategy[MatchSetup]:
    """Matches whose ruleset has `options` fixed and the rest random."""

    def fix(ruleset: Ruleset) -> Ruleset:
        return parse_ruleset({**ruleset_to_dict(ruleset), **options})

    return match_setups(rulesets().map(fix))


def squares_of(board: str, players: int, pieces: list[list[int]]) -> dict[int, list[int]]:
    """Track square -> seats of the pieces standing on it."""
    out: dict[int, list[int]] = {}
    for seat, row in enumerate(pieces):
        for p in row:
            sq = ref_square(board, players, seat, p)
            if sq is not None:
                out.setdefault(sq, []).append(seat)
    return out


def standing(goal: int, row: list[int]) -> tuple[int, int, int]:
    out = [p for p in row if p != NEST]
    return (sum(p == goal for p in out), len(out), sum(out))


def check_turn_flow(setup: MatchSetup) -> None:
    """Walk a match: dice n = 0, 1, … from the seed; the seat to act acts; bonuses, passes
    (and whether a pass tries again, by `ref_tries_again`), the next seat as ruled."""
    r, n = setup.ruleset, setup.players
    record = setup.play()
    goal = ref_goal(r.board, n)
    client_seed = "|".join(setup.client_seeds or ("",) * n)
    rolls = tries = 0
    for state, event in walk(record.events):
        kind = type(event)
        if kind in (DieRolled, PieceMoved, RollPassed, TurnEnded):
            assert event.seat == state.turn
        if kind is DieRolled:
            assert event.n == rolls == state.rolls_made
            assert event.value == die_for_roll(setup.server_seed, client_seed, rolls)
            rolls += 1
        elif kind is PieceMoved:
            expected = 0
            if event.die is not None:
                expected = (
                    (event.die == 6)
                    + (r.capture_bonus and bool(event.captures))
                    + (r.goal_bonus and event.to == goal)
                )
            assert event.bonus == expected
        elif kind is RollPassed:
            if event.reason == "three_sixes":
                assert r.three_sixes and state.die == 6 and state.sixes == 3
            else:
                assert state.die is not None
                assert ref_moves(r, n, state.pieces, event.seat, state.die) == []
                row = state.pieces[event.seat]
                assert event.retry == ref_tries_again(r, goal, row, state.die, tries)
                tries += event.retry
        elif kind is TurnEnded:
            tries = 0
            expected_next = next(
                (state.turn + k) % n
                for k in range(1, n + 1)
                if (state.turn + k) % n not in state.finished
            )
            assert event.next_seat == expected_next
    assert rolls == record.state.rolls_made


class TestMatchInvariants:
    """Invariants of every match under every ruleset."""

    @MATCHES
    @given(match_setups())
    def test_every_match_ends_and_fold_equals_the_live_state(self, setup: MatchSetup) -> None:
        """A match ends with MatchFinished, and folding its events reproduces the live state."""
        record = setup.play()
        assert record.state.status == "finished"
        assert type(record.events[-1]) is MatchFinished
        assert sum(type(e) is MatchFinished for e in record.events) == 1
        assert snapshot(fold(record.events)) == snapshot(record.state)

    @MATCHES
    @given(match_setups())
    def test_four_pieces_per_colour_always_and_colours_never_share_unsafe_squares(
        self, setup: MatchSetup
    ) -> None:
        """After every event: four pieces per seat in -1…L+4, no two colours on an unsafe square."""
        board, n = setup.ruleset.board, setup.players
        goal = ref_goal(board, n)
        safe = ref_safe(board, setup.ruleset.safe_squares, n)
        state = MatchState()
        for event in setup.play().events:
            apply(state, event)
            if state.status == "created":
                continue
            assert len(state.pieces) == n
            assert all(
                len(row) == 4 and all(NEST <= p <= goal for p in row) for row in state.pieces
            )
            for sq, seats in squares_of(board, n, state.pieces).items():
                assert sq in safe or len(set(seats)) == 1, (sq, seats, event)

    @MATCHES
    @given(match_setups())
    def test_progress_only_drops_by_capture_to_the_nest(self, setup: MatchSetup) -> None:
        """Pieces only advance or enter; only captured pieces (exactly the right ones) go to -1."""
        r, n = setup.ruleset, setup.players
        goal = ref_goal(r.board, n)
        safe = ref_safe(r.board, r.safe_squares, n)
        for state, event in walk(setup.play().events):
            if type(event) is not PieceMoved:
                continue
            before = [row[:] for row in state.pieces]
            assert before[event.seat][event.piece] == event.frm
            if event.frm == NEST:
                assert event.to == 0
                assert event.die is None or event.die in r.enter_on
            else:
                assert event.frm < event.to <= goal and event.die is not None
                assert event.to == event.frm + event.die or (
                    not r.exact_finish and event.to == goal < event.frm + event.die
                )
            landing = ref_square(r.board, n, event.seat, event.to)
            victims = sorted(
                (s, i)
                for s, row in enumerate(before)
                for i, p in enumerate(row)
                if s != event.seat
                and landing is not None
                and landing not in safe
                and ref_square(r.board, n, s, p) == landing
            )
            assert list(event.captures) == victims
            after = fold([event], state.copy()).pieces
            changed = {(s, i) for s in range(n) for i in range(4) if after[s][i] != before[s][i]}
            assert changed == {(event.seat, event.piece), *victims}
            assert all(after[s][i] == NEST for s, i in victims)

    @MATCHES
    @given(forced(blocks="double"))
    def test_under_double_no_opponent_passes_or_lands_on_a_block(self, setup: MatchSetup) -> None:
        """double: no move passes, lands or enters on another colour's pair (or more)."""
        n, board = setup.players, setup.ruleset.board
        for state, event in walk(setup.play().events):
            if type(event) is not PieceMoved:
                continue
            progresses = [0] if event.frm == NEST else range(event.frm + 1, event.to + 1)
            crossed = {ref_square(board, n, event.seat, p) for p in progresses} - {None}
            for s, row in enumerate(state.pieces):
                if s == event.seat:
                    continue
                squares = [ref_square(board, n, s, p) for p in row]
                blocks = {sq for sq in squares if sq is not None and squares.count(sq) >= 2}
                assert not blocks & crossed, (event, state.pieces)

    @MATCHES
    @given(forced(blocks="no_overtaking"))
    def test_under_no_overtaking_nobody_is_overtaken(self, setup: MatchSetup) -> None:
        """no_overtaking: no move passes a piece on the track or an own piece in the home column."""
        n, board = setup.players, setup.ruleset.board
        length, goal = ref_length(board, n), ref_goal(board, n)
        for state, event in walk(setup.play().events):
            if type(event) is not PieceMoved:
                continue
            occupied = set(squares_of(board, n, state.pieces))
            own_home = {
                p
                for i, p in enumerate(state.pieces[event.seat])
                if i != event.piece and length - 1 <= p < goal
            }
            for p in [] if event.frm == NEST else range(event.frm + 1, event.to):
                sq = ref_square(board, n, event.seat, p)
                assert (sq not in occupied) if sq is not None else (p not in own_home), (
                    event,
                    state.pieces,
                )

    @MATCHES
    @given(match_setups())
    def test_turn_flow_dice_and_bonuses_follow_the_rules(self, setup: MatchSetup) -> None:
        """Dice n = 0, 1, … from the seed; seat to act acts; bonuses, passes (and whether a
        pass tries again, per revision), next seat as ruled."""
        check_turn_flow(setup)

    @MATCHES
    @given(forced(empty_course="three_tries", blocks="double", enter_on=[6]))
    def test_three_tries_passes_try_again_as_each_revision_reads_the_rules(
        self, setup: MatchSetup
    ) -> None:
        """Under three_tries, with blocks that can stand on a start square, every passed roll
        tries again exactly as docs/rules.md#moves reads under the match's revision."""
        check_turn_flow(setup)

    @MATCHES
    @given(match_setups())
    def test_placements_form_a_valid_ranking(self, setup: MatchSetup) -> None:
        """Finishers in order, then competition ranking on (goal, out, progress), ties iff equal."""
        r, n = setup.ruleset, setup.players
        record = setup.play()
        goal = ref_goal(r.board, n)
        finished = [e.seat for e in record.events if type(e) is PlayerFinished]
        assert [e.place for e in record.events if type(e) is PlayerFinished] == list(
            range(1, len(finished) + 1)
        )
        assert len(finished) == (n - 1 if r.play_to_end else 1)
        places = event_as(MatchFinished, record.events[-1]).placements
        assert len(places) == n
        pieces = record.state.pieces
        for place, seat in enumerate(finished, start=1):
            assert places[seat] == place
            assert pieces[seat] == [goal] * 4
        rest = [s for s in range(n) if s not in finished]
        for s in rest:
            better = sum(standing(goal, pieces[t]) > standing(goal, pieces[s]) for t in rest)
            assert places[s] == len(finished) + 1 + better
        assert sorted(places)[0] == 1


class TestMoveGeneration:
    """legal_moves agrees with the literal reading of docs/rules.md#moves (`conftest.ref_moves`)."""

    @MATCHES
    @given(match_setups())
    def test_legal_moves_equal_the_reference_at_every_roll_of_a_match(
        self, setup: MatchSetup
    ) -> None:
        """At every roll of a match the engine's moves equal the reference's; one is played."""
        r, n = setup.ruleset, setup.players
        board = board_for(r, n)
        die = None
        for state, event in walk(setup.play().events):
            if type(event) is DieRolled:
                die = event.value
                got = [
                    (m.piece, m.frm, m.to, m.captures)
                    for m in legal_moves(board, state.pieces, event.seat, die)
                ]
                assert got == ref_moves(r, n, state.pieces, event.seat, die), (state.pieces, die)
            elif type(event) is PieceMoved and event.die is not None:
                assert (event.piece, event.frm, event.to, event.captures) in ref_moves(
                    r, n, state.pieces, event.seat, event.die
                )

    @MATCHES
    @given(st.data())
    def test_legal_moves_equal_the_reference_in_random_positions(self, data: st.DataObject) -> None:
        """In arbitrary positions and for any die the engine's moves equal the reference's."""
        r = data.draw(rulesets())
        n = data.draw(st.integers(2, 4))
        goal = ref_goal(r.board, n)
        near = st.sampled_from([NEST, 0, 1, 5, 8, 13, 21, goal - 6, goal - 5, goal - 1, goal])
        progress = st.one_of(st.integers(NEST, goal), near)
        pieces = [data.draw(st.lists(progress, min_size=4, max_size=4)) for _ in range(n)]
        seat = data.draw(st.integers(0, n - 1))
        die = data.draw(st.integers(1, 6))
        got = [
            (m.piece, m.frm, m.to, m.captures)
            for m in legal_moves(board_for(r, n), pieces, seat, die)
        ]
        assert got == ref_moves(r, n, pieces, seat, die)


def random_position(board: Board, rng: random.Random) -> list[list[int]]:
    """Pieces anywhere, often on squares that matter (start, home column, goal) and often
    on a square another piece already holds, so stacks, blocks and captures are common."""
    goal, last = board.goal, board.last_track
    near = [NEST, 0, 1, 5, 8, 13, goal - 6, goal - 5, goal - 1, goal]
    taken: list[int] = []
    pieces = []
    for seat in range(board.players):
        row = []
        for _ in range(4):
            k = rng.random()
            p = rng.randint(NEST, goal)
            if k < 0.35 and taken:
                p = board.progress_at[seat][rng.choice(taken)]
                if p < 0:  # the one track square this seat never stands on
                    p = rng.randint(NEST, goal)
            elif k < 0.65:
                p = rng.choice(near)
            if 0 <= p <= last:
                taken.append(board.track[seat][p])
            row.append(p)
        pieces.append(row)
    return pieces


class TestWalkersAgree:
    """`why_not` (the rule-by-rule reading that words rejections) and `legal_moves` (the
    fast walk that decides) agree on every piece of every position."""

    @pytest.mark.parametrize(("option", "value"), WALKER_OPTIONS)
    @MATCHES
    @given(rulesets(), st.integers(2, 4), st.integers(0, 2**64 - 1))
    def test_why_not_finds_a_rule_exactly_for_the_pieces_legal_moves_leaves_out(
        self, option: str, value: Any, ruleset: Ruleset, players: int, seed: int
    ) -> None:
        """For every seat, die and piece: a reason iff no legal move; explain_move agrees."""
        r = parse_ruleset({**ruleset_to_dict(ruleset), option: value})
        board = board_for(r, players)
        rng = random.Random(seed)
        for _ in range(WALKER_POSITIONS):
            pieces = random_position(board, rng)
            seat = rng.randrange(players)
            for die in range(1, 7):
                moves = {m.piece: m for m in legal_moves(board, pieces, seat, die)}
                for piece in range(4):
                    reason = why_not(board, pieces, seat, piece, die)
                    where = (pieces, seat, die, piece, reason)
                    assert (reason is None) == (piece in moves), where
                    assert explain_move(board, pieces, seat, piece, die) == moves.get(piece, reason)
