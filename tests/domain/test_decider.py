"""The match decider: creation and start, every rejection, purity of evolve, fold, timeouts,
stand-ins, reclaiming a seat, who controls a seat and what a deadline sends, and revealing
the seed (docs/design.md#streams-and-deciders, docs/design.md#fair-dice,
docs/design.md#timers-presence-and-cpu-stand-ins)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from domain.board import board_for
from domain.commands import (
    Actor,
    Concede,
    CreateMatch,
    LeaveSeat,
    MovePiece,
    Reclaim,
    Rejection,
    RevealSeed,
    Roll,
    StandIn,
    StartMatch,
    TimeOut,
)
from domain.cpu import choose_move
from domain.deadline import deadline_command
from domain.decider import (
    STAND_IN_AFTER_TIMEOUTS,
    STAND_IN_LEVEL,
    MatchState,
    current_legal_moves,
    decide,
    evolve,
    fold,
    initial_state,
    is_terminal,
    needs_die,
)
from domain.events import (
    CpuLevel,
    MatchConceded,
    MatchCreated,
    MatchFinished,
    MatchStarted,
    SeatReclaimed,
    SeatStoodIn,
    SeedRevealed,
    StandInReason,
    TurnTimedOut,
)
from domain.moves import CannotMove, legal_moves
from domain.rules import Ruleset, ruleset_to_dict
from domain.selfplay import play_match
from tests.conftest import (
    NEST,
    SEED_HASH,
    SERVER_SEED,
    at_position,
    event_as,
    kinds,
    move,
    new_match,
    play,
    rejected,
    roll,
    row_on,
    rules,
    seat_specs,
    setup_events,
    snapshot,
)

N = [NEST] * 4


def create(ruleset: Ruleset | None = None, players: int = 2, **kwargs: Any) -> CreateMatch:
    return CreateMatch(
        ruleset=ruleset or rules(), seats=seat_specs(players), seed_hash=SEED_HASH, **kwargs
    )


def created(players: int = 2) -> MatchState:
    state = initial_state()
    play(state, create(players=players))
    return state


def finished_match() -> MatchState:
    """A 2-player match just won by yellow."""
    state = at_position(rules(), 2, {"yellow": [53, 56, 56, 56]})
    roll(state, 3)
    move(state, 0)
    assert is_terminal(state)
    return state


def code(state: MatchState, command: Any) -> str:
    return rejected(state, command).code


class TestCreateAndStart:
    """CreateMatch pins the rules, seats and commitment; StartMatch fixes the client seed."""

    def test_create_pins_the_full_ruleset_seats_commitment_and_first_seat(self) -> None:
        """MatchCreated carries every option spelled out, the seats, seed_hash, first_seat."""
        r = rules("bga", blocks="double")
        events = decide(create(r, 3, first_seat=2), initial_state())
        assert events == [
            MatchCreated(
                ruleset=ruleset_to_dict(r), seats=seat_specs(3), seed_hash=SEED_HASH, first_seat=2
            )
        ]

    def test_start_joins_the_client_seeds_in_seat_order(self) -> None:
        """MatchStarted records the seats' seeds and their '|'-join; play begins at first_seat."""
        state = created(3)
        events = play(state, StartMatch(client_seeds=("a", "", "c c")))
        assert events == [MatchStarted(client_seeds=("a", "", "c c"), client_seed="a||c c")]
        assert (state.status, state.turn, state.phase, state.rolls_left) == (
            "playing",
            0,
            "roll",
            1,
        )

    def test_create_twice_is_rejected(self) -> None:
        """A match is created once: already_created."""
        assert code(created(), create()) == "already_created"

    @pytest.mark.parametrize("players", [0, 1, 5])
    def test_create_with_a_bad_seat_count_is_rejected(self, players: int) -> None:
        """2-4 seats: anything else is bad_ruleset."""
        assert code(initial_state(), create(players=players)) == "bad_ruleset"

    @pytest.mark.parametrize(
        "ruleset",
        [
            Ruleset(enter_on=frozenset({7})),
            Ruleset(enter_on=frozenset()),
            Ruleset(board="hex"),  # type: ignore[arg-type]
            Ruleset(blocks="triple"),  # type: ignore[arg-type]
            Ruleset(revision=3),
            Ruleset(revision=0),
        ],
    )
    def test_create_with_an_invalid_ruleset_value_is_rejected(self, ruleset: Ruleset) -> None:
        """A Ruleset built around parse_ruleset with values outside its options is bad_ruleset."""
        assert code(initial_state(), create(ruleset)) == "bad_ruleset"

    @pytest.mark.parametrize("first_seat", [-1, 2, 7])
    def test_create_with_a_first_seat_that_is_no_seat_is_rejected(self, first_seat: int) -> None:
        """first_seat must index a seat: bad_command."""
        assert code(initial_state(), create(first_seat=first_seat)) == "bad_command"

    @pytest.mark.parametrize(
        "seed_hash", ["", "00" * 31, SEED_HASH.upper(), "g" * 64, SEED_HASH + "0"]
    )
    def test_create_with_a_malformed_seed_hash_is_rejected(self, seed_hash: str) -> None:
        """seed_hash is 64 lowercase hex digits: bad_seed."""
        command = CreateMatch(ruleset=rules(), seats=seat_specs(2), seed_hash=seed_hash)
        assert code(initial_state(), command) == "bad_seed"

    def test_start_before_create_is_rejected(self) -> None:
        """not_created."""
        assert code(initial_state(), StartMatch(client_seeds=("", ""))) == "not_created"

    def test_start_twice_is_rejected(self) -> None:
        """already_started, also once finished."""
        assert code(new_match(), StartMatch(client_seeds=("", ""))) == "already_started"
        assert code(finished_match(), StartMatch(client_seeds=("", ""))) == "already_started"

    @pytest.mark.parametrize("seeds", [(), ("a",), ("a", "b", "c")])
    def test_start_needs_one_client_seed_per_seat(self, seeds: tuple[str, ...]) -> None:
        """bad_seed when the seed count differs from the seat count."""
        assert code(created(2), StartMatch(client_seeds=seeds)) == "bad_seed"

    @pytest.mark.parametrize("bad", ["x" * 65, "tab\there", "é", "line\n"])
    def test_start_with_an_invalid_client_seed_is_rejected(self, bad: str) -> None:
        """Client seeds are at most 64 printable ASCII characters: bad_seed."""
        assert code(created(2), StartMatch(client_seeds=("ok", bad))) == "bad_seed"


