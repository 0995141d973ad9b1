"""Match analysis (domain/analysis.py, docs/analysis.md): luck, error and their sums.

Matches are CPU matches played by `domain.selfplay.play_match` (or, for stand-ins and
timed-out turns, `tests.replays.scripted.scripted_match`) from seeds hypothesis draws;
positions are sampled from them. Analysing a match costs ~0.2 s with two players and ~3 s
under `standard` with four (the learned network values every look-ahead leaf), so the
examples are few and most tests play two or three seats.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterator, Sequence
from functools import lru_cache

import msgspec
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from domain.analysis import (
    CHANCES,
    EVALUATOR,
    FALLBACK_VERSION,
    Analyser,
    Analysis,
    Decision,
    SeatAnalysis,
    analyse,
    encode,
    face_values,
)
from domain.cpu.hard import score_moves
from domain.cpu.learned import NETWORK
from domain.decider import MatchState, apply, current_legal_moves
from domain.events import (
    CpuLevel,
    DieRolled,
    Event,
    MatchCreated,
    MatchFinished,
    MatchStarted,
    PieceMoved,
    PlayerFinished,
    TurnEnded,
    decode_event,
    encode_event,
)
from domain.rules import PRESETS, Ruleset, parse_ruleset, ruleset_to_dict
from domain.selfplay import play_match
from tests.conftest import rulesets
from tests.replays.scripted import conceded_match, scripted_match

# Each stored value is rounded to 6 decimals: off by at most half a unit of the 6th.
ROUNDING = 0.5e-6
# A sum of the stored per-seat terms (each rounded once): the identity's tolerance.
TERMS = 1e-5
LEVELS: tuple[CpuLevel, ...] = ("easy", "normal", "hard")
ANY_LEVEL = st.sampled_from(LEVELS)
TWO_OR_THREE = st.integers(2, 3)
ANY_PRESET = st.sampled_from(list(PRESETS.values()))
# The options that change whose turn it is or how many rolls a turn has.
TURN_OPTIONS: list[dict[str, object]] = [
    {"three_sixes": True},
    {"three_sixes": False},
    {"empty_course": "auto_enter"},
    {"empty_course": "three_tries"},
    {"capture_bonus": False},
    {"goal_bonus": True},
    {"play_to_end": True},
]


def few(n: int) -> settings:
    """`n` examples (30 times as many under `HYPOTHESIS_PROFILE=thorough`), no deadline:
    each example analyses a whole match."""
    return settings(max_examples=max(n, n * settings().max_examples // 100), deadline=None)


# ------------------------------------------------------------------------------ matches


class Setup(msgspec.Struct, frozen=True):
    """One CPU match to play: rules, one level per seat, a seed."""

    ruleset: Ruleset
    levels: tuple[CpuLevel, ...]
    seed: int


@lru_cache(maxsize=64)
def _events(setup: Setup) -> tuple[Event, ...]:
    server_seed = hashlib.sha256(f"analysis:{setup.seed}".encode()).digest()
    record = play_match(setup.ruleset, setup.levels, server_seed=server_seed, cpu_seed="t")
    return tuple(record.events)


@lru_cache(maxsize=64)
def _analysis(setup: Setup) -> Analysis:
    return analyse(_events(setup))


def events_of(setup: Setup) -> list[Event]:
    return list(_events(setup))


def analysis_of(setup: Setup) -> Analysis:
    return _analysis(setup)


@st.composite
def setups(
    draw: st.DrawFn,
    ruleset: st.SearchStrategy[Ruleset] | None = None,
    players: st.SearchStrategy[int] = TWO_OR_THREE,
    levels: st.SearchStrategy[CpuLevel] = ANY_LEVEL,
) -> Setup:
    """A match: by default any preset, two or three seats of any levels."""
    rules = draw(ruleset if ruleset is not None else ANY_PRESET)
    n = draw(players)
    return Setup(rules, tuple(draw(levels) for _ in range(n)), draw(st.integers(0, 2**32)))


def with_options(
    ruleset: st.SearchStrategy[Ruleset], options: dict[str, object]
) -> st.SearchStrategy[Ruleset]:
    """`ruleset` with `options` fixed."""
    return ruleset.map(lambda r: parse_ruleset({**ruleset_to_dict(r), **options}))


def walk(events: Sequence[Event]) -> Iterator[tuple[int, MatchState, Event]]:
    """(version, state before the event, event) for each event; the state is reused."""
    state = MatchState()
    for version, event in enumerate(events):
        yield version, state, event
        apply(state, event)


def state_before(events: Sequence[Event], version: int) -> MatchState:
    state = MatchState()
    for event in events[:version]:
        apply(state, event)
    return state


def first_finish(events: Sequence[Event]) -> int:
    return next(v for v, e in enumerate(events) if isinstance(e, PlayerFinished | MatchFinished))


def near(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance + 1e-12


def exact_errors(events: Sequence[Event], decisions: Sequence[Decision]) -> list[float]:
    """Each decision's error before rounding: its moves revalued as the analysis values
    them (`hard`'s look-ahead in chances, a finishing move worth 1)."""
    wanted = {d.version: d for d in decisions}
    errors: dict[int, float] = {}
    for version, state, _ in walk(events):
        if version in wanted:
            moves = current_legal_moves(state)
            values = [1.0 if v == math.inf else v for v in score_moves(state, moves, leaf=CHANCES)]
            errors[version] = max(values) - values[wanted[version].played]
    return [errors[d.version] for d in decisions]


def own(analysis: Analysis, seat: int, events: Sequence[Event]) -> list[Decision]:
    """The seat's decisions made by its own player or CPU."""
    created = events[0]
    assert isinstance(created, MatchCreated)
    mine = "cpu" if created.seats[seat].cpu is not None else "player"
    return [d for d in analysis.decisions if d.seat == seat and d.by == mine]


# -------------------------------------------------------------------------------- luck


class TestLuck:
    @few(4)
    @given(setup=setups(), data=st.data())
    def test_the_faces_average_to_before_and_the_luck_of_the_six_sums_to_zero(
        self, setup: Setup, data: st.DataObject
    ) -> None:
        """At sampled rolls, `face_values` has mean `before`, the six faces' luck sums to 0,
        and the stored `Roll` holds those faces and the rolled face's luck."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        for roll in data.draw(st.lists(st.sampled_from(analysis.rolls), min_size=1, max_size=4)):
            faces = face_values(state_before(events, roll.version))
            mean = sum(faces) / 6
            assert abs(sum(f - mean for f in faces)) <= 1e-12
            assert near(roll.before, mean, ROUNDING)
            assert all(near(s, f, ROUNDING) for s, f in zip(roll.faces, faces, strict=True))
            assert near(roll.luck, faces[roll.die - 1] - mean, ROUNDING)
            assert all(0.0 <= f <= 1.0 for f in faces)

    @few(4)
    @given(setup=setups())
    def test_every_roll_is_listed_with_its_luck_against_its_faces(self, setup: Setup) -> None:
        """Each `DieRolled` up to the end has a `Roll` whose luck is faces[die-1] - before
        (within 1e-6), and a seat's luck and rolls are the sums over its rolls."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        rolled = [
            (v, e.seat, e.value)
            for v, e in enumerate(events[: analysis.until])
            if isinstance(e, DieRolled)
        ]
        assert [(r.version, r.seat, r.die) for r in analysis.rolls] == rolled
        for roll in analysis.rolls:
            assert near(roll.luck, roll.faces[roll.die - 1] - roll.before, 1e-6)
            assert near(roll.before, sum(roll.faces) / 6, 1e-6)
        for seat in analysis.seats:
            mine = [r for r in analysis.rolls if r.seat == seat.seat]
            assert seat.rolls == len(mine)
            assert near(seat.luck, sum(r.luck for r in mine), ROUNDING * (len(mine) + 1))

    @few(4)
    @given(setup=setups())
    def test_the_rolled_face_is_worth_the_best_option_of_its_decision(self, setup: Setup) -> None:
        """A roll that leads to a decision has the rolled face's value equal to its best
        option's value."""
        analysis = analysis_of(setup)
        faces = {r.version: r for r in analysis.rolls}
        for decision in analysis.decisions:
            roll = faces[max(v for v in faces if v < decision.version)]
            assert roll.die == decision.die
            assert roll.faces[roll.die - 1] == max(o.value for o in decision.options)


