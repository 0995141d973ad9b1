"""Wrote the rules-revision golden replays in this directory (format v1; MatchCreated at
schema v2 pins the rules' revision) and expected-v2.json.

Both files are one match, the perft case `three-tries-blocked-start-4p` of
tests/golden/matches-r2.json: a seat with nothing on the course rolls a 6 while an
opponent's block stands on its start square.

- `v2-three-tries-blocked-start-4p`: played under revision 2, as a new match is stored: the
  roll is passed and ends the tries (`retry: false`).
- `v1-three-tries-blocked-start-4p-r1`: the same seeds under revision 1, every event at
  schema v1, exactly as the code before revisions stored and exported it (the roll was a
  failed try, `retry: true`). Checked once against that code (main at bad85ab): it writes
  these very bytes.

Like write_v1.py, this is history: never rerun it to "fix" a failing test, and never edit
the files it wrote.

    PYTHONPATH=. python3 tests/golden/replays/write_v2.py
"""

from __future__ import annotations

import json
from pathlib import Path

from domain.chain import GENESIS, event_hash
from domain.decider import fold
from domain.events import Event, SeedRevealed, encode_event
from replays.format import ReplayEvent, ReplayFile, build_replay, dump_replay
from tests.golden.make_golden import BLOCKED, play, stored_bytes

HERE = Path(__file__).parent
CASES = [
    # (file stem, match id, perft case)
    ("v2-three-tries-blocked-start-4p", "7d2c9e41-3b6a-4f58-8e07-2a9d5c1b7e04", BLOCKED),
    ("v1-three-tries-blocked-start-4p-r1", "e8a4b7c2-5d19-4c3e-9f62-7b0a1d8e3f05", f"{BLOCKED}-r1"),
]


def stored_replay(match_id: str, events: list[Event]) -> ReplayFile:
    """A replay of `events` as a store holds them (`stored_bytes`: a revision-1 match's
    MatchCreated at schema v1), hashed as the event store hashes on append."""
    stream = f"match-{match_id}"
    prev = GENESIS
    out: list[ReplayEvent] = []
    for version, event in enumerate(events):
        data = stored_bytes(event)
        kind = type(event)
        schema = kind.schema_version if data == encode_event(event) else 1
        digest = event_hash(prev, stream, version, kind.__name__, schema, data)
        out.append(
            ReplayEvent(
                version=version,
                type=kind.__name__,
                schema_version=schema,
                data=data.decode("utf-8"),
                prev_hash=prev.hex(),
                hash=digest.hex(),
            )
        )
        prev = digest
    return build_replay(match_id, stream, out)


def main() -> None:
    cases = {
        c["name"]: c for c in json.loads((HERE.parent / "matches-r2.json").read_text())["cases"]
    }
    expected = {}
    for stem, match_id, name in CASES:
        case = cases[name]
        events = [*play(case).events, SeedRevealed(server_seed=case["server_seed"])]
        replay = stored_replay(match_id, events)
        (HERE / f"{stem}.ludo-replay.json").write_bytes(dump_replay(replay))
        state = fold(events)
        expected[stem] = {
            "events": len(events),
            "rolls": state.rolls_made,
            "pieces": state.pieces,
            "placements": list(state.placements or ()),
            "last_hash": replay.events[-1].hash,
        }
    (HERE / "expected-v2.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