class TestRejections:
    """Every refusal of `decide`: a Rejection with a stable code, and no events."""

    @pytest.mark.parametrize(
        "command",
        [Roll(seat=0, die=3), MovePiece(seat=0, piece=0), TimeOut(seat=0), Reclaim(seat=0)],
    )
    def test_play_commands_before_start_are_rejected(self, command: Any) -> None:
        """not_started before MatchStarted, also before MatchCreated."""
        assert code(initial_state(), command) == "not_started"
        assert code(created(), command) == "not_started"

    @pytest.mark.parametrize(
        "command",
        [
            Roll(seat=0, die=3),
            Roll(seat=1, die=3),
            MovePiece(seat=0, piece=0),
            TimeOut(seat=1),
            StandIn(seat=1, reason="disconnected"),
            LeaveSeat(seat=1),
            Reclaim(seat=1),
        ],
    )
    def test_commands_on_a_finished_match_are_rejected(self, command: Any) -> None:
        """match_finished once MatchFinished is recorded."""
        assert code(finished_match(), command) == "match_finished"

    @pytest.mark.parametrize("seat", [-1, 2, 4])
    @pytest.mark.parametrize(
        "make",
        [
            lambda s: Roll(seat=s, die=3),
            lambda s: MovePiece(seat=s, piece=0),
            lambda s: TimeOut(seat=s),
            lambda s: StandIn(seat=s, reason="disconnected"),
            lambda s: LeaveSeat(seat=s),
            lambda s: Reclaim(seat=s),
        ],
    )
    def test_unknown_seat_is_rejected(self, make: Any, seat: int) -> None:
        """unknown_seat for a seat number outside the match's seats."""
        assert code(new_match(), make(seat)) == "unknown_seat"

    @pytest.mark.parametrize(
        "command", [Roll(seat=1, die=6), MovePiece(seat=1, piece=0), TimeOut(seat=1)]
    )
    def test_acting_out_of_turn_is_rejected(self, command: Any) -> None:
        """not_your_turn when another seat is to act."""
        assert code(new_match(), command) == "not_your_turn"

    def test_moving_out_of_turn_during_the_move_phase_is_rejected(self) -> None:
        """not_your_turn also while the seat to act must move."""
        state = new_match()
        roll(state, 6)
        assert code(state, MovePiece(seat=1, piece=0)) == "not_your_turn"

    def test_moving_before_rolling_is_rejected(self) -> None:
        """roll_first: a move needs a die."""
        assert code(
            at_position(rules(), 2, {"yellow": [3, *N[1:]]}), MovePiece(seat=0, piece=0)
        ) == ("roll_first")

    def test_rolling_before_moving_is_rejected(self) -> None:
        """move_first: a rolled die with legal moves must be played."""
        state = new_match()
        roll(state, 6)
        assert code(state, Roll(seat=0, die=3)) == "move_first"

    def test_illegal_move_is_rejected_with_its_reason(self) -> None:
        """illegal_move names the piece, the die and why, in words and as the rule's facts
        (here: a nest piece and a 3)."""
        state = at_position(rules(), 2, {"yellow": [3, *N[1:]]})
        roll(state, 3)
        rejection = rejected(state, MovePiece(seat=0, piece=1))
        assert rejection.code == "illegal_move"
        assert rejection.reason == "piece 1 cannot move 3: a piece leaves the nest only on [6]"
        assert rejection.why == CannotMove(rule="enter_on", values=(6,))

    def test_illegal_move_of_a_blocked_piece_names_the_pair(self) -> None:
        """A piece stopped by a pair: the reason's square, and the pair's square and seat."""
        state = at_position(rules(), 2, {"yellow": [3, 20, NEST, NEST], "red": row_on(6, 6)})
        roll(state, 4)  # piece 1 may move: the roll is not passed
        rejection = rejected(state, MovePiece(seat=0, piece=0))
        assert rejection.reason == "piece 0 cannot move 4: a block stands on square 6"
        assert rejection.why == CannotMove(rule="block", square=6, seat=1)

    @pytest.mark.parametrize("piece", [-1, 4, 10])
    def test_moving_a_piece_that_does_not_exist_is_rejected(self, piece: int) -> None:
        """Pieces are 0-3: illegal_move, with no rule to give as facts."""
        state = new_match()
        roll(state, 6)
        rejection = rejected(state, MovePiece(seat=0, piece=piece))
        assert rejection.code == "illegal_move" and rejection.why is None
        assert f"piece must be 0-3, got {piece}" in rejection.reason

    @pytest.mark.parametrize("die", [None, 0, 7, -6, True, False])
    def test_bad_die_is_rejected(self, die: Any) -> None:
        """bad_die: a roll needs an integer 1-6 (booleans are not dice)."""
        assert code(new_match(), Roll(seat=0, die=die)) == "bad_die"

    @pytest.mark.parametrize("die", [2.5, 6.0, "6"])
    def test_non_integer_die_is_rejected(self, die: Any) -> None:
        """bad_die for a die that is not an int."""
        assert code(new_match(), Roll(seat=0, die=die)) == "bad_die"

    def test_unknown_command_is_rejected(self) -> None:
        """bad_command for anything that is not a Command."""

        class Dance(msgspec.Struct):
            seat: int = 0

        assert code(new_match(), Dance()) == "bad_command"

    def test_stand_in_for_a_cpu_seat_is_rejected(self) -> None:
        """already_stood_in: a CPU seat needs no stand-in."""
        state = fold(
            [
                MatchCreated(
                    ruleset=ruleset_to_dict(rules()),
                    seats=seat_specs(2, cpu="easy"),
                    seed_hash=SEED_HASH,
                ),
                MatchStarted(client_seeds=("", ""), client_seed="|"),
            ]
        )
        assert code(state, StandIn(seat=1, reason="disconnected")) == "already_stood_in"

    def test_second_stand_in_is_rejected(self) -> None:
        """already_stood_in while a CPU already plays for the seat."""
        state = new_match()
        play(state, LeaveSeat(seat=1))
        assert code(state, StandIn(seat=1, reason="disconnected")) == "already_stood_in"
        assert code(state, LeaveSeat(seat=1)) == "already_stood_in"

    def test_reclaiming_a_seat_nobody_stands_in_for_is_rejected(self) -> None:
        """not_stood_in."""
        assert code(new_match(), Reclaim(seat=1)) == "not_stood_in"

    def test_reveal_before_the_end_is_rejected(self) -> None:
        """not_finished: the seed stays secret while the match runs (and before it)."""
        for state in (initial_state(), created(), new_match()):
            assert code(state, RevealSeed(server_seed=SERVER_SEED.hex())) == "not_finished"

    @pytest.mark.parametrize("seed", [bytes(32).hex(), "zz", "", SERVER_SEED.hex()[:-2]])
    def test_reveal_of_a_wrong_seed_is_rejected(self, seed: str) -> None:
        """bad_seed: the revealed seed must hash to the committed seed_hash."""
        assert code(finished_match(), RevealSeed(server_seed=seed)) == "bad_seed"

    def test_reveal_twice_is_rejected(self) -> None:
        """already_revealed."""
        state = finished_match()
        play(state, RevealSeed(server_seed=SERVER_SEED.hex()))
        assert code(state, RevealSeed(server_seed=SERVER_SEED.hex())) == "already_revealed"

    def test_rejection_is_returned_instead_of_events(self) -> None:
        """decide returns a Rejection (code + readable reason), never a list, when refusing."""
        result = decide(Roll(seat=1, die=3), new_match())
        assert isinstance(result, Rejection)
        assert result.reason == "it is seat 0's turn, not seat 1's"


