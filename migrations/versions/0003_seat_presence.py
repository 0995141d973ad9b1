"""Seat presence: live connections per seat, and the disconnect grace deadline.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    # One row per seat that ever had a live connection. `connections` counts open
    # WebSockets over all instances; when it drops to 0, `grace_due` is set and the
    # scheduler stands a CPU in for the seat once it passes
    # (docs/design.md#timers-presence-and-cpu-stand-ins).
    """
    CREATE TABLE seat_presence (
        stream_id       text        NOT NULL,
        seat            integer     NOT NULL CHECK (seat BETWEEN 0 AND 3),
        connections     integer     NOT NULL DEFAULT 0 CHECK (connections >= 0),
        disconnected_at timestamptz,
        grace_due       timestamptz,
        PRIMARY KEY (stream_id, seat)
    )
    """,
    "CREATE INDEX seat_presence_grace_due_idx ON seat_presence (grace_due)"
    " WHERE grace_due IS NOT NULL",
]

DOWNGRADE = ["DROP TABLE seat_presence"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
