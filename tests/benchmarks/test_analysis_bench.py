"""`ludo bench analysis` runs end to end and reports its figures (no timing is asserted)."""

from __future__ import annotations

import msgspec
import pytest

from ludo_cli.main import main

pytestmark = pytest.mark.slow  # plays and analyses whole matches (several seconds)


def test_bench_analysis_reports_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    """Two 2-player matches, JSON out: verified, analysed, and every per-match figure there."""
    status = main(
        ["bench", "analysis", "--matches", "2", "--seats", "hard,easy", "--no-pin", "--json"]
    )
    assert status == 0
    figures = msgspec.json.decode(capsys.readouterr().out)
    assert figures["matches"] == 2 and figures["failures"] == 0
    assert figures["rolls_per_match"] > 10 and figures["choices_per_match"] > 0
    for name in ("analyse_s", "verify_s"):
        assert set(figures[name]) == {"p50", "p90", "max"}
        assert 0 <= figures[name]["p50"] <= figures[name]["p90"] <= figures[name]["max"]
    assert figures["ratio"] > 0 and figures["evaluator"].startswith("hard-")
