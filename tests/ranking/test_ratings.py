"""The rating models as pure functions (no database)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.ranking.ratings import (
    MODELS,
    OPENSKILL_DIRECT,
    Entry,
    Skill,
    _glicko2_one,
    _openskill_direct,
    _openskill_public,
    openskill_update,
    rate,
)

ALL = list(MODELS)


@pytest.mark.parametrize("model", ALL)
def test_draw_between_equals_leaves_mu_unchanged(model: str) -> None:
    after = rate(model, {}, [Entry("a", 1), Entry("b", 1)])
    start = MODELS[model].initial()
    assert after["a"].mu == start.mu == after["b"].mu
    assert after["a"] == after["b"]


@pytest.mark.parametrize("model", ALL)
def test_win_draw_loss_order_and_draw_exactly_halfway(model: str) -> None:
    m = MODELS[model]
    me = Skill(
        mu=m.initial().mu + (3.0 if model == "openskill" else 60.0),
        sigma=m.initial().sigma,
        volatility=m.initial().volatility,
        matches=4,
    )
    them = m.initial()
    cur = {"me": me, "them": them}
    win = rate(model, cur, [Entry("me", 1), Entry("them", 2)])["me"]
    draw = rate(model, cur, [Entry("me", 1), Entry("them", 1)])["me"]
    loss = rate(model, cur, [Entry("me", 2), Entry("them", 1)])["me"]
    assert win.mu > draw.mu > loss.mu
    assert m.display(win) > m.display(draw) > m.display(loss)
    if model != "glicko2":  # Glicko-2's volatility step is not linear in the score
        assert draw.mu == pytest.approx((win.mu + loss.mu) / 2, abs=1e-9)
        assert win.sigma == draw.sigma == loss.sigma
        assert m.display(draw) == pytest.approx((m.display(win) + m.display(loss)) / 2, abs=1e-9)


@pytest.mark.parametrize("model", ALL)
@pytest.mark.parametrize(
    "places",
    [
        (1, 2),
        (1, 1),
        (1, 2, 3),
        (1, 1, 3),
        (1, 2, 2),
        (1, 1, 1),
        (1, 2, 3, 4),
        (1, 2, 2, 4),
        (1, 1, 3, 3),
        (2, 1, 2, 4),
    ],
)
def test_multiplayer_with_ties(model: str, places: tuple[int, ...]) -> None:
    entries = [Entry(f"p{i}", p) for i, p in enumerate(places)]
    after = rate(model, {}, entries)
    for a in entries:
        for b in entries:
            ma, mb = after[a.player_id].mu, after[b.player_id].mu
            if a.place < b.place:
                assert ma > mb
            elif a.place == b.place:
                assert ma == pytest.approx(mb, abs=1e-9)
    # Zero-sum among equals for the pairwise models.
    if model in ("openskill", "elo"):
        start = MODELS[model].initial().mu
        assert sum(s.mu - start for s in after.values()) == pytest.approx(0, abs=1e-9)


@pytest.mark.parametrize("model", ALL)
def test_only_the_order_of_places_matters(model: str) -> None:
    a = rate(model, {}, [Entry("a", 1), Entry("b", 3), Entry("c", 3)])
    b = rate(model, {}, [Entry("a", 1), Entry("b", 2), Entry("c", 2)])
    assert a == b


def test_glicko2_matches_glickmans_worked_example() -> None:
    s = _glicko2_one(
        Skill(mu=1500, sigma=200, volatility=0.06),
        [
            (Skill(mu=1400, sigma=30), 1.0),
            (Skill(mu=1550, sigma=100), 0.0),
            (Skill(mu=1700, sigma=300), 0.0),
        ],
    )
    assert s.mu == pytest.approx(1464.06, abs=0.01)
    assert s.sigma == pytest.approx(151.52, abs=0.01)
    assert s.volatility == pytest.approx(0.05999, abs=1e-5)


def test_openskill_display_and_provisional() -> None:
    m = MODELS["openskill"]
    assert m.display(m.initial()) == pytest.approx(1500.0)
    assert m.provisional(m.initial())
    assert not m.provisional(Skill(mu=25, sigma=2.0))
    assert m.params["model"] == "BradleyTerryFull"
    assert m.library.startswith("openskill 6.")


_skills = st.builds(
    Skill,
    mu=st.floats(min_value=-20.0, max_value=70.0, allow_nan=False),
    sigma=st.floats(min_value=0.01, max_value=12.0, allow_nan=False),
    matches=st.integers(min_value=0, max_value=10_000),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(_skills, st.integers(min_value=1, max_value=4)), min_size=2, max_size=4))
def test_openskill_fast_path_is_bit_identical_to_rate(players: list[tuple[Skill, int]]) -> None:
    """The re-used-objects path (`_openskill_direct`) against `BradleyTerryFull.rate`:
    the same floats to the last bit, whatever the skills, places and ties. Twice in a
    row, so that the re-used objects carry nothing from one match to the next."""
    skills = [s for s, _ in players]
    places = [p for _, p in players]
    want = _openskill_public(skills, places)
    assert _openskill_direct(skills, places) == want
    assert _openskill_direct(skills, places) == want
    assert OPENSKILL_DIRECT  # the module's own check passed with this library version
    assert openskill_update(skills, places) == want
