"""`ludo replay analyse FILE` as a user runs it: the golden bytes, offline, for replays
that verify, and a clear refusal for the others."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from domain.events import SeedRevealed
from domain.rules import parse_ruleset
from domain.selfplay import play_match
from ludo_cli.main import main
from tests import paths
from tests.golden.analyses.write import golden_pairs
from tests.ludo_cli.test_replay_cmd import forge_die, write
from tests.replays.scripted import server_seed


@pytest.mark.parametrize(("replay", "golden"), golden_pairs(), ids=lambda p: p.name[:30])
def test_each_golden_replay_analyses_to_its_golden_bytes(
    replay: Path, golden: Path, tmp_path: Path
) -> None:
    """The written file is byte for byte the golden analysis (the service stores the same:
    tests/services/ranking/test_analysis_consumer.py)."""
    out = tmp_path / "analysis.json"
    assert main(["replay", "analyse", str(replay), "-o", str(out)]) == 0
    assert out.read_bytes() == golden.read_bytes()


def test_stdout_is_the_analysis_and_progress_goes_to_stderr() -> None:
    """Printed to stdout, the JSON is the golden bytes; what it is doing goes to stderr."""
    replay, golden = golden_pairs()[0]
    done = subprocess.run(
        [sys.executable, "-m", "ludo_cli.main", "replay", "analyse", str(replay)],
        capture_output=True,
        cwd=paths.ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == golden.read_bytes()
    assert b"analysing" in done.stderr


def test_a_replay_that_does_not_verify_is_not_analysed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A forged die: exit 1, nothing on stdout, and the failed check named on stderr."""
    seed = server_seed("analyse")
    match = play_match(parse_ruleset({"preset": "bga"}), ["easy"] * 2, server_seed=seed)
    events = [*match.events, SeedRevealed(server_seed=seed.hex())]
    _, forged = forge_die(events, 5)
    path = write(tmp_path, "forged.json", forged)
    assert main(["replay", "analyse", str(path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "NOT VERIFIED, not analysed" in captured.err and "dice" in captured.err
