"""Wrote the table-settings golden replay in this directory and expected-v3.json: one match
whose MatchCreated is at schema v3, carrying its table (`MatchTable`: party, turn limit,
ranked, CPU speed), as every match a party opens has been stored since the settings moved
into the event.

The match is the perft case `standard-4p-r2` of tests/golden/matches-r2.json, its
MatchCreated given a table; the table changes the event's bytes and so every hash after
it, not the play (the fold ignores it). The file pins that such a match keeps verifying,
folding and exporting byte for byte, and that its table reads back as written.

Like write_v1.py and write_v2.py, this is history: never rerun it to "fix" a failing test,
and never edit the files it wrote.

    PYTHONPATH=. python3 tests/golden/replays/write_v3.py
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec

from domain.decider import fold
from domain.events import Event, MatchCreated, MatchTable, SeedRevealed
from replays.format import dump_replay
from tests.golden.make_golden import play
from tests.golden.replays.write_v2 import stored_replay

HERE = Path(__file__).parent
STEM = "v3-standard-4p-table"
MATCH_ID = "3f9a1c6e-8b27-4d05-a4e1-6c2b9d7f0a13"
CASE = "standard-4p-r2"
TABLE = MatchTable(party_id="b51e7d20-94c3-4a8f-8d16-0e7f3a2c5b98", turn_limit=30, cpu_speed="fast")


def with_table(events: list[Event]) -> list[Event]:
    """`events` with the MatchCreated given `TABLE` (the other events unchanged)."""
    return [
        msgspec.structs.replace(e, table=TABLE) if isinstance(e, MatchCreated) else e
        for e in events
    ]


def main() -> None:
    cases = {
        c["name"]: c for c in json.loads((HERE.parent / "matches-r2.json").read_text())["cases"]
    }
    case = cases[CASE]
    events = with_table([*play(case).events, SeedRevealed(server_seed=case["server_seed"])])
    replay = stored_replay(MATCH_ID, events)
    assert replay.events[0].schema_version == MatchCreated.schema_version == 3
    (HERE / f"{STEM}.ludo-replay.json").write_bytes(dump_replay(replay))
    state = fold(events)
    expected = {
        STEM: {
            "events": len(events),
            "rolls": state.rolls_made,
            "pieces": state.pieces,
            "placements": list(state.placements or ()),
            "last_hash": replay.events[-1].hash,
            "table": msgspec.to_builtins(TABLE),
        }
    }
    (HERE / "expected-v3.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
