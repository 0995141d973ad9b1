"""The one helper that starts a bench's service process and samples CPU: a service that
cannot start is an error quoting its stderr, and a process tree's CPU counts its children,
the exited ones only when asked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from benchmarks.common import BenchError
from benchmarks.service_process import cpu_seconds, serve


def test_a_service_that_exits_is_an_error_quoting_its_stderr() -> None:
    """An app uvicorn cannot load ends the start with its status and the end of its stderr."""
    with (
        pytest.raises(BenchError, match="exited with status") as error,
        serve("postgresql://unused", factory="benchmarks.no_such_module:app"),
    ):
        pytest.fail("the service answered")
    assert "its stderr ends with:" in str(error.value)
    assert "no_such_module" in str(error.value)


def test_cpu_seconds_counts_an_exited_child_only_when_asked() -> None:
    """A child that ran and was reaped adds its CPU to its parent's tree with `reaped`."""
    pytest.importorskip("psutil")
    me = {"me": [os.getpid()]}
    before = cpu_seconds(me, machine="machine"), cpu_seconds(me, reaped=False)
    subprocess.run([sys.executable, "-c", "sum(range(3 * 10**7))"], check=True)
    after = cpu_seconds(me, machine="machine"), cpu_seconds(me, reaped=False)
    with_reaped = after[0]["me"] - before[0]["me"]
    living_only = after[1]["me"] - before[1]["me"]
    assert set(after[0]) == {"machine", "me"} and set(after[1]) == {"me"}
    assert with_reaped > living_only + 0.05  # the child's own CPU, which only `reaped` sees
