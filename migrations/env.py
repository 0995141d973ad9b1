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


def run_migrations(url: str, app_role: str | None) -> None:
    engine = create_sync_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as connection:
            context.configure(connection=connection, transaction_per_migration=True)
            with context.begin_transaction():
                context.run_migrations()
            if app_role:
                with connection.begin():
                    grant_app_role(connection, app_role)
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
