"""Offline verification of replay files: every preset and option verifies, and every kind of
tampering is caught and named (the event and the check)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from domain.board import NEST
from domain.decider import MatchState, apply
from domain.events import (
    DieRolled,
    Event,
    MatchConceded,
    MatchCreated,
    MatchFinished,
    MatchTable,
    PieceMoved,
    SeatSpec,
    SeedRevealed,
    TurnEnded,
    TurnTimedOut,
)
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from replays.format import (
    ReplayFile,
    ReplayFormatError,
    dump_replay,
    load_replay,
    replay_from_events,
)
from replays.steps import walk
from replays.verify import Verdict, verify_replay
from tests import paths
from tests.replays.scripted import conceded_match, scripted_match, server_seed

GOLDEN = json.loads((paths.GOLDEN / "matches.json").read_text())["cases"]
MATCH_ID = "5f0c3d2e-8a51-4b7e-9f1a-0c2b3d4e5f60"


def finished_events(case: dict[str, Any]) -> list[Event]:
    """A golden case played again, with the seed revealed as the service does at the end."""
    seed = bytes.fromhex(case["server_seed"])
    match = play_match(
        parse_ruleset(case["rules"]),
        ["easy"] * case["players"],
        server_seed=seed,
        client_seeds=case["client_seeds"],
        first_seat=case["first_seat"],
    )
    return [*match.events, SeedRevealed(server_seed=seed.hex())]


def through_file(replay: ReplayFile) -> Verdict:
    """Verify the replay as a file on disk would be: dumped to bytes, then loaded."""
    return verify_replay(load_replay(dump_replay(replay)))


@pytest.fixture(scope="module")
def standard() -> list[Event]:
    case = next(c for c in GOLDEN if c["name"] == "standard-4p")
    return finished_events(case)


def rebuilt(events: list[Event]) -> ReplayFile:
    """A replay of (possibly altered) events with a freshly computed, intact hash chain:
    the forger recomputed every hash, so only the rules can catch the change."""
    return replay_from_events(MATCH_ID, events)


def first_index(events: list[Event], test: Callable[[int, Event], bool]) -> int:
    return next(i for i, e in enumerate(events) if test(i, e))


def assert_fails(verdict: Verdict, check: str, version: int | None) -> None:
    assert not verdict.ok
    assert verdict.failure is not None, verdict
    assert (verdict.failure.check, verdict.failure.version) == (check, version), verdict.failure


class TestRoundTrip:
    @pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
    def test_every_preset_and_option_verifies(self, case: dict[str, Any]) -> None:
        """A whole match under each golden ruleset verifies after a trip through a file."""
        events = finished_events(case)
        verdict = through_file(replay_from_events(MATCH_ID, events))
        assert verdict.ok, verdict.failure
        assert verdict.events == len(events)
        assert verdict.placements == tuple(case["expected"]["placements"])
        assert verdict.rolls == case["expected"]["rolls"]

    @pytest.mark.parametrize("preset", ["standard", "bga"])
    def test_timeouts_stand_ins_and_reclaims_verify(self, preset: str) -> None:
        """Timed-out turns, stand-ins (disconnect, leave, timeouts) and reclaims re-decide."""
        events, actors = scripted_match(
            parse_ruleset({"preset": preset}), 4, server_seed(preset), rng_seed=7, cpu_seats=1
        )
        kinds = {type(e).__name__ for e in events}
        assert {"TurnTimedOut", "SeatStoodIn", "SeatReclaimed"} <= kinds
        verdict = through_file(replay_from_events(MATCH_ID, events, actors=actors))
        assert verdict.ok, verdict.failure

    def test_a_party_matchs_table_settings_verify(self, standard: list[Event]) -> None:
        """A MatchCreated pinning its table's settings (version 3, as a party's match is
        created) re-decides to the same event: the file verifies, its settings intact."""
        created = standard[0]
        assert isinstance(created, MatchCreated)
        table = MatchTable(party_id="p-1", turn_limit=60, ranked=True, cpu_speed="fast")
        events = [msgspec.structs.replace(created, table=table), *standard[1:]]
        replay = load_replay(dump_replay(replay_from_events(MATCH_ID, events)))
        assert replay.events[0].schema_version == MatchCreated.schema_version == 3
        assert '"table":{"party_id":"p-1","turn_limit":60' in replay.events[0].data
        verdict = verify_replay(replay)
        assert verdict.ok, verdict.failure
        assert verdict.events == len(events)

    def test_file_keeps_exact_event_bytes_and_actors(self, standard: list[Event]) -> None:
        """Dump then load gives back the same replay, field for field."""
        replay = replay_from_events(MATCH_ID, standard, actors=["a"] * len(standard))
        assert load_replay(dump_replay(replay)) == replay


class TestTampering:
    def test_flipped_byte_breaks_the_chain(self, standard: list[Event]) -> None:
        """One byte changed in an event's stored data: the hash chain names that event."""
        replay = replay_from_events(MATCH_ID, standard)
        target = replay.events[40]
        target.data = target.data.replace('"seat":', '"seat": ', 1)
        assert_fails(through_file(replay), "hash_chain", 40)

    def test_changed_stored_hash_breaks_the_chain(self, standard: list[Event]) -> None:
        """A hash edited in the file no longer matches its event."""
        replay = replay_from_events(MATCH_ID, standard)
        digest = replay.events[100].hash
        replay.events[100].hash = ("0" if digest[0] != "0" else "1") + digest[1:]
        assert_fails(through_file(replay), "hash_chain", 100)

    def test_hashes_are_compared_as_values_not_spellings(self, standard: list[Event]) -> None:
        """The chain compares the file's hex as text first, for speed, but a hash is a
        value: upper-case hex is the same hash; a prev_hash or hash that is not hex, or
        names another hash, is named at its event."""
        replay = replay_from_events(MATCH_ID, standard)
        for e in replay.events[5:9]:
            e.prev_hash, e.hash = e.prev_hash.upper(), e.hash.upper()
        assert through_file(replay).ok
        for field, value, version in [
            ("prev_hash", "not hex", 50),
            ("hash", "not hex", 50),
            ("prev_hash", "00" * 32, 60),
            ("hash", "", 70),
        ]:
            replay = replay_from_events(MATCH_ID, standard)
            setattr(replay.events[version], field, value)
            assert_fails(through_file(replay), "hash_chain", version)

    def test_dropped_event_breaks_the_chain(self, standard: list[Event]) -> None:
        """Removing an event leaves a version gap, named at the gap's position with the
        type of the event that now stands there."""
        replay = replay_from_events(MATCH_ID, standard)
        del replay.events[10]
        verdict = through_file(replay)
        assert_fails(verdict, "hash_chain", 10)
        assert verdict.failure is not None
        assert verdict.failure.event_type == replay.events[10].type
        assert verdict.failure.message == "version 11 where 10 was expected"

    def test_swapped_events_are_named_by_position(self, standard: list[Event]) -> None:
        """Two events swapped: the first slot out of order is named, with its occupant."""
        replay = replay_from_events(MATCH_ID, standard)
        replay.events[5], replay.events[6] = replay.events[6], replay.events[5]
        verdict = through_file(replay)
        assert_fails(verdict, "hash_chain", 5)
        assert verdict.failure is not None
        assert verdict.failure.event_type == replay.events[5].type

    def test_changed_die_is_caught_by_the_dice_check(self, standard: list[Event]) -> None:
        """A die changed (chain recomputed) no longer matches the seed's derivation."""
        events = standard[:]
        i = first_index(events, lambda _i, e: isinstance(e, DieRolled) and e.n == 30)
        roll = events[i]
        assert isinstance(roll, DieRolled)
        events[i] = msgspec.structs.replace(roll, value=roll.value % 6 + 1)
        verdict = through_file(rebuilt(events))
        assert_fails(verdict, "dice", i)
        assert verdict.failure is not None and "roll 30" in verdict.failure.message

    def test_skipped_roll_number_is_caught(self, standard: list[Event]) -> None:
        """Roll numbers must count every die of the match, with no gaps."""
        events = standard[:]
        i = first_index(events, lambda _i, e: isinstance(e, DieRolled) and e.n == 12)
        roll = events[i]
        assert isinstance(roll, DieRolled)
        events[i] = msgspec.structs.replace(roll, n=13)
        assert_fails(through_file(rebuilt(events)), "dice", i)

    def test_illegal_move_is_caught(self, standard: list[Event]) -> None:
        """A move the rules forbid (leaving the nest on a die the rules don't allow) fails
        as `legal_move`."""
        events = standard[:]
        state = MatchState()
        for i, event in enumerate(events):
            if (
                isinstance(event, PieceMoved)
                and event.die not in (None, 6)
                and event.frm != NEST
                and NEST in state.pieces[event.seat]
            ):
                nest_piece = state.pieces[event.seat].index(NEST)
                events[i] = msgspec.structs.replace(event, piece=nest_piece, frm=NEST, to=0)
                break
            apply(state, event)
        else:  # pragma: no cover - the golden match has such a move
            pytest.fail("no move to forge")
        verdict = through_file(rebuilt(events))
        assert_fails(verdict, "legal_move", i)
        assert verdict.failure is not None and f"piece {nest_piece}" in verdict.failure.message

    def test_wrong_destination_is_caught(self, standard: list[Event]) -> None:
        """A real piece moved by the right die but recorded landing elsewhere."""
        events = standard[:]
        i = first_index(
            events, lambda _i, e: isinstance(e, PieceMoved) and e.frm >= 0 and e.die == 3
        )
        move = events[i]
        assert isinstance(move, PieceMoved)
        events[i] = msgspec.structs.replace(move, to=move.to + 1)
        assert_fails(through_file(rebuilt(events)), "legal_move", i)

    def test_out_of_turn_roll_is_caught(self, standard: list[Event]) -> None:
        """A roll by a seat whose turn it is not fails `turn_order`."""
        events = standard[:]
        i = first_index(events, lambda i, e: isinstance(e, DieRolled) and i > 20)
        roll = events[i]
        assert isinstance(roll, DieRolled)
        events[i] = msgspec.structs.replace(roll, seat=(roll.seat + 1) % 4)
        assert_fails(through_file(rebuilt(events)), "turn_order", i)

    def test_missing_bonus_roll_is_caught(self, standard: list[Event]) -> None:
        """A six that earned no bonus (recorded bonus 0) fails `bonus_rolls`."""
        events = standard[:]
        i = first_index(events, lambda _i, e: isinstance(e, PieceMoved) and e.die == 6)
        move = events[i]
        assert isinstance(move, PieceMoved)
        events[i] = msgspec.structs.replace(move, bonus=0)
        assert_fails(through_file(rebuilt(events)), "bonus_rolls", i)

    def test_extra_roll_without_bonus_is_caught(self, standard: list[Event]) -> None:
        """Dropping a TurnEnded lets a seat roll again without a bonus."""
        events = standard[:]
        i = first_index(events, lambda i, e: isinstance(e, TurnEnded) and i > 30)
        del events[i]
        # Later dice no longer line up either, but the first failure is the missing end.
        assert_fails(through_file(rebuilt(events)), "bonus_rolls", i)

    def test_wrong_placements_are_caught(self, standard: list[Event]) -> None:
        """A MatchFinished with other places than the rules give fails `placements`."""
        events = standard[:]
        i = first_index(events, lambda _i, e: isinstance(e, MatchFinished))
        result = events[i]
        assert isinstance(result, MatchFinished)
        events[i] = MatchFinished(placements=tuple(reversed(result.placements)))
        assert_fails(through_file(rebuilt(events)), "placements", i)

    def test_seed_that_does_not_match_the_commitment(self, standard: list[Event]) -> None:
        """A revealed seed whose sha256 is not the published seed_hash fails `seed`."""
        events = [*standard[:-1], SeedRevealed(server_seed=server_seed("other").hex())]
        assert_fails(through_file(rebuilt(events)), "seed", len(events) - 1)

    def test_unrevealed_seed_is_not_verified(self, standard: list[Event]) -> None:
        """Without the seed, the dice cannot be checked: the file does not verify."""
        verdict = through_file(rebuilt(standard[:-1]))
        assert_fails(verdict, "finished", None)
        assert "never revealed" in (verdict.failure.message if verdict.failure else "")

    def test_match_in_play_is_not_verified(self, standard: list[Event]) -> None:
        """A replay of a match that has not ended names the `finished` check."""
        cut = first_index(standard, lambda i, e: isinstance(e, TurnEnded) and i > 200) + 1
        assert_fails(through_file(rebuilt(standard[:cut])), "finished", None)

    def test_stream_cut_inside_a_command(self, standard: list[Event]) -> None:
        """A stream that stops before the rules' consequences of its last command (here a
        roll with no legal move, whose pass and turn end are missing) fails `sequence`."""
        i = first_index(
            standard,
            lambda i, e: (
                isinstance(e, DieRolled)
                and i > 20
                and type(standard[i + 1]).__name__ == "RollPassed"
            ),
        )
        assert_fails(through_file(rebuilt(standard[: i + 1])), "sequence", i + 1)

    def test_event_after_the_end_is_caught(self, standard: list[Event]) -> None:
        """Nothing may follow the seed reveal."""
        events = [*standard, TurnTimedOut(seat=0, consecutive=1)]
        assert_fails(through_file(rebuilt(events)), "sequence", len(standard))

    def test_event_the_rules_never_produce_first(self, standard: list[Event]) -> None:
        """A TurnEnded where a command must start fails (the turn ends only by the rules)."""
        events = standard[:]
        i = first_index(events, lambda i, e: isinstance(e, DieRolled) and i > 20)
        prev = events[i - 1]
        assert isinstance(prev, TurnEnded)
        events.insert(i, TurnEnded(seat=prev.next_seat, next_seat=prev.next_seat))
        verdict = through_file(rebuilt(events))
        assert verdict.failure is not None and verdict.failure.version == i

    def test_header_that_disagrees_with_the_events(self, standard: list[Event]) -> None:
        """The file's summary must say what its events say."""
        replay = replay_from_events(MATCH_ID, standard)
        replay.placements = (1, 2, 3, 4)
        verdict = through_file(replay)
        assert_fails(verdict, "header", None)
        assert "placements" in (verdict.failure.message if verdict.failure else "")

    def test_match_id_must_be_the_streams(self, standard: list[Event]) -> None:
        """The header's match id (not hashed) must be the match its stream (hashed) names,
        or a genuine file could be presented as another match's."""
        for forged in ("", "not-a-uuid", "00000000-0000-0000-0000-000000000000"):
            replay = replay_from_events(MATCH_ID, standard)
            replay.match_id = forged
            verdict = through_file(replay)
            assert_fails(verdict, "header", None)
            assert "match_id" in (verdict.failure.message if verdict.failure else "")

    def test_events_bound_to_their_stream(self, standard: list[Event]) -> None:
        """Events copied under another match's stream id break the chain (the hash covers
        the stream id), so one match's history cannot be passed off as another's."""
        replay = replay_from_events(MATCH_ID, standard)
        replay.stream_id = "match-00000000-0000-0000-0000-000000000000"
        assert_fails(through_file(replay), "hash_chain", 0)


