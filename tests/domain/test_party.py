"""The party (lobby table) as a Decider (`domain.party`, docs/design.md#streams-and-deciders):
creating a table, sitting down and leaving, the host's CPUs and settings, starting and rematches;
every refusal with its code, and the fold of what was decided.

Each test reads as a rule of the table; `table(...)` builds a party by deciding commands,
so every state a test starts from is one the decider allowed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from domain.events import CpuLevel, SeatSpec
from domain.party import (
    MAX_SEATS,
    MIN_SEATS,
    PARTY_EVENT_TYPES,
    TURN_LIMITS,
    AddCpu,
    ChangeSettings,
    CpuSeated,
    CreateParty,
    HostChanged,
    JoinParty,
    LeaveParty,
    MatchOpened,
    PartyClosed,
    PartyCommand,
    PartyCreated,
    PartyEvent,
    PartyRejection,
    PartyState,
    Rematch,
    RemoveCpu,
    Seat,
    SeatFreed,
    SeatTaken,
    SettingsChanged,
    StartParty,
    decide,
    decode_party_event,
    fold,
    seat_specs,
)

HOST = "host"
GUEST = "guest"
THIRD = "third"
SEED = "a" * 16


def act(state: PartyState, command: PartyCommand) -> list[PartyEvent]:
    """Decide `command`, require it accepted, fold its events into `state`, return them."""
    decided = decide(command, state)
    assert isinstance(decided, list), decided
    fold(decided, state)
    return decided


def refused(state: PartyState, command: Any) -> PartyRejection:
    """Decide `command`, require a refusal, and check it changed nothing."""
    before = (state.version, list(state.seats), state.status, state.host_id)
    decided = decide(command, state)
    assert isinstance(decided, PartyRejection), decided
    assert (state.version, list(state.seats), state.status, state.host_id) == before
    return decided


def table(seats: int = 4, **create: Any) -> PartyState:
    """An open table of `seats` seats with only its host (seat 0)."""
    state = PartyState()
    act(state, CreateParty(host_id=HOST, host_name="Hana", seats=seats, **create))
    return state


def full_table() -> PartyState:
    """A two-seat table: the host and one guest."""
    state = table(2)
    act(state, JoinParty(player_id=GUEST, name="Gen"))
    return state


def three_seated(level: CpuLevel = "easy") -> PartyState:
    """A three-seat table, every seat filled: the host, a guest and a CPU of `level`."""
    state = table(3)
    act(state, JoinParty(player_id=GUEST, name="Gen"))
    act(state, AddCpu(player_id=HOST, level=level))
    return state


def playing() -> PartyState:
    """A two-seat table whose first match (`m1`) has started."""
    state = full_table()
    act(state, StartParty(player_id=HOST, match_id="m1"))
    return state


class TestCreate:
    """CreateParty: the table, its settings, and the host in seat 0."""

    def test_the_host_sits_in_seat_zero_of_an_open_table(self) -> None:
        """PartyCreated then SeatTaken(seat 0) for the host, with their client seed."""
        state = PartyState()
        events = act(
            state,
            CreateParty(host_id=HOST, host_name="Hana", seats=3, client_seed=SEED, ranked=True),
        )
        assert [type(e) for e in events] == [PartyCreated, SeatTaken]
        assert events[1] == SeatTaken(seat=0, player_id=HOST, name="Hana", client_seed=SEED)
        assert (state.status, state.host_id, state.ranked) == ("open", HOST, True)
        assert state.seats == [Seat(player_id=HOST, name="Hana", client_seed=SEED), None, None]

    def test_the_ruleset_is_recorded_with_every_option_and_no_revision(self) -> None:
        """A preset and overrides are spelled out in full; the match pins the revision."""
        state = table(ruleset={"preset": "standard", "exact_finish": False})
        assert state.ruleset["exact_finish"] is False
        assert "blocks" in state.ruleset
        assert "revision" not in state.ruleset

    @pytest.mark.parametrize("seats", [MIN_SEATS - 1, MAX_SEATS + 1])
    def test_a_seat_count_outside_two_to_four_is_refused(self, seats: int) -> None:
        """bad_command on `seats`."""
        rejection = refused(PartyState(), CreateParty(host_id=HOST, host_name="H", seats=seats))
        assert (rejection.code, rejection.field) == ("bad_command", "seats")

    @pytest.mark.parametrize("name", ["", "x" * 33, "tab\there"])
    def test_a_name_that_is_empty_too_long_or_unprintable_is_refused(self, name: str) -> None:
        """bad_command: a name is 1-32 printable characters."""
        command = CreateParty(host_id=HOST, host_name=name, seats=2)
        assert refused(PartyState(), command).code == "bad_command"

    def test_a_malformed_client_seed_is_refused(self) -> None:
        """bad_seed on `client_seed`."""
        command = CreateParty(host_id=HOST, host_name="H", seats=2, client_seed="\n")
        rejection = refused(PartyState(), command)
        assert (rejection.code, rejection.field) == ("bad_seed", "client_seed")

    def test_a_turn_limit_other_than_none_30_or_60_is_refused(self) -> None:
        """bad_command on `turn_limit`; the allowed values are TURN_LIMITS."""
        assert TURN_LIMITS == (None, 30, 60)
        command = CreateParty(host_id=HOST, host_name="H", seats=2, turn_limit=45)
        assert refused(PartyState(), command).field == "turn_limit"

    def test_an_invalid_ruleset_is_refused_naming_its_option(self) -> None:
        """bad_ruleset, with `field` `ruleset.<option>`."""
        command = CreateParty(host_id=HOST, host_name="H", seats=2, ruleset={"blocks": "wall"})
        rejection = refused(PartyState(), command)
        assert (rejection.code, rejection.field) == ("bad_ruleset", "ruleset.blocks")

    def test_creating_twice_is_refused(self) -> None:
        """already_created."""
        command = CreateParty(host_id=HOST, host_name="H", seats=2)
        assert refused(table(), command).code == "already_created"


class TestJoin:
    """JoinParty: a guest sits down, in a seat they name or the first free one."""

    def test_a_guest_takes_the_first_free_seat(self) -> None:
        """Without `seat`, the lowest empty seat."""
        state = table()
        assert act(state, JoinParty(player_id=GUEST, name="Gen")) == [
            SeatTaken(seat=1, player_id=GUEST, name="Gen")
        ]

    def test_a_guest_takes_the_seat_they_name(self) -> None:
        """With `seat`, that seat."""
        state = table()
        act(state, JoinParty(player_id=GUEST, name="Gen", seat=3, client_seed=SEED))
        assert state.seats[3] == Seat(player_id=GUEST, name="Gen", client_seed=SEED)
        assert state.seat_of(GUEST) == 3

    def test_sitting_twice_is_refused(self) -> None:
        """already_seated: one seat per guest."""
        assert refused(table(), JoinParty(player_id=HOST, name="H")).code == "already_seated"

    def test_a_taken_seat_is_refused(self) -> None:
        """seat_taken on `seat`."""
        rejection = refused(table(), JoinParty(player_id=GUEST, name="G", seat=0))
        assert (rejection.code, rejection.field) == ("seat_taken", "seat")

    @pytest.mark.parametrize("seat", [-1, 4])
    def test_a_seat_that_does_not_exist_is_refused(self, seat: int) -> None:
        """bad_seat on `seat`."""
        rejection = refused(table(), JoinParty(player_id=GUEST, name="G", seat=seat))
        assert (rejection.code, rejection.field) == ("bad_seat", "seat")

    def test_a_full_table_is_refused(self) -> None:
        """party_full when no seat is free."""
        assert refused(full_table(), JoinParty(player_id=THIRD, name="T")).code == "party_full"

    def test_joining_a_party_that_does_not_exist_is_refused(self) -> None:
        """not_found."""
        assert refused(PartyState(), JoinParty(player_id=GUEST, name="G")).code == "not_found"

    def test_joining_once_the_match_started_is_refused(self) -> None:
        """not_open."""
        state = three_seated()
        act(state, StartParty(player_id=HOST, match_id="m1"))
        assert refused(state, JoinParty(player_id=THIRD, name="T")).code == "not_open"

    def test_a_bad_name_or_seed_is_refused(self) -> None:
        """bad_command for the name, bad_seed for the seed, as at creation."""
        assert refused(table(), JoinParty(player_id=GUEST, name="")).code == "bad_command"
        command = JoinParty(player_id=GUEST, name="G", client_seed="\n")
        assert refused(table(), command).code == "bad_seed"


class TestLeave:
    """LeaveParty: the seat frees; the host passes on; the last guest closes the table."""

    def test_a_guest_leaving_frees_their_seat(self) -> None:
        """SeatFreed only, while the host stays."""
        state = full_table()
        assert act(state, LeaveParty(player_id=GUEST)) == [SeatFreed(seat=1)]
        assert state.seats[1] is None

    def test_the_host_leaving_makes_the_next_seated_guest_host(self) -> None:
        """HostChanged to the first other guest in seat order."""
        state = table()
        act(state, JoinParty(player_id=THIRD, name="T", seat=3))
        act(state, JoinParty(player_id=GUEST, name="G", seat=1))
        assert act(state, LeaveParty(player_id=HOST)) == [
            SeatFreed(seat=0),
            HostChanged(host_id=GUEST),
        ]
        assert state.host_id == GUEST

    def test_the_last_guest_leaving_closes_the_party(self) -> None:
        """PartyClosed when only CPUs (or nobody) would be left."""
        state = table()
        act(state, AddCpu(player_id=HOST, level="easy"))
        assert act(state, LeaveParty(player_id=HOST)) == [SeatFreed(seat=0), PartyClosed()]
        assert state.status == "closed"

    def test_leaving_a_table_you_do_not_sit_at_is_refused(self) -> None:
        """not_seated, asked before whether the table is open."""
        assert refused(playing(), LeaveParty(player_id=THIRD)).code == "not_seated"

    def test_leaving_once_the_match_started_is_refused(self) -> None:
        """not_open: a seated guest leaves the match itself, not the table."""
        assert refused(playing(), LeaveParty(player_id=GUEST)).code == "not_open"

    def test_leaving_a_party_that_does_not_exist_is_refused(self) -> None:
        """not_found."""
        assert refused(PartyState(), LeaveParty(player_id=GUEST)).code == "not_found"


class TestCpus:
    """AddCpu and RemoveCpu: the host's, on an open table."""

    def test_the_host_seats_a_cpu_named_for_its_seat_and_level(self) -> None:
        """CpuSeated; the seat is named `CPU <n> (<level>)`."""
        state = table()
        assert act(state, AddCpu(player_id=HOST, level="hard", seat=2)) == [
            CpuSeated(seat=2, level="hard")
        ]
        assert state.seats[2] == Seat(name="CPU 3 (hard)", cpu="hard")

    def test_the_host_removes_a_cpu(self) -> None:
        """SeatFreed for the CPU's seat."""
        state = table()
        act(state, AddCpu(player_id=HOST, level="easy"))
        assert act(state, RemoveCpu(player_id=HOST, seat=1)) == [SeatFreed(seat=1)]

    def test_removing_a_seat_without_a_cpu_is_refused(self) -> None:
        """not_a_cpu on `seat`: a guest's seat or an empty one."""
        for seat in (0, 2):
            rejection = refused(table(), RemoveCpu(player_id=HOST, seat=seat))
            assert (rejection.code, rejection.field) == ("not_a_cpu", "seat")

    def test_removing_from_a_seat_that_does_not_exist_is_refused(self) -> None:
        """bad_seat on `seat`."""
        assert refused(table(), RemoveCpu(player_id=HOST, seat=9)).code == "bad_seat"

    def test_only_the_host_seats_or_removes_cpus(self) -> None:
        """not_host for anyone else, seated or not."""
        state = full_table()
        assert refused(state, AddCpu(player_id=GUEST, level="easy")).code == "not_host"
        assert refused(state, RemoveCpu(player_id=THIRD, seat=1)).code == "not_host"

    def test_a_stranger_hears_not_host_even_once_the_match_started(self) -> None:
        """Who may act is asked before the table's state: 403 open or playing alike."""
        assert refused(playing(), AddCpu(player_id=GUEST, level="easy")).code == "not_host"
        assert refused(playing(), AddCpu(player_id=HOST, level="easy")).code == "not_open"