# ------------------------------------------------------------------------------- error


class TestError:
    @few(4)
    @given(setup=setups())
    def test_a_decision_lists_the_legal_moves_the_played_one_and_a_best_one(
        self, setup: Setup
    ) -> None:
        """A decision's options are the legal moves, `played` the one the event made, `best`
        one of maximal value, and its error best - played, never negative."""
        events = events_of(setup)
        decisions = {d.version: d for d in analysis_of(setup).decisions}
        for version, state, event in walk(events):
            if version not in decisions:
                continue
            decision = decisions[version]
            assert isinstance(event, PieceMoved)
            moves = current_legal_moves(state)
            assert [(o.piece, o.frm, o.to) for o in decision.options] == [
                (m.piece, m.frm, m.to) for m in moves
            ]
            played = decision.options[decision.played]
            assert (played.piece, played.frm, played.to) == (event.piece, event.frm, event.to)
            assert (decision.seat, decision.die) == (event.seat, event.die)
            best = decision.options[decision.best].value
            assert best == max(o.value for o in decision.options)
            assert decision.error >= 0.0
            assert near(decision.error, best - played.value, 2 * ROUNDING)

    @few(4)
    @given(setup=setups(), data=st.data())
    def test_a_best_choice_has_error_zero_and_any_other_its_shortfall(
        self, setup: Setup, data: st.DataObject
    ) -> None:
        """At sampled decisions, revalued by `hard`'s look-ahead in chances, the error is 0
        when the played move is of highest value (or goes between the same squares as one
        that is), else the best value minus the played one."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        assert analysis.decisions
        picked = data.draw(st.lists(st.sampled_from(analysis.decisions), min_size=1, max_size=6))
        for decision in picked:
            state = state_before(events, decision.version)
            moves = current_legal_moves(state)
            values = [1.0 if v == math.inf else v for v in score_moves(state, moves, leaf=CHANCES)]
            top = max(values)
            played = moves[decision.played]
            same_as_best = any(
                (m.frm, m.to) == (played.frm, played.to) and v == top
                for m, v in zip(moves, values, strict=True)
            )
            if values[decision.played] == top or same_as_best:
                assert decision.error == 0.0
            else:
                assert near(decision.error, top - values[decision.played], ROUNDING)

    @few(4)
    @given(setup=setups())
    def test_a_seats_error_is_the_sum_of_its_decisions(self, setup: Setup) -> None:
        """`SeatAnalysis.error` sums the errors of every decision made for the seat (moves
        to identical squares cost nothing)."""
        analysis = analysis_of(setup)
        for seat in analysis.seats:
            mine = [d.error for d in analysis.decisions if d.seat == seat.seat]
            assert near(seat.error, sum(mine), ROUNDING * (len(mine) + 1))

    @few(3)
    @given(setup=setups(levels=st.just("easy")))
    def test_the_easy_cpu_makes_errors(self, setup: Setup) -> None:
        """A seat played by `easy` with ten choices or more loses something by them."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        for seat in analysis.seats:
            if seat.choices >= 10:
                assert seat.own_error > 0.0
                assert len(own(analysis, seat.seat, events)) == seat.choices


