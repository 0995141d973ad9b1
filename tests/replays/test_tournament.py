"""The offline verification of a tournament file (exported from an arena stored in a real
PostgreSQL): it names the first thing that does not hold (tampered bytes, a forged result
or pairing re-hashed by someone who knows the chain, a missing or foreign match), the
file's format, and the golden files."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from domain.arena import ArenaCreated, PlayerPaused, ResultScored, TablesPaired
from replays.format import load_replay
from replays.tournament import (
    TournamentFile,
    TournamentFormatError,
    arena_events,
    build_tournament,
    dump_tournament,
    load_tournament,
)
from replays.tournament_verify import TournamentVerdict, verify_tournament
from services.match.replays.tournament_export import tournament_from_store
from services.shared.database import create_engine
from services.shared.eventstore import EventStore
from tests import paths
from tests.arena_fixtures import ArenaRecord, build_arena, forge_event, rehash, store_arena
from tests.databases import migrated_database

GOLDEN = paths.GOLDEN / "tournaments"


@pytest.fixture(scope="module")
def record() -> ArenaRecord:
    return build_arena()


async def _store_and_export(url: str, record: ArenaRecord) -> bytes:
    engine = create_engine(url, pool_size=2, max_overflow=2)
    try:
        store = EventStore(engine)
        await store_arena(store, record)
        return dump_tournament(await tournament_from_store(store, record.arena_id))
    finally:
        await engine.dispose()


@pytest.fixture(scope="module")
def exported(record: ArenaRecord, server_url: str, template_name: str) -> Iterator[bytes]:
    """The arena stored in a fresh PostgreSQL database and exported from it (once for the
    module: the tampering tests each load their own copy)."""
    with migrated_database(server_url, template_name) as url:
        yield asyncio.run(_store_and_export(url, record))


def loaded(exported: bytes) -> TournamentFile:
    return load_tournament(exported)


def through_file(tournament: TournamentFile) -> TournamentVerdict:
    """Verify the file as one on disk would be: dumped to bytes, then loaded."""
    return verify_tournament(load_tournament(dump_tournament(tournament)))


def version_of(tournament: TournamentFile, kind: type, nth: int = 0) -> int:
    """The stream version of the `nth` arena event of class `kind`."""
    return [e.version for e in tournament.events if e.type == kind.__name__][nth]


def event_at(tournament: TournamentFile, version: int) -> object:
    return msgspec.json.decode(tournament.events[version].data, type=ResultScored | TablesPaired)


def assert_fails(
    verdict: TournamentVerdict, check: str, version: int | None, match_id: str | None = None
) -> None:
    assert not verdict.ok
    assert verdict.failure is not None
    failure = verdict.failure
    assert (failure.check, failure.version, failure.match_id) == (check, version, match_id), failure


class TestTampering:
    def test_the_export_verifies(self, exported: bytes) -> None:
        """The module's exported file verifies untouched (the tests below change one
        thing each)."""
        verdict = verify_tournament(loaded(exported))
        assert verdict.ok, verdict.failure

    def test_a_flipped_byte_in_an_arena_event_is_named_by_version(self, exported: bytes) -> None:
        """One byte of an arena event's stored data changed: the chain names its version."""
        tournament = loaded(exported)
        version = version_of(tournament, ResultScored, 1)
        target = tournament.events[version]
        assert '"place":1' in target.data
        target.data = target.data.replace('"place":1', '"place":2', 1)
        assert_fails(through_file(tournament), "hash_chain", version)

    def test_a_flipped_byte_in_a_match_is_named_by_match(self, exported: bytes) -> None:
        """One byte of a match's event changed: the match is named, with the arena event
        (its result) that needed it, and the replay's own verdict in the message."""
        tournament = loaded(exported)
        match = tournament.matches[2]
        roll = next(e for e in match.events if e.type == "DieRolled")
        value = msgspec.json.decode(roll.data)["value"]
        roll.data = roll.data.replace(f'"value":{value}', f'"value":{value % 6 + 1}', 1)
        verdict = through_file(tournament)
        scored = [
            e.version
            for e in tournament.events
            if match.match_id in e.data and e.type == "ResultScored"
        ]
        assert_fails(verdict, "match", scored[0], match.match_id)
        assert verdict.failure is not None
        assert "hash_chain" in verdict.failure.message
        assert verdict.failure.describe().startswith(f"match {match.match_id} (event {scored[0]})")

    @pytest.mark.parametrize("forgery", ["points", "place"])
    def test_a_forged_result_rehashed_is_named_as_the_result(
        self, exported: bytes, forgery: str
    ) -> None:
        """A ResultScored whose points (or place and points) were changed and the chain
        recomputed: the replay's end gives another result, named at that event."""
        tournament = loaded(exported)
        version = version_of(tournament, ResultScored, 1)
        scored = event_at(tournament, version)
        assert isinstance(scored, ResultScored)
        loser = next(i for i, r in enumerate(scored.results) if r.place == 2)
        changes: dict[str, object] = {"points": 2.0}
        if forgery == "place":
            changes["place"] = 1
        results = list(scored.results)
        results[loser] = msgspec.structs.replace(results[loser], **changes)
        forged = msgspec.structs.replace(scored, results=tuple(results))
        forge_event(tournament.events, tournament.stream_id, version, forged)
        verdict = through_file(tournament)
        assert_fails(verdict, "result", version)
        assert verdict.failure is not None and f"results[{loser}]" in verdict.failure.message

    @pytest.mark.parametrize("after", [0.0, 0.005, 0.03])
    def test_a_pause_recorded_at_or_after_the_end_is_refused(
        self, exported: bytes, after: float
    ) -> None:
        """A pause whose time is at or after the arena's end (the chain recomputed, the
        end not recorded before it): `decide` refuses it, named at that event."""
        tournament = loaded(exported)
        version = version_of(tournament, PlayerPaused)
        paused = msgspec.json.decode(tournament.events[version].data, type=PlayerPaused)
        created = msgspec.json.decode(tournament.events[0].data, type=ArenaCreated)
        end = created.starts_at + 60 * created.minutes
        late = msgspec.structs.replace(paused, at=end + after)
        forge_event(tournament.events, tournament.stream_id, version, late)
        verdict = through_file(tournament)
        assert_fails(verdict, "sequence", version)
        assert verdict.failure is not None and "arena_over" in verdict.failure.message

    def test_a_version_1_event_claiming_a_time_is_named(self, exported: bytes) -> None:
        """A PlayerPaused whose row says version 1 but whose data carries a time (no code
        ever wrote that): the check `events` names it."""
        tournament = loaded(exported)
        version = version_of(tournament, PlayerPaused)
        tournament.events[version].schema_version = 1
        rehash(tournament.events, tournament.stream_id, version)
        verdict = through_file(tournament)
        assert_fails(verdict, "events", version)
        assert verdict.failure is not None and "v1 has no time" in verdict.failure.message

    def test_a_missing_match_replay_is_named(self, exported: bytes) -> None:
        """A paired match without its replay: named as a `match` failure at its result."""
        tournament = loaded(exported)
        dropped = tournament.matches.pop(3)
        verdict = through_file(tournament)
        scored = next(
            e.version
            for e in tournament.events
            if e.type == "ResultScored" and dropped.match_id in e.data
        )
        assert_fails(verdict, "match", scored, dropped.match_id)
        assert verdict.failure is not None and "no replay" in verdict.failure.message

    def test_a_replay_the_arena_never_paired_is_named(self, exported: bytes) -> None:
        """A replay of a match no pairing seated (a golden replay slipped in) fails."""
        tournament = loaded(exported)
        foreign = load_replay(
            (paths.GOLDEN / "replays" / "v1-standard-2p-standins.ludo-replay.json").read_bytes()
        )
        tournament.matches.append(foreign)
        assert_fails(through_file(tournament), "match", None, foreign.match_id)

    def test_a_pairing_seating_a_paused_player_is_named(
        self, exported: bytes, record: ArenaRecord
    ) -> None:
        """The second pass forged to seat the player paused for leaving, re-hashed: the
        pairing re-derived from the stream differs, named at that event."""
        tournament = loaded(exported)
        version = version_of(tournament, TablesPaired, 1)
        paired = event_at(tournament, version)
        assert isinstance(paired, TablesPaired)
        table = paired.tables[0]
        forged_table = msgspec.structs.replace(table, players=(record.left, table.players[1]))
        forged = msgspec.structs.replace(paired, tables=(forged_table, *paired.tables[1:]))
        forge_event(tournament.events, tournament.stream_id, version, forged)
        verdict = through_file(tournament)
        assert_fails(verdict, "pairing", version)
        assert verdict.failure is not None and "tables[0]" in verdict.failure.message

    def test_a_match_paired_twice_is_named_as_pairing(self, exported: bytes) -> None:
        """A pass that reuses a match id of an earlier table (a result scored twice)."""
        tournament = loaded(exported)
        first = event_at(tournament, version_of(tournament, TablesPaired, 0))
        version = version_of(tournament, TablesPaired, 1)
        paired = event_at(tournament, version)
        assert isinstance(first, TablesPaired) and isinstance(paired, TablesPaired)
        reused = msgspec.structs.replace(paired.tables[0], match_id=first.tables[0].match_id)
        forge_event(
            tournament.events,
            tournament.stream_id,
            version,
            msgspec.structs.replace(paired, tables=(reused,)),
        )
        verdict = through_file(tournament)
        assert_fails(verdict, "pairing", version)
        assert verdict.failure is not None and "paired before" in verdict.failure.message

    def test_matches_under_other_rules_are_named(self, exported: bytes) -> None:
        """The arena re-created (re-hashed) as a `bga` arena: its standard matches are not
        under its rules; the first match is named."""
        tournament = loaded(exported)
        created = tournament.events[0]
        created.data = created.data.replace('"rules":"standard"', '"rules":"bga"')
        rehash(tournament.events, tournament.stream_id, 0)
        verdict = through_file(tournament)
        first = tournament.matches[0].match_id
        assert_fails(verdict, "match", version_of(tournament, ResultScored, 0), first)
        assert verdict.failure is not None and "arena's rules" in verdict.failure.message

    def test_forged_standings_are_named(self, exported: bytes) -> None:
        """The header's standings say another score: the `standings` check names the line."""
        tournament = loaded(exported)
        line = tournament.standings[1]
        tournament.standings[1] = msgspec.structs.replace(line, score=line.score + 2)
        verdict = through_file(tournament)
        assert_fails(verdict, "standings", None)
        assert verdict.failure is not None and verdict.failure.where == "line 2"

    def test_a_truncated_stream_leaves_a_match_unscored(self, exported: bytes) -> None:
        """The stream cut after a pairing (the chain holds): a paired match never scored."""
        tournament = loaded(exported)
        cut = version_of(tournament, TablesPaired, 2)
        tournament.events = tournament.events[: cut + 1]
        verdict = through_file(tournament)
        assert verdict.failure is not None and verdict.failure.check == "result"
        assert "never scored" in verdict.failure.message

    def test_another_arenas_id_is_named_in_the_header(self, exported: bytes) -> None:
        """The file's `tournament_id` is not the arena its (hashed) stream names."""
        tournament = loaded(exported)
        tournament.tournament_id = "00000000-0000-4000-8000-000000000000"
        assert_fails(through_file(tournament), "header", None)


