"""`ludo bench faults`, short: load through HAProxy survives a killed match instance and
an immediate PostgreSQL restart with every book in order (docs/reliability.md has the
full run). Figures are printed, never asserted as times."""

from __future__ import annotations

import pytest

from benchmarks.faults_bench import bench

pytestmark = pytest.mark.slow


def test_the_fault_bench_finds_nothing_lost_or_doubled() -> None:
    """Two faults under load: each gets a row with its figures, commands were acknowledged
    after each, and the checks (acks, sockets, audits, ratings) report no problem."""
    result = bench(
        matches=2,
        faults=["kill-match", "pg-immediate"],
        warmup=2.0,
        settle=3.0,
        say=print,
    )
    print(result)
    assert result["problems"] == []
    assert [row["fault"] for row in result["faults"]] == ["kill-match", "pg-immediate"]
    assert all(row["first_ack_after_s"] is not None for row in result["faults"])
    assert result["acknowledged"] > 0 and result["audited"] == result["matches"] > 0
