"""Seat connections: an append-only log of every live connection opened and closed.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    # One row per WebSocket of a seated player that said hello (`connected`) and per such
    # socket that closed (`disconnected`), written by Presence.connected/disconnected
    # in the same transaction as their `seat_presence` update. The dispute report merges
    # them with the match's events. Rows are only ever inserted.
    """
    CREATE TABLE seat_connections (
        id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        stream_id text        NOT NULL,
        seat      integer     NOT NULL CHECK (seat BETWEEN 0 AND 3),
        kind      text        NOT NULL CHECK (kind IN ('connected', 'disconnected')),
        at        timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX seat_connections_stream_idx ON seat_connections (stream_id, id)",
    """
    CREATE FUNCTION seat_connections_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        RAISE EXCEPTION 'seat_connections is append-only: % is not allowed', TG_OP
            USING ERRCODE = 'restrict_violation';
    END $$
    """,
    """
    CREATE TRIGGER seat_connections_no_update_delete
        BEFORE UPDATE OR DELETE ON seat_connections
        FOR EACH STATEMENT EXECUTE FUNCTION seat_connections_append_only()
    """,
    """
    CREATE TRIGGER seat_connections_no_truncate
        BEFORE TRUNCATE ON seat_connections
        FOR EACH STATEMENT EXECUTE FUNCTION seat_connections_append_only()
    """,
]

DOWNGRADE = [
    "DROP TABLE seat_connections",
    "DROP FUNCTION seat_connections_append_only()",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)
    # The application role's rights on the new table are granted by migrations/grants.py
    # (`ludo db upgrade` and the services' start run it after the migrations).


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
