"""Events (docs/design.md#events-and-their-versions): the tagged union, schema versions, encoding
and upcasting."""

from __future__ import annotations

import typing
from typing import Any

import msgspec
import pytest

import domain.events
from domain.commands import CreateMatch
from domain.decider import MatchState, decide, fold
from domain.events import (
    EVENT_TYPES,
    UPCASTERS,
    DieRolled,
    MatchConceded,
    MatchCreated,
    MatchFinished,
    MatchStarted,
    MatchTable,
    PieceMoved,
    PlayerFinished,
    RollPassed,
    SeatReclaimed,
    SeatSpec,
    SeatStoodIn,
    SeedRevealed,
    TurnEnded,
    TurnTimedOut,
    decode_event,
    encode_event,
)
from domain.rules import parse_ruleset, ruleset_to_dict
from domain.selfplay import play_match
from tests.conftest import SEED_HASH, SERVER_SEED, rules, seat_specs, start_events

# At least one instance of every event type, with every optional field set somewhere.
SAMPLES: list[Any] = [
    MatchCreated(
        ruleset=ruleset_to_dict(rules("bga")),
        seats=(
            SeatSpec(name="Aki", player_id="p-1"),
            SeatSpec(name="cpu", cpu="hard"),
            SeatSpec(name="日本語の名前"),
        ),
        seed_hash=SEED_HASH,
        first_seat=2,
    ),
    MatchCreated(ruleset=ruleset_to_dict(rules()), seats=seat_specs(2), seed_hash=SEED_HASH),
    MatchStarted(client_seeds=("a", "", "c"), client_seed="a||c"),
    DieRolled(seat=1, n=417, value=6),
    PieceMoved(seat=0, piece=3, frm=-1, to=0),
    PieceMoved(seat=2, piece=1, frm=5, to=11, captures=((0, 1), (0, 2)), die=6, bonus=2),
    RollPassed(seat=0, reason="no_legal_move"),
    RollPassed(seat=3, reason="no_legal_move", retry=True),
    RollPassed(seat=1, reason="three_sixes"),
    TurnEnded(seat=3, next_seat=0),
    PlayerFinished(seat=1, place=2),
    MatchConceded(seat=2),
    MatchFinished(placements=(1, 3, 3, 2)),
    TurnTimedOut(seat=0, consecutive=3),
    SeatStoodIn(seat=0, reason="timeouts"),
    SeatStoodIn(seat=1, reason="disconnected"),
    SeatStoodIn(seat=2, reason="left"),
    SeatReclaimed(seat=2),
    SeedRevealed(server_seed=SERVER_SEED.hex()),
]


def sample_id(event: Any) -> str:
    return type(event).__name__


class TestTaggedUnion:
    """Every event type is a msgspec Struct tagged by its class name, with a schema_version."""

    def test_samples_cover_every_event_type(self) -> None:
        """The samples below exercise all twelve event types."""
        assert {type(e).__name__ for e in SAMPLES} == set(EVENT_TYPES)
        assert set(typing.get_args(domain.events.Event)) == set(EVENT_TYPES.values())

    @pytest.mark.parametrize("name", sorted(EVENT_TYPES))
    def test_schema_version_is_present_on_every_type(self, name: str) -> None:
        """Each type carries an integer schema_version >= 1 as class data, not a field."""
        cls = EVENT_TYPES[name]
        assert isinstance(cls.schema_version, int)
        assert cls.schema_version >= 1
        assert "schema_version" not in cls.__struct_fields__

    @pytest.mark.parametrize("name", sorted(EVENT_TYPES))
    def test_the_tag_is_the_class_name(self, name: str) -> None:
        """The `type` tag of the encoded form is the class name, the registry key."""
        cls = EVENT_TYPES[name]
        assert cls.__name__ == name
        assert cls.__struct_config__.tag == name
        assert cls.__struct_config__.tag_field == "type"

    def test_events_are_immutable(self) -> None:
        """Events are frozen facts."""
        with pytest.raises(AttributeError):
            SAMPLES[3].value = 1


