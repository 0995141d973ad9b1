"""The analysis calibration tool (tools/analysis_calibration.py): what it records and fits."""

from __future__ import annotations

import math

import numpy as np

from tools.analysis_calibration import FIELDS, _play, fit_pips, fit_slope, lineup, pip_shares


def test_fit_slope_recovers_a_known_slope() -> None:
    """Outcomes drawn from σ(offset + 0.8·hand/100) give back a slope near 0.8."""
    rng = np.random.default_rng(7)
    hand = rng.normal(0.0, 250.0, 40_000)
    offset = math.log(1 / 3)
    y = (rng.random(hand.size) < 1 / (1 + np.exp(-(offset + 0.8 * hand / 100)))).astype(float)
    assert abs(fit_slope(hand, y, offset) - 0.8) < 0.05


def test_a_match_records_shares_and_one_winner_per_position() -> None:
    """Per recorded position of a match: the shown values and the pip shares sum to 1 over
    the seats, exactly one seat placed first, and exactly one seat's turn just ended."""
    rows = np.array(_play(("test", "std2", 0)))
    cols = {name: rows[:, k] for k, name in enumerate(FIELDS)}
    assert lineup(2, 0) == ["hard", "normal"]
    assert lineup(4, 1) == ["normal", "easy", "hard", "normal"]
    _, position = np.unique(cols["turn"], return_inverse=True)
    for column in ("shown", "first", "mover"):
        assert np.allclose(np.bincount(position, weights=cols[column]), 1.0, atol=2e-6)
    shares = pip_shares(cols, fit_pips(cols))
    assert np.allclose(np.bincount(position, weights=shares), 1.0)
