"""The two roles (docs/event-store.md, Roles): the migration owner and the app role.

The test server's role (a superuser, or the owner of the databases it creates) is the
migration owner here; each test makes its own login role as the app role and drops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import errors
from sqlalchemy.engine import make_url

from ludo_cli.cluster import free_port
from migrations.grants import AppRoleError, app_role_sql
from services.ranking import tables as ranking_tables
from services.ranking.ratings.consumer import recompute
from services.shared.database import (
    SchemaNotReady,
    create_engine,
    head_revision,
    libpq_url,
    migrate,
    owns_schema,
    prepare_schema,
)
from services.shared.eventstore import events_table
from tests import match_tables, paths
from tests.databases import admin

ROOT = paths.ROOT

# What the app role must never do: change or empty the append-only tables, change a seed,
# or touch the triggers that keep the log immutable.
FORBIDDEN = [
    *(
        statement
        for table in ("events", "commands", "seat_connections", "match_seeds")
        for statement in (
            f"UPDATE {table} SET stream_id = stream_id",
            f"DELETE FROM {table}",
            f"TRUNCATE {table}",
        )
    ),
    "ALTER TABLE events DISABLE TRIGGER ALL",
    "ALTER TABLE events DISABLE TRIGGER events_no_update_delete",
    "ALTER TABLE commands DISABLE TRIGGER USER",
    "DROP TRIGGER events_no_truncate ON events",
    "CREATE TRIGGER sneak BEFORE UPDATE ON events EXECUTE FUNCTION events_append_only()",
    "ALTER TABLE events OWNER TO CURRENT_USER",
    "TRUNCATE turn_deadlines",
    "UPDATE alembic_version SET version_num = '0001'",
]


def make_role(url: str) -> tuple[str, str]:
    """A new login role with a password on the server of `url`: (name, its URL)."""
    role = f"ludo_app_{uuid.uuid4().hex[:10]}"
    admin(url, f"CREATE ROLE {role} LOGIN PASSWORD 'app'")
    return role, make_url(url).set(username=role, password="app").render_as_string(
        hide_password=False
    )


def drop_role(url: str, role: str) -> None:
    """Drop `role` and its privileges in the database of `url`."""
    admin(url, f"DROP OWNED BY {role}", f"DROP ROLE {role}")


@pytest.fixture
def app_role(database_url: str) -> Iterator[tuple[str, str]]:
    """A login role granted the app role's privileges by `migrate` on the test's database."""
    role, url = make_role(database_url)
    try:
        migrate(database_url, app_role=role)
        yield role, url
    finally:
        drop_role(database_url, role)


def privilege(url: str, role: str, table: str, what: str) -> bool:
    with psycopg.connect(libpq_url(url)) as conn:
        row = conn.execute("SELECT has_table_privilege(%s, %s, %s)", (role, table, what))
        return bool(row.fetchone()[0])  # type: ignore[index]


def test_db_upgrade_with_an_app_role_runs_twice_and_grants_each_time(
    blank_database_url: str,
) -> None:
    """`ludo db upgrade` with LUDO_DB_APP_ROLE exits 0 twice; the second run grants again
    (a privilege added by hand in between is taken back)."""
    role, _ = make_role(blank_database_url)
    env = {
        **os.environ,
        "DATABASE_URL": blank_database_url,
        "LUDO_DB_APP_ROLE": role,
        "PYTHONPATH": str(ROOT),
    }
    command = [sys.executable, "-m", "ludo_cli.main", "db", "upgrade"]
    try:
        first = subprocess.run(
            command, check=False, env=env, capture_output=True, text=True, cwd=ROOT
        )
        assert first.returncode == 0, first.stderr
        assert privilege(blank_database_url, role, "alembic_version", "SELECT")
        admin(blank_database_url, f"GRANT UPDATE, TRUNCATE ON match_seeds, events TO {role}")
        second = subprocess.run(
            command, check=False, env=env, capture_output=True, text=True, cwd=ROOT
        )
        assert second.returncode == 0, second.stderr
        assert f"is at revision {head_revision()}" in second.stdout
        for table in ("match_seeds", "events"):
            assert privilege(blank_database_url, role, table, "INSERT")
            assert not privilege(blank_database_url, role, table, "UPDATE")
            assert not privilege(blank_database_url, role, table, "TRUNCATE")
    finally:
        drop_role(blank_database_url, role)


@pytest.mark.parametrize("statement", FORBIDDEN)
def test_the_app_role_cannot_change_the_log_nor_its_triggers(
    app_role: tuple[str, str], statement: str
) -> None:
    """As the app role, each forbidden statement fails with permission denied (42501)."""
    _, url = app_role
    with psycopg.connect(libpq_url(url)) as conn, pytest.raises(errors.InsufficientPrivilege):
        conn.execute(statement)


def test_the_app_role_reads_and_writes_seeds_once(app_role: tuple[str, str]) -> None:
    """The app role may INSERT and SELECT a match's seed, not UPDATE or DELETE it."""
    _, url = app_role
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("INSERT INTO match_seeds VALUES ('m-1', %s)", (bytes(32),))
        row = conn.execute("SELECT server_seed FROM match_seeds WHERE stream_id = 'm-1'")
        assert row.fetchone() == (bytes(32),)
        for statement in (
            "UPDATE match_seeds SET server_seed = server_seed",
            "DELETE FROM match_seeds",
        ):
            with pytest.raises(errors.InsufficientPrivilege):
                conn.execute(statement)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE commands SET last_version = last_version",
        "DELETE FROM commands WHERE false",
        "TRUNCATE commands",
    ],
)
def test_commands_are_append_only_for_the_owner_too(database_url: str, statement: str) -> None:
    """The owner's UPDATE, DELETE and TRUNCATE of `commands` hit the append-only trigger."""
    with psycopg.connect(libpq_url(database_url)) as conn:
        conn.execute(
            "INSERT INTO commands (command_id, stream_id, first_version, last_version)"
            " VALUES ('c-1', 's-1', 0, 0)"
        )
        with pytest.raises(errors.RestrictViolation, match="commands are append-only"):
            conn.execute(statement)


