"""Arena tournaments: the listing of arenas.

`arenas`: one row per arena (the `tournament-<id>` streams, `domain/arena.py`), written in
the same statement as the arena's events (a side write of each append): the list pages
(`/tournaments`), and which arenas the runner of each instance still has work in
(`done` false: not cancelled, or still has a match running; not ended and scored).
`summary` is the list's JSON of the arena (`services/match/arenas/views.py`).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE TABLE arenas (
        arena_id text PRIMARY KEY,
        private boolean NOT NULL,
        schedule text,
        starts_at timestamptz NOT NULL,
        ends_at timestamptz NOT NULL,
        status text NOT NULL,
        done boolean NOT NULL,
        summary jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX arenas_work ON arenas (starts_at) WHERE NOT done",
    "CREATE INDEX arenas_listed ON arenas (ends_at DESC) WHERE NOT private",
]

DOWNGRADE = ["DROP TABLE arenas"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
