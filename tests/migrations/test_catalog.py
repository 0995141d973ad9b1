"""The table catalogs (`sa.Table` declarations: the event store's, the match service's,
the ranking service's) against the schema the migrations make: a migration that forgets
its catalog, or a catalog edit without a migration, fails here."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from services.ranking import tables as ranking_tables
from services.shared.database import create_sync_engine, migrate
from services.shared.eventstore import events_table
from services.shared.eventstore._tables import Xid8
from tests import match_tables

CATALOGS = (events_table.metadata, match_tables.TABLES, ranking_tables.TABLES)
_DIALECT = postgresql.dialect()  # type: ignore[no-untyped-call]

# (table, column) -> (PostgreSQL type, nullable); and table -> primary key columns.
Shape = tuple[dict[tuple[str, str], tuple[str, bool]], dict[str, tuple[str, ...]]]


def _type(column_type: Any) -> str:
    return str(column_type.compile(dialect=_DIALECT))


def catalog_shape() -> Shape:
    """What the catalogs declare."""
    columns: dict[tuple[str, str], tuple[str, bool]] = {}
    keys: dict[str, tuple[str, ...]] = {}
    for metadata in CATALOGS:
        for table in metadata.tables.values():
            for column in table.columns:
                columns[table.name, column.name] = (_type(column.type), bool(column.nullable))
            keys[table.name] = tuple(c.name for c in table.primary_key.columns)
    return columns, keys


def database_shape(url: str) -> Shape:
    """What the database at `url` holds (Alembic's own table left out)."""
    engine = create_sync_engine(url, poolclass=sa.pool.NullPool)
    columns: dict[tuple[str, str], tuple[str, bool]] = {}
    keys: dict[str, tuple[str, ...]] = {}
    try:
        inspector = sa.inspect(engine)
        for table in inspector.get_table_names():
            if table == "alembic_version":
                continue
            for column in inspector.get_columns(table):
                columns[table, column["name"]] = (_type(column["type"]), column["nullable"])
            keys[table] = tuple(inspector.get_pk_constraint(table)["constrained_columns"])
    finally:
        engine.dispose()
    return columns, keys


@pytest.fixture(autouse=True)
def _reflect_xid8(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """SQLAlchemy does not know `xid8` (events.tx): reflect it as the catalog's type."""
    monkeypatch.setitem(postgresql.base.ischema_names, "xid8", Xid8)
    yield


@pytest.fixture
def migrated_url(blank_database_url: str) -> str:
    migrate(blank_database_url)
    return blank_database_url


def test_the_migrated_schema_is_the_catalogs(migrated_url: str) -> None:
    """`alembic upgrade head` on a fresh database makes exactly the declared tables, each
    column with its declared type and nullability, each table with its declared key."""
    want_columns, want_keys = catalog_shape()
    got_columns, got_keys = database_shape(migrated_url)
    assert sorted(got_keys) == sorted(want_keys)
    assert {c: got_columns[c] for c in sorted(got_columns)} == {
        c: want_columns[c] for c in sorted(want_columns)
    }
    assert got_keys == want_keys


def test_every_table_is_declared_once() -> None:
    """No table is declared in two catalogs (each has one owner)."""
    names = [name for metadata in CATALOGS for name in metadata.tables]
    assert len(names) == len(set(names)) and "events" in names and "ratings" in names


def test_a_schema_change_without_its_catalog_is_seen(migrated_url: str) -> None:
    """The comparison sees a column's type, nullability, a new column and a new table."""
    want = catalog_shape()
    engine = create_sync_engine(migrated_url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("ALTER TABLE ratings ALTER COLUMN matches TYPE bigint"))
            conn.execute(sa.text("ALTER TABLE players ALTER COLUMN name DROP NOT NULL"))
            conn.execute(sa.text("ALTER TABLE parties ADD COLUMN note text"))
            conn.execute(sa.text("CREATE TABLE stray (id integer PRIMARY KEY)"))
    finally:
        engine.dispose()
    got_columns, got_keys = database_shape(migrated_url)
    differ = {
        c for c in got_columns.keys() | want[0].keys() if got_columns.get(c) != want[0].get(c)
    }
    assert differ == {
        ("ratings", "matches"),
        ("players", "name"),
        ("parties", "note"),
        ("stray", "id"),
    }
    assert set(got_keys) - set(want[1]) == {"stray"}
