"""`ludo bench analysis-served` runs end to end and reports its figures (no timing is
asserted)."""

from __future__ import annotations

import msgspec
import pytest

from ludo_cli.main import main

pytestmark = pytest.mark.slow  # starts both services and a load, plays matches to their end


def test_bench_analysis_served_reports_both_conditions_and_their_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One short match idle and one under a small load, JSON out: for each, the seconds
    from the end to the socket's word, to the card's read and to the analysis served,
    and the ratios of the loaded figures to the idle ones."""
    status = main(
        [
            "bench",
            "analysis-served",
            "--matches",
            "1",
            "--seats",
            "hard,easy",
            "--rules",
            '{"preset": "bga"}',
            "--cpu-delay",
            "0",
            "--load-matches",
            "2",
            "--json",
        ]
    )
    assert status == 0
    figures = msgspec.json.decode(capsys.readouterr().out)
    code = figures["codes"]["now"]
    for condition in ("idle", "loaded"):
        run = code[condition]
        for name in ("push", "card", "served"):
            assert 0 <= run[name]["p50"] <= run[name]["max"], (condition, name, run)
        # the card reads the analysis once the socket said it is written
        assert run["card"]["p50"] >= run["push"]["p50"]
        assert run["events"] > 10
    assert set(code["ratio"]) == {"push", "card", "served"}
    assert all(r > 0 for r in code["ratio"].values())
    assert figures["load"]["commands_per_s"] > 0
    assert figures["baseline_ref"] is None
