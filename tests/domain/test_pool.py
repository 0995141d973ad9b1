"""The quick-play pool's Decider (`domain/pool.py`): entering, leaving, and the tables a
pairing pass forms, ranked by rating window and casual with CPUs after the chosen wait."""

from __future__ import annotations

import itertools

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.pool import (
    POOL_KINDS,
    WINDOW_EVERY,
    WINDOW_MAX,
    WINDOW_START,
    WINDOW_STEP,
    EnterPool,
    FormTables,
    LeavePool,
    PoolEntered,
    PoolEvent,
    PoolKind,
    PoolLeft,
    PoolRejection,
    PoolState,
    TableFormed,
    apply,
    cpu_level_for,
    decide,
    decode_pool_event,
    fold,
    rating_window,
)

RANKED_2 = PoolKind(2, ranked=True)
RANKED_4 = PoolKind(4, ranked=True)
CASUAL_2 = PoolKind(2, ranked=False)
CASUAL_4 = PoolKind(4, ranked=False)
IDS = tuple((f"party-{i}", f"match-{i}") for i in range(64))


def run(state: PoolState, *commands: EnterPool | LeavePool | FormTables) -> list[PoolEvent]:
    """Decide and apply each command in turn (each must be accepted); the events."""
    out: list[PoolEvent] = []
    for command in commands:
        decided = decide(command, state)
        assert not isinstance(decided, PoolRejection), decided
        for event in decided:
            apply(state, event)
        out += decided
    return out


def enter(
    player: str, rating: float = 1500.0, at: float = 0.0, cpu_after: int | None = None
) -> EnterPool:
    """`player` enters at `at` (named in capitals)."""
    return EnterPool(
        player_id=player, name=player.upper(), rating=rating, now=at, cpu_after=cpu_after
    )


def tables(events: list[PoolEvent]) -> list[TableFormed]:
    return [e for e in events if isinstance(e, TableFormed)]


def seated(table: TableFormed) -> list[str]:
    return [p.player_id for p in table.players]


class TestEntering:
    def test_a_player_waits_from_the_time_given(self) -> None:
        """Entering records the player, their rating, the service's time and CPU wait."""
        state = PoolState(CASUAL_4)
        events = run(state, enter("ann", 1520.0, at=12.5, cpu_after=10))
        assert events == [
            PoolEntered(player_id="ann", name="ANN", rating=1520.0, entered_at=12.5, cpu_after=10)
        ]
        assert list(state.waiting) == ["ann"] and state.version == 1

    def test_entering_twice_is_refused(self) -> None:
        """A player already waiting is refused `already_waiting`, nothing appended."""
        state = PoolState(CASUAL_2)
        run(state, enter("ann"))
        refused = decide(enter("ann", at=3.0), state)
        assert isinstance(refused, PoolRejection) and refused.code == "already_waiting"

    @pytest.mark.parametrize("wait", [5, 60, 0])
    def test_a_casual_wait_is_one_of_the_offered(self, wait: int) -> None:
        """Casual players wait 10 or 30 s for CPUs, or for people only."""
        refused = decide(enter("ann", cpu_after=wait), PoolState(CASUAL_2))
        assert isinstance(refused, PoolRejection) and refused.code == "bad_wait"
        assert refused.field == "cpu_after"

    def test_ranked_tables_take_no_cpu_wait(self) -> None:
        """A ranked pool seats people only: a CPU wait is refused."""
        refused = decide(enter("ann", cpu_after=10), PoolState(RANKED_2))
        assert isinstance(refused, PoolRejection) and refused.code == "bad_wait"

    def test_a_rating_must_be_a_number(self) -> None:
        """NaN or infinite ratings are refused."""
        for rating in (float("nan"), float("inf")):
            refused = decide(enter("ann", rating), PoolState(RANKED_2))
            assert isinstance(refused, PoolRejection) and refused.code == "bad_rating"


