"""Golden matches: the engine's "perft". Whole CPU matches replayed and compared with
tests/golden/matches.json (recorded before rules revisions existed: revision 1) and
tests/golden/matches-r2.json (cases naming their revision), both written by
tests/golden/make_golden.py (see its docstring for when to regenerate). A failure here
means the engine now plays some match differently."""

from __future__ import annotations

import json
import typing
from typing import Any

import msgspec
import pytest

from domain.decider import MatchState, apply, fold
from domain.events import DieRolled, MatchCreated, RollPassed, decode_event, encode_event
from domain.moves import has_course_piece
from domain.rules import PRESETS, REVISIONS, Ruleset, parse_ruleset
from tests import paths
from tests.conftest import snapshot
from tests.golden.make_golden import BLOCKED, FILES, expected, play

HERE = paths.GOLDEN
CASES = {name: json.loads((HERE / name).read_text())["cases"] for name in FILES}
GOLDEN = [case for cases in CASES.values() for case in cases]
BY_NAME = {c["name"]: c for c in GOLDEN}


def rules_of(case: dict[str, Any]) -> Ruleset:
    """The ruleset a case is played under (naming no revision: revision 1)."""
    return parse_ruleset({"revision": 1, **case["rules"]})


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_golden_match_replays_identically(case: dict[str, Any]) -> None:
    """The match plays out to the recorded event count, pieces, placements and event bytes."""
    match = play(case)
    assert snapshot(fold(match.events)) == snapshot(match.state)
    assert expected(match) == case["expected"]
    assert [decode_event(encode_event(e)) for e in match.events] == match.events


def test_golden_cases_cover_presets_player_counts_and_every_option_value() -> None:
    """Both presets, 2/3/4 players, every revision, and every non-default value of every
    option appear."""
    assert {c["rules"].get("preset", "standard") for c in GOLDEN} == set(PRESETS)
    assert {c["players"] for c in GOLDEN} == {2, 3, 4}
    assert len({c["name"] for c in GOLDEN}) == len(GOLDEN) >= 16
    used = [rules_of(c) for c in GOLDEN]
    assert {r.revision for r in used} == set(REVISIONS)
    default = PRESETS["standard"]
    for field in default.__struct_fields__:
        values = {getattr(r, field) for r in used}
        assert values - {getattr(default, field)}, f"no golden case changes {field}"
    for option in msgspec.structs.fields(Ruleset):
        if typing.get_origin(option.type) is typing.Literal:
            assert {getattr(r, option.name) for r in used} == set(typing.get_args(option.type))


def test_matches_json_cases_name_no_revision() -> None:
    """matches.json predates revisions: its cases name none (so they are revision 1), and
    every case of matches-r2.json names its own."""
    assert all("revision" not in c["rules"] for c in CASES["matches.json"])
    assert all("revision" in c["rules"] for c in CASES["matches-r2.json"])


@pytest.mark.parametrize("case", CASES["matches.json"], ids=lambda c: c["name"])
def test_revision_2_plays_every_old_case_the_same(case: dict[str, Any]) -> None:
    """No matches.json case meets the corrected rule: under revision 2 each plays the very
    same events, the pinned revision in MatchCreated aside."""
    old = play(case).events
    new = play({**case, "rules": {**case["rules"], "revision": 2}}).events
    assert isinstance(old[0], MatchCreated) and isinstance(new[0], MatchCreated)
    assert (old[0].ruleset["revision"], new[0].ruleset["revision"]) == (1, 2)
    assert msgspec.structs.replace(new[0], ruleset=old[0].ruleset) == old[0]
    assert new[1:] == old[1:]


def test_blocked_start_case_parts_the_revisions_at_the_entering_roll() -> None:
    """One seed under both revisions: identical until a seat with nothing on the course
    rolls an entering value that a block on its start square stops; revision 2 ends its
    tries there (retry false), revision 1 tried again (retry true)."""
    r2 = play(BY_NAME[BLOCKED]).events
    r1 = play(BY_NAME[f"{BLOCKED}-r1"]).events
    at = next(i for i in range(1, len(r1)) if r1[i] != r2[i])
    assert r1[1:at] == r2[1:at]
    assert r2[at] == msgspec.structs.replace(r1[at], retry=False)
    passed = r1[at]
    assert isinstance(passed, RollPassed) and passed.retry and passed.reason == "no_legal_move"
    state = fold(r1[:at])
    rolled = r1[at - 1]
    assert isinstance(rolled, DieRolled) and state.board is not None
    assert rolled.value in state.board.enter_on
    assert not has_course_piece(state.board, state.pieces, passed.seat) and state.tries < 2


def test_revision_2_cases_never_retry_after_an_entering_value() -> None:
    """In every revision-2 golden match, a roll passed after an entering value never tries
    again (the corrected reading of docs/rules.md#revisions-of-the-rules)."""
    checked = 0
    for case in GOLDEN:
        if rules_of(case).revision < 2:
            continue
        state = MatchState()
        for event in play(case).events:
            if isinstance(event, RollPassed) and state.die in rules_of(case).enter_on:
                assert not event.retry
                checked += 1
            apply(state, event)
    assert checked > 0