class TestSettings:
    """ChangeSettings: the host changes what they name; None keeps a field."""

    def test_only_the_named_fields_change(self) -> None:
        """A new ruleset keeps the turn limit and the ranking as they were."""
        state = table(turn_limit=30, ranked=True)
        events = act(state, ChangeSettings(player_id=HOST, ruleset={"preset": "bga"}))
        assert events == [SettingsChanged(ruleset=state.ruleset, turn_limit=30, ranked=True)]
        assert state.ruleset["blocks"] == "none"

    def test_a_turn_limit_of_zero_means_none(self) -> None:
        """`turn_limit` 0 clears the limit (None keeps it)."""
        state = table(turn_limit=60)
        act(state, ChangeSettings(player_id=HOST, turn_limit=0))
        assert state.turn_limit is None

    def test_ranked_can_be_switched(self) -> None:
        """`ranked` set to False or True is recorded."""
        state = table(ranked=True)
        act(state, ChangeSettings(player_id=HOST, ranked=False))
        assert state.ranked is False

    def test_bad_settings_are_refused_naming_the_field(self) -> None:
        """bad_command on `turn_limit`, bad_ruleset on the option."""
        state = table()
        assert refused(state, ChangeSettings(player_id=HOST, turn_limit=7)).field == "turn_limit"
        command = ChangeSettings(player_id=HOST, ruleset={"enter_on": [9]})
        assert refused(state, command).code == "bad_ruleset"

    def test_only_the_host_changes_settings(self) -> None:
        """not_host."""
        command = ChangeSettings(player_id=GUEST, ranked=True)
        assert refused(full_table(), command).code == "not_host"

    def test_the_host_switches_stamps_off_and_on(self) -> None:
        """`stamps` False is recorded, keeping every other setting; True again puts them back."""
        state = table(turn_limit=30)
        assert state.stamps is True
        events = act(state, ChangeSettings(player_id=HOST, stamps=False))
        assert events == [
            SettingsChanged(ruleset=state.ruleset, turn_limit=30, ranked=False, stamps=False)
        ]
        assert state.stamps is False
        act(state, ChangeSettings(player_id=HOST, stamps=True))
        assert state.stamps is True

    def test_stamps_alone_change_while_the_table_plays(self) -> None:
        """During the match the host may switch stamps, and nothing else; a guest may not."""
        state = playing()
        act(state, ChangeSettings(player_id=HOST, stamps=False))
        assert state.stamps is False and state.status == "playing"
        assert refused(state, ChangeSettings(player_id=GUEST, stamps=True)).code == "not_host"
        command = ChangeSettings(player_id=HOST, stamps=True, ranked=True)
        assert refused(state, command).code == "not_open"

    def test_a_settings_event_stored_before_stamps_decodes_with_them_on(self) -> None:
        """An old SettingsChanged without `stamps` decodes, and folds, with stamps on."""
        old = b'{"type":"SettingsChanged","ruleset":{},"turn_limit":null,"ranked":true}'
        event = decode_party_event(old)
        assert isinstance(event, SettingsChanged) and event.stamps is True


