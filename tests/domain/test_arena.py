"""The arena tournament's Decider (`domain/arena.py`, docs/arenas.md): creating an arena,
joining, pausing and continuing, the pairing passes, the points of each result (shared
places, the streak, leaving), the end, cancelling and the standings; every refusal with its
code and HTTP status; and, over random arenas driven through the fold, the properties the
offline verifier relies on.

`arena(...)` builds an arena by deciding commands, so every state a test starts from is one
the Decider allowed.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, get_args

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.arena import (
    NAME_MAX,
    POINTS,
    REASON_MAX,
    SCORING,
    SCORINGS,
    STREAK_FROM,
    ArenaCancelled,
    ArenaCommand,
    ArenaCreated,
    ArenaEnded,
    ArenaEvent,
    ArenaJoined,
    ArenaRejection,
    ArenaState,
    ArenaTable,
    CancelArena,
    ContinueArena,
    CreateArena,
    EndArena,
    JoinArena,
    PairTables,
    PauseArena,
    PauseReason,
    PlayerContinued,
    PlayerPaused,
    ResultScored,
    ScoreMatch,
    SeatResult,
    TablesPaired,
    apply,
    decide,
    decode_arena_event,
    fold,
    leader,
    match_outcome,
    pair_tables,
    place_points,
    podium,
    standings,
)

ARENA_ID = "arena-1"
START = 10_000.0
MINUTES = 20
END = START + 60 * MINUTES
FIRST_A = {"a": 1, "b": 2, "c": 3, "d": 4}
IDS = tuple((f"party-{i}", f"match-{i}") for i in range(64))


def create(**fields: Any) -> CreateArena:
    """A CreateArena of a 4-player, 20-minute arena from START, with `fields` changed."""
    settings: dict[str, Any] = {
        "arena_id": ARENA_ID,
        "name": "Hourly",
        "seats": 4,
        "rules": "standard",
        "turn_limit": 30,
        "starts_at": START,
        "minutes": MINUTES,
    }
    return CreateArena(**(settings | fields))


def snapshot(state: ArenaState) -> Any:
    """Everything the fold knows, as plain data (for equality)."""
    return (
        state.version,
        state.created,
        [(p, [getattr(e, s) for s in e.__slots__]) for p, e in state.entrants.items()],
        list(state.running.items()),
        list(state.results.items()),
        state.ended_at,
        state.cancelled,
    )


def act(state: ArenaState, *commands: ArenaCommand) -> list[ArenaEvent]:
    """Decide each command in turn, require it accepted, fold its events; the events."""
    out: list[ArenaEvent] = []
    for command in commands:
        decided = decide(command, state)
        assert isinstance(decided, list), decided
        fold(decided, state)
        out += decided
    return out


def refused(state: ArenaState, command: ArenaCommand) -> ArenaRejection:
    """Decide `command`, require a refusal, and check it changed nothing."""
    before = snapshot(state)
    decided = decide(command, state)
    assert isinstance(decided, ArenaRejection), decided
    assert snapshot(state) == before
    return decided


def arena(seats: int = 4, **fields: Any) -> ArenaState:
    """A created arena (nobody in it yet)."""
    state = ArenaState()
    act(state, create(seats=seats, **fields))
    return state


def join(player: str, rating: float = 1500.0, at: float = START, seed: str = "") -> JoinArena:
    """`player` joins at `at` (named in capitals)."""
    return JoinArena(player_id=player, name=player.upper(), rating=rating, now=at, client_seed=seed)


def joined(seats: int, *players: str, ratings: dict[str, float] | None = None) -> ArenaState:
    """An arena of `seats` with `players` joined one second apart (in that order)."""
    state = arena(seats)
    ratings = ratings or {}
    for i, p in enumerate(players):
        act(state, join(p, ratings.get(p, 1500.0), at=START - 100 + i))
    return state


def pair(now: float = START, absent: set[str] | None = None, ids: Any = IDS) -> PairTables:
    return PairTables(now=now, table_ids=ids, absent=frozenset(absent or ()))


def tables(events: list[ArenaEvent]) -> list[list[str]]:
    """The players of each table the events paired, in seat order."""
    return [list(t.players) for e in events if isinstance(e, TablesPaired) for t in e.tables]


def seated(events: list[ArenaEvent]) -> set[str]:
    """Everyone the events seated."""
    return {p for table in tables(events) for p in table}


def score(
    state: ArenaState, match_id: str, places: tuple[int, ...], left: tuple[bool, ...] = ()
) -> ResultScored:
    """Score `match_id` with `places` (and `left`, none by default); the event."""
    left = left or (False,) * len(places)
    (event,) = act(state, ScoreMatch(match_id=match_id, places=places, left=left))
    assert isinstance(event, ResultScored)
    return event


def points(event: ResultScored) -> dict[str, float]:
    return {r.player_id: r.points for r in event.results}


def play(state: ArenaState, now: float, places: dict[str, int]) -> dict[str, SeatResult]:
    """Pair one table at `now` (fresh ids) and score it with each player's place; their
    results."""
    used = len(state.running) + len(state.results)
    (paired,) = act(state, pair(now, ids=IDS[used:]))
    assert isinstance(paired, TablesPaired) and len(paired.tables) == 1, paired
    table = paired.tables[0]
    event = score(state, table.match_id, tuple(places[p] for p in table.players))
    return {r.player_id: r for r in event.results}


# -------------------------------------------------------------------------------- creation


class TestCreation:
    def test_an_arena_is_created_with_its_settings(self) -> None:
        """Creating records every setting; the name is trimmed; it ends `minutes` later."""
        state = ArenaState()
        events = act(state, create(name="  Daily  ", private=True, creator_id="g1"))
        assert events == [
            ArenaCreated(
                arena_id=ARENA_ID,
                name="Daily",
                seats=4,
                rules="standard",
                turn_limit=30,
                starts_at=START,
                minutes=MINUTES,
                private=True,
                creator_id="g1",
                scoring=SCORING,
            )
        ]
        assert state.ends_at == END and state.version == 1 and state.entrants == {}

    @pytest.mark.parametrize(
        ("fields", "code", "field"),
        [
            ({"seats": 3}, "bad_seats", "seats"),
            ({"seats": 1}, "bad_seats", "seats"),
            ({"minutes": 45}, "bad_minutes", "minutes"),
            ({"minutes": 0}, "bad_minutes", "minutes"),
            ({"turn_limit": 10}, "bad_turn_limit", "turn_limit"),
            ({"rules": "ludo_king"}, "bad_rules", "rules"),
            ({"name": ""}, "bad_name", "name"),
            ({"name": "   "}, "bad_name", "name"),
            ({"name": "x" * (NAME_MAX + 1)}, "bad_name", "name"),
        ],
    )
    def test_every_bad_field_is_refused_by_name(
        self, fields: dict[str, Any], code: str, field: str
    ) -> None:
        """A bad setting is refused 422 with its own code, naming the field."""
        rejection = refused(ArenaState(), create(**fields))
        assert (rejection.code, rejection.field, rejection.status) == (code, field, 422)

    @pytest.mark.parametrize(
        "fields",
        [
            {"seats": 2},
            {"minutes": 30},
            {"minutes": 60},
            {"turn_limit": 60},
            {"rules": "bga"},
            {"name": "x" * NAME_MAX},
        ],
    )
    def test_every_offered_setting_is_accepted(self, fields: dict[str, Any]) -> None:
        """2 or 4 seats, 20/30/60 minutes, 30/60 s, standard or bga, names up to 60."""
        assert isinstance(decide(create(**fields), ArenaState()), list)

    def test_creating_twice_is_refused(self) -> None:
        """An arena id is created once: again is `arena_exists` (409)."""
        rejection = refused(arena(), create(seats=2))
        assert (rejection.code, rejection.status) == ("arena_exists", 409)

    @pytest.mark.parametrize(
        "command",
        [
            join("ann"),
            PauseArena(player_id="ann", now=START),
            ContinueArena(player_id="ann", rating=1500.0, now=START),
            pair(),
            ScoreMatch(match_id="m", places=(1, 2), left=(False, False)),
            EndArena(now=END),
            CancelArena(reason="why", by="op", now=START),
        ],
    )
    def test_nothing_happens_to_an_arena_never_created(self, command: ArenaCommand) -> None:
        """Every other command on an empty stream is `no_arena` (404)."""
        rejection = refused(ArenaState(), command)
        assert (rejection.code, rejection.status) == ("no_arena", 404)


# --------------------------------------------------------------------------------- joining


class TestJoining:
    def test_joining_before_the_start_is_allowed(self) -> None:
        """A player joins an upcoming arena, with their rating, seed and the time given."""
        state = arena()
        events = act(state, join("ann", 1620.0, at=START - 500, seed="lucky"))
        assert events == [
            ArenaJoined(
                player_id="ann", name="ANN", rating=1620.0, at=START - 500, client_seed="lucky"
            )
        ]
        entrant = state.entrants["ann"]
        assert entrant.state == "waiting" and entrant.since == entrant.joined_at == START - 500
        assert state.status(START - 500) == "upcoming"

    def test_joining_while_it_runs_is_allowed(self) -> None:
        """Until the last instant before the end, anyone may join."""
        state = arena()
        act(state, join("ann", at=START), join("ben", at=END - 0.001))
        assert list(state.entrants) == ["ann", "ben"]

    @pytest.mark.parametrize("at", [END, END + 1, END + 86_400])
    def test_joining_at_or_after_the_end_is_over(self, at: float) -> None:
        """From the end on, joining is `arena_over` (409), recorded end or not."""
        rejection = refused(arena(), join("ann", at=at))
        assert (rejection.code, rejection.status) == ("arena_over", 409)

    def test_joining_after_the_recorded_end_is_over(self) -> None:
        """After ArenaEnded, joining is `arena_over`."""
        state = arena()
        act(state, EndArena(now=END))
        assert refused(state, join("ann", at=END + 5)).code == "arena_over"

    def test_joining_a_cancelled_arena_is_refused_with_the_reason(self) -> None:
        """A cancelled arena refuses `arena_cancelled`, saying why it was cancelled."""
        state = arena()
        act(state, CancelArena(reason="server maintenance", by="operator", now=START))
        rejection = refused(state, join("ann", at=START - 10))
        assert rejection.code == "arena_cancelled" and "server maintenance" in rejection.reason

    def test_joining_twice_is_refused(self) -> None:
        """A player already in is `already_joined`; nothing about continuing."""
        state = joined(4, "ann")
        rejection = refused(state, join("ann", at=START + 1))
        assert rejection.code == "already_joined" and "continue" not in rejection.reason

    def test_joining_again_while_paused_says_to_continue(self) -> None:
        """A paused player who joins again is `already_joined`, told to press continue."""
        state = joined(4, "ann")
        act(state, PauseArena(player_id="ann", now=START))
        rejection = refused(state, join("ann", at=START + 1))
        assert rejection.code == "already_joined" and "continue" in rejection.reason

    @pytest.mark.parametrize("seed", ["x" * 65, "séance", "tab\there", "new\nline"])
    def test_a_bad_client_seed_is_refused(self, seed: str) -> None:
        """Seeds are at most 64 printable ASCII characters: else `bad_client_seed` (422)."""
        rejection = refused(arena(), join("ann", seed=seed))
        assert (rejection.code, rejection.field, rejection.status) == (
            "bad_client_seed",
            "client_seed",
            422,
        )

    @pytest.mark.parametrize("rating", [float("nan"), float("inf"), float("-inf")])
    def test_a_rating_must_be_a_number(self, rating: float) -> None:
        """A NaN or infinite rating is `bad_rating` (422): stored, NaN would read back as
        null and the stream would no longer decode."""
        rejection = refused(arena(), join("ann", rating))
        assert (rejection.code, rejection.field, rejection.status) == ("bad_rating", "rating", 422)

    def test_the_longest_seed_is_accepted(self) -> None:
        """A 64-character printable seed is kept as given."""
        state = arena()
        act(state, join("ann", seed="~" * 64))
        assert state.entrants["ann"].client_seed == "~" * 64


# ------------------------------------------------------------------------ pause / continue


class TestPauseAndContinue:
    def test_pausing_records_the_reason(self) -> None:
        """A pause says why: asked by default, or `gone` when the service found them away."""
        state = joined(4, "ann", "ben")
        events = act(
            state,
            PauseArena(player_id="ann", now=START),
            PauseArena(player_id="ben", reason="gone", now=START),
        )
        assert events == [
            PlayerPaused(player_id="ann", reason="asked", at=START),
            PlayerPaused(player_id="ben", reason="gone", at=START),
        ]
        assert state.entrants["ann"].state == state.entrants["ben"].state == "paused"

    def test_pausing_without_joining_is_refused(self) -> None:
        """Only entrants pause: else `not_joined`."""
        assert (
            refused(joined(4, "ann"), PauseArena(player_id="ben", now=START)).code == "not_joined"
        )

    def test_pausing_twice_is_refused(self) -> None:
        """A paused player pausing again is `already_paused`."""
        state = joined(4, "ann")
        act(state, PauseArena(player_id="ann", now=START))
        assert refused(state, PauseArena(player_id="ann", now=START)).code == "already_paused"

    def test_pausing_after_the_end_or_cancel_is_over(self) -> None:
        """Once the end is recorded, or the arena cancelled, a pause is `arena_over`."""
        ended = joined(4, "ann")
        act(ended, EndArena(now=END))
        assert refused(ended, PauseArena(player_id="ann", now=START)).code == "arena_over"
        cancelled = joined(4, "ann")
        act(cancelled, CancelArena(reason="why", by="op", now=START))
        assert refused(cancelled, PauseArena(player_id="ann", now=START)).code == "arena_over"

    @pytest.mark.parametrize("now", [END, END + 0.005, END + 0.03, END + 600])
    def test_pausing_at_or_after_the_clock_is_over_recorded_end_or_not(self, now: float) -> None:
        """A pause decided at or after `ends_at` is `arena_over` (409) though the end is
        not recorded yet, as a join at that moment is: one clock for every command."""
        state = joined(4, "ann")
        rejection = refused(state, PauseArena(player_id="ann", now=now))
        assert (rejection.code, rejection.status) == ("arena_over", 409)
        assert refused(state, join("ben", at=now)).code == "arena_over"

    def test_a_pause_an_instant_before_the_end_is_taken_with_its_time(self) -> None:
        """Until the last instant before the end a player may pause; the event says when."""
        state = joined(4, "ann")
        events = act(state, PauseArena(player_id="ann", now=END - 0.001))
        assert events == [PlayerPaused(player_id="ann", reason="asked", at=END - 0.001)]

    def test_a_version_1_pause_without_its_time_is_judged_by_the_events(self) -> None:
        """A pause recorded before pauses carried a time (`now` None) is refused only
        once an end or a cancel is recorded, as it was then (old files keep verifying)."""
        state = joined(4, "ann", "ben")
        events = act(state, PauseArena(player_id="ann", now=None))
        assert events == [PlayerPaused(player_id="ann", reason="asked", at=None)]
        act(state, EndArena(now=END))
        assert refused(state, PauseArena(player_id="ben", now=None)).code == "arena_over"

    def test_continuing_without_joining_is_refused(self) -> None:
        """Continue is for entrants: else `not_joined`."""
        command = ContinueArena(player_id="ben", rating=1500.0, now=START)
        assert refused(joined(4, "ann"), command).code == "not_joined"

    def test_continuing_when_not_paused_is_refused(self) -> None:
        """A waiting player continuing is `not_paused`."""
        command = ContinueArena(player_id="ann", rating=1500.0, now=START)
        assert refused(joined(4, "ann"), command).code == "not_paused"

    @pytest.mark.parametrize("now", [END, END + 60])
    def test_continuing_after_the_end_is_over(self, now: float) -> None:
        """At or after the end a paused player cannot continue: `arena_over`."""
        state = joined(4, "ann")
        act(state, PauseArena(player_id="ann", now=START))
        command = ContinueArena(player_id="ann", rating=1500.0, now=now)
        assert refused(state, command).code == "arena_over"

    def test_continuing_a_cancelled_arena_is_refused(self) -> None:
        """A cancelled arena refuses continue `arena_cancelled`."""
        state = joined(4, "ann")
        act(
            state,
            PauseArena(player_id="ann", now=START),
            CancelArena(reason="why", by="op", now=START),
        )
        command = ContinueArena(player_id="ann", rating=1500.0, now=START)
        assert refused(state, command).code == "arena_cancelled"

    def test_a_paused_player_is_not_paired_until_they_continue(self) -> None:
        """Pausing takes a player out of pairing; continuing puts them back."""
        state = joined(2, "ann", "ben", "cat")
        act(state, PauseArena(player_id="ben", now=START))
        assert tables(act(state, pair(START))) == [["ann", "cat"]]
        act(state, ContinueArena(player_id="ben", rating=1500.0, now=START + 5))
        act(state, join("dan", at=START + 6))
        assert tables(act(state, pair(START + 6))) == [["ben", "dan"]]

    def test_continuing_with_a_rating_not_a_number_is_refused(self) -> None:
        """The rating a continue records must be finite: else `bad_rating` (422)."""
        state = joined(4, "ann")
        act(state, PauseArena(player_id="ann", now=START))
        command = ContinueArena(player_id="ann", rating=float("nan"), now=START)
        assert refused(state, command).code == "bad_rating"

    def test_a_continue_refreshes_rating_and_since(self) -> None:
        """Continuing records the rating then (pairing's second key) and when."""
        state = joined(2, "ann", ratings={"ann": 1400.0})
        act(state, PauseArena(player_id="ann", now=START))
        events = act(state, ContinueArena(player_id="ann", rating=1750.0, now=START + 42))
        assert events == [PlayerContinued(player_id="ann", rating=1750.0, at=START + 42)]
        entrant = state.entrants["ann"]
        assert (entrant.rating, entrant.since, entrant.state) == (1750.0, START + 42, "waiting")
        assert entrant.joined_at == START - 100  # joining time stays

    def test_a_player_paused_mid_match_finishes_it_then_stays_paused(self) -> None:
        """A pause during a match lets the match count; afterwards they are not paired."""
        state = joined(2, "ann", "ben", "cat", "dan")
        act(state, pair(START))
        act(state, PauseArena(player_id="ann", now=START))
        assert state.entrants["ann"].state == "playing"
        match_id = state.entrants["ann"].match_id
        assert match_id is not None
        seat = state.running[match_id].players.index("ann")
        event = score(state, match_id, (1, 2) if seat == 0 else (2, 1))
        assert points(event)["ann"] == 2.0
        assert state.entrants["ann"].paused and state.entrants["ann"].match_id is None
        (other,) = state.running
        score(state, other, (1, 2))
        assert "ann" not in seated(act(state, pair(START + 60)))


# --------------------------------------------------------------------------------- pairing


class TestPairing:
    @pytest.mark.parametrize("now", [START - 1, END, END + 1])
    def test_no_tables_outside_the_clock(self, now: float) -> None:
        """Before `starts_at`, and at or after the end, a pass is `not_running`."""
        state = joined(2, "ann", "ben")
        assert refused(state, pair(now)).code == "not_running"

    def test_no_tables_after_the_end_or_a_cancel(self) -> None:
        """Once ended (recorded) or cancelled, a pass is `not_running`."""
        ended = joined(2, "ann", "ben")
        act(ended, EndArena(now=END))
        assert refused(ended, pair(START + 5)).code == "not_running"
        cancelled = joined(2, "ann", "ben")
        act(cancelled, CancelArena(reason="why", by="op", now=START))
        assert refused(cancelled, pair(START + 5)).code == "not_running"

    def test_the_first_pass_sorts_by_rating(self) -> None:
        """Everyone at 0 points: the highest ratings sit together; ids are used in order."""
        ratings = {"a": 1500.0, "b": 1600.0, "c": 1700.0, "d": 1800.0}
        state = joined(2, "a", "b", "c", "d", ratings=ratings)
        (event,) = act(state, pair(START))
        assert event == TablesPaired(
            at=START,
            tables=(
                ArenaTable("party-0", "match-0", ("d", "c")),
                ArenaTable("party-1", "match-1", ("b", "a")),
            ),
        )
        assert list(state.running) == ["match-0", "match-1"]
        assert all(state.entrants[p].state == "playing" for p in "abcd")

    def test_score_comes_before_rating(self) -> None:
        """The winners meet the winners, whatever the ratings."""
        ratings = {"a": 1500.0, "b": 1600.0, "c": 1700.0, "d": 1800.0}
        state = joined(2, "a", "b", "c", "d", ratings=ratings)
        act(state, pair(START))
        score(state, "match-0", (1, 2))  # d beats c
        score(state, "match-1", (1, 2))  # b beats a
        ids = (("party-x", "match-x"), ("party-y", "match-y"))
        assert tables(act(state, pair(START + 60, ids=ids))) == [["d", "b"], ["c", "a"]]

    def test_equal_ratings_seat_who_joined_first_first(self) -> None:
        """Equal score and rating: the earlier joiner comes first."""
        state = joined(2, "zed", "amy", "kim")
        assert tables(act(state, pair(START))) == [["zed", "amy"]]
        assert state.entrants["kim"].state == "waiting"

    def test_only_full_tables_form_the_rest_wait(self) -> None:
        """Six waiting for 4-player tables: one table, two wait; a pass then forms nothing."""
        state = joined(4, *"abcdef", ratings={p: 1500.0 + i for i, p in enumerate("abcdef")})
        assert tables(act(state, pair(START))) == [["f", "e", "d", "c"]]
        assert [p for p, e in state.entrants.items() if e.state == "waiting"] == ["a", "b"]
        assert act(state, pair(START + 1)) == []

    def test_absent_players_are_skipped_and_recorded(self) -> None:
        """A waiting player not connected is not seated and is named in `skipped`."""
        state = joined(2, "ann", "ben", "cat")
        (event,) = act(state, pair(START, absent={"ann"}))
        assert isinstance(event, TablesPaired)
        assert [list(t.players) for t in event.tables] == [["ben", "cat"]]
        assert event.skipped == ("ann",) and state.entrants["ann"].state == "waiting"

    def test_only_waiting_absentees_are_recorded(self) -> None:
        """`skipped` names the waiting absent; the paused, playing or unknown are not in it."""
        state = joined(2, "ann", "ben", "cat", "dan", "eve", "fay")
        act(state, pair(START, absent={"cat", "dan", "eve", "fay"}))  # ann-ben play
        act(state, PauseArena(player_id="cat", now=START))
        absent = {"ann", "cat", "dan", "nobody"}
        (event,) = act(state, pair(START + 1, absent=absent))
        assert isinstance(event, TablesPaired)
        assert event.skipped == ("dan",) and tables([event]) == [["eve", "fay"]]

    def test_a_pass_with_no_table_appends_nothing(self) -> None:
        """No table can form: no event, even with absentees."""
        state = joined(2, "ann", "ben")
        assert act(state, pair(START, absent={"ann"})) == []
        assert state.version == 3

    def test_too_few_table_ids_is_refused(self) -> None:
        """The pass needs an id pair for each table it opens; exactly as many will do."""
        state = joined(2, "a", "b", "c", "d")
        assert refused(state, pair(START, ids=IDS[:1])).code == "table_ids"
        assert len(tables(act(state, pair(START, ids=IDS[:2])))) == 2

    def test_a_player_playing_is_not_paired_again(self) -> None:
        """Nobody is in two running matches: players at a table wait out their match."""
        state = joined(2, "a", "b")
        act(state, pair(START))
        act(state, join("c", at=START + 1))
        assert act(state, pair(START + 1)) == []
        score(state, "match-0", (2, 1))
        act(state, join("d", at=START + 2))
        formed = tables(act(state, pair(START + 2, ids=IDS[1:])))
        assert sorted(p for t in formed for p in t) == ["a", "b", "c", "d"]

    def test_pair_tables_reforms_a_pass_from_its_skipped(self) -> None:
        """`pair_tables` on the state before a pass, with its `skipped`, gives its tables."""
        state = joined(
            4, *"abcdefghij", ratings={p: 1400.0 + 7 * i for i, p in enumerate("abcdefghij")}
        )
        before = pair_tables(state, ("c", "h"))
        (event,) = act(state, pair(START, absent={"c", "h"}))
        assert isinstance(event, TablesPaired)
        assert [list(t.players) for t in event.tables] == before


# --------------------------------------------------------------------------------- scoring


class TestScoring:
    @pytest.mark.parametrize(
        ("seats", "places", "expected"),
        [
            (4, (1, 2, 3, 4), [4, 2, 1, 0]),
            (4, (4, 3, 2, 1), [0, 1, 2, 4]),
            (2, (1, 2), [2, 0]),
            (2, (2, 1), [0, 2]),
            (4, (1, 2, 2, 4), [4, 1.5, 1.5, 0]),
            (4, (1, 1, 3, 4), [3, 3, 1, 0]),
            (4, (1, 2, 3, 3), [4, 2, 0.5, 0.5]),
            (4, (1, 2, 2, 2), [4, 1, 1, 1]),
            (4, (1, 1, 1, 1), [1.75] * 4),
            (2, (1, 1), [1, 1]),
        ],
    )
    def test_points_by_place_shared_places_share(
        self, seats: int, places: tuple[int, ...], expected: list[float]
    ) -> None:
        """4/2/1/0 and 2/0; a place shared by k seats shares the points of the k places."""
        assert place_points(seats, places) == expected

    def test_a_match_scores_by_place(self) -> None:
        """Each seat's result in seat order: place, points, streak after it."""
        state = joined(4, "a", "b", "c", "d")
        act(state, pair(START))
        table = state.running["match-0"]
        event = score(state, "match-0", (2, 1, 4, 3))
        assert event.results == tuple(
            SeatResult(p, place, False, pts, False, 1 if place == 1 else 0)
            for p, place, pts in zip(table.players, (2, 1, 4, 3), (2.0, 4.0, 0.0, 1.0), strict=True)
        )
        assert state.running == {} and list(state.results) == ["match-0"]
        assert all(state.entrants[p].state == "waiting" for p in "abcd")
        assert {p: e.matches for p, e in state.entrants.items()} == dict.fromkeys("abcd", 1)

    def test_two_tied_second_of_four_get_one_and_a_half(self) -> None:
        """Two tied for 2nd of four share 2 + 1: 1.5 each."""
        state = joined(4, "a", "b", "c", "d")
        act(state, pair(START))
        assert sorted(points(score(state, "match-0", (1, 2, 2, 4))).values()) == [0, 1.5, 1.5, 4]

    def test_two_tied_first_of_two_get_one_each(self) -> None:
        """Two tied for 1st of two share 2 + 0: 1 each (and both count a first)."""
        state = joined(2, "a", "b")
        act(state, pair(START))
        event = score(state, "match-0", (1, 1))
        assert points(event) == {"a": 1.0, "b": 1.0}
        assert [r.streak for r in event.results] == [1, 1]

    def test_the_third_first_in_a_row_and_later_count_double(self) -> None:
        """Two firsts put a player on fire: the third and fourth firsts score 4, not 2."""
        state = joined(2, "a", "b")
        got = []
        for i in range(4):
            a = play(state, START + i, {"a": 1, "b": 2})["a"]
            got.append((a.points, a.doubled, a.streak, state.entrants["a"].on_fire))
        assert STREAK_FROM == 2
        assert got == [
            (2.0, False, 1, False),
            (2.0, False, 2, True),
            (4.0, True, 3, True),
            (4.0, True, 4, True),
        ]
        assert state.entrants["a"].score == 12.0 and state.entrants["b"].score == 0.0

    def test_a_second_place_on_fire_is_doubled_and_ends_the_streak(self) -> None:
        """On fire, a 2nd of four scores 2 × 2 = 4 and the streak is over: the next is not."""
        state = joined(4, "a", "b", "c", "d", ratings={"a": 1900.0})
        # a sits first at every pass (highest score, then rating): seat 0.
        for i in range(2):
            play(state, START + i, FIRST_A)
        second = play(state, START + 2, {"a": 2, "b": 1, "c": 3, "d": 4})["a"]
        assert (second.player_id, second.points, second.doubled, second.streak) == (
            "a",
            4.0,
            True,
            0,
        )
        after = play(state, START + 3, FIRST_A)["a"]
        assert (after.player_id, after.points, after.doubled, after.streak) == ("a", 4.0, False, 1)

    def test_a_last_place_on_fire_scores_nothing_and_is_not_doubled(self) -> None:
        """Double nothing is nothing: a 0-point result on fire is not marked doubled."""
        state = joined(4, "a", "b", "c", "d", ratings={"a": 1900.0})
        for i in range(2):
            play(state, START + i, FIRST_A)
        last = play(state, START + 2, {"a": 4, "b": 1, "c": 2, "d": 3})["a"]
        assert (last.player_id, last.points, last.doubled, last.streak) == ("a", 0.0, False, 0)

    def test_leaving_scores_nothing_ends_the_streak_and_pauses(self) -> None:
        """Scoring revision 1 (old arenas): a leaver placed 1st keeps the place, scores 0
        (the 1st place's points go to nobody), loses the streak and is paused."""
        state = arena(4, scoring=1)
        for i, p in enumerate("abcd"):
            act(state, join(p, 1900.0 if p == "a" else 1500.0, at=START - 100 + i))
        for i in range(2):
            play(state, START + i, FIRST_A)
        act(state, pair(START + 2, ids=IDS[2:]))
        (match_id,) = state.running
        assert state.running[match_id].players[0] == "a"  # the best score sits first
        event = score(state, match_id, (1, 2, 3, 4), (True, False, False, False))
        assert event.results[0] == SeatResult("a", 1, True, 0.0, False, 0)
        a = state.entrants["a"]
        assert (a.score, a.streak, a.state, a.matches) == (8.0, 0, "paused", 3)
        assert "a" not in seated(act(state, join("e", at=START + 3), pair(START + 3, ids=IDS[3:])))

    def test_a_match_not_running_is_refused(self) -> None:
        """An unknown match, or one scored already, is `not_running`."""
        state = joined(2, "a", "b")
        act(state, pair(START))
        unknown = ScoreMatch(match_id="match-9", places=(1, 2), left=(False, False))
        assert refused(state, unknown).code == "not_running"
        score(state, "match-0", (1, 2))
        again = ScoreMatch(match_id="match-0", places=(1, 2), left=(False, False))
        assert refused(state, again).code == "not_running"

    @pytest.mark.parametrize(
        ("places", "left"),
        [
            ((1, 2, 3), (False,) * 4),
            ((1, 2, 3, 4), (False,) * 3),
            ((1, 2, 3, 4, 4), (False,) * 5),
            ((0, 1, 2, 3), (False,) * 4),
            ((1, 2, 3, 5), (False,) * 4),
            ((1, 1, 2, 3), (False,) * 4),
            ((2, 2, 3, 4), (False,) * 4),
            ((1, 3, 3, 3), (False,) * 4),
        ],
    )
    def test_a_result_that_is_not_a_ranking_of_the_seats_is_refused(
        self, places: tuple[int, ...], left: tuple[bool, ...]
    ) -> None:
        """One place and one left flag per seat, places 1 to seats forming a ranking (ties
        share a place and skip the next ones, as the match's placements do): else
        `bad_result`."""
        state = joined(4, "a", "b", "c", "d")
        act(state, pair(START))
        rejection = refused(state, ScoreMatch(match_id="match-0", places=places, left=left))
        assert rejection.code == "bad_result"

    @given(st.sampled_from([2, 4]), st.data())
    def test_accepted_places_share_out_exactly_the_tables_points(
        self, seats: int, data: st.DataObject
    ) -> None:
        """Any places the Decider accepts share out exactly sum(POINTS[seats]), no more."""
        state = joined(seats, *"abcd"[:seats])
        act(state, pair(START))
        places = tuple(data.draw(st.lists(st.integers(1, seats), min_size=seats, max_size=seats)))
        decided = decide(
            ScoreMatch(match_id="match-0", places=places, left=(False,) * seats), state
        )
        if isinstance(decided, list):
            assert sum(place_points(seats, places)) == sum(POINTS[seats])

    def test_a_new_arena_scores_by_the_latest_revision(self) -> None:
        """An arena records the scoring revision it was created under (the latest by
        default); a revision this code does not know is `bad_scoring` (422)."""
        assert arena().created == ArenaCreated(
            **(msgspec.structs.asdict(create()) | {"scoring": SCORING})
        )
        assert SCORING == max(SCORINGS) == 2
        rejection = refused(ArenaState(), create(scoring=3))
        assert (rejection.code, rejection.field, rejection.status) == (
            "bad_scoring",
            "scoring",
            422,
        )

    def test_a_scored_player_waits_for_the_next_pass(self) -> None:
        """Once scored, the players are free and paired again with the others waiting."""
        state = joined(2, "a", "b", "c")
        act(state, pair(START))
        (match_id,) = state.running
        score(state, match_id, (1, 2))
        assert len(tables(act(state, pair(START + 30)))) == 1

    def test_match_outcome_of_revision_1_reads_places_and_leavers_as_they_were(self) -> None:
        """Scoring revision 1 (old arenas): the placements as they are, and only a seat a
        CPU took over for `left` is a leaver (not timeouts, not disconnects)."""
        outcome = match_outcome(
            "m", [2, 1, 4, 3], ["left", None, "timeouts", "disconnected"], scoring=1
        )
        assert outcome == ScoreMatch(
            match_id="m", places=(2, 1, 4, 3), left=(True, False, False, False)
        )


# ------------------------------------------------------------------ reading a match (rev. 2)


class TestReadingAMatch:
    """Scoring revision 2: a match is read by `domain.outcome`, as the ratings read it."""

    def test_two_players_who_both_dropped_out_both_left_and_score_nothing(self) -> None:
        """Both players of a match dropped out at its start and CPU stand-ins played it
        out: both left, share the place, score 0 with no streak, and are paused; nobody
        is credited a 1st and 2 points."""
        state = joined(2, "a", "b")
        for i in range(2):  # a comes in on fire
            play(state, START + i, {"a": 1, "b": 2})
        (paired,) = act(state, pair(START + 2, ids=IDS[2:]))
        assert isinstance(paired, TablesPaired)
        match_id = paired.tables[0].match_id
        outcome = match_outcome(match_id, (1, 2), ("disconnected", "disconnected"), scoring=2)
        assert outcome == ScoreMatch(match_id=match_id, places=(1, 1), left=(True, True))
        (event,) = act(state, outcome)
        assert isinstance(event, ResultScored)
        assert [(r.place, r.left, r.points, r.doubled, r.streak) for r in event.results] == [
            (1, True, 0.0, False, 0)
        ] * 2
        assert state.entrants["a"].score == 4.0 and state.entrants["b"].score == 0.0
        assert state.entrants["a"].paused and state.entrants["b"].paused

    def test_a_leaver_the_cpu_brought_home_first_is_placed_after_those_who_stayed(
        self,
    ) -> None:
        """A leaver is placed last, whatever the CPU made of the seat; those who stayed
        move up and score their places (4/2/1); a stand-in for timeouts is no leave."""
        state = joined(4, "a", "b", "c", "d")
        act(state, pair(START))
        outcome = match_outcome(
            "match-0", (1, 2, 3, 4), ("left", None, "timeouts", None), scoring=2
        )
        assert (outcome.places, outcome.left) == ((4, 1, 2, 3), (True, False, False, False))
        (event,) = act(state, outcome)
        assert isinstance(event, ResultScored)
        assert [(r.place, r.points) for r in event.results] == [
            (4, 0.0),
            (1, 4.0),
            (2, 2.0),
            (3, 1.0),
        ]

    def test_a_result_placing_a_leaver_ahead_of_a_player_who_stayed_is_refused(self) -> None:
        """Revision 2: `bad_result` for a leaver not in the shared last place (a forged
        result in a file is named by `ludo tournament verify`)."""
        state = joined(4, "a", "b", "c", "d")
        act(state, pair(START))
        for places, left in (
            ((1, 2, 3, 4), (True, False, False, False)),
            ((1, 2, 3, 3), (False, True, False, True)),
            ((1, 2, 3, 4), (False, False, True, True)),
        ):
            forged = ScoreMatch(match_id="match-0", places=places, left=left)
            assert refused(state, forged).code == "bad_result"
        accepted = ScoreMatch(
            match_id="match-0", places=(3, 1, 3, 2), left=(True, False, True, False)
        )
        assert isinstance(decide(accepted, state), list)


# ---------------------------------------------------------------------------------- the end


class TestEnd:
    def test_the_end_is_refused_before_the_clock_runs_out(self) -> None:
        """EndArena before `ends_at` is `too_early`; at it, ArenaEnded at that time."""
        state = arena()
        assert refused(state, EndArena(now=END - 0.5)).code == "too_early"
        assert act(state, EndArena(now=END + 0.5)) == [ArenaEnded(at=END + 0.5)]
        assert state.ended_at == END + 0.5

    def test_ending_twice_is_refused(self) -> None:
        """The end is recorded once: again is `arena_over`."""
        state = arena()
        act(state, EndArena(now=END))
        assert refused(state, EndArena(now=END + 1)).code == "arena_over"

    def test_a_cancelled_arena_does_not_end(self) -> None:
        """Ending a cancelled arena is `arena_cancelled`."""
        state = arena()
        act(state, CancelArena(reason="why", by="op", now=START))
        assert refused(state, EndArena(now=END)).code == "arena_cancelled"

    def test_after_the_end_no_pairing_but_running_matches_count(self) -> None:
        """A match running at the end is still scored; nobody is paired any more."""
        state = joined(2, "a", "b", "c", "d")
        act(state, pair(END - 1))
        score(state, "match-1", (1, 2))
        act(state, EndArena(now=END))
        assert refused(state, pair(END + 1)).code == "not_running"
        event = score(state, "match-0", (2, 1))
        assert sum(points(event).values()) == 2.0 and state.running == {}

    def test_status_moves_upcoming_running_ended_finished(self) -> None:
        """upcoming → running at the start → ended at the clock (matches running) →
        finished once ended and every match is scored."""
        state = joined(2, "a", "b")
        assert state.status(START - 1) == "upcoming"
        assert state.status(START) == "running"
        act(state, pair(START))
        assert state.status(END - 0.001) == "running"
        assert state.status(END) == "ended"  # the clock ran out, not yet recorded
        act(state, EndArena(now=END))
        assert state.status(END) == "ended"  # a match still runs
        score(state, "match-0", (1, 2))
        assert state.status(END) == state.status(END + 3600) == "finished"

    def test_an_arena_nobody_plays_finishes_at_its_end(self) -> None:
        """With nothing running, the recorded end finishes the arena."""
        state = arena()
        act(state, EndArena(now=END))
        assert state.status(END) == "finished"


# ---------------------------------------------------------------------------------- cancel


class TestCancel:
    @pytest.mark.parametrize("reason", ["", "   ", "x" * (REASON_MAX + 1)])
    def test_a_reason_is_required_and_short(self, reason: str) -> None:
        """No reason, blank, or over 200 characters: `bad_reason` (422, field reason)."""
        rejection = refused(arena(), CancelArena(reason=reason, by="op", now=START))
        assert (rejection.code, rejection.field, rejection.status) == ("bad_reason", "reason", 422)

    def test_a_cancel_records_reason_and_who(self) -> None:
        """The reason (trimmed, up to 200) and who cancelled; the status is `cancelled`."""
        state = arena()
        reason = " " + "y" * REASON_MAX + " "
        assert act(state, CancelArena(reason=reason, by="op", now=START)) == [
            ArenaCancelled(reason="y" * REASON_MAX, by="op", at=START)
        ]
        assert state.status(START - 1) == state.status(START) == state.status(END) == "cancelled"

    def test_cancelling_twice_is_refused(self) -> None:
        """Cancelled once: again is `arena_cancelled`."""
        state = arena()
        act(state, CancelArena(reason="why", by="op", now=START))
        assert (
            refused(state, CancelArena(reason="again", by="op", now=START)).code
            == "arena_cancelled"
        )

    @pytest.mark.parametrize("recorded", [True, False])
    @pytest.mark.parametrize("now", [END, END + 0.005, END + 600])
    def test_once_the_clock_ran_out_the_result_stands(self, recorded: bool, now: float) -> None:
        """From the end on (the end recorded or not yet), a cancel is `arena_over`, even
        with a match still running: it is scored, and the arena finishes with its podium."""
        state = joined(2, "a", "b")
        act(state, pair(START))
        if recorded:
            act(state, EndArena(now=END))
        rejection = refused(state, CancelArena(reason="why", by="op", now=now))
        assert (rejection.code, rejection.status) == ("arena_over", 409)
        if not recorded:
            act(state, EndArena(now=now))
        score(state, "match-0", (1, 2))
        assert state.status(now) == "finished"
        assert [line.player_id for line in podium(standings(state))] == ["a", "b"]

    def test_a_cancel_an_instant_before_the_end_is_taken(self) -> None:
        """Until the last instant before the end, the operator may cancel."""
        state = joined(2, "a", "b")
        act(state, pair(START))
        act(state, CancelArena(reason="why", by="op", now=END - 0.001))
        assert state.status(END) == "cancelled"

    def test_a_version_1_cancel_without_its_time_is_judged_as_then(self) -> None:
        """A cancel recorded before cancels carried a time (`now` None): refused only
        once ended with nothing running; after the recorded end with a match running, it
        stood (such old files keep verifying)."""
        finished = arena()
        act(finished, EndArena(now=END))
        rejection = refused(finished, CancelArena(reason="why", by="op", now=None))
        assert rejection.code == "arena_over"
        running = joined(2, "a", "b")
        act(running, pair(START), EndArena(now=END))
        assert act(running, CancelArena(reason="why", by="op", now=None)) == [
            ArenaCancelled(reason="why", by="op", at=None)
        ]
        assert running.status(END) == "cancelled"

    def test_matches_running_at_a_cancel_are_still_scored(self) -> None:
        """Cancelling stops pairing, but the running match counts."""
        state = joined(2, "a", "b", "c", "d")
        act(state, pair(START), CancelArena(reason="why", by="op", now=START))
        assert refused(state, pair(START + 1)).code == "not_running"
        assert state.running["match-0"].players == ("a", "b")
        score(state, "match-0", (2, 1))
        assert state.entrants["b"].score == 2.0 and state.status(START + 1) == "cancelled"


# ------------------------------------------------------------------------------- standings


class TestStandings:
    def test_equal_scores_share_a_rank(self) -> None:
        """Two tied for 2nd: ranks 1, 2, 2, 4."""
        state = joined(4, "a", "b", "c", "d")
        act(state, pair(START))
        score(state, "match-0", (1, 2, 2, 4))
        lines = standings(state)
        assert [line.rank for line in lines] == [1, 2, 2, 4]
        assert [line.score for line in lines] == [4.0, 1.5, 1.5, 0.0]

    def test_order_is_score_then_fewer_matches_then_who_joined_first(self) -> None:
        """Equal scores: fewer matches first, then the earlier joiner; all share the rank."""
        ratings = {"a": 1500.0, "b": 1600.0, "c": 1700.0, "d": 1800.0}
        state = joined(2, "a", "b", "c", "d", ratings=ratings)
        act(state, pair(START))  # d-c, b-a
        score(state, "match-0", (1, 2))  # d 2
        score(state, "match-1", (1, 2))  # b 2
        act(state, PauseArena(player_id="b", now=START), PauseArena(player_id="d", now=START))
        (paired,) = act(state, pair(START + 60, ids=IDS[2:]))  # c-a
        assert tables([paired]) == [["c", "a"]]
        score(state, "match-2", (1, 2))  # c 2 in two matches
        lines = standings(state)
        assert [(x.player_id, x.rank, x.score, x.matches) for x in lines] == [
            ("b", 1, 2.0, 1),
            ("d", 1, 2.0, 1),
            ("c", 1, 2.0, 2),
            ("a", 4, 0.0, 2),
        ]

    def test_a_line_says_streak_fire_rating_and_state(self) -> None:
        """Each line carries the name, streak, on fire, rating and what they do now."""
        state = joined(2, "a", "b", "c", ratings={"a": 1800.0, "b": 1700.0})
        for i in range(2):
            assert play(state, START + i, {"a": 1, "b": 2})["a"].points == 2.0
        act(state, PauseArena(player_id="c", now=START))
        line = {x.player_id: x for x in standings(state)}
        assert (line["a"].name, line["a"].streak, line["a"].on_fire) == ("A", 2, True)
        assert (line["a"].rating, line["a"].state, line["c"].state) == (1800.0, "waiting", "paused")

    def test_an_empty_arena_has_no_standings(self) -> None:
        """An arena nobody joined has no line."""
        assert standings(arena()) == []

    def test_nobody_leads_on_zero_points(self) -> None:
        """`leader` is None until the first line has scored points (a player who played
        and lost, or a match every seat left, leads nobody); then it is the first line."""
        state = joined(2, "a", "b", "c")
        assert leader(standings(state)) is None
        act(state, pair(START))
        (match_id,) = state.running
        act(state, match_outcome(match_id, (1, 2), ("left", "left"), scoring=2))
        assert [line.matches for line in standings(state)][-2:] == [1, 1]
        assert leader(standings(state)) is None
        state = joined(2, "a", "b")
        play(state, START, {"a": 2, "b": 1})
        first = leader(standings(state))
        assert first is not None and (first.player_id, first.score) == ("b", 2.0)

    def test_the_podium_keeps_shared_ranks_whole_and_only_those_who_played(self) -> None:
        """Every line ranked 1 to 3 that played is on the podium: two tied 1st and two
        tied 3rd make four lines; a player never paired, whose 0 shares the 3rd rank,
        is not on it."""
        state = joined(2, "a", "b", "c", "d", "e")
        assert tables(act(state, pair(START, absent={"e"}))) == [["a", "b"], ["c", "d"]]
        score(state, "match-0", (1, 2))
        score(state, "match-1", (1, 2))
        lines = standings(state)
        assert [(x.player_id, x.rank, x.matches) for x in lines] == [
            ("a", 1, 1),
            ("c", 1, 1),
            ("e", 3, 0),
            ("b", 3, 1),
            ("d", 3, 1),
        ]
        assert [x.player_id for x in podium(lines)] == ["a", "c", "b", "d"]


# ------------------------------------------------------------------------------- the events


class TestEvents:
    def test_events_decode_as_they_were_stored(self) -> None:
        """Every arena event survives its stored JSON."""
        state = ArenaState()
        events = act(
            state,
            create(seats=2, schedule="hourly-2"),
            join("a", seed="s1"),
            join("b", 1612.5),
            join("c"),
            join("d"),
            join("e"),
            PauseArena(player_id="c", reason="gone", now=START),
            ContinueArena(player_id="c", rating=1480.0, now=START - 1),
            pair(START, absent={"e"}),
        )
        events += act(
            state,
            ScoreMatch(match_id="match-0", places=(1, 2), left=(False, True)),
            EndArena(now=END),
        )
        events += act(joined(2, "z"), CancelArena(reason="late", by="op", now=START))
        assert {type(e) for e in events} == set(get_args(ArenaEvent))
        assert [decode_arena_event(msgspec.json.encode(e)) for e in events] == events

    @pytest.mark.parametrize(
        ("type_name", "data", "expected"),
        [
            (
                "ArenaCreated",
                b'{"type":"ArenaCreated","arena_id":"x","name":"n","seats":2,"rules":"bga",'
                b'"turn_limit":30,"starts_at":1.0,"minutes":20,"private":false,'
                b'"creator_id":null,"schedule":null,"title":null}',
                ArenaCreated(
                    arena_id="x",
                    name="n",
                    seats=2,
                    rules="bga",
                    turn_limit=30,
                    starts_at=1.0,
                    minutes=20,
                    scoring=1,
                ),
            ),
            (
                "PlayerPaused",
                b'{"type":"PlayerPaused","player_id":"p","reason":"gone"}',
                PlayerPaused(player_id="p", reason="gone", at=None),
            ),
            (
                "ArenaCancelled",
                b'{"type":"ArenaCancelled","reason":"r","by":"op"}',
                ArenaCancelled(reason="r", by="op", at=None),
            ),
        ],
    )
    def test_version_1_events_are_read_as_they_were_meant(
        self, type_name: str, data: bytes, expected: ArenaEvent
    ) -> None:
        """Stored before scoring revisions and times: an ArenaCreated v1 scores by
        revision 1, a PlayerPaused or ArenaCancelled v1 has no time (None)."""
        assert decode_arena_event(data, type_name=type_name, schema_version=1) == expected

    def test_an_event_this_code_cannot_read_is_refused(self) -> None:
        """A v1 claiming a field of v2, a version newer than this code, an unknown type:
        `ValueError` naming it (verify reports it as the check `events`)."""
        forged = b'{"type":"PlayerPaused","player_id":"p","reason":"asked","at":5.0}'
        with pytest.raises(ValueError, match="v1 has no time"):
            decode_arena_event(forged, type_name="PlayerPaused", schema_version=1)
        with pytest.raises(ValueError, match="newer than this code"):
            decode_arena_event(forged, type_name="PlayerPaused", schema_version=3)
        with pytest.raises(ValueError, match="unknown arena event"):
            decode_arena_event(forged, type_name="PlayerLeft", schema_version=1)

    def test_the_fold_of_the_events_is_the_state(self) -> None:
        """Folding the stream from scratch gives the state the decisions were made on."""
        state = joined(2, "a", "b", "c")
        events: list[ArenaEvent] = []
        events += act(state, pair(START))
        events += act(state, ScoreMatch(match_id="match-0", places=(2, 1), left=(False, False)))
        again = ArenaState()
        act(again, create(seats=2))
        for i, p in enumerate("abc"):
            act(again, join(p, at=START - 100 + i))
        fold(events, again)
        assert snapshot(again) == snapshot(state)


# ------------------------------------------------------------------------------ properties


@dataclass
class Step:
    """One decided command: the state before it (as the properties read it) and what
    `decide` answered."""

    command: ArenaCommand
    decided: list[ArenaEvent] | ArenaRejection
    states: dict[str, str]  # each entrant's state before
    streaks: dict[str, int]  # each entrant's streak before
    # for a TablesPaired: `pair_tables` on the state before, with the event's `skipped`
    reformed: list[list[str]] = field(default_factory=list)


@dataclass
class Run:
    """A random arena: its creation, every step decided on it, and the state at the end
    (each accepted step's events applied one by one)."""

    seats: int
    created: list[ArenaEvent]
    state: ArenaState
    steps: list[Step]

    @property
    def events(self) -> list[ArenaEvent]:
        return self.created + [
            e for s in self.steps if isinstance(s.decided, list) for e in s.decided
        ]

    def accepted(self) -> list[tuple[Step, ArenaEvent]]:
        return [(s, e) for s in self.steps if isinstance(s.decided, list) for e in s.decided]


def ranking(seats: int) -> st.SearchStrategy[tuple[int, ...]]:
    """Places as a match gives them: a standard competition ranking of random scores."""

    def rank(keys: list[int]) -> tuple[int, ...]:
        return tuple(1 + sum(1 for k in keys if k > key) for key in keys)

    return st.lists(st.integers(0, 3), min_size=seats, max_size=seats).map(rank)


# A seat's stand-in at the end of a random match: mostly none.
STOOD_IN: tuple[str | None, ...] = (*[None] * 12, "left", "disconnected", "timeouts")

# The actions of a random arena, repeated by weight (scoring and pairing most often, so
# that streaks build up); a cancel comes, if at all, at one drawn step.
ACTIONS = (*["join"] * 2, "pause", *["continue"] * 2, *["pair"] * 4, *["score"] * 5, "tick", "end")


@st.composite
def runs(draw: st.DrawFn) -> Run:
    """A random arena driven through decide and apply: joins, pauses, continues, passes at
    increasing times with random absentees, scores of running matches with random rankings
    and leavers, the end, and now and then a cancel. The state before each accepted step
    is recorded for the properties; `decide` itself must never change the state."""
    seats = draw(st.sampled_from([2, 4]))
    scoring = draw(st.sampled_from(SCORINGS))
    state = ArenaState()
    created = act(state, create(seats=seats, scoring=scoring))
    now = START - draw(st.floats(0, 5))
    steps: list[Step] = []
    fresh = ((f"party-{i}", f"match-{i}") for i in itertools.count())
    joins, most = 0, draw(st.integers(seats, 3 * seats))
    cancel_at = draw(st.integers(0, 60)) if draw(st.integers(0, 4)) == 3 else None
    # Time goes by a little at each step; in half the runs it jumps to about the end at a
    # drawn step (so that some arenas see the end, and the others many matches before it).
    end_at = draw(st.integers(0, 70)) if draw(st.booleans()) else None
    for index in range(draw(st.integers(5, 70))):
        action = "cancel" if index == cancel_at else draw(st.sampled_from(ACTIONS))
        now += draw(st.floats(0, 3))
        if index == end_at:
            now = max(now, END + draw(st.floats(-5, 30)))
        entrants = list(state.entrants)
        if action == "join" and joins >= most:
            action = "pair"  # everyone is in: pair instead
        command: ArenaCommand
        if action == "join" or not entrants:
            if entrants and draw(st.integers(0, 9)) == 3:
                player = draw(st.sampled_from(entrants))  # joining again: refused
            else:
                player, joins = f"p{joins}", joins + 1
            command = join(player, draw(st.sampled_from([1400.0, 1500.0, 1600.0])), at=now)
        elif action == "pause":
            reason: PauseReason = draw(st.sampled_from(["asked", "gone"]))
            player = draw(st.sampled_from(entrants))
            command = PauseArena(player_id=player, reason=reason, now=now)
        elif action == "continue":
            paused = [p for p in entrants if state.entrants[p].paused]
            pick_paused = bool(paused) and draw(st.booleans())
            player = draw(st.sampled_from(paused if pick_paused else entrants))
            rating = draw(st.floats(1000, 2000))
            command = ContinueArena(player_id=player, rating=rating, now=now)
        elif action == "pair":
            absent = draw(st.sets(st.sampled_from(entrants), max_size=2))
            ids = tuple(next(fresh) for _ in range(draw(st.integers(0, 8))))
            command = PairTables(now=now, table_ids=ids, absent=frozenset(absent))
        elif action == "score" and state.running:
            # As the service scores a match: its placements and each seat's stand-in at
            # the end, read by the arena's scoring revision.
            match_id = draw(st.sampled_from(list(state.running)))
            placements = draw(ranking(seats))
            stood_in = tuple(draw(st.sampled_from(STOOD_IN)) for _ in range(seats))
            command = match_outcome(match_id, placements, stood_in, scoring=scoring)
        elif action == "end":
            command = EndArena(now=now)
        elif action == "cancel":
            command = CancelArena(reason="operator", by="op", now=now)
        else:  # tick (or nothing to score): time goes by
            now += draw(st.floats(0, 60))
            continue
        before = snapshot(state)
        step = Step(
            command,
            decide(command, state),
            {p: e.state for p, e in state.entrants.items()},
            {p: e.streak for p, e in state.entrants.items()},
        )
        assert snapshot(state) == before, "decide changed the state"
        if isinstance(step.decided, list):
            for event in step.decided:
                if isinstance(event, TablesPaired):
                    step.reformed = pair_tables(state, event.skipped)
                apply(state, event)
        steps.append(step)
    return Run(seats, created, state, steps)


class TestArenaProperties:
    @given(runs())
    def test_a_score_is_the_sum_of_its_results(self, run: Run) -> None:
        """(a) Each entrant's standing score is the sum of their scored points; their
        matches the count of their results."""
        scored: dict[str, float] = dict.fromkeys(run.state.entrants, 0.0)
        count: Counter[str] = Counter()
        for event in run.events:
            if isinstance(event, ResultScored):
                for r in event.results:
                    scored[r.player_id] += r.points
                    count[r.player_id] += 1
        for line in standings(run.state):
            assert line.score == scored[line.player_id]
            assert line.matches == count[line.player_id]
        lines = standings(run.state)
        assert [x.score for x in lines] == sorted((x.score for x in lines), reverse=True)
        for index, (prev, line) in enumerate(itertools.pairwise(lines), start=2):
            assert line.rank == (prev.rank if line.score == prev.score else index)

    @given(runs())
    def test_tables_are_full_and_nobody_plays_twice(self, run: Run) -> None:
        """(b) Every TablesPaired table has exactly `seats` players who were all waiting
        and connected before it, within the clock; nobody is ever in two running matches."""
        state = ArenaState()
        fold(run.created, state)
        created = run.created[0]
        assert isinstance(created, ArenaCreated)
        for step, event in run.accepted():
            if isinstance(event, TablesPaired):
                assert isinstance(step.command, PairTables)
                assert START <= event.at < END and state.ended_at is None
                seated = [p for t in event.tables for p in t.players]
                assert len(seated) == len(set(seated))
                assert all(len(t.players) == run.seats for t in event.tables)
                assert all(step.states[p] == "waiting" for p in seated)
                assert not set(seated) & step.command.absent
                assert (
                    set(event.skipped)
                    == {p for p, s in step.states.items() if s == "waiting"} & step.command.absent
                )
                # the verifier's re-derivation: pair_tables on the state before
                assert [list(t.players) for t in event.tables] == step.reformed
                # the pass left fewer than a table waiting and connected
                left_waiting = {p for p, s in step.states.items() if s == "waiting"}
                left_waiting -= set(seated) | step.command.absent
                assert len(left_waiting) < run.seats
            apply(state, event)
            playing = Counter(p for t in state.running.values() for p in t.players)
            assert all(n == 1 for n in playing.values())
            for p, e in state.entrants.items():
                assert (e.match_id is not None) == (p in playing)
                if e.match_id is not None:
                    assert p in state.running[e.match_id].players

    @given(runs())
    def test_a_result_is_doubled_iff_on_fire_and_not_left(self, run: Run) -> None:
        """(c) A SeatResult is doubled iff the streak before was ≥ 2, the player did not
        leave and the place scores; the streak after counts firsts not left."""
        for step, event in run.accepted():
            if isinstance(event, ResultScored):
                bases = place_points(run.seats, [r.place for r in event.results])
                for r, base in zip(event.results, bases, strict=True):
                    before = step.streaks[r.player_id]
                    assert r.doubled == (before >= STREAK_FROM and not r.left and base > 0)
                    assert r.streak == (before + 1 if r.place == 1 and not r.left else 0)

    @given(runs())
    def test_the_fold_from_scratch_is_the_state(self, run: Run) -> None:
        """(d) Folding the stream from scratch (through its stored JSON) gives the state
        the events were applied to one by one: standings, running matches, everything."""
        stored = [decode_arena_event(msgspec.json.encode(e)) for e in run.events]
        again = fold(stored)
        assert snapshot(again) == snapshot(run.state)
        assert standings(again) == standings(run.state)
        assert list(again.running.items()) == list(run.state.running.items())
        assert again.version == len(run.events)

    @given(runs())
    def test_a_match_shares_out_its_points(self, run: Run) -> None:
        """(e) Undoubled, with leavers' points as their place would give, a match scores
        exactly sum(POINTS[seats]); a leaver scores 0, a doubled seat twice its place's."""
        for _, event in run.accepted():
            if isinstance(event, ResultScored):
                bases = place_points(run.seats, [r.place for r in event.results])
                for r, base in zip(event.results, bases, strict=True):
                    assert r.points == (0.0 if r.left else base * (2 if r.doubled else 1))
                undoubled = [
                    base if r.left else (r.points / 2 if r.doubled else r.points)
                    for r, base in zip(event.results, bases, strict=True)
                ]
                assert sum(undoubled) == sum(POINTS[run.seats])

    @given(runs())
    def test_a_leaver_is_paused_and_a_refusal_changes_nothing(self, run: Run) -> None:
        """Whoever left a match is paused after it, until they continue; refusals are
        answered with a code and an HTTP status of 4xx."""
        for step in run.steps:
            if isinstance(step.decided, ArenaRejection):
                assert step.decided.code and 400 <= step.decided.status < 500
        paused: set[str] = set()
        for _, event in run.accepted():
            if isinstance(event, ResultScored):
                paused |= {r.player_id for r in event.results if r.left}
            elif isinstance(event, PlayerContinued):
                paused.discard(event.player_id)
        assert all(run.state.entrants[p].paused for p in paused)