# ---------------------------------------------------------------------------- identity


def assert_identity(analysis: Analysis, events: Sequence[Event]) -> None:
    """end - start = luck - error + others + lookahead for each seat; start is its first
    roll's `before` and, once the first place is decided, end its outcome."""
    finished = isinstance(events[analysis.until], PlayerFinished)
    for seat in analysis.seats:
        terms = seat.luck - seat.error + seat.others + seat.lookahead
        assert near(seat.end - seat.start, terms, TERMS), seat
        mine = [r for r in analysis.rolls if r.seat == seat.seat]
        if not mine:
            continue
        assert seat.start == mine[0].before
        if finished:
            assert seat.end == analysis.points[-1].chances[seat.seat]


class TestIdentity:
    @pytest.mark.parametrize(
        ("preset", "players"),
        [(p, n) for p in PRESETS for n in (2, 3, 4)],
    )
    @few(1)
    @given(data=st.data())
    def test_each_seat_moves_by_luck_minus_error_plus_others_and_lookahead(
        self, preset: str, players: int, data: st.DataObject
    ) -> None:
        """Under each preset with 2, 3 and 4 players, every seat's end - start equals
        luck - error + others + lookahead (each term rounded: within 1e-5)."""
        setup = data.draw(setups(st.just(PRESETS[preset]), st.just(players)))
        assert_identity(analysis_of(setup), events_of(setup))

    @pytest.mark.parametrize(
        "options", TURN_OPTIONS, ids=lambda o: "-".join(f"{k}={v}" for k, v in o.items())
    )
    @few(2)
    @given(data=st.data())
    def test_the_identity_holds_under_the_options_that_change_turns(
        self, options: dict[str, object], data: st.DataObject
    ) -> None:
        """With each option that changes turns (three sixes, tries, auto-entry, bonuses,
        play to the end) and the others drawn at random, the identity holds per seat."""
        setup = data.draw(setups(with_options(rulesets(), options)))
        assert_identity(analysis_of(setup), events_of(setup))

    @few(4)
    @given(setup=setups(), cut=st.floats(0.0, 1.0))
    def test_the_identity_holds_on_a_prefix_of_the_stream(self, setup: Setup, cut: float) -> None:
        """A match cut anywhere (mid-turn, before a move is chosen) still sums per seat."""
        events = events_of(setup)
        prefix = events[: max(3, int(cut * len(events)))]
        assert_identity(analyse(prefix), prefix)


