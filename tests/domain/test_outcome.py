"""How a finished match ended for each seat (`domain/outcome.py`): the one reading of a
match's end that the ratings and the arenas share. Who left (stood in for good for
`left` or `disconnected`), and the places: those who stayed in their order, the leavers
after them sharing the last place, always a standard competition ranking."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.outcome import LEFT_REASONS, SeatOutcome, left_seats, seat_outcomes

# A seat's stand-in reason at the end of a match (None: its player plays it).
REASONS = st.sampled_from([None, None, None, "left", "disconnected", "timeouts"])


def ranking(seats: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Placements as `domain.placements` gives them: a competition ranking of scores."""
    return st.lists(st.integers(0, 3), min_size=seats, max_size=seats).map(
        lambda keys: tuple(1 + sum(1 for k in keys if k > key) for key in keys)
    )


class TestWhoLeft:
    def test_a_stand_in_for_leaving_or_a_lost_connection_is_a_leave(self) -> None:
        """`left` and `disconnected` at the end are leaves; `timeouts` and none are not."""
        assert left_seats(["left", "disconnected", "timeouts", None]) == [
            True,
            True,
            False,
            False,
        ]
        assert frozenset({"left", "disconnected"}) == LEFT_REASONS


class TestPlaces:
    @pytest.mark.parametrize(
        ("placements", "stood_in", "expected"),
        [
            ((1, 2), (None, None), ((1, False), (2, False))),
            # Both dropped out, the stand-ins played it out: both left, sharing the place.
            ((1, 2), ("disconnected", "disconnected"), ((1, True), (1, True))),
            # The CPU brought the leaver home first: placed after the one who stayed.
            ((1, 2), ("left", None), ((2, True), (1, False))),
            (
                (1, 2, 3, 4),
                ("left", None, "timeouts", None),
                ((4, True), (1, False), (2, False), (3, False)),
            ),
            (
                (1, 2, 3, 4),
                (None, "left", None, "disconnected"),
                ((1, False), (3, True), (2, False), (3, True)),
            ),
            # Ties among those who stayed stay ties, the next place skipped.
            (
                (1, 2, 2, 4),
                ("left", None, None, None),
                ((4, True), (1, False), (1, False), (3, False)),
            ),
        ],
    )
    def test_leavers_come_after_everyone_who_stayed(
        self,
        placements: tuple[int, ...],
        stood_in: tuple[str | None, ...],
        expected: tuple[tuple[int, bool], ...],
    ) -> None:
        """Each seat's (place, left): leavers share the last place after those who
        stayed, who keep their order among themselves."""
        assert seat_outcomes(placements, stood_in) == tuple(SeatOutcome(*e) for e in expected)

    def test_a_seat_count_mismatch_is_refused(self) -> None:
        """One stand-in reason per placement, or `ValueError`."""
        with pytest.raises(ValueError, match="each seat"):
            seat_outcomes((1, 2), (None,))

    @given(
        st.sampled_from([2, 3, 4]).flatmap(
            lambda n: st.tuples(ranking(n), st.lists(REASONS, min_size=n, max_size=n))
        )
    )
    def test_places_are_a_ranking_with_every_leaver_last(
        self, drawn: tuple[tuple[int, ...], list[str | None]]
    ) -> None:
        """Whatever the match: each place is 1 + the seats ahead of it, no leaver is
        ahead of a player who stayed, and those who stayed keep their order."""
        placements, stood_in = drawn
        ends = seat_outcomes(placements, stood_in)
        places = [e.place for e in ends]
        assert all(p == 1 + sum(1 for q in places if q < p) for p in places)
        stayed = [e.place for e in ends if not e.left]
        assert all(e.place > max(stayed, default=0) for e in ends if e.left)
        for i, a in enumerate(ends):
            for j, b in enumerate(ends):
                if not a.left and not b.left and placements[i] < placements[j]:
                    assert a.place < b.place