class TestLeaving:
    def test_a_player_leaves_or_is_gone(self) -> None:
        """Leaving removes the player; a lost connection is recorded as `gone`."""
        state = PoolState(CASUAL_2)
        run(state, enter("ann"), enter("ben", at=1.0))
        events = run(state, LeavePool(player_id="ann"), LeavePool(player_id="ben", gone=True))
        assert events == [PoolLeft(player_id="ann"), PoolLeft(player_id="ben", reason="gone")]
        assert state.waiting == {}

    def test_leaving_a_pool_one_is_not_in_is_refused(self) -> None:
        """Leaving without waiting is refused `not_waiting`."""
        refused = decide(LeavePool(player_id="ann"), PoolState(CASUAL_2))
        assert isinstance(refused, PoolRejection) and refused.code == "not_waiting"


class TestRatingWindow:
    def test_the_window_widens_with_the_wait_up_to_its_bound(self) -> None:
        """±50 at first, 50 more every 5 s, never past ±400."""
        assert rating_window(0) == WINDOW_START
        assert rating_window(WINDOW_EVERY - 0.01) == WINDOW_START
        assert rating_window(WINDOW_EVERY) == WINDOW_START + WINDOW_STEP
        assert rating_window(3600) == WINDOW_MAX

    @given(st.floats(0, 1e6), st.floats(0, 1e6))
    def test_the_window_never_narrows(self, a: float, b: float) -> None:
        """A longer wait never gives a narrower window."""
        low, high = sorted((a, b))
        assert rating_window(low) <= rating_window(high)


class TestRankedPairing:
    def test_close_ratings_sit_together_at_once(self) -> None:
        """Two players within ±50 of each other form a table on the first pass."""
        state = PoolState(RANKED_2)
        run(state, enter("ann", 1500), enter("ben", 1540, at=1.0))
        formed = tables(run(state, FormTables(now=1.0, table_ids=IDS)))
        assert [seated(t) for t in formed] == [["ann", "ben"]]
        assert formed[0].party_id == IDS[0][0] and formed[0].cpus == 0 and state.waiting == {}

    def test_far_ratings_wait_until_both_windows_reach(self) -> None:
        """A 160-point gap waits until both players' windows cover it."""
        state = PoolState(RANKED_2)
        run(state, enter("ann", 1500), enter("ben", 1660, at=10.0))
        assert run(state, FormTables(now=14.0, table_ids=IDS)) == []  # ann ±150, ben ±50
        assert run(state, FormTables(now=24.9, table_ids=IDS)) == []  # ben ±150
        formed = tables(run(state, FormTables(now=25.0, table_ids=IDS)))  # ben ±200
        assert [seated(t) for t in formed] == [["ann", "ben"]]

    def test_the_closest_rating_is_taken_first(self) -> None:
        """Of two who fit, the anchor sits with the closer rating."""
        state = PoolState(RANKED_2)
        run(state, enter("ann", 1500), enter("far", 1545, at=1.0), enter("near", 1510, at=2.0))
        formed = tables(run(state, FormTables(now=2.0, table_ids=IDS)))
        assert [seated(t) for t in formed] == [["ann", "near"]]
        assert list(state.waiting) == ["far"]

    def test_four_seats_need_four_who_all_fit(self) -> None:
        """A 4-player ranked table forms only when every pair fits; the longest wait leads."""
        state = PoolState(RANKED_4)
        run(state, *(enter(p, 1500 + 20 * i, at=i) for i, p in enumerate("abc")))
        assert run(state, FormTables(now=3.0, table_ids=IDS)) == []  # three waiting
        run(state, enter("d", 1550, at=3.0))
        formed = tables(run(state, FormTables(now=3.0, table_ids=IDS)))
        assert [seated(t) for t in formed] == [["a", "b", "c", "d"]]

    def test_one_who_fits_the_leader_but_not_another_is_not_seated(self) -> None:
        """Every pair at the table fits: 1460 fits 1500 but not 1540, so no table forms."""
        state = PoolState(RANKED_4)
        run(state, enter("a", 1500), enter("b", 1540), enter("c", 1460), enter("d", 1500))
        assert run(state, FormTables(now=0.0, table_ids=IDS)) == []

    def test_ranked_tables_are_people_only(self) -> None:
        """A lone ranked player is never given CPUs, however long they wait."""
        state = PoolState(RANKED_2)
        run(state, enter("ann"))
        assert run(state, FormTables(now=3600.0, table_ids=IDS)) == []