# ---------------------------------------------------------------------- hard's choices


class TestHardChoices:
    @few(2)
    @given(setup=setups(st.just(PRESETS["standard"]), st.just(4), st.just("hard")))
    def test_hard_never_errs_under_standard_with_four_players(self, setup: Setup) -> None:
        """Where the analysis values moves as `hard` does (standard, four seats), every
        choice `hard` made has error 0."""
        analysis = analysis_of(setup)
        assert len(analysis.decisions) > 20
        assert all(d.error == 0.0 for d in analysis.decisions)
        assert all(d.options[d.played].value == d.options[d.best].value for d in analysis.decisions)
        for seat in analysis.seats:
            assert (seat.error, seat.own_error, seat.error_rate) == (0.0, 0.0, 0.0)
            assert seat.best_choices == seat.choices
            assert seat.best_share == (1.0 if seat.choices else 0.0)


# ----------------------------------------------------------------------------- choices


class Scripted(msgspec.Struct, frozen=True):
    """A match with human seats that time out, get stood in for and come back."""

    ruleset: Ruleset
    players: int
    cpu_seats: int
    seed: int


@lru_cache(maxsize=16)
def _scripted(match: Scripted) -> tuple[tuple[Event, ...], Analysis]:
    seed = hashlib.sha256(f"scripted:{match.seed}".encode()).digest()
    events, _ = scripted_match(
        match.ruleset, match.players, seed, rng_seed=match.seed, cpu_seats=match.cpu_seats
    )
    return tuple(events), analyse(events)


@st.composite
def scripted(draw: st.DrawFn) -> Scripted:
    players = draw(st.integers(2, 3))
    return Scripted(
        draw(ANY_PRESET),
        players,
        draw(st.integers(0, players - 1)),
        draw(st.integers(0, 2**32)),
    )


