"""Golden matches: the engine's "perft". Whole CPU matches replayed and compared with
tests/golden/matches.json (written by tests/golden/make_golden.py; see its docstring for
when to regenerate). A failure here means the engine now plays some match differently."""

from __future__ import annotations

import hashlib
import json
import typing
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import snapshot

from domain.decider import fold
from domain.events import decode_event, encode_event
from domain.rules import PRESETS, Ruleset, parse_ruleset
from domain.selfplay import play_match

GOLDEN = json.loads((Path(__file__).parent / "golden" / "matches.json").read_text())["cases"]


def replay(case: dict[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """Play a golden case again and describe it the way matches.json does."""
    match = play_match(
        parse_ruleset(case["rules"]),
        ["easy"] * case["players"],
        server_seed=bytes.fromhex(case["server_seed"]),
        client_seeds=case["client_seeds"],
        first_seat=case["first_seat"],
        keep_events=True,
    )
    stream = b"".join(encode_event(e) for e in match.events)
    assert snapshot(fold(match.events)) == snapshot(match.state)
    got = {
        "event_count": match.event_count,
        "rolls": match.state.rolls_made,
        "pieces": match.state.pieces,
        "placements": list(match.state.placements or ()),
        "events_sha256": hashlib.sha256(stream).hexdigest(),
    }
    return got, match.events


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_golden_match_replays_identically(case: dict[str, Any]) -> None:
    """The match plays out to the recorded event count, pieces, placements and event bytes."""
    got, events = replay(case)
    assert got == case["expected"]
    assert [decode_event(encode_event(e)) for e in events] == events


def test_golden_cases_cover_presets_player_counts_and_every_option_value() -> None:
    """Both presets, 2/3/4 players, and every non-default value of every option appear."""
    assert {c["rules"].get("preset", "standard") for c in GOLDEN} == set(PRESETS)
    assert {c["players"] for c in GOLDEN} == {2, 3, 4}
    assert len({c["name"] for c in GOLDEN}) == len(GOLDEN) >= 16
    used = [parse_ruleset(c["rules"]) for c in GOLDEN]
    default = PRESETS["standard"]
    for field in default.__struct_fields__:
        values = {getattr(r, field) for r in used}
        assert values - {getattr(default, field)}, f"no golden case changes {field}"
    for option in msgspec.structs.fields(Ruleset):
        if typing.get_origin(option.type) is typing.Literal:
            assert {getattr(r, option.name) for r in used} == set(typing.get_args(option.type))