class TestCpuSpeed:
    """The CPUs' speed: the host's setting of the table, pinned by each match it opens."""

    def test_a_table_is_created_at_normal_speed_or_the_one_asked(self) -> None:
        """PartyCreated records `cpu_speed` (normal unless the host asks for fast)."""
        assert table().cpu_speed == "normal"
        state = PartyState()
        events = act(state, CreateParty(host_id=HOST, host_name="Hana", seats=2, cpu_speed="fast"))
        created = events[0]
        assert isinstance(created, PartyCreated) and created.cpu_speed == "fast"
        assert state.cpu_speed == "fast"

    def test_the_host_changes_it_before_the_start_and_the_match_pins_it(self) -> None:
        """SettingsChanged keeps every other setting; MatchOpened carries the speed, and a
        rematch the speed chosen since."""
        state = table(2, turn_limit=30)
        events = act(state, ChangeSettings(player_id=HOST, cpu_speed="fast"))
        assert events == [
            SettingsChanged(ruleset=state.ruleset, turn_limit=30, ranked=False, cpu_speed="fast")
        ]
        act(state, AddCpu(player_id=HOST, level="easy"))
        opened = act(state, StartParty(player_id=HOST, match_id="m1"))[0]
        assert isinstance(opened, MatchOpened) and opened.cpu_speed == "fast"

    def test_the_host_changes_it_during_a_match_keeping_the_stamps(self) -> None:
        """While the match plays the host may change the speed (as the stamps), nothing
        else with it; a guest may not; another value is bad_command."""
        state = playing()
        act(state, ChangeSettings(player_id=HOST, stamps=False))
        events = act(state, ChangeSettings(player_id=HOST, cpu_speed="fast"))
        assert events == [
            SettingsChanged(
                ruleset=state.ruleset, turn_limit=None, ranked=False, stamps=False, cpu_speed="fast"
            )
        ]
        assert (state.cpu_speed, state.stamps, state.status) == ("fast", False, "playing")
        assert refused(state, ChangeSettings(player_id=GUEST, cpu_speed="normal")).code == (
            "not_host"
        )
        command = ChangeSettings(player_id=HOST, cpu_speed="normal", ranked=True)
        assert refused(state, command).code == "not_open"
        bad = refused(table(), ChangeSettings(player_id=HOST, cpu_speed="slow"))  # type: ignore[arg-type]
        assert (bad.code, bad.field) == ("bad_command", "cpu_speed")
        bad = refused(state, ChangeSettings(player_id=HOST, cpu_speed="slow"))  # type: ignore[arg-type]
        assert (bad.code, bad.field) == ("bad_command", "cpu_speed")

    def test_events_stored_before_it_existed_decode_at_normal_speed(self) -> None:
        """Old PartyCreated, SettingsChanged and MatchOpened decode with `cpu_speed` normal."""
        for old in (
            b'{"type":"PartyCreated","host_id":"h","seats":2,"ruleset":{},"turn_limit":null,'
            b'"ranked":false}',
            b'{"type":"SettingsChanged","ruleset":{},"turn_limit":null,"ranked":true}',
            b'{"type":"MatchOpened","match_id":"m","first_seat":0,"game":1,"ranked":false,'
            b'"turn_limit":null}',
        ):
            event = decode_party_event(old)
            assert isinstance(event, PartyCreated | SettingsChanged | MatchOpened)
            assert event.cpu_speed == "normal"


