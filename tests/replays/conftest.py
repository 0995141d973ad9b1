"""The database fixtures for the replay tests that use PostgreSQL (tests/databases.py):
the tournament export reads a real event store."""

from __future__ import annotations

from tests.databases import (  # noqa: F401 - the database fixtures, re-used by import
    anyio_backend,
    database_url,
    engine,
    pg_store,
    server_url,
    template_name,
)
