"""`ludo bench store`, run tiny on a test database: the figures are there, positive, and
the fill reaches the row count asked. No timing is asserted (the machine decides them)."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest

from benchmarks.store_bench import Config, _partitioned_ddl, bench, print_table
from services.shared.database import libpq_url
from tests.databases import admin, with_database

pytestmark = pytest.mark.slow

READS = (
    "read_stream",
    "read_events",
    "read_events_tail",
    "read_all",
    "read_all_head",
)
ROWS = 2000


@pytest.fixture(scope="module")
def result(server_url: str, template_name: str) -> dict[str, Any]:
    """One tiny run shared by the module's tests (a run creates its own tables)."""
    name = f"ludo_test_store_bench_{uuid.uuid4().hex[:8]}"
    admin(server_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_name}"')
    try:
        return bench(
            Config(
                rows=ROWS,
                streams=3,
                events=12,
                clients=2,
                reads=5,
                batch=50,
                fill_streams=4,
                partitions=4,
                pgbench_seconds=1,
                progress=False,
                database_url=with_database(server_url, name),
            )
        )
    finally:
        admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _positive(figure: dict[str, Any]) -> None:
    assert figure["n"] > 0
    for q in ("p50_ms", "p90_ms", "p99_ms"):
        assert figure[q] > 0
    assert figure["p50_ms"] <= figure["p90_ms"] <= figure["p99_ms"]


def test_fill_reaches_the_rows_asked_in_both_tables(result: dict[str, Any]) -> None:
    """After the fill each table holds exactly --rows rows, with a positive size."""
    for label in ("plain", "partitioned"):
        size = result["sizes"][label]
        assert size["rows"] == ROWS
        assert size["total_bytes"] >= size["table_bytes"] > 0
        assert size["index_bytes"] > 0
        assert result["fill"][label]["inserted"] == ROWS - 3 * 12
    assert result["sizes"]["partitioned"]["partitions"] == 4
    assert result["sizes"]["plain"]["partitions"] == 0


def test_every_figure_is_present_and_positive(result: dict[str, Any]) -> None:
    """Appends, stream reads and global reads have positive percentiles in every phase."""
    for phase in ("empty", "filled"):
        for label in ("plain", "partitioned"):
            figures = result[phase][label]
            append = figures["append"]
            _positive(append)
            assert append["n"] == 3 * 12
            assert append["appends_per_s"] > 0
            for key in READS:
                _positive(figures[key])
                assert figures[key]["n"] == 5
                assert set(figures["server"]) <= {*READS, "read_stream_old"}
            assert figures["read_stream"]["rows"] == 12
            assert figures["read_events_tail"]["rows"] == 5
            assert 0 < figures["read_all"]["rows"] <= 50
    assert "read_stream_old" not in result["empty"]["plain"]
    assert result["filled"]["plain"]["read_stream_old"]["rows"] > 0


def test_pgbench_baseline_and_the_printed_table(
    result: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The pgbench baseline ran in the same run, and the table prints every section."""
    pg = result["pgbench"]
    if "skipped" not in pg:
        assert pg["tps"] > 0
        assert pg["clients"] == 2
    print_table(result)
    out = capsys.readouterr().out
    assert "after/before" in out
    assert "partitioned / plain" in out
    assert f"{ROWS:,} rows after the fill" in out


def test_the_partitioned_copy_stays_append_only(database_url: str) -> None:
    """The partitioned copy refuses UPDATE, DELETE and TRUNCATE, on the parent and on a
    partition named directly."""
    with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
        for statement in _partitioned_ddl(2):
            conn.execute(statement)
        for target in ("ludo_part.events", "ludo_part.events_p01"):
            for statement in (
                f"UPDATE {target} SET type = 'x'",
                f"DELETE FROM {target}",
                f"TRUNCATE {target}",
            ):
                with pytest.raises(psycopg.errors.RestrictViolation):
                    conn.execute(statement)