class TestCasualPairing:
    def test_enough_people_form_a_table_at_once(self) -> None:
        """The first four waiting sit together, whatever their ratings and waits."""
        state = PoolState(CASUAL_4)
        run(state, *(enter(p, 900 + 400 * i, at=i, cpu_after=None) for i, p in enumerate("abcde")))
        formed = tables(run(state, FormTables(now=4.0, table_ids=IDS)))
        assert [seated(t) for t in formed] == [["a", "b", "c", "d"]]
        assert list(state.waiting) == ["e"]

    def test_cpus_fill_the_table_after_the_chosen_wait(self) -> None:
        """A lone visitor who chose 10 s gets three CPUs at 10 s, not before."""
        state = PoolState(CASUAL_4)
        run(state, enter("ann", 1500, at=100.0, cpu_after=10))
        assert run(state, FormTables(now=109.9, table_ids=IDS)) == []
        formed = tables(run(state, FormTables(now=110.0, table_ids=IDS)))
        assert [(seated(t), t.cpus, t.cpu_level) for t in formed] == [(["ann"], 3, "normal")]

    def test_everyone_who_accepts_cpus_sits_together(self) -> None:
        """When one player's wait is up, the others who accept CPUs join that table;
        a "people only" player keeps waiting."""
        state = PoolState(CASUAL_4)
        run(
            state,
            enter("ann", at=0.0, cpu_after=30),
            enter("pep", at=1.0, cpu_after=None),
            enter("ben", at=20.0, cpu_after=30),
        )
        assert run(state, FormTables(now=29.0, table_ids=IDS)) == []
        formed = tables(run(state, FormTables(now=30.0, table_ids=IDS)))
        assert [(seated(t), t.cpus) for t in formed] == [(["ann", "ben"], 2)]
        assert list(state.waiting) == ["pep"]

    def test_people_only_never_get_cpus(self) -> None:
        """Players who chose people only wait, however long."""
        state = PoolState(CASUAL_2)
        run(state, enter("ann", cpu_after=None))
        assert run(state, FormTables(now=3600.0, table_ids=IDS)) == []

    @pytest.mark.parametrize(
        ("ratings", "level"),
        [
            ((1200.0,), "easy"),
            ((1500.0,), "normal"),
            ((1700.0, 1650.0), "hard"),
            ((1399.0, 1401.0), "normal"),
        ],
    )
    def test_the_cpu_level_matches_the_people(self, ratings: tuple[float, ...], level: str) -> None:
        """The CPUs' level follows the mean rating of the people at the table."""
        assert cpu_level_for(ratings) == level


class TestKinds:
    def test_four_pools_each_with_its_stream(self) -> None:
        """2 and 4 seats, casual and ranked: four pools, four streams."""
        assert [k.stream for k in POOL_KINDS] == [
            "pool-2-casual",
            "pool-2-ranked",
            "pool-4-casual",
            "pool-4-ranked",
        ]


