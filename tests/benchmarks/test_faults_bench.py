"""`ludo bench faults`, short: load through HAProxy survives a killed match instance and
an immediate PostgreSQL restart with every book in order (docs/reliability.md has the
full run), and, under Patroni, the primary's faults. Figures are printed, never asserted
as times."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from benchmarks.faults_bench import TARGET_ACK_RATIO, bench
from ludo_cli.cluster import haproxy_path

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


@pytest.mark.skipif(
    shutil.which("etcd") is None
    or haproxy_path() is None
    or importlib.util.find_spec("patroni") is None,
    reason="needs etcd (etcd-server), HAProxy and Patroni (the `ha` extra)",
)
def test_the_ha_fault_bench_fails_over_without_a_500_or_a_lost_command() -> None:
    """The primary's faults under Patroni (postmaster killed, node lost, switchover): a
    standby is promoted each time and takes writes (its own port says when), commands are
    acknowledged after it, and each run gives the ratio of the two beside the target; no
    client got a 500, and every book holds."""
    result = bench(
        matches=2,
        faults=["kill-postmaster", "stop-node", "switchover"],
        warmup=2.0,
        settle=3.0,
        ha=True,
        say=print,
    )
    print(result)
    assert result["problems"] == []
    assert [row["fault"] for row in result["faults"]] == [
        "kill-postmaster",
        "stop-node",
        "switchover",
    ]
    for row in result["faults"]:
        assert row["writable_on"] == row["promoted"], row
        assert row["first_ack_after_fault_s"] > 0 and row["writable_after_s"] > 0
        assert row["ack_over_writable"] == pytest.approx(
            row["first_ack_after_fault_s"] / row["writable_after_s"], abs=0.02
        )
    for kind in result["ha"].values():
        assert kind["answers"]["500"] == 0
        assert kind["target_ratio"] == TARGET_ACK_RATIO
        assert kind["ack_over_writable_max"] >= kind["ack_over_writable_p50"] > 0
    assert result["audited"] == result["matches"] > 0
