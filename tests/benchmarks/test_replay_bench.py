"""`ludo bench replay` runs end to end and reports its figures (no timing is asserted)."""

from __future__ import annotations

import msgspec
import pytest

from ludo_cli.main import main


def test_bench_replay_reports_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    """Three matches, JSON out: all verified, a rate, events, and every stage timed."""
    status = main(
        ["bench", "replay", "--matches", "3", "--seats", "easy,easy", "--no-pin", "--json"]
    )
    assert status == 0
    figures = msgspec.json.decode(capsys.readouterr().out)
    assert figures["matches"] == 3 and figures["failures"] == 0
    assert figures["matches_per_s"] > 0 and figures["events"] > 3 * 100
    assert set(figures["stages_ms_per_match"]) == {
        "parse",
        "hash chain",
        "sha256 of the file (floor)",
    }
