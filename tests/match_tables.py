"""The match service's tables as the migrations 0001, 0002, 0003, 0005, 0008, 0010, 0012
and 0014 make them (0013's `rate_buckets` is both services'): the catalog the tests hold them to
(tests/migrations/test_catalog.py compares it with the migrated schema; tests/test_tables.py
checks that the product's SQL names only cataloged tables). The product writes its SQL as
text (the match service's modules, and services/shared/match_rows.py for `matches` and
`match_seeds`); no product code needs these declarations, so they live with the tests.
The ranking service has its own tables (services/ranking/tables.py).

Checks, indexes and triggers live in the migrations only.
"""

from __future__ import annotations

from typing import Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

__all__ = [
    "TABLES",
    "arenas",
    "lobby_presence",
    "match_seeds",
    "matches",
    "parties",
    "players",
    "rate_buckets",
    "seat_connections",
    "seat_presence",
    "turn_deadlines",
]

_TIMESTAMPTZ: Final = sa.DateTime(timezone=True)
_NOW: Final = sa.text("now()")

TABLES: Final = sa.MetaData()

# Guests: the token itself is never stored, only its sha256.
players: Final = sa.Table(
    "players",
    TABLES,
    sa.Column("id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("token_hash", sa.LargeBinary, nullable=False, unique=True),
    sa.Column("created_at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
)

# Table settings a match needs but its rules do not (written with MatchCreated).
matches: Final = sa.Table(
    "matches",
    TABLES,
    sa.Column("stream_id", sa.Text, primary_key=True),
    sa.Column("party_id", sa.Text, nullable=False),
    sa.Column("turn_limit", sa.Integer, nullable=True),
    sa.Column("ranked", sa.Boolean, nullable=False),
    sa.Column("created_at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
    sa.Column("cpu_speed", sa.Text, nullable=False, server_default="normal"),
)

# The server seed, out of the public stream until SeedRevealed (docs/design.md#fair-dice).
match_seeds: Final = sa.Table(
    "match_seeds",
    TABLES,
    sa.Column("stream_id", sa.Text, primary_key=True),
    sa.Column("server_seed", sa.LargeBinary, nullable=False),
    sa.Column("created_at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
)

# One pending deadline per match (docs/design.md#timers-presence-and-cpu-stand-ins).
turn_deadlines: Final = sa.Table(
    "turn_deadlines",
    TABLES,
    sa.Column("stream_id", sa.Text, primary_key=True),
    sa.Column("due_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("expected_version", sa.Integer, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
)

# The lobby listing: a read model of the party streams.
parties: Final = sa.Table(
    "parties",
    TABLES,
    sa.Column("party_id", sa.Text, primary_key=True),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("settings", postgresql.JSONB, nullable=False, server_default=sa.text("'{}'::jsonb")),
    sa.Column("updated_at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
)

# Live connections per seat over all instances, and the disconnect grace deadline.
seat_presence: Final = sa.Table(
    "seat_presence",
    TABLES,
    sa.Column("stream_id", sa.Text, primary_key=True),
    sa.Column("seat", sa.Integer, primary_key=True),
    sa.Column("connections", sa.Integer, nullable=False, server_default=sa.text("0")),
    sa.Column("disconnected_at", _TIMESTAMPTZ, nullable=True),
    sa.Column("grace_due", _TIMESTAMPTZ, nullable=True),
)

# Who holds a lobby socket, refreshed by the instance holding it (a pool entry's life).
lobby_presence: Final = sa.Table(
    "lobby_presence",
    TABLES,
    sa.Column("player_id", sa.Text, primary_key=True),
    sa.Column("seen_at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
)

# The arenas' listing (migration 0010), a side write of each arena append.
arenas: Final = sa.Table(
    "arenas",
    TABLES,
    sa.Column("arena_id", sa.Text, primary_key=True),
    sa.Column("private", sa.Boolean, nullable=False),
    sa.Column("schedule", sa.Text),
    sa.Column("starts_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("ends_at", _TIMESTAMPTZ, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("done", sa.Boolean, nullable=False),
    sa.Column("summary", postgresql.JSONB, nullable=False),
    sa.Column("updated_at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
)

# Every live connection opened and closed (append-only: rows are only inserted).
seat_connections: Final = sa.Table(
    "seat_connections",
    TABLES,
    sa.Column("id", sa.BigInteger, sa.Identity(always=True), primary_key=True),
    sa.Column("stream_id", sa.Text, nullable=False),
    sa.Column("seat", sa.Integer, nullable=False),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("at", _TIMESTAMPTZ, nullable=False, server_default=_NOW),
)

# The per-address budgets both services share (migration 0012, UNLOGGED): a GCRA's
# theoretical arrival time per budget and client (services/shared/rate_store.py).
rate_buckets: Final = sa.Table(
    "rate_buckets",
    TABLES,
    sa.Column("budget", sa.Text, primary_key=True),
    sa.Column("client", sa.Text, primary_key=True),
    sa.Column("tat", sa.Double, nullable=False),
)
