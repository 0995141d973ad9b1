"""`ludo bench service` end to end, briefly: the real service under uvicorn in a subprocess
on the test's database, two matches for about two seconds, over HTTP and over the match
socket, and beside an older code (`--baseline-ref`). Figures are not
checked (the machine decides them), only that commands went through and the report has
its keys."""

from __future__ import annotations

import pytest

from benchmarks.common import BASELINE_TAG, commit_of
from benchmarks.service_bench import BenchError, Config, bench, print_table


@pytest.mark.slow
def test_bench_reports_commands_and_its_keys(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over HTTP, commands are counted with their CPU per command, beside the targets:
    ratios and counts, no milliseconds."""
    config = Config(
        matches=2,
        seconds=2.0,
        warmup=0.5,
        database_url=database_url,
        pgbench_seconds=1.0,
        rebuild_matches=1,
        rebuilds=5,
        progress=False,
        floor_rounds=0,
    )
    result = bench(config)
    for key in ("load", "pgbench", "ratio", "rebuild", "targets", "matches", "workers"):
        assert key in result
    load = result["load"]
    assert load["commands"] > 0
    assert load["commands_per_s"] > 0
    for key in ("p50_ms", "p99_ms", "errors", "requests_per_s", "cpu"):
        assert key in load
    assert result["rebuild"]["rebuilds"] == 5
    assert set(result["targets"]) == {"ratio", "transactions"}
    assert result["floor"] is None
    assert load["cpu_ms_per_command"]["service"] > 0
    assert load["transactions_per_command"] > 0
    assert result["over"] == "http"
    if result["pgbench"] is not None and "tps" in result["pgbench"]:
        assert result["ratio"] is not None
    print_table(result)
    assert "commands/s" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_over_the_socket_reports_commands_and_its_keys(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Over the match socket, commands are answered by result frames and counted, with the
    CPU per command and the transactions, and beside the stack's floor over the socket:
    the service's CPU per command as a multiple of the floor's, against the socket's
    target."""
    config = Config(
        matches=2,
        over="socket",
        seconds=2.0,
        warmup=0.5,
        database_url=database_url,
        pgbench=False,
        rebuild_matches=1,
        rebuilds=5,
        progress=False,
        floor_rounds=1,
    )
    result = bench(config)
    assert result["over"] == "socket"
    load = result["load"]
    assert load["commands"] > 0
    assert load["errors"] == 0, load["error_kinds"]
    assert load["matches_started"] >= 2
    for key in ("p50_ms", "p99_ms", "requests_per_s", "cpu", "transactions_per_command"):
        assert key in load
    assert load["cpu_ms_per_command"]["service"] > 0
    assert load["cpu_ms_per_command"]["generator"] > 0
    (row,) = result["floor"]["rounds"]
    for label in ("service", "floor"):
        assert row[label]["commands"] > 0
    multiple = row["service"]["cpu_ms_per_command"] / row["floor"]["cpu_ms_per_command"]
    assert result["floor"]["multiple_paired"] == round(multiple, 2)
    assert result["targets"]["floor_multiple"]["target"] == "<= 2"
    print_table(result)
    out = capsys.readouterr().out
    assert "the stack's floor over socket" in out
    assert "over socket" in out
    assert "roll+move, result" in out


def test_bench_refuses_a_remote_url() -> None:
    """A --url that is not a loopback address is refused before any load is sent."""
    with pytest.raises(BenchError, match="loopback"):
        bench(Config(url="http://192.0.2.1:8000", progress=False))


@pytest.mark.slow
def test_a_comparison_loads_the_baseline_and_this_tree_in_turn(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With a baseline ref, each round loads both services (the baseline served from its
    own checkout and schema), and the medians, this tree's targets and how much less CPU a
    command costs (of the medians, and the median of each round's own factor) are
    reported."""
    config = Config(
        matches=2,
        seconds=1.5,
        warmup=0.5,
        pgbench=False,
        baseline_ref=BASELINE_TAG,
        rounds=2,
        progress=False,
    )
    result = bench(config)
    assert [row["round"] for row in result["rounds"]] == [1, 2]
    for row in result["rounds"]:
        for label in ("baseline", "now"):
            load = row[label]
            assert load["commands"] > 0
            assert load["errors"] == 0, load["error_kinds"]
            assert load["cpu_ms_per_command"]["service"] > 0
    for label in ("baseline", "now"):
        assert result["median"][label]["service_cpu_ms"] > 0
    assert result["less_cpu"]["service"] > 0
    per = [(row["baseline"], row["now"]) for row in result["rounds"]]
    own = [a["cpu_ms_per_command"]["service"] / b["cpu_ms_per_command"]["service"] for a, b in per]
    assert result["less_cpu_paired"]["service"] == round(sum(own) / 2, 2)  # median of two
    print_table(result)
    out = capsys.readouterr().out
    assert "baseline: " + commit_of(BASELINE_TAG) in out  # the commit the tag names
    assert "baseline ÷ now: service" in out


def test_a_comparison_refuses_a_running_service() -> None:
    """`--baseline-ref` serves both codes itself, so a --url is refused before any load."""
    with pytest.raises(BenchError, match="drop --url"):
        bench(Config(url="http://127.0.0.1:9", baseline_ref=BASELINE_TAG, progress=False))
