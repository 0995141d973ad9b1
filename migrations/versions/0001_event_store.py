"""The event store and the match service's side tables (docs/design.md#the-event-store,
docs/event-store.md).

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    # `data` is `json`, not `jsonb`: json keeps the exact text it was given, so the bytes
    # read back (data::text) are the bytes that were hashed. That text must be UTF-8.
    """
    DO $$
    BEGIN
        IF current_setting('server_encoding') <> 'UTF8' THEN
            RAISE EXCEPTION 'the database encoding must be UTF8, not %',
                current_setting('server_encoding');
        END IF;
    END $$
    """,
    """
    CREATE TABLE events (
        global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tx              xid8        NOT NULL DEFAULT pg_current_xact_id(),
        stream_id       text        NOT NULL CHECK (length(stream_id) BETWEEN 1 AND 200),
        stream_version  integer     NOT NULL CHECK (stream_version >= 0),
        event_id        uuid        NOT NULL,
        type            text        NOT NULL,
        schema_version  integer     NOT NULL CHECK (schema_version >= 1),
        data            json        NOT NULL,
        metadata        jsonb       NOT NULL DEFAULT '{}'::jsonb,
        recorded_at     timestamptz NOT NULL DEFAULT now(),
        prev_hash       bytea       NOT NULL CHECK (length(prev_hash) = 32),
        hash            bytea       NOT NULL CHECK (length(hash) = 32),
        CONSTRAINT events_stream_version_key UNIQUE (stream_id, stream_version),
        CONSTRAINT events_event_id_key UNIQUE (event_id)
    )
    """,
    # The global cursor of consumers: WHERE (tx, global_position) > cursor ORDER BY both.
    "CREATE INDEX events_tx_position_idx ON events (tx, global_position)",
    """
    CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'events are append-only: % on events is not allowed', TG_OP
            USING ERRCODE = 'restrict_violation',
                  HINT = 'correct a stream by appending a compensating event';
    END $$
    """,
    # Statement-level: fires even when no row matches (DELETE ... WHERE false raises too).
    """
    CREATE TRIGGER events_no_update_delete
        BEFORE UPDATE OR DELETE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION events_append_only()
    """,
    """
    CREATE TRIGGER events_no_truncate
        BEFORE TRUNCATE ON events
        FOR EACH STATEMENT EXECUTE FUNCTION events_append_only()
    """,
    # Idempotency: one row per command that appended; written in the append's transaction.
    """
    CREATE TABLE commands (
        command_id    text        PRIMARY KEY CHECK (length(command_id) BETWEEN 1 AND 200),
        stream_id     text        NOT NULL,
        first_version integer     NOT NULL,
        last_version  integer     NOT NULL,
        created_at    timestamptz NOT NULL DEFAULT now(),
        CHECK (last_version >= first_version)
    )
    """,
    # The server seed stays out of the public stream until SeedRevealed (docs/design.md#fair-dice).
    """
    CREATE TABLE match_seeds (
        stream_id   text        PRIMARY KEY,
        server_seed bytea       NOT NULL CHECK (length(server_seed) = 32),
        created_at  timestamptz NOT NULL DEFAULT now()
    )
    """,
    # One pending deadline per match; fired with FOR UPDATE SKIP LOCKED
    # (docs/design.md#timers-presence-and-cpu-stand-ins).
    """
    CREATE TABLE turn_deadlines (
        stream_id        text        PRIMARY KEY,
        due_at           timestamptz NOT NULL,
        expected_version integer     NOT NULL CHECK (expected_version >= 0),
        kind             text        NOT NULL
    )
    """,
    "CREATE INDEX turn_deadlines_due_at_idx ON turn_deadlines (due_at)",
    # The lobby listing: a read model of the party streams, rebuilt from them at will.
    """
    CREATE TABLE parties (
        party_id   text        PRIMARY KEY,
        status     text        NOT NULL,
        settings   jsonb       NOT NULL DEFAULT '{}'::jsonb,
        updated_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX parties_status_updated_at_idx ON parties (status, updated_at DESC)",
]

DOWNGRADE = [
    "DROP TABLE parties",
    "DROP TABLE turn_deadlines",
    "DROP TABLE match_seeds",
    "DROP TABLE commands",
    "DROP TABLE events",
    "DROP FUNCTION events_append_only()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    """Drops every table, events included: only for throw-away development databases."""
    for statement in DOWNGRADE:
        op.execute(statement)
