"""Reputation and reports: the reputation fold and the moderation read model.

`reputation_matches`: one row per human player per ended match (casual and ranked), written
by the ranking consumer in the transaction that moves its checkpoint (exactly once) and
rebuilt by `ludo ranking recompute`; a player's completion rate and ranked pause are read
from it (`services/shared/standing.py`, `domain/reputation.py`). Matches that ended before
this migration are not in it until `ludo ranking recompute` runs (docs/ranking.md).

`reports`: one row per report of a player (the `report-<id>` streams, `domain/reports.py`),
written in the same statement as the report's events (a side write of the append): the
operator's queue, and the suspensions and warnings a player's standing reads.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE TABLE reputation_matches (
        player_id text NOT NULL,
        match_stream text NOT NULL,
        position bigint NOT NULL,
        ended_at timestamptz NOT NULL,
        ranked boolean NOT NULL,
        left_match boolean NOT NULL,
        PRIMARY KEY (player_id, match_stream)
    )
    """,
    "CREATE INDEX reputation_matches_recent ON reputation_matches (player_id, ended_at DESC)",
    """
    CREATE TABLE reports (
        report_id text PRIMARY KEY,
        match_id text NOT NULL,
        reporter_id text NOT NULL,
        reported_id text NOT NULL,
        reason text NOT NULL,
        filed_at timestamptz NOT NULL,
        decision text,
        decided_at timestamptz,
        hours integer,
        until timestamptz,
        note text
    )
    """,
    "CREATE INDEX reports_queue ON reports ((decision IS NOT NULL), filed_at)",
    "CREATE INDEX reports_reported ON reports (reported_id, decided_at)",
]

DOWNGRADE = [
    "DROP TABLE reports",
    "DROP TABLE reputation_matches",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