class TestChoices:
    @few(4)
    @given(match=scripted())
    def test_only_choices_among_different_moves_are_decisions_each_with_its_controller(
        self, match: Scripted
    ) -> None:
        """Every move by a die among two or more different moves (from or to), and only
        those, is a `Decision`, `by` whoever acted for the seat then."""
        events, analysis = _scripted(match)
        expected: list[tuple[int, int, str]] = []
        for version, state, event in walk(events[: analysis.until]):
            if isinstance(event, PieceMoved) and event.die is not None:
                moves = current_legal_moves(state)
                if len({(m.frm, m.to) for m in moves}) >= 2:
                    expected.append((version, event.seat, state.controller(event.seat)))
        assert [(d.version, d.seat, d.by) for d in analysis.decisions] == expected

    @few(4)
    @given(match=scripted())
    def test_a_stand_ins_or_timed_out_choice_is_listed_but_not_counted(
        self, match: Scripted
    ) -> None:
        """`choices`, `own_error` and `best_choices` count only the seat's own player's (or
        CPU's) decisions, `error` all of them; `error_rate` and `best_share` follow."""
        events, analysis = _scripted(match)
        # (nearly every scripted match has some; one without would check nothing here)
        assume(any(d.by in ("stand-in", "timeout") for d in analysis.decisions))
        for seat in analysis.seats:
            mine = own(analysis, seat.seat, events)
            every = [d for d in analysis.decisions if d.seat == seat.seat]
            assert seat.choices == len(mine)
            assert near(seat.own_error, sum(d.error for d in mine), ROUNDING * (len(mine) + 1))
            assert near(seat.error, sum(d.error for d in every), ROUNDING * (len(every) + 1))
            exact = exact_errors(events, mine)
            # A best choice is one whose stored (rounded) error is 0, as the pages show it.
            assert seat.best_choices == sum(d.error == 0.0 for d in mine)
            assert all(d.error == 0.0 for d, e in zip(mine, exact, strict=True) if e < 1e-12)
            assert_rates(seat)

    @few(2)
    @given(setup=setups(players=st.integers(2, 4), ruleset=st.just(PRESETS["bga"])))
    def test_a_cpu_seats_choices_are_all_its_own(self, setup: Setup) -> None:
        """In a CPU match every decision is `by` "cpu" and counted for its seat."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        assert all(d.by == "cpu" for d in analysis.decisions)
        for seat in analysis.seats:
            assert seat.choices == len(own(analysis, seat.seat, events))
            assert_rates(seat)


def assert_rates(seat: SeatAnalysis) -> None:
    if seat.choices == 0:
        assert (seat.error_rate, seat.best_share, seat.own_error, seat.best_choices) == (0, 0, 0, 0)
        return
    assert near(seat.error_rate, seat.own_error / seat.choices, 2 * ROUNDING)
    assert near(seat.best_share, seat.best_choices / seat.choices, ROUNDING)
    assert 0 <= seat.best_choices <= seat.choices


# --------------------------------------------------------------------- the end, swings


class TestEnd:
    @few(3)
    @given(setup=setups(with_options(ANY_PRESET, {"play_to_end": True}), st.just(3)))
    def test_the_analysis_stops_where_the_first_place_is_decided(self, setup: Setup) -> None:
        """`until` is the first `PlayerFinished`'s version, and the events after it (the
        later places under play_to_end) change nothing."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        until = first_finish(events)
        assert isinstance(events[until], PlayerFinished)
        assert analysis.until == until
        assert any(isinstance(e, PlayerFinished) for e in events[until + 1 :])
        assert encode(analyse(events[: until + 1])) == encode(analysis)

    @few(4)
    @given(setup=setups())
    def test_the_last_point_is_the_outcome(self, setup: Setup) -> None:
        """The last point, at `until`, gives the winner 1 and every other seat 0."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        winner = events[analysis.until]
        assert isinstance(winner, PlayerFinished)
        last = analysis.points[-1]
        assert last.version == analysis.until
        assert last.chances == [1.0 if s == winner.seat else 0.0 for s in range(analysis.players)]

    @few(3)
    @given(setup=setups(players=st.integers(2, 4), ruleset=st.just(PRESETS["bga"])))
    def test_a_seats_swings_are_its_three_largest_changes_each_a_turn(self, setup: Setup) -> None:
        """At most three swings per seat, by |change| down, each the whole turn of seat `by`
        with the dice it rolled and the seats it captured, its change read off the points."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        points = analysis.points
        for seat in analysis.seats:
            s = seat.seat
            sizes = [abs(sw.change) for sw in seat.swings]
            assert len(sizes) <= 3
            assert sizes == sorted(sizes, reverse=True)
            changes = sorted(
                (abs(b.chances[s] - a.chances[s]) for a, b in itertools.pairwise(points)),
                reverse=True,
            )
            top = [c for c in changes if c > 0.0][:3]
            assert all(near(x, y, 2 * ROUNDING) for x, y in zip(sizes, top, strict=True))
            for swing in seat.swings:
                start = next(p for p in points if p.version == swing.version - 1)
                end = next(p for p in points if p.version == swing.until)
                assert near(swing.change, end.chances[s] - start.chances[s], 2 * ROUNDING)
                turn = events[swing.version : swing.until + 1]
                opened = events[swing.version - 1]
                assert isinstance(opened, TurnEnded | MatchStarted)
                dice = [e for e in turn if isinstance(e, DieRolled)]
                assert all(d.seat == swing.by for d in dice)
                assert swing.dice == [d.value for d in dice]
                moved = [e for e in turn if isinstance(e, PieceMoved)]
                assert all(m.seat == swing.by for m in moved)
                assert swing.captured == sorted({c for m in moved for c, _ in m.captures})
                closed = events[swing.until]
                assert isinstance(closed, TurnEnded | PlayerFinished)
                assert closed.seat == swing.by
                assert not any(isinstance(e, TurnEnded) for e in turn[:-1])


# ---------------------------------------------------------------------- determinism


