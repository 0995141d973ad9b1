"""The event store's tables, declared once (the schema itself is made by the migrations:
0001, 0006; tests/migrations/test_catalog.py checks that the two agree).

Checks, indexes and the append-only triggers live in the migrations only: the catalog
says what the code reads and writes (names, types, nullability, keys).
"""

from __future__ import annotations

from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

__all__ = ["TABLES", "Xid8", "commands_table", "events_table"]


class Xid8(sa.types.UserDefinedType[Any]):
    """PostgreSQL's 64-bit transaction id (`pg_current_xact_id()`); read as text."""

    cache_ok = True

    def get_col_spec(self, **_kw: Any) -> str:
        return "XID8"


_TIMESTAMPTZ: Final = sa.DateTime(timezone=True)
_NOW: Final = sa.text("now()")

TABLES: Final = sa.MetaData()

events_table: Final = sa.Table(
    "events",
    TABLES,
    sa.Column("global_position", sa.BigInteger, sa.Identity(always=True), primary_key=True),
    sa.Column("tx", Xid8(), nullable=False, server_default=sa.text("pg_current_xact_id()")),
    sa.Column("stream_id", sa.Text, nullable=False),
    sa.Column("stream_version", sa.Integer, nullable=False),
    sa.Column("event_id", sa.Uuid, nullable=False),
    sa.Column("type", sa.Text, nullable=False),
    sa.Column("schema_version", sa.Integer, nullable=False),
    # `json`, not `jsonb`: the exact text that was hashed (0001).
    sa.Column("data", sa.JSON, nullable=False),
    sa.Column("metadata", postgresql.JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("recorded_at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
    sa.Column("prev_hash", sa.LargeBinary, nullable=False),
    sa.Column("hash", sa.LargeBinary, nullable=False),
)

# Idempotency: one row per command that appended, written in the append's transaction.
commands_table: Final = sa.Table(
    "commands",
    TABLES,
    sa.Column("command_id", sa.Text, primary_key=True),
    sa.Column("stream_id", sa.Text, nullable=False),
    sa.Column("first_version", sa.Integer, nullable=False),
    sa.Column("last_version", sa.Integer, nullable=False),
    sa.Column("created_at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
)