class TestFormTables:
    def test_too_few_table_ids_is_refused(self) -> None:
        """The pass needs an id for each table it opens."""
        state = PoolState(CASUAL_2)
        run(state, enter("a"), enter("b"), enter("c"), enter("d"))
        refused = decide(FormTables(now=0.0, table_ids=IDS[:1]), state)
        assert isinstance(refused, PoolRejection) and refused.code == "table_ids"

    def test_an_absent_player_stays_but_is_not_seated(self) -> None:
        """A player whose connection is away is passed over and keeps their place."""
        state = PoolState(CASUAL_2)
        run(state, enter("a"), enter("b", at=1.0), enter("c", at=2.0))
        formed = tables(run(state, FormTables(now=2.0, table_ids=IDS, absent=frozenset({"a"}))))
        assert [[p.player_id for p in t.players] for t in formed] == [["b", "c"]]
        assert list(state.waiting) == ["a"]

    def test_events_decode_as_they_were_stored(self) -> None:
        """Every pool event survives its stored JSON, ids and seeds included."""
        state = PoolState(CASUAL_2)
        events = run(state, enter("a"), enter("b"), FormTables(now=0.0, table_ids=IDS))
        assert [decode_pool_event(msgspec.json.encode(e)) for e in events] == events
        assert isinstance(events[-1], TableFormed) and events[-1].match_id == IDS[0][1]

    def test_the_fold_of_the_events_is_the_state(self) -> None:
        """Folding the stream's events gives the state the decisions were made on."""
        state = PoolState(CASUAL_2)
        events = run(
            state,
            enter("a"),
            enter("b", at=1.0),
            enter("c", at=2.0),
            FormTables(now=2.0, table_ids=IDS),
        )
        again = fold(CASUAL_2, events)
        assert again.waiting == state.waiting and again.version == state.version == 4


_entries = st.lists(
    st.tuples(
        st.floats(1400, 1700, allow_nan=False),
        st.floats(0, 60, allow_nan=False),
        st.sampled_from([10, 30, None]),
    ),
    max_size=24,
)


class TestPairingProperties:
    @given(_entries, st.sampled_from([2, 4]), st.booleans(), st.floats(0, 120))
    def test_nobody_is_seated_twice_and_every_table_is_full(
        self, entries: list[tuple[float, float, int | None]], seats: int, ranked: bool, now: float
    ) -> None:
        """Any pool, any time: each player sits at most once, every table has exactly its
        seats (people and CPUs), ranked tables have no CPUs and all their players fit, and
        casual CPUs sit only with players who accept them."""
        kind = PoolKind(seats, ranked)
        state = PoolState(kind)
        for i, (rating, at, cpu_after) in enumerate(entries):
            run(
                state,
                enter(f"p{i}", rating, at=min(at, now), cpu_after=None if ranked else cpu_after),
            )
        before = dict(state.waiting)
        formed = tables(run(state, FormTables(now=now, table_ids=IDS)))
        ids = [p for t in formed for p in seated(t)]
        assert len(ids) == len(set(ids)) and set(ids) <= set(before)
        assert set(state.waiting) == set(before) - set(ids)
        for table in formed:
            assert len(table.players) + table.cpus == seats
            players = [before[p] for p in seated(table)]
            if ranked:
                assert table.cpus == 0
                for a, b in itertools.combinations(players, 2):
                    gap = abs(a.rating - b.rating)
                    assert gap <= rating_window(now - a.entered_at)
                    assert gap <= rating_window(now - b.entered_at)
            elif table.cpus:
                assert all(p.cpu_after is not None for p in players)

    @given(_entries, st.floats(0, 120))
    def test_a_pass_right_after_a_pass_forms_nothing_more_casual_full(
        self, entries: list[tuple[float, float, int | None]], now: float
    ) -> None:
        """After a casual pass, fewer people wait than a table holds (the rest form at once)."""
        state = PoolState(CASUAL_4)
        for i, (rating, at, cpu_after) in enumerate(entries):
            run(state, enter(f"p{i}", rating, at=min(at, now), cpu_after=cpu_after))
        run(state, FormTables(now=now, table_ids=IDS))
        assert len(state.waiting) < 4
        assert run(state, FormTables(now=now, table_ids=IDS)) == []