class TestRoundTrip:
    """encode_event/decode_event are inverse and byte-stable."""

    @pytest.mark.parametrize("event", SAMPLES, ids=sample_id)
    def test_every_event_type_round_trips(self, event: Any) -> None:
        """decode(encode(e)) == e, with or without the stored type and version."""
        data = encode_event(event)
        assert data.startswith(b'{"type":"' + type(event).__name__.encode() + b'"')
        assert decode_event(data) == event
        version = type(event).schema_version
        assert decode_event(data, type_name=type(event).__name__, schema_version=version) == event

    @pytest.mark.parametrize("event", SAMPLES, ids=sample_id)
    def test_encoding_is_canonical(self, event: Any) -> None:
        """Re-encoding a decoded event gives the same bytes (they are hashed)."""
        data = encode_event(event)
        assert encode_event(decode_event(data)) == data

    @pytest.mark.parametrize("preset", ["standard", "bga"])
    def test_every_event_of_a_played_match_round_trips(self, preset: str) -> None:
        """All events of a whole CPU match survive encode → decode unchanged."""
        record = play_match(rules(preset), ["easy"] * 4, server_seed=SERVER_SEED, keep_events=True)
        for event in record.events:
            assert decode_event(encode_event(event)) == event

    def test_decode_rejects_malformed_events(self) -> None:
        """Missing fields or an unknown tag are decode errors."""
        with pytest.raises(msgspec.ValidationError):
            decode_event(b'{"type":"DieRolled","seat":0}')
        with pytest.raises(msgspec.ValidationError):
            decode_event(b'{"type":"Teleported","seat":0}')


