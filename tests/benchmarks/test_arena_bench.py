"""`ludo bench arena`, short: eight players in the last 40 s of an arena through two
instances, and the checks it makes, each shown to catch what it is for. Figures are
printed, never asserted as times."""

from __future__ import annotations

import pytest

from benchmarks.arena_bench import bench, seated_twice, standings_apart
from domain import arena as ar

ENDS_AT = 1_000_000.0 + 20 * 60


def _created() -> ar.ArenaCreated:
    return ar.ArenaCreated(
        arena_id="a",
        name="t",
        seats=2,
        rules="standard",
        turn_limit=30,
        starts_at=1e6,
        minutes=20,
        scoring=ar.SCORING,
    )


def _paired(at: float, *tables: tuple[str, tuple[str, ...]]) -> ar.TablesPaired:
    return ar.TablesPaired(
        at=at, tables=tuple(ar.ArenaTable(f"party-{m}", m, players) for m, players in tables)
    )


def _scored(match_id: str, *players: str) -> ar.ResultScored:
    results = tuple(
        ar.SeatResult(player_id=p, place=i + 1, left=False, points=0.0, doubled=False, streak=0)
        for i, p in enumerate(players)
    )
    return ar.ResultScored(match_id=match_id, results=results)


def test_seated_twice_passes_an_arena_that_frees_each_player_before_pairing_them_again() -> None:
    """Paired, scored, paired again: nothing to say."""
    events: list[ar.ArenaEvent] = [
        _created(),
        _paired(1e6 + 1, ("m1", ("ann", "bob")), ("m2", ("cy", "dan"))),
        _scored("m1", "ann", "bob"),
        _paired(1e6 + 2, ("m3", ("ann", "bob"))),
        _scored("m2", "cy", "dan"),
        _scored("m3", "bob", "ann"),
    ]
    assert seated_twice(events, 2, ENDS_AT) == []


def test_seated_twice_names_a_player_paired_while_playing_a_short_table_and_a_late_pass() -> None:
    """A player paired into a second match before the first is scored, a table of one
    and a pass at the end are each named."""
    events: list[ar.ArenaEvent] = [
        _created(),
        _paired(1e6 + 1, ("m1", ("ann", "bob"))),
        _paired(1e6 + 2, ("m2", ("ann", "cy"))),
        _paired(ENDS_AT, ("m3", ("dan",))),
        _scored("m9", "eve", "fay"),
    ]
    problems = seated_twice(events, 2, ENDS_AT)
    assert any("ann paired into m2 while in m1" in p for p in problems)
    assert any("m3: 1 players" in p for p in problems)
    assert any("after the end" in p for p in problems)
    assert any("m9 scored but not running" in p for p in problems)


def test_standings_apart_names_the_line_that_differs() -> None:
    """Equal standings say nothing; a score, a count or an order that differs is named."""
    line = {"player_id": "ann", "score": 2.0, "matches": 1, "rank": 1, "name": "ann"}
    other = {"player_id": "bob", "score": 0, "matches": 1, "rank": 2}
    assert standings_apart([line, other], [line, other]) == []
    assert standings_apart([line, other], [other, line]) != []
    assert "line 1" in standings_apart([line], [{**line, "score": 4.0}])[0]
    assert standings_apart([line], []) == ["1 live standing lines, 0 verified"]


@pytest.mark.slow
def test_a_short_arena_pairs_nobody_twice_and_its_live_standings_are_the_verified_ones() -> None:
    """Eight players, two instances, the last 40 s of a 20-minute arena: matches are
    played and re-paired, and the bench's checks (nobody in two matches, every match a
    ranked one of the arena, the export verifies, live standings = verified) find nothing."""
    figures = bench(players=8, seats=2, minutes_left=40 / 60, say=print)
    print(figures)
    assert figures["problems"] == []
    assert figures["matches"] == figures["tables_paired"] > 0
    assert figures["repairing_wait"]["n"] > 0 and figures["baseline_pool"]["n"] > 0
    assert figures["verified"] and figures["export_bytes"] > 0
    assert figures["standings_compared"] == 8 and figures["standings_equal"]