class TestFormat:
    def test_a_replay_file_is_not_a_tournament_file(self) -> None:
        """A match's replay given as a tournament: refused, saying what it is."""
        raw = (paths.GOLDEN / "replays" / "v1-standard-2p-standins.ludo-replay.json").read_bytes()
        with pytest.raises(TournamentFormatError, match="a match's replay"):
            load_tournament(raw)

    def test_a_bad_field_is_named(self, exported: bytes) -> None:
        """A field of the wrong type deep in the file: the error gives its path."""
        raw = exported.replace(b'"first_seat":0', b'"first_seat":"0"', 1)
        with pytest.raises(TournamentFormatError, match=r"\$\.matches\[0\]\.first_seat"):
            load_tournament(raw)

    def test_a_newer_format_version_is_refused(self, exported: bytes) -> None:
        """A format version this code does not read is named as such."""
        raw = exported.replace(b'"format_version":1', b'"format_version":2', 1)
        with pytest.raises(TournamentFormatError, match="format_version"):
            load_tournament(raw)


class TestGolden:
    @pytest.mark.parametrize("path", sorted(GOLDEN.glob("*.ludo-tournament.json")), ids=str)
    def test_golden_file_verifies_and_builds_again_the_same(self, path: Path) -> None:
        """A file written by an earlier version keeps verifying, and building it again
        from its events and matches gives the same bytes."""
        raw = path.read_bytes()
        tournament = load_tournament(raw)
        verdict = verify_tournament(tournament)
        assert verdict.ok, verdict.failure
        again = build_tournament(
            tournament.tournament_id,
            tournament.events,
            tournament.matches,
            exported_at=tournament.exported_at,
            exported_by=tournament.exported_by,
        )
        assert dump_tournament(again) == raw

    def test_there_is_a_golden_file(self) -> None:
        """The golden folder holds at least the version-1 file."""
        assert (GOLDEN / "v1-arena-bga-2p.ludo-tournament.json").exists()

    @pytest.mark.parametrize(
        ("name", "versions", "scoring"),
        [("v1-arena-bga-2p", {1}, 1), ("v2-arena-bga-2p", {2}, 2)],
    )
    def test_each_golden_arena_keeps_its_scoring_revision(
        self, name: str, versions: set[int], scoring: int
    ) -> None:
        """The file of v1 events (no scoring, no times) reads as scoring revision 1 and
        its pauses without a time; the file of v2 events as revision 2, every pause timed."""
        tournament = load_tournament((GOLDEN / f"{name}.ludo-tournament.json").read_bytes())
        stored = {e.schema_version for e in tournament.events if e.type == "ArenaCreated"}
        assert stored == versions
        events = arena_events(tournament.events)
        created = events[0]
        assert isinstance(created, ArenaCreated) and created.scoring == scoring
        pauses = [e for e in events if isinstance(e, PlayerPaused)]
        assert pauses and all((e.at is None) == (scoring == 1) for e in pauses)
