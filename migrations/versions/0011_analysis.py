"""Match analysis: what the analysis consumer writes for every finished match.

`match_analyses`: one row per analysed match: the analysis exactly as `domain.analysis.
encode` wrote it (`body`, the bytes `ludo replay analyse` prints for the match's replay),
the evaluator that made it, and what the operators' list needs (`luck_gap`: the largest
difference of luck between two seats of the match).
`analysis_seats`: one row per seat of an analysed match: the player (NULL: a CPU seat),
the seat's luck and choices, and the faces it rolled (`faces[i]`: rolls of i + 1), for
the player page's averages and dice and the dashboard's site-wide dice per day.
Both are written by the consumer in the transaction that moves its checkpoint
(`consumer_checkpoints` row `analysis`): a match is analysed once.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE TABLE match_analyses (
        match_id text PRIMARY KEY,
        stream_id text NOT NULL,
        position bigint NOT NULL,
        ended_at timestamptz NOT NULL,
        evaluator text NOT NULL,
        players integer NOT NULL,
        luck_gap double precision NOT NULL,
        body bytea NOT NULL,
        analysed_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX match_analyses_gap ON match_analyses (ended_at, luck_gap DESC)",
    """
    CREATE TABLE analysis_seats (
        match_id text NOT NULL REFERENCES match_analyses (match_id),
        seat integer NOT NULL,
        player_id text,
        name text NOT NULL,
        ended_at timestamptz NOT NULL,
        ranked boolean NOT NULL,
        place integer,
        luck double precision NOT NULL,
        error double precision NOT NULL,
        choices integer NOT NULL,
        own_error double precision NOT NULL,
        best_choices integer NOT NULL,
        faces integer[] NOT NULL,
        PRIMARY KEY (match_id, seat)
    )
    """,
    "CREATE INDEX analysis_seats_player ON analysis_seats (player_id, ended_at DESC)"
    " WHERE player_id IS NOT NULL",
    "CREATE INDEX analysis_seats_day ON analysis_seats (ended_at)",
]

DOWNGRADE = ["DROP TABLE analysis_seats", "DROP TABLE match_analyses"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
