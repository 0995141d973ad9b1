"""Ranking service: ratings, their history, and the consumer's checkpoint.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    # Current rating per (model, player). `rating` is the displayed number (1500 scale).
    # `ludo ranking recompute` builds a copy (CREATE TABLE ... LIKE) and swaps it in.
    """
    CREATE TABLE ratings (
        model         text             NOT NULL,
        player_id     text             NOT NULL,
        mu            double precision NOT NULL,
        sigma         double precision NOT NULL,
        volatility    double precision NOT NULL DEFAULT 0,
        rating        double precision NOT NULL,
        provisional   boolean          NOT NULL,
        matches       integer          NOT NULL CHECK (matches >= 0),
        last_match_at timestamptz      NOT NULL,
        PRIMARY KEY (model, player_id)
    )
    """,
    "CREATE INDEX ratings_leaderboard_idx ON ratings (model, rating DESC)",
    # One row per rated player per finished ranked match per model.
    """
    CREATE TABLE rating_changes (
        model         text             NOT NULL,
        match_stream  text             NOT NULL,
        player_id     text             NOT NULL,
        position      bigint           NOT NULL,
        place         integer          NOT NULL,
        players       integer          NOT NULL,
        left_match    boolean          NOT NULL,
        mu_before     double precision NOT NULL,
        sigma_before  double precision NOT NULL,
        rating_before double precision NOT NULL,
        mu_after      double precision NOT NULL,
        sigma_after   double precision NOT NULL,
        rating_after  double precision NOT NULL,
        params        jsonb            NOT NULL,
        library       text             NOT NULL,
        finished_at   timestamptz      NOT NULL,
        PRIMARY KEY (model, match_stream, player_id)
    )
    """,
    "CREATE INDEX rating_changes_player_idx ON rating_changes (player_id, model, position)",
    "CREATE INDEX rating_changes_finished_idx ON rating_changes (finished_at)",
    # Where a consumer is in the global order (docs/design.md#the-global-order): (tx, position) of
    # the last event it has taken into account. Written in the same transaction as its effects.
    """
    CREATE TABLE consumer_checkpoints (
        name       text        PRIMARY KEY,
        tx         bigint      NOT NULL,
        position   bigint      NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "INSERT INTO consumer_checkpoints (name, tx, position) VALUES ('ranking', 0, 0)",
]

DOWNGRADE = [
    "DROP TABLE consumer_checkpoints",
    "DROP TABLE rating_changes",
    "DROP TABLE ratings",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
