"""Wrote the version-1 golden replays in this directory (format v1, every event schema v1).

Golden replays are history: they stand for files users already hold. Never rerun this to
"fix" a failing test, and never edit the files it wrote. When the format or an event's
schema version changes, add a new writer (write_v2.py …) next to this one and keep the
old files: tests/replays/test_golden_replays.py requires every one of them to keep
verifying and folding to the result recorded in expected.json.

    PYTHONPATH=. python3 tests/golden/replays/write_v1.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from domain.decider import fold
from domain.rules import parse_ruleset
from replays.format import dump_replay, replay_from_events
from tests.replays.scripted import scripted_match, server_seed

HERE = Path(__file__).parent
CASES: list[tuple[str, str, dict[str, Any], int, int, int]] = [
    # (file stem, match id, rules, players, cpu seats, rng seed)
    (
        "v1-standard-2p-standins",
        "0b7d3c52-1f3e-4c1a-9a53-6f0e2a7c9d01",
        {"preset": "standard"},
        2,
        0,
        3,
    ),
    ("v1-bga-3p-cpu", "5a1e8f20-7c4b-4e2d-8b61-93d0c4f2ab02", {"preset": "bga"}, 3, 1, 11),
    (
        "v1-by-players-4p-quick",
        "c3f9a6d1-2b8e-4f70-a5c4-1d7e9b3f6c03",
        {"board": "by_players", "quick_start": True, "empty_course": "auto_enter"},
        4,
        2,
        5,
    ),
]


def main() -> None:
    expected = {}
    for stem, match_id, rules, players, cpus, rng in CASES:
        events, actors = scripted_match(
            parse_ruleset(rules), players, server_seed(stem), rng_seed=rng, cpu_seats=cpus
        )
        replay = replay_from_events(match_id, events, actors=actors)
        (HERE / f"{stem}.ludo-replay.json").write_bytes(dump_replay(replay))
        state = fold(events)
        expected[stem] = {
            "events": len(events),
            "rolls": state.rolls_made,
            "pieces": state.pieces,
            "placements": list(state.placements or ()),
            "last_hash": replay.events[-1].hash,
        }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
