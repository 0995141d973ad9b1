"""Golden replays: files written by every released version keep verifying and folding to
the same result, including through upcasters when an event's schema version moves on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from domain import events as domain_events
from domain.decider import MatchState, apply, fold
from domain.events import MatchCreated, RollPassed
from domain.moves import has_course_piece
from domain.rules import parse_ruleset
from replays.format import build_replay, dump_replay, load_replay, replay_from_events
from replays.verify import verify_replay
from tests import paths

HERE = paths.GOLDEN / "replays"
# expected.json by write_v1.py, expected-v2.json by write_v2.py (the rules revisions),
# expected-v3.json by write_v3.py (the table's settings in MatchCreated).
EXPECTED: dict[str, dict[str, Any]] = {
    stem: entry
    for name in ("expected.json", "expected-v2.json", "expected-v3.json")
    for stem, entry in json.loads((HERE / name).read_text()).items()
}
FILES = sorted(HERE.glob("*.ludo-replay.json"))
BLOCKED = "three-tries-blocked-start-4p"


def test_every_expected_file_is_present() -> None:
    """Each recorded golden replay is still on disk (none was dropped or renamed)."""
    assert {f.name.removesuffix(".ludo-replay.json") for f in FILES} == set(EXPECTED)


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_golden_replay_verifies_and_folds_the_same(path: Path) -> None:
    """An old file verifies and folds to the recorded position and placements."""
    expected = EXPECTED[path.name.removesuffix(".ludo-replay.json")]
    replay = load_replay(path.read_bytes())
    verdict = verify_replay(replay)
    assert verdict.ok, verdict.failure
    state = fold(e.event() for e in replay.events)
    assert verdict.events == expected["events"]
    assert state.rolls_made == expected["rolls"]
    assert state.pieces == expected["pieces"]
    assert list(state.placements or ()) == expected["placements"]
    assert replay.events[-1].hash == expected["last_hash"]


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_exporting_the_events_again_gives_the_same_file(path: Path) -> None:
    """The header is summarised from the events as stored, so the file of an old match,
    built again by today's code, is byte for byte the file its users hold."""
    replay = load_replay(path.read_bytes())
    again = build_replay(replay.match_id, replay.stream_id, replay.events)
    assert dump_replay(again) == path.read_bytes()


def test_a_table_reads_back_from_its_match_created() -> None:
    """A match a party opened (MatchCreated at schema v3) keeps its table's settings in
    the event: the file's first event reads back with the table it was written with."""
    for stem, expected in EXPECTED.items():
        if "table" not in expected:
            continue
        replay = load_replay((HERE / f"{stem}.ludo-replay.json").read_bytes())
        created = replay.events[0].event()
        assert isinstance(created, MatchCreated)
        assert replay.events[0].schema_version == 3
        assert msgspec.to_builtins(created.table) == expected["table"]
        break
    else:
        pytest.fail("no golden replay records a table")


class TestRevisions:
    """The blocked-start case (tests/golden/replays/write_v2.py): an old file verifies as
    revision 1, which tried again; a new one as revision 2, which ends the tries."""

    @staticmethod
    def entering_passes(stem: str) -> tuple[int, set[bool]]:
        """The file's MatchCreated schema version, and the `retry` values of the rolls it
        passed after an entering value while the seat had nothing on the course and tries
        left."""
        replay = load_replay((HERE / f"{stem}.ludo-replay.json").read_bytes())
        assert verify_replay(replay).ok
        state = MatchState()
        retries = []
        for stored in replay.events:
            event = stored.event()
            if (
                isinstance(event, RollPassed)
                and state.board is not None
                and state.die in state.board.enter_on
                and not has_course_piece(state.board, state.pieces, event.seat)
                and state.tries < 2
            ):
                retries.append(event.retry)
            apply(state, event)
        return replay.events[0].schema_version, set(retries)

    def test_an_old_file_verifies_as_revision_1_and_retried(self) -> None:
        """Stored at MatchCreated v1 (no revision in its ruleset): read as revision 1, under
        which the blocked entering value was a failed try, and it verifies so."""
        replay = load_replay((HERE / f"v1-{BLOCKED}-r1.ludo-replay.json").read_bytes())
        assert "revision" not in replay.ruleset
        created = replay.events[0].event()
        assert isinstance(created, MatchCreated) and parse_ruleset(created.ruleset).revision == 1
        assert self.entering_passes(f"v1-{BLOCKED}-r1") == (1, {True})

    def test_a_new_file_verifies_as_revision_2_and_ended_the_tries(self) -> None:
        """Stored at MatchCreated v2, revision 2 pinned: the blocked entering value ends the
        tries, and it verifies so."""
        replay = load_replay((HERE / f"v2-{BLOCKED}.ludo-replay.json").read_bytes())
        assert replay.ruleset["revision"] == 2
        assert self.entering_passes(f"v2-{BLOCKED}") == (2, {False})

    def test_a_file_claiming_the_other_revision_fails_at_that_roll(self) -> None:
        """The revision is evidence: the old file's events re-pinned to revision 2 (chain
        rebuilt by a forger) fail at the roll where revision 2 ends the tries."""
        replay = load_replay((HERE / f"v1-{BLOCKED}-r1.ludo-replay.json").read_bytes())
        events = [e.event() for e in replay.events]
        created = events[0]
        assert isinstance(created, MatchCreated)
        forged = [
            msgspec.structs.replace(created, ruleset={**created.ruleset, "revision": 2}),
            *events[1:],
        ]
        verdict = verify_replay(replay_from_events(replay.match_id, forged))
        assert verdict.failure is not None and verdict.failure.check == "bonus_rolls"
        assert verdict.failure.event_type == "RollPassed"
        assert "retry=False" in verdict.failure.message


class TestUpcasting:
    """DieRolled moves to schema version 2 (as a future change would); stored version-1
    rows must go through the upcaster and the old files must still verify."""

    @pytest.fixture
    def die_rolled_v2(self, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []

        def upcast(data: dict[str, Any]) -> dict[str, Any]:
            seen.append(data)
            return {**data}

        monkeypatch.setattr(domain_events.DieRolled, "schema_version", 2)
        monkeypatch.setitem(domain_events.UPCASTERS, ("DieRolled", 1), upcast)
        return seen

    @pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
    def test_old_events_upcast_and_still_verify(
        self, path: Path, die_rolled_v2: list[dict[str, Any]]
    ) -> None:
        """Every stored v1 DieRolled passes through the upcaster; the replay verifies."""
        replay = load_replay(path.read_bytes())
        verdict = verify_replay(replay)
        assert verdict.ok, verdict.failure
        assert len(die_rolled_v2) == verdict.rolls
        assert all(d["type"] == "DieRolled" for d in die_rolled_v2)

    def test_missing_upcaster_is_named(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With no upcaster for a stored version, verification names the event that
        cannot be read instead of crashing."""
        monkeypatch.setattr(domain_events.DieRolled, "schema_version", 2)
        replay = load_replay(FILES[0].read_bytes())
        verdict = verify_replay(replay)
        assert verdict.failure is not None
        assert verdict.failure.check == "events"
        assert verdict.failure.event_type == "DieRolled"
        assert "no upcaster for DieRolled v1" in verdict.failure.message