class TestStart:
    """StartParty: the host opens the first match once every seat is filled."""

    def test_the_first_match_opens_with_seat_zero_first(self) -> None:
        """MatchOpened, game 1, with the table's ranking and turn limit."""
        state = table(2, turn_limit=30, ranked=True)
        act(state, JoinParty(player_id=GUEST, name="Gen"))
        assert act(state, StartParty(player_id=HOST, match_id="m1")) == [
            MatchOpened(match_id="m1", first_seat=0, game=1, ranked=True, turn_limit=30)
        ]
        assert (state.status, state.match_id, state.game) == ("playing", "m1", 1)

    def test_an_empty_seat_is_refused(self) -> None:
        """seats_empty, naming the first empty seat."""
        rejection = refused(table(3), StartParty(player_id=HOST, match_id="m1"))
        assert rejection.code == "seats_empty" and "seat 1" in rejection.reason

    def test_only_the_host_starts(self) -> None:
        """not_host."""
        assert refused(full_table(), StartParty(player_id=GUEST, match_id="m1")).code == (
            "not_host"
        )

    def test_starting_twice_is_refused(self) -> None:
        """not_open: the rematch starts the next one."""
        assert refused(playing(), StartParty(player_id=HOST, match_id="m2")).code == "not_open"

    def test_the_seats_become_the_matchs_seat_specs(self) -> None:
        """`seat_specs`: each guest and CPU as the match records them, in seat order."""
        assert seat_specs(three_seated("normal")) == (
            SeatSpec(name="Hana", player_id=HOST),
            SeatSpec(name="Gen", player_id=GUEST),
            SeatSpec(name="CPU 3 (normal)", cpu="normal"),
        )