class TestRevealAndQueries:
    """Accepted reveal, terminal state and the read-side helpers."""

    def test_reveal_after_the_end_publishes_the_seed(self) -> None:
        """SeedRevealed with the hex seed; the state keeps it."""
        state = finished_match()
        assert play(state, RevealSeed(server_seed=SERVER_SEED.hex())) == [
            SeedRevealed(server_seed=SERVER_SEED.hex())
        ]
        assert state.server_seed == SERVER_SEED.hex()

    def test_is_terminal_only_once_finished(self) -> None:
        """is_terminal is False until MatchFinished."""
        assert not any(is_terminal(s) for s in (initial_state(), created(), new_match()))
        assert is_terminal(finished_match())

    def test_current_legal_moves_are_the_moves_for_the_rolled_die(self) -> None:
        """Empty before rolling; after a roll, exactly legal_moves for that die."""
        state = at_position(rules(), 2, {"yellow": [3, 10, NEST, NEST]})
        assert current_legal_moves(state) == ()
        roll(state, 6)
        expected = tuple(legal_moves(board_for(rules(), 2), state.pieces, 0, 6))
        assert current_legal_moves(state) == expected
        assert len(expected) == 4

    def test_needs_die_is_true_outside_auto_enter(self) -> None:
        """Every roll needs a die except an auto_enter entry."""
        assert needs_die(new_match())
        assert not needs_die(new_match(rules(empty_course="auto_enter")))


