"""Regenerate the engine's "perft" — whole CPU matches pinned: tests/golden/matches.json and
tests/golden/matches-r2.json.

Each case fixes a ruleset (preset + overrides), a player count, a server seed (hex), the
seats' client seeds and the first seat; every seat is CPU "easy". For each case the file
records what the engine produced: the event count, the number of dice rolled, the final
pieces, the placements, and the sha256 of all events' bytes as a store holds them
(`stored_bytes`) concatenated. tests/domain/test_golden.py replays every case and compares.

Rules revisions (domain.rules.REVISIONS): matches.json was written before revisions existed,
so its cases name none and are played under revision 1, their MatchCreated hashed in the
schema-1 form that recorded them. Every case of matches-r2.json names its revision, so a
later revision leaves it as it is. Never regenerate matches.json itself: it is history, and
`main` refuses to change it.

Run this ONLY when the engine's behaviour deliberately changes (a rule fix, a new event
field, a change to the easy CPU or to the dice), never to make a failing golden test pass
without understanding why it failed. Review the printed differences, then commit the new
file together with the change that caused them:

    PYTHONPATH=. python3 tests/golden/make_golden.py
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from domain.events import Event, MatchCreated, decode_event, encode_event
from domain.rules import parse_ruleset
from domain.selfplay import MatchRecord, play_match

HERE = Path(__file__).parent

# (name, rules spec, players, first seat, client seeds). The server seed is sha256(name).
# Together the cases cover both presets, 2/3/4 players and every non-default option value.
CASES: list[tuple[str, dict[str, Any], int, int, list[str] | None]] = [
    ("standard-2p", {"preset": "standard"}, 2, 0, None),
    ("standard-3p", {"preset": "standard"}, 3, 1, ["alice", "bob", "carol"]),
    ("standard-4p", {"preset": "standard"}, 4, 3, None),
    ("bga-2p", {"preset": "bga"}, 2, 1, ["x", ""]),
    ("bga-3p", {"preset": "bga"}, 3, 2, None),
    ("bga-4p", {"preset": "bga"}, 4, 0, ["1", "2", "3", "4"]),
    ("by-players-3p", {"board": "by_players"}, 3, 0, None),
    ("enter-on-1-6-4p", {"enter_on": [1, 6]}, 4, 2, None),
    ("auto-enter-3p", {"empty_course": "auto_enter"}, 3, 0, None),
    ("three-tries-4p", {"empty_course": "three_tries"}, 4, 1, None),
    (
        "no-three-sixes-no-capture-bonus-2p",
        {"three_sixes": False, "capture_bonus": False},
        2,
        0,
        None,
    ),
    ("goal-bonus-no-exact-finish-3p", {"goal_bonus": True, "exact_finish": False}, 3, 2, None),
    (
        "safe-start-no-overtaking-4p",
        {"safe_squares": "start", "blocks": "no_overtaking"},
        4,
        0,
        None,
    ),
    ("safe-none-blocks-none-2p", {"safe_squares": "none", "blocks": "none"}, 2, 1, None),
    ("play-to-end-4p", {"play_to_end": True}, 4, 0, ["a b", "c|d", "~", ""]),
    (
        "play-to-end-quick-start-no-rotate-3p",
        {"play_to_end": True, "quick_start": True, "rotate_first": False},
        3,
        1,
        None,
    ),
    (
        "bga-double-play-to-end-4p",
        {"preset": "bga", "blocks": "double", "play_to_end": True},
        4,
        3,
        None,
    ),
    (
        "bga-safe-none-three-tries-2p",
        {"preset": "bga", "safe_squares": "none", "empty_course": "three_tries", "enter_on": [6]},
        2,
        0,
        None,
    ),
]


# Cases of the revisions: the rules spelled with their revision, and (last) the name whose
# sha256 is the server seed, so a pair can play one seed under two revisions. The seed and
# client seed were searched for a match where a seat with nothing on the course rolls a 6
# while an opponent's block stands on its start square (event 464): revision 2 passes it
# and ends the tries; revision 1 tried again, and from there the two matches part.
# standard-4p-r2 is matches.json's standard-4p under revision 2: the same match.
BLOCKED = "three-tries-blocked-start-4p"
REVISION_CASES: list[tuple[str, dict[str, Any], int, int, list[str] | None, str]] = [
    (BLOCKED, {"empty_course": "three_tries", "revision": 2}, 4, 1, ["s137", "", "", ""], BLOCKED),
    (
        f"{BLOCKED}-r1",
        {"empty_course": "three_tries", "revision": 1},
        4,
        1,
        ["s137", "", "", ""],
        BLOCKED,
    ),
    ("standard-4p-r2", {"preset": "standard", "revision": 2}, 4, 3, None, "standard-4p"),
]

# file name -> the cases it holds
FILES: dict[str, list[Any]] = {"matches.json": CASES, "matches-r2.json": REVISION_CASES}


def play(case: dict[str, Any]) -> MatchRecord:
    """Play a case as its file describes it (a case naming no revision: revision 1)."""
    return play_match(
        parse_ruleset({"revision": 1, **case["rules"]}),
        ["easy"] * case["players"],
        server_seed=bytes.fromhex(case["server_seed"]),
        client_seeds=case["client_seeds"],
        first_seat=case["first_seat"],
        keep_events=True,
    )


def stored_bytes(event: Event) -> bytes:
    """The bytes a store holds for `event`. A revision-1 match was recorded by MatchCreated
    schema version 1, whose ruleset has no `revision` (the upcaster puts `revision: 1` back
    on read, and that round trip is checked here)."""
    if isinstance(event, MatchCreated) and event.ruleset.get("revision") == 1:
        ruleset = {k: v for k, v in event.ruleset.items() if k != "revision"}
        data = encode_event(msgspec.structs.replace(event, ruleset=ruleset))
        assert decode_event(data, type_name="MatchCreated", schema_version=1) == event
        return data
    return encode_event(event)


def expected(match: MatchRecord) -> dict[str, Any]:
    """What a file records of a case's match."""
    stream = b"".join(stored_bytes(event) for event in match.events)
    return {
        "event_count": match.event_count,
        "rolls": match.state.rolls_made,
        "pieces": match.state.pieces,
        "placements": list(match.state.placements or ()),
        "events_sha256": hashlib.sha256(stream).hexdigest(),
    }


