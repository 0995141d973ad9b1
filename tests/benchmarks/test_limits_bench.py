"""`ludo bench limits`, run tiny on a test database: every store is measured, every check
took (the addresses stay under their budgets), PostgreSQL's counters are there, and a
Redis that does not answer is skipped with a line saying so. No timing is asserted."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.limits_bench import _measure, print_table

pytestmark = pytest.mark.anyio


async def test_each_store_is_measured_beside_memory(
    database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """memory, postgres and postgres-logged each run every check, none refused; the
    PostgreSQL figures count at most one statement per check; no Redis: skipped, said."""
    args = argparse.Namespace(
        requests=300, tasks=4, addresses=50, rounds=1, redis="redis://127.0.0.1:1/0"
    )
    lines: list[str] = []
    figures = await _measure(args, database_url, lines.append)
    stores = figures["stores"]
    assert list(stores) == ["memory", "postgres", "postgres-logged"]
    assert any(line.startswith("redis: skipped") for line in lines), lines
    for store in stores.values():
        assert store["refused"] == 0 and store["checks_per_s"] > 0 and store["app_cpu_us"] > 0
    for name in ("postgres", "postgres-logged"):
        assert 0 < stores[name]["statements_per_check"] <= 1, stores[name]
        assert stores[name]["updates_per_check"] > 0, stores[name]
    print_table(figures)
    assert "postgres-logged" in capsys.readouterr().out
