"""The rating models as pure functions (no database)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain import events as ev
from domain.ratings import (
    MODELS,
    OPENSKILL_DIRECT,
    UPDATES,
    Entry,
    Skill,
    _glicko2_one,
    _openskill_direct,
    _openskill_public,
    openskill_update,
    rate,
)
from services.ranking.ratings.consumer import match_outcome

ALL = list(MODELS)


@pytest.mark.parametrize("model", ALL)
def test_draw_between_equals_leaves_mu_unchanged(model: str) -> None:
    """A draw between two new players leaves both at the starting mu, alike."""
    after = rate(model, {}, [Entry("a", 1), Entry("b", 1)])
    start = MODELS[model].initial()
    assert after["a"].mu == start.mu == after["b"].mu
    assert after["a"] == after["b"]


@pytest.mark.parametrize("model", ALL)
def test_win_draw_loss_order_and_draw_exactly_halfway(model: str) -> None:
    """A win rates above a draw above a loss, and (but in Glicko-2) the draw lies halfway."""
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
    """With 3 or 4 players and ties, a better place means a higher mu, a shared place the same."""
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
    """Places 1, 3, 3 rate as 1, 2, 2: only their order counts."""
    a = rate(model, {}, [Entry("a", 1), Entry("b", 3), Entry("c", 3)])
    b = rate(model, {}, [Entry("a", 1), Entry("b", 2), Entry("c", 2)])
    assert a == b


def test_glicko2_matches_glickmans_worked_example() -> None:
    """Glicko-2 gives the numbers of Glickman's worked example."""
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
    """OpenSkill shows a new player at 1500, provisional until sigma is small."""
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


# ------------------------------------------------------------ the rating players see
# Model.player_rating: a win never lowers it, a loss or an abandonment never raises it, a
# draw between equals leaves it unchanged; for every model, to the last bit, through
# `rate` (and through the consumer's outcome rule for leavers).


def _model_skills(model: str) -> st.SearchStrategy[Skill]:
    """Realistic skills of a model: openskill mu 0-50 and sigma 0.5-25/3; elo 600-2400;
    glicko2 600-2400, RD 30-350, volatility 0.03-0.09; 0-2,000 matches."""
    matches = st.integers(min_value=0, max_value=2000)
    if model == "openskill":
        return st.builds(
            Skill,
            mu=st.floats(min_value=0.0, max_value=50.0),
            sigma=st.floats(min_value=0.5, max_value=25.0 / 3.0),
            matches=matches,
        )
    rating = st.floats(min_value=600.0, max_value=2400.0)
    if model == "elo":
        return st.builds(Skill, mu=rating, sigma=st.just(0.0), matches=matches)
    return st.builds(
        Skill,
        mu=rating,
        sigma=st.floats(min_value=30.0, max_value=350.0),
        volatility=st.floats(min_value=0.03, max_value=0.09),
        matches=matches,
    )


@st.composite
def _matches(draw: st.DrawFn, model: str) -> tuple[dict[str, Skill], list[Entry]]:
    """2-4 players with random skills, random places (ties likely) and leaver flags."""
    n = draw(st.integers(min_value=2, max_value=4))
    skills = draw(st.lists(_model_skills(model), min_size=n, max_size=n))
    places = draw(st.lists(st.integers(min_value=1, max_value=n), min_size=n, max_size=n))
    left = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    ids = [f"p{i}" for i in range(n)]
    current = dict(zip(ids, skills, strict=True))
    entries = [Entry(i, p, g) for i, p, g in zip(ids, places, left, strict=True)]
    return current, entries


def _check_player_rating_rules(model: str, current: dict[str, Skill], entries: list[Entry]) -> None:
    m = MODELS[model]
    after = rate(model, current, entries)
    places = [e.place for e in entries]
    first, last = min(places), max(places)
    for e in entries:
        before_r = m.player_rating(current[e.player_id])
        after_r = m.player_rating(after[e.player_id])
        if e.place == first and places.count(first) == 1:
            assert after_r >= before_r, ("win", e)
        if (e.place == last and places.count(last) == 1) or e.left:
            assert after_r <= before_r, ("loss or abandonment", e)


@pytest.mark.parametrize("model", ALL)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_win_never_lowers_and_loss_or_leaving_never_raises_player_rating(
    model: str, data: st.DataObject
) -> None:
    """Sole first place: player rating after >= before; sole last place or left: <=."""
    current, entries = data.draw(_matches(model))
    _check_player_rating_rules(model, current, entries)


@pytest.mark.parametrize("model", ALL)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_draw_between_equals_leaves_player_rating_exactly_unchanged(
    model: str, data: st.DataObject
) -> None:
    """All players tied with equal skills: mu and player rating after == before, bit for bit."""
    skill = data.draw(_model_skills(model))
    n = data.draw(st.integers(min_value=2, max_value=4))
    entries = [Entry(f"p{i}", 1) for i in range(n)]
    after = rate(model, {e.player_id: skill for e in entries}, entries)
    m = MODELS[model]
    for s in after.values():
        assert s.mu == skill.mu
        assert m.player_rating(s) == m.player_rating(skill)


_REASONS: st.SearchStrategy[ev.StandInReason] = st.sampled_from(
    ["left", "disconnected", "timeouts"]
)


