"""Golden replays: files written by every released version keep verifying and folding to
the same result, including through upcasters when an event's schema version moves on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from domain import events as domain_events
from domain.decider import fold
from replays.format import load_replay
from replays.verify import verify_replay

HERE = Path(__file__).parents[1] / "golden" / "replays"
EXPECTED: dict[str, dict[str, Any]] = json.loads((HERE / "expected.json").read_text())
FILES = sorted(HERE.glob("*.ludo-replay.json"))


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
