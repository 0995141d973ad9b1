"""The match service's own tables: guest players and the match -> party link.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    # Guests: the token itself is never stored, only its sha256 (looked up by hash).
    """
    CREATE TABLE players (
        id         text        PRIMARY KEY,
        name       text        NOT NULL CHECK (length(name) BETWEEN 1 AND 32),
        token_hash bytea       NOT NULL UNIQUE CHECK (length(token_hash) = 32),
        created_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    # Table settings a match needs but its rules do not (written with MatchCreated).
    """
    CREATE TABLE matches (
        stream_id  text        PRIMARY KEY,
        party_id   text        NOT NULL,
        turn_limit integer     CHECK (turn_limit IS NULL OR turn_limit > 0),
        ranked     boolean     NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX matches_party_id_idx ON matches (party_id)",
]

DOWNGRADE = ["DROP TABLE matches", "DROP TABLE players"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
