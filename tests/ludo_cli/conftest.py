"""The database fixtures for the command-line tests (tests/databases.py)."""

from __future__ import annotations

from tests.databases import (  # noqa: F401 - the database fixtures, re-used by import
    anyio_backend,
    blank_database_url,
    database_url,
    engine,
    pg_store,
    server_home,
    server_url,
    template_name,
)
