"""Wrote the version-1 golden tournament file in this directory (format v1).

Golden files are history: they stand for files users already hold. Never rerun this to
"fix" a failing test, and never edit the file it wrote. When the format or an arena
event's schema version changes, add a new writer (write_v2.py …) next to this one and keep
the old file: tests/replays/test_tournament.py requires every `*.ludo-tournament.json`
here to keep verifying and to build again byte for byte.

    PYTHONPATH=. python3 tests/golden/tournaments/write_v1.py
"""

from __future__ import annotations

from pathlib import Path

from replays.tournament import dump_tournament
from tests.arena_fixtures import arena_file, build_arena

HERE = Path(__file__).parent
ARENA_ID = "3e6f9a12-5b7c-4d8e-9f01-2a3b4c5d6e7f"


def main() -> None:
    # A `bga` arena: its matches are shorter than `standard`'s, the file half the size.
    tournament = arena_file(build_arena(ARENA_ID, rules="bga"))
    (HERE / "v1-arena-bga-2p.ludo-tournament.json").write_bytes(dump_tournament(tournament))


if __name__ == "__main__":
    main()
