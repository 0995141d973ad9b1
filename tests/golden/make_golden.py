"""Regenerate tests/golden/matches.json: the engine's "perft" — whole CPU matches pinned.

Each case fixes a ruleset (preset + overrides), a player count, a server seed (hex), the
seats' client seeds and the first seat; every seat is CPU "easy". For each case the file
records what the engine produced: the event count, the number of dice rolled, the final
pieces, the placements, and the sha256 of all events' `encode_event` bytes concatenated.
tests/test_golden.py replays every case and compares.

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

from domain.events import encode_event
from domain.rules import parse_ruleset
from domain.selfplay import play_match

OUT = Path(__file__).with_name("matches.json")

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


def record(
    name: str, spec: dict[str, Any], players: int, first_seat: int, client_seeds: list[str] | None
) -> dict[str, Any]:
    """Play one case and describe the result as it is stored in matches.json."""
    server_seed = hashlib.sha256(name.encode()).hexdigest()
    match = play_match(
        parse_ruleset(spec),
        ["easy"] * players,
        server_seed=bytes.fromhex(server_seed),
        client_seeds=client_seeds,
        first_seat=first_seat,
        keep_events=True,
    )
    stream = b"".join(encode_event(event) for event in match.events)
    return {
        "name": name,
        "rules": spec,
        "players": players,
        "server_seed": server_seed,
        "client_seeds": client_seeds,
        "first_seat": first_seat,
        "expected": {
            "event_count": match.event_count,
            "rolls": match.state.rolls_made,
            "pieces": match.state.pieces,
            "placements": list(match.state.placements or ()),
            "events_sha256": hashlib.sha256(stream).hexdigest(),
        },
    }


def main() -> int:
    cases = [record(*case) for case in CASES]
    old = {c["name"]: c for c in json.loads(OUT.read_text())["cases"]} if OUT.exists() else {}
    for case in cases:
        before = old.get(case["name"])
        if before != case:
            print(f"{'changed' if before else 'new'}: {case['name']}", file=sys.stderr)
    # One case per line: readable, and a behaviour change shows as a diff of just its cases.
    lines = ",\n".join(" " + json.dumps(case, ensure_ascii=False) for case in cases)
    OUT.write_text('{"cases": [\n' + lines + "\n]}\n")
    print(f"wrote {len(cases)} cases to {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
