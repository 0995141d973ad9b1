"""`ludo bench ranking`, run tiny on a test database: the figures are there and the
recomputed ratings hash equals the live one. No timing is asserted."""

from __future__ import annotations

from benchmarks.ranking_bench import Config, bench, print_table


def test_ranking_bench_tiny(database_url: str) -> None:
    """The tiny ranking bench prints its figures and its recompute hash equals the live one."""
    result = bench(
        Config(
            matches=50,
            players=20,
            rate=10.0,
            seconds=2.0,
            progress=False,
            quiet_logs=False,
            database_url=database_url,
        )
    )
    assert {"backlog", "consumer", "recompute", "live", "targets", "loadavg_before"} <= set(result)
    assert result["backlog"]["matches"] == 50
    assert result["consumer"]["matches"] == 50
    rec = result["recompute"]
    assert {"matches_per_s", "seconds", "hash", "live_hash", "hash_equal"} <= set(rec)
    assert rec["matches"] == 50
    assert rec["hash"] == rec["live_hash"]
    assert rec["hash_equal"] is True
    live = result["live"]
    assert {"p50_ms", "p99_ms", "max_ms", "matches", "append_p99_ms"} <= set(live)
    assert live["matches"] == 20
    assert set(result["targets"]) == {
        "recompute_share_of_backlog_write",
        "live_p99_in_appends",
        "hash_equal",
    }
    assert result["targets"]["hash_equal"]["met"] is True
    print_table(result)
