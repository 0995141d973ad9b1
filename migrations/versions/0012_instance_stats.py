"""The operator's live view: what each service instance says of itself.

`instance_stats`: one row per running instance of either service, written every few
seconds by the instance itself (services/shared/instance_stats.py) and read by the ranking
service's live view (`GET /api/ranking/live`): its pool (size, in use, waits), its live
sockets. UNLOGGED: the figures are of the moment; after a crash of PostgreSQL the table is
empty until the next beat, which is right (no instance is known alive then).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE UNLOGGED TABLE instance_stats (
        name text PRIMARY KEY,
        service text NOT NULL,
        pid integer NOT NULL,
        started_at timestamptz NOT NULL,
        seen_at timestamptz NOT NULL DEFAULT now(),
        figures jsonb NOT NULL
    )
    """,
]

DOWNGRADE = ["DROP TABLE instance_stats"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