class TestRematch:
    """Rematch: any seated guest, once the current match is over."""

    def test_a_guest_opens_the_next_game_with_the_first_seat_rotated(self) -> None:
        """Game 2, first seat one on (`rotate_first`, the default)."""
        state = playing()
        assert act(state, Rematch(player_id=GUEST, match_id="m2", current_finished=True)) == [
            MatchOpened(match_id="m2", first_seat=1, game=2, ranked=False, turn_limit=None)
        ]

    def test_the_first_seat_wraps_around(self) -> None:
        """After the last seat, seat 0 begins again."""
        state = playing()
        act(state, Rematch(player_id=GUEST, match_id="m2", current_finished=True))
        events = act(state, Rematch(player_id=HOST, match_id="m3", current_finished=True))
        assert msgspec.structs.asdict(events[0])["first_seat"] == 0

    def test_without_rotate_first_the_first_seat_stays(self) -> None:
        """`rotate_first: false`: every game starts from the same seat."""
        state = table(2, ruleset={"preset": "standard", "rotate_first": False})
        act(state, JoinParty(player_id=GUEST, name="Gen"))
        act(state, StartParty(player_id=HOST, match_id="m1"))
        events = act(state, Rematch(player_id=GUEST, match_id="m2", current_finished=True))
        assert events[0] == MatchOpened(
            match_id="m2", first_seat=0, game=2, ranked=False, turn_limit=None
        )

    @pytest.mark.parametrize(
        ("state", "player", "finished", "code"),
        [
            (playing, GUEST, False, "match_running"),
            (full_table, HOST, True, "not_started"),
            (playing, THIRD, True, "not_seated"),
            (PartyState, HOST, True, "not_found"),
        ],
        ids=["while the match runs", "before any match", "not seated", "no such party"],
    )
    def test_a_rematch_is_refused_until_a_seated_guest_finished_a_match(
        self, state: Callable[[], PartyState], player: str, finished: bool, code: str
    ) -> None:
        """match_running, not_started, not_seated, not_found: each condition's own code."""
        command = Rematch(player_id=player, match_id="m2", current_finished=finished)
        assert refused(state(), command).code == code


