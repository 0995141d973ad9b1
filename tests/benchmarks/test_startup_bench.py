"""`ludo bench startup` run tiny (benchmarks/startup_bench.py): every offline command and
the baseline timed in the same run, the ratios computed from the figures printed."""

from __future__ import annotations

import json

import pytest

from benchmarks.startup_bench import COMMANDS, REFERENCE, TARGET_RATIO
from ludo_cli.main import main

pytestmark = pytest.mark.slow


def test_one_round_gives_each_command_beside_the_baseline(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One round: the baseline's CPU and each command's, its ratio to the baseline, the
    reference command apart, and the worst ratio beside the target."""
    assert main(["bench", "startup", "--rounds", "1", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["baseline"] == 'python3 -c "import domain"'
    baseline = figures["baseline_cpu_s"]
    assert baseline > 0
    assert set(figures["commands"]) == set(COMMANDS)
    assert set(figures["reference"]) == set(REFERENCE)
    for row in [*figures["commands"].values(), *figures["reference"].values()]:
        assert row["cpu_s"] > 0
        assert row["ratio"] == pytest.approx(row["cpu_s"] / baseline, rel=0.01, abs=0.01)
    assert figures["worst_ratio"] == max(r["ratio"] for r in figures["commands"].values())
    assert figures["target_ratio"] == TARGET_RATIO
