"""Wrote the second golden tournament file in this directory: the file format is still
version 1, its arena events are the second generation (ArenaCreated v2 with `scoring`
2, the reading of a match the ratings share; PlayerPaused v2 with the time it was
decided). The first file (write_v1.py) holds the v1 events, read through the upcasters.

Golden files are history: they stand for files users already hold. Never rerun this to
"fix" a failing test, and never edit the file it wrote. When the format or an arena
event's schema version changes, add a new writer next to this one and keep the old
files: tests/replays/test_tournament.py requires every `*.ludo-tournament.json` here to
keep verifying and to build again byte for byte.

    PYTHONPATH=. python3 tests/golden/tournaments/write_v2.py
"""

from __future__ import annotations

from pathlib import Path

from replays.tournament import dump_tournament
from tests.arena_fixtures import arena_file, build_arena

HERE = Path(__file__).parent
ARENA_ID = "5c2d8e41-7a9b-4c3d-8e2f-1a0b9c8d7e6f"


def main() -> None:
    # A `bga` arena: its matches are shorter than `standard`'s, the file half the size.
    tournament = arena_file(build_arena(ARENA_ID, rules="bga"))
    (HERE / "v2-arena-bga-2p.ludo-tournament.json").write_bytes(dump_tournament(tournament))


if __name__ == "__main__":
    main()