def record(
    name: str,
    spec: dict[str, Any],
    players: int,
    first_seat: int,
    client_seeds: list[str] | None,
    seed_name: str | None = None,
) -> dict[str, Any]:
    """Play one case and describe the result as it is stored in its file."""
    case: dict[str, Any] = {
        "name": name,
        "rules": spec,
        "players": players,
        "server_seed": hashlib.sha256((seed_name or name).encode()).hexdigest(),
        "client_seeds": client_seeds,
        "first_seat": first_seat,
    }
    case["expected"] = expected(play(case))
    return case


def render(cases: list[dict[str, Any]]) -> str:
    # One case per line: readable, and a behaviour change shows as a diff of just its cases.
    lines = ",\n".join(" " + json.dumps(case, ensure_ascii=False) for case in cases)
    return '{"cases": [\n' + lines + "\n]}\n"


def main() -> int:
    for name, specs in FILES.items():
        out = HERE / name
        cases = [record(*case) for case in specs]
        old = {c["name"]: c for c in json.loads(out.read_text())["cases"]} if out.exists() else {}
        for case in cases:
            before = old.get(case["name"])
            if before != case:
                print(f"{'changed' if before else 'new'}: {name} {case['name']}", file=sys.stderr)
        if name == "matches.json" and out.exists() and out.read_text() != render(cases):
            print("refused: matches.json is history and must not change", file=sys.stderr)
            return 1
        out.write_text(render(cases))
        print(f"wrote {len(cases)} cases to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