class TestFileFormat:
    def test_not_json(self) -> None:
        """Garbage is refused before any check runs, saying it is not JSON."""
        with pytest.raises(ReplayFormatError, match="not JSON"):
            load_replay(b"{nope")

    def test_wrong_format_name(self) -> None:
        """The `format` field is required and named in the error."""
        with pytest.raises(ReplayFormatError, match="`format`"):
            load_replay(b'{"format": "pgn"}')

    def test_newer_format_version(self, standard: list[Event]) -> None:
        """A file from a newer format version is refused with a hint, not misread."""
        raw = json.loads(dump_replay(replay_from_events(MATCH_ID, standard[:5])))
        raw["format_version"] = 99
        with pytest.raises(ReplayFormatError, match="format_version"):
            load_replay(json.dumps(raw).encode())

    def test_missing_field_is_named(self, standard: list[Event]) -> None:
        """A missing field is named by its JSON path."""
        raw = json.loads(dump_replay(replay_from_events(MATCH_ID, standard[:5])))
        del raw["events"][2]["hash"]
        with pytest.raises(ReplayFormatError, match=r"hash.*events\[2\]|events\[2\].*hash"):
            load_replay(json.dumps(raw).encode())


class TestWalk:
    def test_third_six_offers_no_choice(self) -> None:
        """A third six in a row is passed at once: `walk` lists no options for it, while
        an ordinary roll with no legal move lists an empty choice."""
        events, _ = scripted_match(parse_ruleset({"preset": "standard"}), 4, server_seed("6"))
        steps = list(walk(events))
        third = [
            s
            for s in steps[:-1]
            if isinstance(s.event, DieRolled)
            and type(steps[s.version + 1].event).__name__ == "RollPassed"
            and getattr(steps[s.version + 1].event, "reason", "") == "three_sixes"
        ]
        blocked = [
            s
            for s in steps[:-1]
            if isinstance(s.event, DieRolled)
            and getattr(steps[s.version + 1].event, "reason", "") == "no_legal_move"
        ]
        assert third and blocked
        assert all(s.options is None for s in third)
        assert all(s.options == () for s in blocked)