def test_the_owner_cannot_be_named_the_app_role(database_url: str) -> None:
    """LUDO_DB_APP_ROLE naming the migrating role itself (it owns the tables) is refused:
    revoking its rights would be wrong, and running the services as it is the defect."""
    owner = make_url(database_url).username
    assert owner is not None
    with pytest.raises(AppRoleError, match="owns the tables"):
        migrate(database_url, app_role=owner)


def test_a_service_as_the_app_role_checks_the_revision_and_does_not_migrate(
    app_role: tuple[str, str], database_url: str
) -> None:
    """At head, the app role's start-up check passes; behind head it says to run
    `ludo db upgrade` as the owner instead of trying to migrate."""
    _, url = app_role
    assert owns_schema(database_url) and not owns_schema(url)
    assert prepare_schema(url) == head_revision()
    admin(database_url, "UPDATE alembic_version SET version_num = '0005'")
    with pytest.raises(SchemaNotReady, match="ludo db upgrade` as the migration owner"):
        prepare_schema(url)
    admin(database_url, f"UPDATE alembic_version SET version_num = '{head_revision()}'")
    assert prepare_schema(database_url) == head_revision()  # the owner: migrates (nothing)


@pytest.mark.anyio
async def test_a_recompute_by_the_owner_keeps_the_app_roles_rating_privileges(
    app_role: tuple[str, str], database_url: str
) -> None:
    """`ludo ranking recompute` (the owner) swaps in new rating tables with the app role's
    privileges on the old ones: the ranking service goes on reading and writing them."""
    role, url = app_role
    tables = ("ratings", "rating_changes")
    what = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE")
    before = {(t, w): privilege(database_url, role, t, w) for t in tables for w in what}
    engine = create_engine(database_url)
    try:
        await recompute(engine)
    finally:
        await engine.dispose()
    after = {(t, w): privilege(database_url, role, t, w) for t in tables for w in what}
    assert after == before
    assert after[("ratings", "UPDATE")] and not after[("rating_changes", "TRUNCATE")]
    with psycopg.connect(libpq_url(url)) as conn:
        conn.execute("SELECT count(*) FROM ratings JOIN rating_changes USING (player_id)")


def test_a_service_on_a_schema_behind_its_code_exits_at_start(
    app_role: tuple[str, str], database_url: str, tmp_path: Path
) -> None:
    """The Dockerfile's CMD as the app role on a database one revision behind: uvicorn
    says the startup failed and exits 3, the message naming `ludo db upgrade`."""
    _, url = app_role
    admin(database_url, "UPDATE alembic_version SET version_num = '0005'")
    dockerfile = (ROOT / "Dockerfile").read_text()
    cmd = next(line for line in dockerfile.splitlines() if line.startswith("CMD "))
    argv = [sys.executable, *json.loads(cmd.removeprefix("CMD "))[1:]]
    argv[argv.index("--host") + 1] = "127.0.0.1"
    argv[argv.index("--port") + 1] = str(free_port())
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "LUDO_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(ROOT),
    }
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 3, done.stderr
    assert "Application startup failed" in done.stderr
    assert "run `ludo db upgrade` as the migration owner" in done.stderr


def test_every_table_of_the_catalogs_is_granted_to_the_app_role() -> None:
    """Each table the services declare is named in a GRANT to the app role (a migration
    that adds a table without its grant leaves the app role unable to use it)."""
    granted = " ".join(s for s in app_role_sql("ludo_app") if s.startswith("GRANT"))
    named = set(granted.replace(",", " ").split())
    tables = (
        set(events_table.metadata.tables)
        | set(match_tables.TABLES.tables)
        | set(ranking_tables.TABLES.tables)
    )
    assert sorted(tables - named) == []
