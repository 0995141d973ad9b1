"""The replay viewer's and the dispute report's models are pure: built from events alone
(here a self-played match that never saw a database), with application errors, no HTTP."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import pytest

from domain.errors import NotFound
from domain.events import DieRolled, Event, MatchFinished, SeedRevealed, TurnEnded
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from replays.report import ConnectionLogEntry, report_view
from replays.viewer import WalkedMatch, steps_view, walk_match

START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def events() -> list[Event]:
    seed = hashlib.sha256(b"projections").digest()
    match = play_match(parse_ruleset({"preset": "bga"}), ["easy", "normal"], server_seed=seed)
    return [*match.events, SeedRevealed(server_seed=seed.hex())]


def _walked(events: list[Event]) -> WalkedMatch:
    return walk_match(
        "m-1",
        events,
        actors=[None] * len(events),
        recorded_at=[START + timedelta(seconds=i) for i in range(len(events))],
    )


def test_steps_view_has_one_step_per_event(events: list[Event]) -> None:
    """Every event is a step, with its die at a roll and the revealed seed at the end."""
    view = steps_view(_walked(events))
    assert [s.version for s in view.steps] == list(range(len(events)))
    assert [s.die for s in view.steps if s.type == "DieRolled"] == [
        e.value for e in events if isinstance(e, DieRolled)
    ]
    finished = next(e for e in events if isinstance(e, MatchFinished))
    assert view.status == "finished" and view.placements == list(finished.placements)
    revealed = events[-1]
    assert isinstance(revealed, SeedRevealed)
    assert view.fairness.server_seed == revealed.server_seed


def test_report_counts_turns_and_places_connections(events: list[Event]) -> None:
    """One report turn per TurnEnded (the last ends with the match); a connection before
    the start is in the prologue, one after the end in the epilogue."""
    after_end = START + timedelta(seconds=len(events) + 5)
    report = report_view(
        _walked(events),
        [
            ConnectionLogEntry(seat=0, kind="connected", at=START - timedelta(seconds=1)),
            ConnectionLogEntry(seat=1, kind="disconnected", at=after_end),
        ],
    )
    assert len(report.turns) == sum(isinstance(e, TurnEnded) for e in events) + 1
    assert report.prologue[0].kind == "connected"
    assert report.epilogue[-1].kind == "disconnected"
    assert [s.connects for s in report.summary] == [1, 0]
    assert [s.disconnects for s in report.summary] == [0, 1]


@pytest.mark.parametrize("drop", [None, 1])
def test_not_a_match_is_not_found(events: list[Event], drop: int | None) -> None:
    """No events, or a stream that does not open with MatchCreated: NotFound."""
    chosen = [] if drop is None else events[drop:]
    with pytest.raises(NotFound, match="no such match"):
        _walked(chosen)