@pytest.mark.parametrize("version", [[1], {"v": 1}, "1", None, 1.5])
def test_a_format_version_of_another_type_is_a_format_error(version: object) -> None:
    """A replay whose format_version is a list, object, string or float is refused as a
    replay format error naming the field, not a crash (found by tests/replays/test_fuzz.py)."""
    raw = msgspec.json.encode({"format": "ludo-replay", "format_version": version, "x": 1})
    with pytest.raises(ReplayFormatError, match="format_version"):
        load_replay(raw)


class TestConceded:
    """A conceded match (`MatchConceded`, then `MatchFinished`) verifies; a forged one
    does not."""

    def test_a_conceded_match_verifies_with_the_conceder_last(self) -> None:
        """The concession is re-decided like any command: the file verifies, seat 0 last."""
        events, _ = conceded_match(parse_ruleset({"preset": "standard"}), 4, server_seed("c"))
        verdict = through_file(replay_from_events(MATCH_ID, events))
        assert verdict.ok, verdict.failure
        assert verdict.placements is not None and verdict.placements[0] == 4

    def test_a_conceder_moved_off_last_place_is_caught(self) -> None:
        """placements: the recorded places must be the rule's (the conceder last)."""
        events, _ = conceded_match(parse_ruleset({"preset": "standard"}), 3, server_seed("c"))
        at = first_index(events, lambda _i, e: isinstance(e, MatchFinished))
        finished = events[at]
        assert isinstance(finished, MatchFinished)
        # seat 0 (the conceder) first, the seat placed first last
        swapped = tuple(
            1 if p == len(finished.placements) else len(finished.placements) if p == 1 else p
            for p in finished.placements
        )
        assert swapped[0] == 1
        forged = [*events[:at], MatchFinished(placements=swapped), *events[at + 1 :]]
        assert_fails(through_file(rebuilt(forged)), "placements", at)

    def test_a_concession_against_another_player_is_caught(self) -> None:
        """sequence: a match with a second person still playing cannot have been conceded."""
        ruleset = parse_ruleset({"preset": "standard"})
        events, _ = conceded_match(ruleset, 3, server_seed("c"))
        at = first_index(events, lambda _i, e: isinstance(e, MatchConceded))
        created = events[0]
        assert isinstance(created, MatchCreated)
        people = tuple(
            SeatSpec(name=f"p{i}", player_id=f"player-{i}") if i < 2 else s
            for i, s in enumerate(created.seats)
        )
        forged = [msgspec.structs.replace(created, seats=people), *events[1:]]
        assert_fails(through_file(rebuilt(forged)), "sequence", at)
