"""The replay viewer's and the dispute report's models are pure: built from events alone
(here a self-played match that never saw a database), with application errors, no HTTP."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from domain.errors import NotFound
from domain.events import DieRolled, Event, MatchFinished, SeedRevealed, TurnEnded
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from replays.report import ConnectionLogEntry, report_view
from replays.viewer import NO_FACTS, EventFacts, WalkedMatch, steps_view, walk_match
from tests.replays.scripted import conceded_match

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


def test_report_lines_carry_the_facts_the_viewer_words_events_from(events: list[Event]) -> None:
    """Each event of the report has its step's facts and the report the viewer's first seat
    and commitment, so that one function words both pages; a connection has no facts.

    A roll's `chosen` aside: the viewer's names the piece its choice moved."""
    walked = _walked(events)
    view = steps_view(walked)
    report = report_view(walked, [ConnectionLogEntry(seat=1, kind="connected", at=START)])
    lines = report.prologue + [e for t in report.turns for e in t.entries] + report.epilogue
    facts = [f.name for f in msgspec.structs.fields(EventFacts)]
    said = {s.version: s for s in view.steps}
    for line in lines:
        mine = {name: getattr(line, name) for name in facts}
        if line.kind != "event":
            assert mine == msgspec.structs.asdict(NO_FACTS)
            continue
        assert line.version is not None
        step = said.pop(line.version)
        theirs = {name: getattr(step, name) for name in facts}
        if step.type == "DieRolled":
            theirs["chosen"] = None
        assert mine == theirs, step.type
    assert said == {}
    assert (report.first_seat, report.fairness) == (view.first_seat, view.fairness)


@pytest.mark.parametrize("drop", [None, 1])
def test_not_a_match_is_not_found(events: list[Event], drop: int | None) -> None:
    """No events, or a stream that does not open with MatchCreated: NotFound."""
    chosen = [] if drop is None else events[drop:]
    with pytest.raises(NotFound, match="no such match"):
        _walked(chosen)


def test_a_concession_is_the_players_act_marked_and_said_in_the_viewer_and_the_report() -> None:
    """The viewer's step of `MatchConceded` is the player's (`by`), marked `concede`, said
    in English; the report ends the turn it happened in with the match."""
    seed = hashlib.sha256(b"conceded").digest()
    conceded, _ = conceded_match(parse_ruleset({"preset": "standard"}), 3, seed)
    walked = _walked(conceded)
    view = steps_view(walked)
    step = next(s for s in view.steps if s.type == "MatchConceded")
    assert (step.seat, step.by, step.marks) == (0, "player", ["concede"])
    assert step.text == "yellow (p0) concedes: the match ends, yellow (p0) last"
    assert view.status == "finished" and view.placements is not None
    assert view.placements[0] == 3
    report = report_view(walked, [])
    last = report.turns[-1]
    assert [e.type for e in last.entries][-2:] == ["MatchConceded", "MatchFinished"]
    assert last.ended_at is not None
