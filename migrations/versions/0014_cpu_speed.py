"""The CPUs' speed of a match: `matches.cpu_speed`.

`normal` (the pause `LUDO_CPU_DELAY` before each CPU action) or `fast` (a quarter of it):
the host's setting of the party (`domain.party`), pinned for each match with its other
table settings (`MatchOpened`) and read by the deadline worker. Every match before it
played at `normal`, the column's default.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    ALTER TABLE matches ADD COLUMN cpu_speed text NOT NULL DEFAULT 'normal'
        CHECK (cpu_speed IN ('normal', 'fast'))
    """,
]

DOWNGRADE = ["ALTER TABLE matches DROP COLUMN cpu_speed"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