class TestDeterminism:
    @few(2)
    @given(setup=setups(players=st.just(2)))
    def test_the_same_events_give_the_same_bytes(self, setup: Setup) -> None:
        """`encode(analyse(events))` is the same twice and for a decoded copy of the
        events, and decodes back to the same analysis."""
        events = events_of(setup)
        once = encode(analyse(events))
        copy = [decode_event(encode_event(e)) for e in events]
        assert copy is not events
        assert encode(analyse(events)) == once
        assert encode(analyse(copy)) == once
        assert msgspec.json.decode(once, type=Analysis) == analysis_of(setup)

    @few(4)
    @given(setup=setups(), cut=st.floats(0.0, 1.0))
    def test_a_prefix_analyses_into_the_start_of_the_whole(self, setup: Setup, cut: float) -> None:
        """A prefix of the stream analyses without error into the rolls and decisions of
        the whole match's analysis before the cut."""
        events = events_of(setup)
        whole = analysis_of(setup)
        k = int(cut * len(events))
        part = analyse(events[:k])
        assert part.until == min(k, whole.until + 1) - 1
        assert part.rolls == [r for r in whole.rolls if r.version < k]
        assert part.decisions == [d for d in whole.decisions if d.version < k]
        assert part.points == [p for p in whole.points if p.version < k]

    @few(3)
    @given(
        setup=setups(players=st.integers(2, 3)),
        cuts=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6),
    )
    def test_fed_in_stretches_it_gives_the_same_bytes(
        self, setup: Setup, cuts: list[float]
    ) -> None:
        """An `Analyser` fed a match's events in stretches (as the service feeds a match
        while it is played) gives, after each stretch, the bytes `analyse` gives for the
        events so far, and after the last the whole match's; a result taken early is not
        changed by what is fed after it."""
        events = events_of(setup)
        ends = sorted({int(c * len(events)) for c in cuts} | {len(events)})
        analyser = Analyser()
        taken: list[tuple[bytes, Analysis]] = []
        fed = 0
        for end in ends:
            analyser.feed(events[fed:end])
            fed = end
            assert analyser.fed == end
            early = analyser.result()
            taken.append((encode(early), early))
            assert taken[-1][0] == encode(analyse(events[:end]))
        assert taken[-1][0] == encode(analysis_of(setup))
        assert all(encode(result) == body for body, result in taken)

    @few(2)
    @given(setup=setups())
    def test_the_evaluator_is_recorded(self, setup: Setup) -> None:
        """The stored analysis names its evaluator: the network and the fallback's version."""
        stored = msgspec.json.decode(encode(analysis_of(setup)))
        assert stored["evaluator"] == EVALUATOR
        assert NETWORK in EVALUATOR and FALLBACK_VERSION in EVALUATOR
        assert (stored["format"], stored["format_version"], stored["value"]) == (
            "ludo-analysis",
            1,
            "first",
        )


# ---------------------------------------------------------------------------- points


class TestPoints:
    @few(3)
    @given(setup=setups(players=st.integers(2, 4), ruleset=st.just(PRESETS["bga"])))
    def test_every_point_shares_out_a_chance_of_one(self, setup: Setup) -> None:
        """Each point's chances lie in [0, 1] and sum to 1 (within 1e-5) among the seats
        still playing."""
        analysis = analysis_of(setup)
        for point in analysis.points:
            assert len(point.chances) == analysis.players
            assert all(0.0 <= c <= 1.0 for c in point.chances)
            assert math.isclose(sum(point.chances), 1.0, abs_tol=1e-5)

    @few(4)
    @given(setup=setups())
    def test_a_point_follows_the_start_and_every_turn(self, setup: Setup) -> None:
        """Points are at the `MatchStarted`, at each `TurnEnded` before the end, and at the
        end."""
        events = events_of(setup)
        analysis = analysis_of(setup)
        started = next(v for v, e in enumerate(events) if isinstance(e, MatchStarted))
        turns = [v for v, e in enumerate(events[: analysis.until]) if isinstance(e, TurnEnded)]
        assert [p.version for p in analysis.points] == [started, *turns, analysis.until]


def test_a_conceded_match_is_analysed_to_its_end_with_the_conceder_at_zero() -> None:
    """`MatchConceded` (then `MatchFinished`) is read like any end: the analysis runs to
    the last event and its last point gives the conceding seat no chance to be first."""
    seed = hashlib.sha256(b"conceded").digest()
    events, _ = conceded_match(parse_ruleset({"preset": "standard"}), 4, seed, commands=120)
    analysis = analyse(events)
    finished = next(i for i, e in enumerate(events) if isinstance(e, MatchFinished))
    assert analysis.until >= finished
    assert analysis.points[-1].chances[0] == 0.0