class TestUpcasting:
    """Old stored versions are upcast on read by pure functions in UPCASTERS."""

    OLD = b'{"type":"DieRolled","seat":1,"n":9,"face":4}'  # a made-up v1 with `face`

    @staticmethod
    def face_to_value(raw: dict[str, Any]) -> dict[str, Any]:
        out = dict(raw)
        out["value"] = out.pop("face")
        return out

    def test_decode_upcasts_an_old_version(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With DieRolled at v2 and a v1 → v2 upcaster, stored v1 bytes decode to the v2 event."""
        monkeypatch.setattr(DieRolled, "schema_version", 2)
        monkeypatch.setitem(UPCASTERS, ("DieRolled", 1), self.face_to_value)
        got = decode_event(self.OLD, type_name="DieRolled", schema_version=1)
        assert got == DieRolled(seat=1, n=9, value=4)

    def test_upcasters_chain_across_versions(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """v1 → v2 → v3: each upcaster runs once, in order."""
        calls: list[int] = []

        def v1(raw: dict[str, Any]) -> dict[str, Any]:
            calls.append(1)
            return {**raw, "n": raw["n"] + 100}

        def v2(raw: dict[str, Any]) -> dict[str, Any]:
            calls.append(2)
            return self.face_to_value(raw)

        monkeypatch.setattr(DieRolled, "schema_version", 3)
        monkeypatch.setitem(UPCASTERS, ("DieRolled", 1), v1)
        monkeypatch.setitem(UPCASTERS, ("DieRolled", 2), v2)
        assert decode_event(self.OLD, type_name="DieRolled", schema_version=1) == DieRolled(
            seat=1, n=109, value=4
        )
        assert calls == [1, 2]

    def test_missing_upcaster_is_an_error(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An old version without its upcaster cannot be read silently."""
        monkeypatch.setattr(DieRolled, "schema_version", 2)
        with pytest.raises(ValueError, match="no upcaster for DieRolled v1"):
            decode_event(self.OLD, type_name="DieRolled", schema_version=1)

    def test_a_version_newer_than_the_code_is_an_error(self) -> None:
        """Data from a newer schema than this code knows is refused."""
        data = encode_event(DieRolled(seat=0, n=0, value=1))
        with pytest.raises(ValueError, match="newer than this code"):
            decode_event(data, type_name="DieRolled", schema_version=2)

    def test_an_unknown_type_name_is_an_error(self) -> None:
        """A stored type that no event class has is refused."""
        with pytest.raises(ValueError, match="unknown event type"):
            decode_event(b"{}", type_name="Teleported", schema_version=1)

    def test_every_old_version_has_an_upcaster_and_none_is_stale(self) -> None:
        """Each type has an upcaster for every version below its current one, and no other."""
        expected = {
            (name, version)
            for name, cls in EVENT_TYPES.items()
            for version in range(1, cls.schema_version)
        }
        assert set(UPCASTERS) == expected


class TestMatchCreatedRevision:
    """MatchCreated v2 pins the rules' revision; a stored v1 was played under revision 1."""

    # MatchCreated as schema version 1 stored it: a ruleset of options only.
    V1 = (
        b'{"type":"MatchCreated","ruleset":{"board":"cross","enter_on":[6],'
        b'"empty_course":"three_tries","three_sixes":true,"capture_bonus":true,'
        b'"goal_bonus":false,"safe_squares":"start_and_star","blocks":"double",'
        b'"exact_finish":true,"play_to_end":false,"rotate_first":true,"quick_start":false},'
        b'"seats":[{"name":"p0","player_id":"player-0","cpu":null},'
        b'{"name":"p1","player_id":"player-1","cpu":null}],"seed_hash":"'
        + SEED_HASH.encode()
        + b'",'
        b'"first_seat":0}'
    )

    def test_a_stored_v1_decodes_to_revision_1(self) -> None:
        """The upcaster adds `revision: 1` to the ruleset and changes nothing else."""
        assert MatchCreated.schema_version == 3
        got = decode_event(self.V1, type_name="MatchCreated", schema_version=1)
        assert isinstance(got, MatchCreated)
        assert got.ruleset == {**msgspec.json.decode(self.V1)["ruleset"], "revision": 1}
        assert parse_ruleset(got.ruleset) == rules(empty_course="three_tries", revision=1)

    def test_the_upcaster_is_pure(self) -> None:
        """The stored form it is given is left as it was (a new dict comes back)."""
        raw = msgspec.json.decode(self.V1)
        before = msgspec.json.encode(raw)
        UPCASTERS[("MatchCreated", 1)](raw)
        assert msgspec.json.encode(raw) == before

    def test_a_new_match_pins_the_current_revision(self) -> None:
        """MatchCreated written today carries the revision inside its ruleset."""
        data = encode_event(start_events(rules())[0])
        assert b'"quick_start":false,"revision":2}' in data

    def test_a_v1_claiming_a_revision_is_refused(self) -> None:
        """No v1 ever held a revision: one that does is refused, not silently read as 1."""
        forged = self.V1.replace(b'"quick_start":false}', b'"quick_start":false,"revision":2}')
        assert forged != self.V1
        with pytest.raises(ValueError, match="MatchCreated v1 has no revision"):
            decode_event(forged, type_name="MatchCreated", schema_version=1)

    @pytest.mark.parametrize("data", [b"[]", b'{"type":"MatchCreated","ruleset":7}'])
    def test_a_malformed_v1_is_a_decode_error(self, data: bytes) -> None:
        """Bytes that are no v1 MatchCreated are refused as such, not a crash."""
        with pytest.raises((ValueError, msgspec.ValidationError)):
            decode_event(data, type_name="MatchCreated", schema_version=1)


class TestMatchCreatedTable:
    """Version 3: the table's settings (`MatchTable`) in MatchCreated; a v2 has none (its
    `matches` row holds them) and a match without a table is written as a v2 was."""

    TABLE = MatchTable(party_id="party-1", turn_limit=30, ranked=True, cpu_speed="fast")

    def _created(self, table: MatchTable | None) -> MatchCreated:
        command = CreateMatch(
            ruleset=rules(), seats=seat_specs(2, None), seed_hash=SEED_HASH, table=table
        )
        events = decide(command, MatchState())
        assert isinstance(events, list) and isinstance(events[0], MatchCreated)
        return events[0]

    def test_a_party_match_pins_its_table(self) -> None:
        """The command's table is the event's, in its bytes, and the folded state's."""
        created = self._created(self.TABLE)
        data = encode_event(created)
        assert b'"table":{"party_id":"party-1","turn_limit":30,"ranked":true,' in data
        again = decode_event(data, type_name="MatchCreated", schema_version=3)
        assert again == created
        assert fold([again]).table == self.TABLE

    def test_no_table_writes_the_bytes_of_a_v2(self) -> None:
        """Self-play and the golden files: no `table` key at all, the state's table None."""
        created = self._created(None)
        assert b"table" not in encode_event(created)
        assert encode_event(created) == encode_event(start_events(rules())[0])
        assert fold([created]).table is None

    def test_a_stored_v2_decodes_without_a_table(self) -> None:
        """A v2 (every match stored before) decodes as it was: its settings are its row's."""
        v2 = encode_event(start_events(rules())[0])
        got = decode_event(v2, type_name="MatchCreated", schema_version=2)
        assert isinstance(got, MatchCreated) and got.table is msgspec.UNSET
        assert fold([got]).table is None

    def test_a_v2_claiming_a_table_is_refused(self) -> None:
        """No v2 ever held a table: one that does is refused, not read."""
        forged = encode_event(self._created(self.TABLE))
        with pytest.raises(ValueError, match="MatchCreated v2 has no table"):
            decode_event(forged, type_name="MatchCreated", schema_version=2)

    def test_the_v2_upcaster_is_pure(self) -> None:
        """The stored form it is given comes back as it was, unchanged."""
        raw = msgspec.json.decode(encode_event(start_events(rules())[0]))
        before = msgspec.json.encode(raw)
        assert UPCASTERS[("MatchCreated", 2)](raw) == raw
        assert msgspec.json.encode(raw) == before