class TestEventsAndFold:
    """The party's events as stored, and the fold that only records them."""

    def test_an_unknown_command_is_refused(self) -> None:
        """bad_command for anything that is not a party command."""

        class Dance(msgspec.Struct):
            player_id: str = HOST

        assert refused(table(), Dance()).code == "bad_command"

    def test_every_event_decodes_from_its_json_by_its_type_tag(self) -> None:
        """`decode_party_event` reads back each stored event type, tagged by class name."""
        state = table()
        events = [
            *act(state, JoinParty(player_id=GUEST, name="Gen")),
            *act(state, AddCpu(player_id=HOST, level="easy")),
            *act(state, ChangeSettings(player_id=HOST, ranked=True)),
            *act(state, RemoveCpu(player_id=HOST, seat=2)),
            *act(state, LeaveParty(player_id=HOST)),
        ]
        for event in events:
            data = msgspec.json.encode(event)
            assert msgspec.json.decode(data)["type"] == type(event).__name__
            assert decode_party_event(data) == event
        assert set(PARTY_EVENT_TYPES) == {
            "PartyCreated",
            "SeatTaken",
            "SeatFreed",
            "CpuSeated",
            "HostChanged",
            "PartyClosed",
            "SettingsChanged",
            "MatchOpened",
        }

    def test_the_fold_of_the_decided_events_is_the_live_state(self) -> None:
        """Folding the recorded events from scratch gives the state decided along the way."""
        state = PartyState()
        events: list[PartyEvent] = []
        for command in (
            CreateParty(host_id=HOST, host_name="Hana", seats=2),
            JoinParty(player_id=GUEST, name="Gen"),
            StartParty(player_id=HOST, match_id="m1"),
            Rematch(player_id=GUEST, match_id="m2", current_finished=True),
        ):
            events += act(state, command)
        again = fold(events)
        assert [getattr(again, f) for f in PartyState.__slots__] == [
            getattr(state, f) for f in PartyState.__slots__
        ]
        assert again.version == len(events) == 5