@pytest.mark.parametrize("model", ALL)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_leavers_by_the_consumers_rule_never_gain_player_rating(
    model: str, data: st.DataObject
) -> None:
    """Through `match_outcome` (stand-ins, reclaims, CPU seats): leavers and the sole last
    never rise, the sole first never falls."""
    seats = data.draw(st.integers(min_value=2, max_value=4))
    humans = data.draw(
        st.lists(st.booleans(), min_size=seats, max_size=seats).filter(lambda h: sum(h) >= 2)
    )
    specs = tuple(
        ev.SeatSpec(name=f"s{i}", player_id=f"p{i}")
        if human
        else ev.SeatSpec(name=f"cpu{i}", cpu="easy")
        for i, human in enumerate(humans)
    )
    events: list[ev.Event] = [ev.MatchCreated(ruleset={}, seats=specs, seed_hash="")]
    for seat in data.draw(st.lists(st.integers(min_value=0, max_value=seats - 1), max_size=6)):
        if data.draw(st.booleans()):
            events.append(ev.SeatStoodIn(seat=seat, reason=data.draw(_REASONS)))
        else:
            events.append(ev.SeatReclaimed(seat=seat))
    placements = data.draw(
        st.lists(st.integers(min_value=1, max_value=seats), min_size=seats, max_size=seats)
    )
    events.append(ev.MatchFinished(placements=tuple(placements)))
    outcome = match_outcome(events)
    assert outcome is not None
    skills = data.draw(st.lists(_model_skills(model), min_size=seats, max_size=seats))
    current = {f"p{i}": skills[i] for i in range(seats)}
    entries = [Entry(p.player_id, p.place, p.left) for p in outcome]
    _check_player_rating_rules(model, current, entries)


def _two_leavers(model: str) -> tuple[dict[str, Skill], list[Entry]]:
    """A 4-player match: a and b finish 1st and 2nd; c (strong) and d (weak) both left."""
    if model == "openskill":
        mus, sigmas = (35.0, 33.0, 30.0, 18.0), (2.0, 2.0, 2.0, 4.0)
    else:
        mus, sigmas = (1800.0, 1750.0, 1700.0, 1300.0), (60.0, 60.0, 60.0, 150.0)
    current = {
        pid: Skill(
            mu=mu,
            sigma=0.0 if model == "elo" else sigma,
            volatility=0.0 if model == "openskill" else 0.06,
            matches=50,
        )
        for pid, mu, sigma in zip("abcd", mus, sigmas, strict=True)
    }
    seats = tuple(ev.SeatSpec(name=p, player_id=p) for p in "abcd")
    outcome = match_outcome(
        [
            ev.MatchCreated(ruleset={}, seats=seats, seed_hash=""),
            ev.SeatStoodIn(seat=2, reason="left"),
            ev.SeatStoodIn(seat=3, reason="disconnected"),
            ev.MatchFinished(placements=(1, 2, 3, 4)),
        ]
    )
    assert outcome is not None
    return current, [Entry(p.player_id, p.place, p.left) for p in outcome]


@pytest.mark.parametrize("model", ALL)
def test_two_leavers_of_one_match_do_not_go_up(model: str) -> None:
    """Regression: the weaker of two leavers sharing last place 'drew' with the stronger
    one and gained (openskill mu 18 -> 18.28); now neither leaver's rating rises."""
    m = MODELS[model]
    current, entries = _two_leavers(model)
    assert [(e.place, e.left) for e in entries] == [(1, False), (2, False), (3, True), (3, True)]
    pure = UPDATES[model]([current[e.player_id] for e in entries], [e.place for e in entries])
    assert pure[3].mu > current["d"].mu  # what the pairwise model alone would do
    after = rate(model, current, entries)
    for pid in "cd":
        assert m.player_rating(after[pid]) <= m.player_rating(current[pid])
    assert after["d"].mu == current["d"].mu  # held: the leaver rule
    assert after["d"].sigma == pure[3].sigma  # the rest of the update stands
    assert after["c"] == pure[2]  # the stronger leaver lost anyway


def test_openskill_player_rating_is_on_mu_and_ordinal_is_not() -> None:
    """A new openskill player shows 1500 on both scales; a player who then leaves a match
    keeps their player rating while the operators' ordinal rises (sigma shrinks)."""
    m = MODELS["openskill"]
    new = m.initial()
    assert m.player_rating(new) == 1500.0 == pytest.approx(m.display(new))
    b = rate("openskill", {}, [Entry("a", 1), Entry("b", 2)])["b"]
    assert round(m.display(b), 1) == 1445.0 and round(m.player_rating(b), 1) == 1420.9
    # b and a new player both left (the match's other seats were CPUs): a shared last place.
    left = rate("openskill", {"b": b}, [Entry("b", 1, left=True), Entry("z", 1, left=True)])
    assert m.player_rating(left["b"]) == m.player_rating(b)
    assert round(m.display(left["b"]), 1) == 1466.7  # the ordinal went up
    assert m.player_rating(left["z"]) < 1500.0
    assert m.player_rating(Skill(mu=26.0, sigma=1.0)) == 1530.0
    for model in ("elo", "glicko2"):
        assert MODELS[model].player_rating(Skill(mu=1612.5, sigma=80.0)) == 1612.5


@pytest.mark.parametrize("model", ALL)
@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_only_the_order_of_the_places_moves_a_rating(model: str, data: st.DataObject) -> None:
    """The same order given by other numbers rates bit for bit alike: leavers placed at
    `1 + the seats that stayed` (`domain.outcome`) rate as they did at `max + 1`."""
    seats = data.draw(st.integers(min_value=2, max_value=4))
    keys = data.draw(st.lists(st.integers(0, 3), min_size=seats, max_size=seats))
    places = [1 + sum(1 for k in keys if k > key) for key in keys]
    spread = [p * 3 + 2 for p in places]  # the same order, other numbers
    skills = data.draw(st.lists(_model_skills(model), min_size=seats, max_size=seats))
    assert UPDATES[model](skills, places) == UPDATES[model](skills, spread)
