"""Ranking: the name a player is shown under, kept by the ranking service itself.

The leaderboard used to join the match service's `players` table for names; the ranking
service now keeps the name each player played their latest rated match under (its seat's
`SeatSpec.name` in `MatchCreated`), written by the consumer with the rating. This backfills
it from the log: for each rating row, the seat name in the `MatchCreated` of the player's
latest rated match (the highest `position` among its `rating_changes`), which is what the
consumer and `ludo ranking recompute` write.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    # Nullable: a consumer of the previous release, still running after this migration
    # (docs/operations.md, Upgrades), inserts ratings without a name; its rows show no name
    # until the player's next rated match under this release.
    "ALTER TABLE ratings ADD COLUMN name text",
    # MatchCreated is version 0 of its stream (the events' unique key finds it).
    """
    UPDATE ratings r SET name = latest.name FROM (
        SELECT DISTINCT ON (c.model, c.player_id) c.model, c.player_id,
               seat ->> 'name' AS name
        FROM rating_changes c
        JOIN events e ON e.stream_id = c.match_stream AND e.stream_version = 0
                     AND e.type = 'MatchCreated'
        CROSS JOIN LATERAL json_array_elements(e.data -> 'seats') AS seat
        WHERE seat ->> 'player_id' = c.player_id
        ORDER BY c.model, c.player_id, c.position DESC
    ) latest
    WHERE latest.model = r.model AND latest.player_id = r.player_id
    """,
]

DOWNGRADE = ["ALTER TABLE ratings DROP COLUMN name"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)
    # Same table, same grants (migrations/grants.py): nothing to grant.


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
