"""Alembic migrations: the only way the schema changes (docs/design.md#the-shape-of-the-system).

Run them with `ludo db upgrade`, or programmatically with
`services.shared.database.migrate(url)`. `alembic.ini` lives here so it ships with the
package; `alembic -c migrations/alembic.ini upgrade head` also works (it reads
`DATABASE_URL`, or starts the embedded PostgreSQL when that is unset).
"""
