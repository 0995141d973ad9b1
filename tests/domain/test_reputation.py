"""A player's reputation (`domain/reputation.py`): who left a match, the completion rate
over the last matches, and the pause from ranked pools for repeated abandons."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain import events as ev
from domain.decider import MatchState, apply
from domain.reputation import (
    ABANDONS,
    PAUSE,
    RECENT,
    REPEAT_WINDOW,
    WINDOW,
    Ended,
    completion,
    left_seats,
    ranked_pause,
)

HOUR = 3600.0


def _state(*events: ev.Event) -> MatchState:
    seats = tuple(ev.SeatSpec(name=n, player_id=n) for n in ("a", "b", "c"))
    state = MatchState()
    for event in (ev.MatchCreated(ruleset={}, seats=seats, seed_hash=""), *events):
        apply(state, event)
    return state


def _ended(i: int, at: float, *, left: bool = False, ranked: bool = True) -> Ended:
    return Ended(match_id=f"m{i}", ended_at=at, ranked=ranked, left=left)


class TestWhoLeft:
    def test_leaving_and_never_coming_back_are_leaves(self) -> None:
        """A stand-in for `left` or `disconnected` still there at the end is a leave."""
        state = _state(
            ev.SeatStoodIn(seat=0, reason="left"), ev.SeatStoodIn(seat=1, reason="disconnected")
        )
        assert left_seats(state) == [True, True, False]

    def test_a_stand_in_for_timeouts_is_not_a_leave(self) -> None:
        """A player whose turns timed out was there, only slow."""
        assert left_seats(_state(ev.SeatStoodIn(seat=2, reason="timeouts"))) == [False] * 3

    def test_a_player_who_came_back_did_not_leave(self) -> None:
        """Reclaiming the seat before the end undoes the leave."""
        state = _state(ev.SeatStoodIn(seat=0, reason="disconnected"), ev.SeatReclaimed(seat=0))
        assert left_seats(state) == [False] * 3


class TestCompletion:
    def test_no_match_yet_has_no_rate(self) -> None:
        """Before any ended match there is nothing to say."""
        assert completion([]).rate is None

    def test_the_rate_counts_matches_played_to_the_end(self) -> None:
        """Three of four played to the end: 75%."""
        history = [_ended(i, i, left=i == 2) for i in range(4)]
        assert completion(history).rate == 0.75

    def test_only_the_last_matches_count(self) -> None:
        """Old leaves past the last RECENT matches are forgotten."""
        old = [_ended(i, i, left=True) for i in range(10)]
        recent = [_ended(100 + i, 100 + i) for i in range(RECENT)]
        assert completion(old + recent) == completion(recent)
        assert completion(recent).rate == 1.0


class TestRankedPause:
    def test_three_ranked_abandons_in_a_day_pause_the_player(self) -> None:
        """The third ranked abandon within 24 hours starts a pause of PAUSE seconds."""
        history = [_ended(i, i * HOUR, left=True) for i in range(ABANDONS)]
        third = (ABANDONS - 1) * HOUR
        pause = ranked_pause(history, third)
        assert pause is not None and (pause.since, pause.until) == (third, third + PAUSE)
        assert pause.abandons == ("m0", "m1", "m2") and pause.repeat == 0
        assert ranked_pause(history, third + PAUSE) is None

    def test_abandons_spread_over_more_than_a_day_do_not(self) -> None:
        """Leaves further apart than WINDOW never add up."""
        history = [_ended(i, i * (WINDOW / 2 + 1), left=True) for i in range(ABANDONS)]
        assert all(ranked_pause(history, e.ended_at) is None for e in history)

    def test_casual_abandons_do_not_count(self) -> None:
        """Only ranked matches left count towards a pause."""
        history = [_ended(i, i, left=True, ranked=False) for i in range(10)]
        assert ranked_pause(history, 10) is None

    def test_a_repeater_is_paused_twice_as_long(self) -> None:
        """A second pause within REPEAT_WINDOW of the first lasts twice as long."""
        first = [_ended(i, i * HOUR, left=True) for i in range(ABANDONS)]
        later = 3 * 24 * HOUR
        second = [_ended(10 + i, later + i * HOUR, left=True) for i in range(ABANDONS)]
        at = later + (ABANDONS - 1) * HOUR
        pause = ranked_pause(first + second, at)
        assert pause is not None and pause.repeat == 1 and pause.until == at + 2 * PAUSE

    def test_a_pause_long_ago_does_not_double(self) -> None:
        """Past the repeat window, a new pause is the first again."""
        first = [_ended(i, i * HOUR, left=True) for i in range(ABANDONS)]
        later = REPEAT_WINDOW + 10 * HOUR
        second = [_ended(10 + i, later + i * HOUR, left=True) for i in range(ABANDONS)]
        pause = ranked_pause(first + second, later + (ABANDONS - 1) * HOUR)
        assert pause is not None and pause.repeat == 0

    @given(
        st.lists(
            st.tuples(st.floats(0, 10 * 24 * HOUR), st.booleans(), st.booleans()), max_size=30
        ),
        st.floats(0, 12 * 24 * HOUR),
    )
    def test_a_pause_always_follows_enough_ranked_abandons(
        self, matches: list[tuple[float, bool, bool]], now: float
    ) -> None:
        """Any pause in force was earned by ABANDONS ranked leaves within WINDOW, the
        last at its start, and lasts PAUSE doubled by its repeats."""
        history = [
            _ended(i, at, left=left, ranked=ranked) for i, (at, left, ranked) in enumerate(matches)
        ]
        pause = ranked_pause(history, now)
        if pause is None:
            return
        earned = [e for e in history if e.match_id in pause.abandons]
        assert len(earned) == ABANDONS and all(e.ranked and e.left for e in earned)
        times = sorted(e.ended_at for e in earned)
        assert times[-1] == pause.since and times[-1] - times[0] < WINDOW
        assert pause.until - pause.since == pytest.approx(PAUSE * 2**pause.repeat)