def cpu_match_events(seed: int = 7, players: int = 3, preset: str = "standard") -> list[Any]:
    record = play_match(
        rules(preset), ["easy"] * players, server_seed=bytes([seed]) * 32, keep_events=True
    )
    return record.events


class TestFoldAndEvolve:
    """State is only a fold; evolve is pure."""

    def test_evolve_does_not_mutate_its_input(self) -> None:
        """For every event of a whole match, evolve leaves the old state as it was."""
        state = initial_state()
        for event in cpu_match_events():
            before = snapshot(state)
            after = evolve(state, event)
            assert snapshot(state) == before
            assert after is not state
            state = after
        assert is_terminal(state)

    def test_evolved_state_shares_no_mutable_parts(self) -> None:
        """Changing the new state's lists leaves the old state untouched."""
        state = new_match(players=3)
        copy = evolve(state, TurnTimedOut(seat=0, consecutive=1))
        copy.pieces[0][0] = 9
        copy.finished.append(1)
        copy.stood_in[1] = "left"
        assert state.pieces[0][0] == NEST
        assert (state.finished, state.stood_in, state.timeouts) == ([], [None] * 3, [0] * 3)

    @pytest.mark.parametrize(("seed", "players", "preset"), [(1, 2, "standard"), (2, 4, "bga")])
    def test_fold_of_the_events_equals_the_live_state(
        self, seed: int, players: int, preset: str
    ) -> None:
        """Folding a match's events from scratch gives the state live play ended in."""
        record = play_match(
            rules(preset), ["easy"] * players, server_seed=bytes([seed]) * 32, keep_events=True
        )
        assert snapshot(fold(record.events)) == snapshot(record.state)
        assert fold(record.events).version == record.event_count == len(record.events)

    def test_fold_onward_from_a_state_equals_fold_from_scratch(self) -> None:
        """fold(tail, fold(head)) == fold(head + tail)."""
        events = cpu_match_events(seed=3)
        whole = fold(events)
        for cut in (0, 1, 2, len(events) // 2, len(events)):
            assert snapshot(fold(events[cut:], fold(events[:cut]))) == snapshot(whole)


class TestTimeouts:
    """TurnTimedOut, the stand-in after three in a row, SeatStoodIn and SeatReclaimed."""

    @staticmethod
    def pass_turn(state: MatchState) -> None:
        """The seat to act rolls a 1 with every piece in the nest: its turn passes."""
        assert kinds(roll(state, 1))[-1] == "TurnEnded"

    def time_out_turns(self, state: MatchState, turns: int) -> list[list[Any]]:
        """Seat 0 times out on each of its next `turns` turns (seat 1 plays in between)."""
        out = []
        for _ in range(turns):
            assert state.turn == 0
            out.append(play(state, TimeOut(seat=0)))
            self.pass_turn(state)  # the CPU plays seat 0's turn
            self.pass_turn(state)  # seat 1
        return out

    def test_three_consecutive_timeouts_make_the_cpu_stand_in(self) -> None:
        """The third timed-out turn in a row adds SeatStoodIn(reason="timeouts")."""
        assert STAND_IN_AFTER_TIMEOUTS == 3
        state = new_match()
        first, second, third = self.time_out_turns(state, 3)
        assert first == [TurnTimedOut(seat=0, consecutive=1)]
        assert second == [TurnTimedOut(seat=0, consecutive=2)]
        assert third == [
            TurnTimedOut(seat=0, consecutive=3),
            SeatStoodIn(seat=0, reason="timeouts"),
        ]
        assert state.stood_in == ["timeouts", None]

    def test_a_turn_without_timeout_resets_the_count(self) -> None:
        """Two timeouts, one turn played in time, then a timeout counts 1 again."""
        state = new_match()
        self.time_out_turns(state, 2)
        self.pass_turn(state)  # seat 0 in time
        self.pass_turn(state)
        assert play(state, TimeOut(seat=0)) == [TurnTimedOut(seat=0, consecutive=1)]

    def test_other_seats_turns_do_not_reset_the_count(self) -> None:
        """Seat 1 playing in time between seat 0's timeouts does not reset seat 0's count."""
        state = new_match()
        self.time_out_turns(state, 2)
        assert state.timeouts == [2, 0]

    def test_two_timeouts_in_one_turn_count_once(self) -> None:
        """A second expiry within the same turn does not count a new timed-out turn."""
        state = at_position(rules(), 2, {"yellow": [3, *N[1:]]}, rolls_left=2)
        assert event_as(TurnTimedOut, play(state, TimeOut(seat=0))[0]).consecutive == 1
        roll(state, 1)
        move(state, 0)
        assert event_as(TurnTimedOut, play(state, TimeOut(seat=0))[0]).consecutive == 1

    def test_timeouts_after_the_stand_in_add_no_second_stand_in(self) -> None:
        """A fourth timeout of a stood-in seat is recorded without another SeatStoodIn."""
        state = new_match()
        self.time_out_turns(state, 3)
        assert play(state, TimeOut(seat=0)) == [TurnTimedOut(seat=0, consecutive=4)]

    def test_reclaiming_the_seat_ends_the_stand_in_and_resets_the_count(self) -> None:
        """SeatReclaimed: the player plays again and the timeout count starts over."""
        state = new_match()
        self.time_out_turns(state, 3)
        assert play(state, Reclaim(seat=0)) == [SeatReclaimed(seat=0)]
        assert (state.stood_in[0], state.timeouts[0]) == (None, 0)
        assert play(state, TimeOut(seat=0)) == [TurnTimedOut(seat=0, consecutive=1)]

    def test_controller_names_who_acts_for_each_seat(self) -> None:
        """A CPU seat is always the CPU's, a stood-in seat until reclaimed, a timed-out turn
        only while it lasts; `cpu_controls` is every case but the player's."""
        seats = (*seat_specs(2), seat_specs(1, cpu="easy")[0])
        state = fold(
            [
                MatchCreated(ruleset=ruleset_to_dict(rules()), seats=seats, seed_hash=SEED_HASH),
                MatchStarted(client_seeds=("", "", ""), client_seed="||"),
            ]
        )
        assert [state.controller(s) for s in range(3)] == ["player", "player", "cpu"]
        play(state, TimeOut(seat=0))
        play(state, LeaveSeat(seat=1))
        assert [state.controller(s) for s in range(3)] == ["timeout", "stand-in", "cpu"]
        assert [state.cpu_controls(s) for s in range(3)] == [True, True, True]
        self.pass_turn(state)  # the CPU plays seat 0's timed-out turn; the stand-in is next
        play(state, Reclaim(seat=1))
        assert [state.controller(s) for s in range(3)] == ["player", "player", "cpu"]
        assert [state.cpu_controls(s) for s in range(3)] == [False, False, True]

    def test_leaving_makes_the_cpu_stand_in(self) -> None:
        """LeaveSeat → SeatStoodIn(reason="left"), on any turn."""
        state = new_match()
        assert play(state, LeaveSeat(seat=1)) == [SeatStoodIn(seat=1, reason="left")]

    def test_disconnection_makes_the_cpu_stand_in(self) -> None:
        """StandIn(disconnected) → SeatStoodIn(reason="disconnected"); Reclaim undoes it."""
        state = new_match()
        assert play(state, StandIn(seat=1, reason="disconnected")) == [
            SeatStoodIn(seat=1, reason="disconnected")
        ]
        assert play(state, Reclaim(seat=1)) == [SeatReclaimed(seat=1)]
        assert state.stood_in == [None, None]


class TestReclaimOnReturn:
    """A returning connection (`Reclaim(returning=True)`) gives the seat back only from a
    stand-in for a disconnection; the player's explicit reclaim ends any stand-in."""

    @staticmethod
    def stood_in(reason: StandInReason) -> MatchState:
        """A match whose seat 1 a CPU plays for `reason`."""
        state = new_match()
        play(state, StandIn(seat=1, reason=reason))
        assert state.stood_in == [None, reason]
        return state

    @pytest.mark.parametrize("reason", ["left", "timeouts"])
    def test_a_returning_connection_keeps_a_stand_in_the_player_chose_or_earned(
        self, reason: StandInReason
    ) -> None:
        """stand_in_kept after `left` or `timeouts`: the CPU goes on playing the seat."""
        state = self.stood_in(reason)
        rejection = rejected(state, Reclaim(seat=1, returning=True))
        assert rejection.code == "stand_in_kept"
        assert f"({reason})" in rejection.reason
        assert state.stood_in == [None, reason]

    def test_a_returning_connection_ends_a_stand_in_for_a_disconnection(self) -> None:
        """After `disconnected`, the connection coming back reclaims the seat."""
        state = self.stood_in("disconnected")
        assert play(state, Reclaim(seat=1, returning=True)) == [SeatReclaimed(seat=1)]
        assert state.stood_in == [None, None]

    @pytest.mark.parametrize("reason", ["left", "timeouts", "disconnected"])
    def test_an_explicit_reclaim_ends_any_stand_in(self, reason: StandInReason) -> None:
        """The player asking (the default, `returning=False`) takes the seat back always."""
        state = self.stood_in(reason)
        assert play(state, Reclaim(seat=1)) == [SeatReclaimed(seat=1)]
        assert state.stood_in == [None, None]

    def test_a_returning_connection_to_a_seat_nobody_stands_in_for_is_rejected(self) -> None:
        """not_stood_in, as for an explicit reclaim."""
        assert rejected(new_match(), Reclaim(seat=1, returning=True)).code == "not_stood_in"


def with_cpu_seat(level: CpuLevel = "hard") -> MatchState:
    """A started match of two guests (seats 0, 1) and a CPU of `level` (seat 2)."""
    seats = (*seat_specs(2), seat_specs(1, cpu=level)[0])
    return fold(
        [
            MatchCreated(ruleset=ruleset_to_dict(rules()), seats=seats, seed_hash=SEED_HASH),
            MatchStarted(client_seeds=("", "", ""), client_seed="||"),
        ]
    )


class TestSeatControl:
    """Who may roll and move for a seat (`by`): its player, or the CPU that plays it."""

    def test_a_players_roll_on_a_seat_stood_in_for_is_refused_as_stood_in(self) -> None:
        """stood_in: the player reclaims the seat before playing it again."""
        state = new_match()
        play(state, LeaveSeat(seat=0))
        assert rejected(state, Roll(seat=0, die=3, by="player")).code == "stood_in"

    def test_stood_in_is_named_before_the_turn_off_turn_too(self) -> None:
        """A stood-in seat's player hears `stood_in`, not `not_your_turn`, on any turn."""
        state = new_match()
        play(state, LeaveSeat(seat=1))
        assert rejected(state, Roll(seat=1, die=3, by="player")).code == "stood_in"

    def test_a_players_command_in_a_timed_out_turn_is_refused_as_cpu_playing(self) -> None:
        """cpu_playing: the CPU plays the rest of a turn that timed out, roll and move."""
        state = at_position(rules(), 2, {"yellow": [3, *N[1:]]})
        play(state, TimeOut(seat=0))
        assert rejected(state, Roll(seat=0, die=2, by="player")).code == "cpu_playing"
        roll(state, 2)
        assert rejected(state, MovePiece(seat=0, piece=0, by="player")).code == "cpu_playing"

    def test_a_players_command_on_a_cpu_seat_is_refused_as_cpu_playing(self) -> None:
        """cpu_playing: a CPU seat is never a player's to play."""
        state = with_cpu_seat()
        play(state, Roll(seat=0, die=1, by="player"))
        play(state, Roll(seat=1, die=1, by="player"))
        assert rejected(state, Roll(seat=2, die=1, by="player")).code == "cpu_playing"

    def test_a_cpu_command_on_a_seat_its_player_plays_is_refused_as_player_plays(
        self,
    ) -> None:
        """player_plays: a CPU acts only for a seat it controls."""
        state = at_position(rules(), 2, {"yellow": [3, *N[1:]]})
        assert rejected(state, Roll(seat=0, die=2, by="cpu")).code == "player_plays"
        roll(state, 2)
        assert rejected(state, MovePiece(seat=0, piece=0, by="cpu")).code == "player_plays"

    def test_the_controller_plays_its_seat(self) -> None:
        """The player plays their own turn; the CPU plays a timed-out turn and a stand-in."""
        state = at_position(rules(), 2, {"yellow": [3, *N[1:]], "red": [5, *N[1:]]})
        play(state, Roll(seat=0, die=2, by="player"))
        play(state, MovePiece(seat=0, piece=0, by="player"))
        play(state, LeaveSeat(seat=1))
        play(state, Roll(seat=1, die=2, by="cpu"))
        play(state, MovePiece(seat=1, piece=0, by="cpu"))
        play(state, TimeOut(seat=0))
        assert kinds(play(state, Roll(seat=0, die=1, by="cpu"))) == ["DieRolled"]

    def test_a_command_without_an_actor_is_not_judged_for_control(self) -> None:
        """`by=None` (replays, simulations): recorded play is re-decided whoever acted."""
        state = new_match()
        play(state, LeaveSeat(seat=0))
        assert kinds(play(state, Roll(seat=0, die=1))) == ["DieRolled", "RollPassed", "TurnEnded"]

    @pytest.mark.parametrize("by", ["player", "cpu"])
    def test_control_is_not_judged_before_the_match_is_played(self, by: Actor) -> None:
        """Before the start, the rejection says so (`not_started`), not who controls."""
        assert code(created(), Roll(seat=0, die=1, by=by)) == "not_started"

    def test_cpu_level_is_a_cpu_seats_own_or_the_stand_ins(self) -> None:
        """A CPU seat plays at its level; a stand-in or a timed-out turn at STAND_IN_LEVEL."""
        state = with_cpu_seat("hard")
        assert (state.cpu_level(2), state.cpu_level(0)) == ("hard", STAND_IN_LEVEL)
        assert STAND_IN_LEVEL == "normal"


class TestDeadlineCommand:
    """What the scheduler sends when a deadline passes (`domain.deadline`)."""

    def test_a_players_turn_times_out(self) -> None:
        """A turn the player controls: TimeOut of the seat to act."""
        assert deadline_command(new_match(), "m") == TimeOut(seat=0)

    def test_the_cpu_rolls_then_moves_a_turn_it_controls(self) -> None:
        """A timed-out turn: the CPU's roll, then its move, both sent `by="cpu"`."""
        state = at_position(rules(), 2, {"yellow": [3, 9, *N[2:]]})
        play(state, TimeOut(seat=0))
        assert deadline_command(state, "m") == Roll(seat=0, by="cpu")
        roll(state, 2)
        command = deadline_command(state, "m")
        assert isinstance(command, MovePiece) and command.by == "cpu"
        assert command.piece in {m.piece for m in current_legal_moves(state)}

    def test_the_cpus_move_is_the_one_its_level_chooses(self) -> None:
        """The move is `choose_move` at `cpu_level`, seeded by the match id and the seat."""
        state = at_position(rules(), 2, {"yellow": [3, 9, 20, *N[3:]]})
        play(state, LeaveSeat(seat=0))
        roll(state, 4)
        moves = current_legal_moves(state)
        chosen = choose_move(STAND_IN_LEVEL, state, moves, "m:0")
        assert deadline_command(state, "m") == MovePiece(seat=0, piece=chosen.piece, by="cpu")


def against_cpus(
    players: int = 4, pieces: dict[str, list[int]] | None = None, ruleset: Ruleset | None = None
) -> MatchState:
    """A started match of one guest (seat 0) against CPUs in every other seat, at `pieces`
    (colours to progresses), seat 0 to roll."""
    seats = (seat_specs(1)[0], *seat_specs(players - 1, cpu="normal"))
    state = fold(
        [
            MatchCreated(
                ruleset=ruleset_to_dict(ruleset or rules()), seats=seats, seed_hash=SEED_HASH
            ),
            MatchStarted(client_seeds=("",) * players, client_seed="|" * (players - 1)),
        ]
    )
    fold(setup_events(state, pieces, 0), state)
    return state


class TestConcede:
    """A player gives up a casual match against CPUs: it ends at once, the player last."""

    def test_a_concession_ends_the_match_with_the_conceder_last_and_the_cpus_by_their_pieces(
        self,
    ) -> None:
        """MatchConceded then MatchFinished: the conceding seat is last even when it is
        ahead on the board; the CPUs still playing are placed by `standing_key`."""
        state = against_cpus(
            4, {"yellow": [40, 50, 3, 7], "blue": [10, *N[1:]], "red": [20, 2, *N[2:]]}
        )
        events = play(state, Concede(seat=0, ranked=False))
        assert events == [
            MatchConceded(seat=0),
            MatchFinished(placements=(4, 2, 1, 3)),
        ]
        assert is_terminal(state) and state.placements == (4, 2, 1, 3)

    def test_a_finished_seat_keeps_its_place_and_the_rest_follow_it(self) -> None:
        """A CPU that finished first stays first; the conceder is last behind the others."""
        state = against_cpus(3, {"blue": [56, 56, 56, 55]}, rules(play_to_end=True))
        play(state, Roll(seat=0, die=1))  # no move for yellow: blue's turn
        play(state, Roll(seat=1, die=1))
        play(state, MovePiece(seat=1, piece=3))
        assert state.finished == [1]
        assert play(state, Concede(seat=0, ranked=False))[-1] == MatchFinished(placements=(3, 1, 2))

    def test_it_may_be_conceded_in_any_phase_and_on_a_cpus_turn(self) -> None:
        """A concession is not a turn's action: after a roll, and while a CPU plays."""
        after_roll = against_cpus(2, {"yellow": [5, *N[1:]]})
        play(after_roll, Roll(seat=0, die=3))
        assert after_roll.phase == "move"
        assert kinds(play(after_roll, Concede(seat=0))) == ["MatchConceded", "MatchFinished"]
        cpus_turn = against_cpus(2)
        play(cpus_turn, Roll(seat=0, die=1))
        assert cpus_turn.turn == 1
        assert kinds(play(cpus_turn, Concede(seat=0))) == ["MatchConceded", "MatchFinished"]

    def test_a_ranked_match_cannot_be_conceded(self) -> None:
        """ranked_match: the service tells decide the match is ranked; leaving is the way."""
        assert code(against_cpus(), Concede(seat=0, ranked=True)) == "ranked_match"

    def test_a_match_with_another_player_still_playing_cannot_be_conceded(self) -> None:
        """not_against_cpus: a person still playing would lose their match to it."""
        assert code(new_match(players=2), Concede(seat=0, ranked=False)) == "not_against_cpus"
        assert code(with_cpu_seat(), Concede(seat=1, ranked=False)) == "not_against_cpus"

    def test_a_cpu_seat_a_finished_seat_and_an_ended_match_cannot_concede(self) -> None:
        """bad_command for a CPU seat, seat_finished, match_finished, not_started."""
        assert code(against_cpus(), Concede(seat=1)) == "bad_command"
        assert code(finished_match(), Concede(seat=1)) == "match_finished"
        assert code(created(), Concede(seat=0)) == "not_started"
        two = new_match(players=3)
        fold(setup_events(two, {"yellow": [56, 56, 56, 56]}, 1), two)
        two.finished.append(0)
        assert code(two, Concede(seat=0)) == "seat_finished"
