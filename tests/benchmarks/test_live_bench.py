"""`ludo bench live`, short: the same phases on the code before the fan-out and on this
one, in one run (docs/benchmarks.md has the full run). Times are printed, never asserted;
the counts of sockets, events and statements are."""

from __future__ import annotations

import pytest

from benchmarks.live_bench import LiveConfig, bench, print_table


@pytest.mark.slow
def test_the_live_bench_reads_once_per_event_where_the_baseline_reads_per_socket() -> None:
    """Both runs hold every socket and deliver every event to every follower; the fan-out
    reads the store at most once per event and polls at most 2 queries/s for idle
    sockets, where the baseline reads about once per follower and polls per socket."""
    followers, idle = 20, 60
    result = bench(
        LiveConfig(
            followers=followers, idle=idle, idle_matches=3, commands=8, seconds=3.0, clients=1
        ),
        say=print,
    )
    print_table(result)
    runs = result["runs"]
    assert set(runs) == {"baseline", "now"}
    for run in runs.values():
        feed = run["followers"]
        assert feed["sockets_held"] == followers
        assert feed["events_appended"] > 0
        assert feed["events_delivered"] == followers * feed["events_appended"]
        assert run["idle"]["sockets_held"] == idle
    now, before = runs["now"], runs["baseline"]
    assert now["followers"]["reads_per_event"] <= 1.0
    assert before["followers"]["reads_per_event"] >= followers / 4
    assert now["idle"]["queries_per_s"] <= 2.0
    assert before["idle"]["queries_per_s"] >= idle / 4  # one read per socket every 2 s
