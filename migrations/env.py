"""Alembic environment: runs the migrations on one synchronous psycopg connection.

The URL comes from the caller (`services.shared.database.migrate` puts it in
`config.attributes["database_url"]`); when Alembic is run by hand it comes from the
settings (DATABASE_URL, or the embedded PostgreSQL when that is unset). Offline (`--sql`)
mode is not supported: the schema is applied by running the migrations.
"""

from __future__ import annotations

import contextlib

import sqlalchemy as sa
from alembic import context

from migrations.grants import grant_app_role
from services.shared.database import create_sync_engine, database_url
from services.shared.settings import Settings

config = context.config
_LOCK_KEY = 0x6C75646F_6D696772  # "ludomigr": the migration lock


def run_migrations(url: str, app_role: str | None) -> None:
    engine = create_sync_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            # Every service process migrates at start: the lock makes concurrent starts
            # take turns (the later ones then find nothing to do) instead of racing on DDL.
            # Session-level, so it spans the per-migration transactions; released on close.
            connection.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": _LOCK_KEY})
            connection.commit()
            context.configure(connection=connection, transaction_per_migration=True)
            with context.begin_transaction():
                context.run_migrations()
            # With nothing to migrate, Alembic's read of `alembic_version` leaves the
            # connection in an autobegun transaction (`connection.begin()` here used to
            # fail on a second `ludo db upgrade`). End it, then grant in a transaction
            # of its own, on every run.
            connection.commit()
            if app_role:
                grant_app_role(connection, app_role)
                connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise SystemExit("offline (--sql) migrations are not supported; run `ludo db upgrade`")

url = config.attributes.get("database_url")
role = config.attributes.get("app_role")
with contextlib.ExitStack() as stack:
    if url is None:
        settings = Settings.from_env()
        url = stack.enter_context(database_url(settings))
        role = role or settings.db_app_role
    run_migrations(url, role)
