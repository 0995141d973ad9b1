"""Quick play: who holds the lobby open (`lobby_presence`), and a player's tables found fast.

A pool entry lives only while its holder is connected
(docs/design.md#above-a-match-pools-arenas-stamps-reports): every instance refreshes `seen_at` for
the guests whose lobby socket it holds (one statement per heartbeat, not one per socket), and an
entry whose holder was not seen for the grace is left (`PoolLeft(gone)`). A heartbeat rather than a
connection count, so that an instance killed with sockets open leaves no count behind: its guests
simply stop being seen.

The GIN index serves "your tables" and "seated elsewhere": the parties whose listing row
(`settings`, the party's public view) has a seat of a given player.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE TABLE lobby_presence (
        player_id text PRIMARY KEY,
        seen_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX lobby_presence_seen ON lobby_presence (seen_at)",
    "CREATE INDEX parties_seats ON parties USING gin ((settings -> 'seats') jsonb_path_ops)",
]

DOWNGRADE = [
    "DROP INDEX parties_seats",
    "DROP TABLE lobby_presence",
]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
