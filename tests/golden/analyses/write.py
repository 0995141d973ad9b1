"""Writes the golden analyses: `ludo replay analyse` of each golden replay in
tests/golden/replays, as `<name>.analysis.json` here.

Unlike the golden replays, these are rewritten on purpose when the evaluator changes (a new
network, a refitted fallback: `domain.analysis.EVALUATOR` changes with it, and the old files
stay reproducible with the code of their evaluator). tests/replays/test_analyse.py checks
that the offline command and the service both give exactly these bytes.

    PYTHONPATH=. python3 tests/golden/analyses/write.py
"""

from __future__ import annotations

from pathlib import Path

from domain.analysis import analyse, encode
from replays.format import load_replay

HERE = Path(__file__).parent
REPLAYS = HERE.parent / "replays"


def golden_pairs() -> list[tuple[Path, Path]]:
    """(replay file, its golden analysis) for every golden replay."""
    return [
        (replay, HERE / replay.name.replace(".ludo-replay.json", ".analysis.json"))
        for replay in sorted(REPLAYS.glob("*.ludo-replay.json"))
    ]


def main() -> None:
    for replay_path, out in golden_pairs():
        replay = load_replay(replay_path.read_bytes())
        out.write_bytes(encode(analyse([e.event() for e in replay.events])))
        print(f"wrote {out.relative_to(HERE.parent.parent.parent)}")


if __name__ == "__main__":
    main()
