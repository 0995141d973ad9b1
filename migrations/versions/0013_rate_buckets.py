"""Per-address budgets shared by every instance: `rate_buckets`.

One row per budget and client address (`budget`: `requests`, `guests` or `auth`), its
`tat` (the GCRA's theoretical arrival time, seconds since the epoch on the database's
clock; services/shared/rate_store.py). UNLOGGED: the counts are not worth a WAL record
per request, and a crash (which truncates the table) forgets them as a restart of the
in-memory limiter did; a standby has no copy. `fillfactor` 50 leaves room on each page
for the updates to stay HOT (no index write). Rows whose `tat` is past are full buckets,
deleted by the services (`RateStore.sweep`, at most once a minute per instance, on a
request).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-04
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

UPGRADE = [
    """
    CREATE UNLOGGED TABLE rate_buckets (
        budget text NOT NULL,
        client text NOT NULL,
        tat double precision NOT NULL,
        PRIMARY KEY (budget, client)
    ) WITH (fillfactor = 50)
    """,
]

DOWNGRADE = ["DROP TABLE rate_buckets"]


def upgrade() -> None:
    for statement in UPGRADE:
        op.execute(statement)


def downgrade() -> None:
    for statement in DOWNGRADE:
        op.execute(statement)
